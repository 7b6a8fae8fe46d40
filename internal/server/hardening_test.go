package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAdminTokenLimit: wrong admin tokens from one address are limited
// like the portal's failed sign-ins, on the admin API and on POST
// /admin/session: past the limit a request with a wrong token gets 429
// with Retry-After, but the right one still passes, so that a local
// process cannot lock the operator out. Another address, and a request
// without a token, are not affected; a try comes back after a part of
// the window.
func TestAdminTokenLimit(t *testing.T) {
	e := newPortalEnv(t, "", nil, func(c *Config) { c.SigninFailures = 3; c.SigninWindow = time.Hour })
	const attacker, other = "198.51.100.9:1000", "198.51.100.10:1000"
	wrong := map[string]string{"Authorization": "Bearer wrong-token-guess"}
	right := map[string]string{"Authorization": bearerAdmin}
	for i := range 3 {
		path := "/admin/accounts"
		method := "GET"
		if i == 2 {
			method, path = "POST", "/admin/session"
		}
		wantAdminError(t, e.doAdmin(t, req{method: method, path: path, header: wrong, remote: attacker}), http.StatusUnauthorized, CodeUnauthorized)
	}
	if r := e.doAdmin(t, req{method: "GET", path: "/admin/accounts", header: right, remote: attacker}); r.Code != http.StatusOK {
		t.Errorf("the right token from a limited address: %d %s", r.Code, r.Body)
	}
	if r := e.doAdmin(t, req{method: "POST", path: "/admin/session", header: right, remote: attacker}); r.Code >= 400 {
		t.Errorf("a session for the right token from a limited address: %d %s", r.Code, r.Body)
	}
	for _, q := range []req{
		{method: "GET", path: "/admin/accounts", header: wrong, remote: attacker},
		{method: "POST", path: "/admin/session", header: wrong, remote: attacker},
		{method: "GET", path: "/admin/nope", header: wrong, remote: attacker},
	} {
		r := e.doAdmin(t, q)
		wantAdminError(t, r, http.StatusTooManyRequests, CodeTooMany)
		if ra, _ := strconv.Atoi(r.Header().Get("Retry-After")); ra < 1 || ra > 20*60 {
			t.Errorf("%s %s: Retry-After %q, want 1..1200 s", q.method, q.path, r.Header().Get("Retry-After"))
		}
	}
	if !strings.Contains(e.logs.String(), "too many wrong admin tokens from this address") || strings.Contains(e.logs.String(), testAdminToken) {
		t.Errorf("the log should say the address waits, and never hold the token:\n%s", e.logs)
	}
	// Without a token nothing is guessed: 401, and not counted.
	wantAdminError(t, e.doAdmin(t, req{method: "GET", path: "/admin/accounts", remote: attacker}), http.StatusUnauthorized, CodeUnauthorized)
	// Another address is not limited.
	if r := e.doAdmin(t, req{method: "GET", path: "/admin/accounts", header: right, remote: other}); r.Code != http.StatusOK {
		t.Errorf("another address: %d %s", r.Code, r.Body)
	}
	// A try comes back after a third of the window.
	e.clk.Advance(21 * time.Minute)
	if r := e.doAdmin(t, req{method: "GET", path: "/admin/accounts", header: wrong, remote: attacker}); r.Code != http.StatusUnauthorized {
		t.Errorf("after the wait: %d %s, want a wrong token's 401", r.Code, r.Body)
	}
}

// TestPortalCrossSiteReads: a portal API request that a browser marks as
// coming from another origin is refused whatever its method, so that
// another site cannot have a signed-in owner's browser fetch the CSRF
// token or the CSV exports. The page itself stays reachable from links.
func TestPortalCrossSiteReads(t *testing.T) {
	e := newPortalEnv(t, "", nil, func(c *Config) { c.PublicURL = "https://ip.example.net" })
	_, email := e.owner(t, "CrossSite")
	b := e.signIn(t, email)
	for _, path := range []string{"/account/api/me", "/account/api/keys", "/account/api/credits.csv", "/account/api/usage.csv", "/account/api/subscription"} {
		for _, extra := range [][2]string{{"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}, {"Origin", "https://evil.example"}} {
			r := e.call(t, b, "GET", path, "", extra[0], extra[1])
			wantAdminError(t, r, http.StatusForbidden, CodeForbidden)
			if strings.Contains(r.Body.String(), b.csrf) {
				t.Errorf("GET %s with %s: the answer holds the CSRF token", path, extra)
			}
		}
		// From this origin, or PublicURL's, it answers.
		for _, origin := range []string{"", "https://ip.example.net"} {
			if r := e.call(t, b, "GET", path, "", "Origin", origin); r.Code != http.StatusOK {
				t.Errorf("GET %s from %q: %d %s", path, origin, r.Code, r.Body)
			}
		}
	}
	// A link from another site to the page still opens it.
	if r := e.do(t, req{method: "GET", path: "/account", header: map[string]string{"Sec-Fetch-Site": "cross-site"}}); r.Code != http.StatusOK {
		t.Errorf("the portal page from a link: %d", r.Code)
	}
}

// TestConsoleOwnOrigin: the admin listener takes a console session's
// changes from its own origin only; the public listener's origin
// (PublicURL) is another origin there.
func TestConsoleOwnOrigin(t *testing.T) {
	e := newPortalEnv(t, "", nil, func(c *Config) { c.PublicURL = "https://ip.example.net" })
	b := e.consoleSignIn(t)
	body := `{"name":"Origin Co","tier":"free"}`
	wantAdminError(t, e.console(t, b, "POST", "/admin/accounts", body, "Origin", "https://ip.example.net"), http.StatusForbidden, CodeForbidden)
	if r := e.console(t, b, "POST", "/admin/accounts", body, "Origin", "http://example.com"); r.Code != http.StatusCreated {
		t.Errorf("from the admin listener's own origin: %d %s", r.Code, r.Body)
	}
}
