package server

import (
	"context"
	"crypto/tls"
	"encoding/csv"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

// portalStart is the portal tests' first moment: mid-month, so that no
// session or counter crosses a month boundary unless a test moves there.
var portalStart = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

const testPassword = "correct horse battery staple 42"

// portalEnv is a server on a store chosen by the test (SQLite, or
// PostgreSQL in a schema) and a clock it moves.
type portalEnv struct {
	*env
	clk *clock
}

// newPortalEnv builds a server on SQLite (schema "") or on PostgreSQL in
// schema, migrating it when needed. Servers built on one schema share it,
// as replicas do.
func newPortalEnv(t *testing.T, schema string, clk *clock, configure ...func(*Config)) *portalEnv {
	t.Helper()
	if clk == nil {
		clk = &clock{t: portalStart}
	}
	p := servertest.New(t, clk.Now)
	svc, meter := p.Accounts, p.Meter
	if schema != "" {
		st, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Options{Migrate: true, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		svc = &account.Service{Store: st, Now: clk.Now}
		meter = account.NewMeter(st, account.MeterOptions{Now: clk.Now, MaxDelay: time.Millisecond})
		t.Cleanup(func() { meter.Close(context.Background()) })
	}
	e := &env{store: p.Store, svc: svc, meter: meter, reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	cfg := Config{
		LimitTableSize: DefaultLimitTableSize,
		AdminToken:     testAdminToken,
		Version:        "test-1.2.3",
		Logger:         slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:            clk.Now,
	}
	for _, c := range configure {
		c(&cfg)
	}
	e.srv = mustNew(t, cfg, Deps{Geo: p.Geo, Accounts: svc, Meter: meter, Registry: e.reg})
	e.pub, e.admin = e.srv.Handler(), e.srv.AdminHandler()
	return &portalEnv{env: e, clk: clk}
}

// onStores runs a test on SQLite and on PostgreSQL (skipped, saying why,
// without a test server).
func onStores(t *testing.T, test func(t *testing.T, mk func(configure ...func(*Config)) *portalEnv)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, func(configure ...func(*Config)) *portalEnv { return newPortalEnv(t, "", nil, configure...) })
	})
	t.Run("postgres", func(t *testing.T) {
		pgtest.DSN(t)
		schema := pgtest.NewSchema(t)
		test(t, func(configure ...func(*Config)) *portalEnv { return newPortalEnv(t, schema, nil, configure...) })
	})
}

// owner makes an account with an owner who has set testPassword; it
// returns the account and the owner's email.
func (e *portalEnv) owner(t *testing.T, name string) (account.Account, string) {
	t.Helper()
	ctx := account.WithActor(context.Background(), "test")
	credits := int64(500)
	a, err := e.svc.CreateAccount(ctx, account.AccountParams{Name: name, Tier: account.Free, Credits: &credits})
	if err != nil {
		t.Fatal(err)
	}
	email := strings.ToLower(name) + "@example.com"
	l, err := e.svc.Invite(ctx, a.ID, email)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.SetPassword(ctx, l.Token, testPassword); err != nil {
		t.Fatal(err)
	}
	return a, email
}

// browser is one signed-in browser: its cookie and CSRF token.
type browser struct {
	cookie, csrf string
	remote       string
}

// signIn signs in through the API and returns the browser.
func (e *portalEnv) signIn(t *testing.T, email string) *browser {
	t.Helper()
	r := e.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":"` + email + `","password":"` + testPassword + `"}`})
	if r.Code != http.StatusOK {
		t.Fatalf("sign in: %d %s", r.Code, r.Body)
	}
	c := cookieOf(t, r.Header(), ownerCookie)
	si := decode[SignedIn](t, r)
	if si.CSRF == "" || si.Owner.Email != email {
		t.Fatalf("sign in answered %+v", si)
	}
	return &browser{cookie: c.Value, csrf: si.CSRF}
}

func cookieOf(t *testing.T, h http.Header, name string) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cookie %s in %q", name, h.Values("Set-Cookie"))
	return nil
}

// call sends a portal request as the browser would: the cookie, the CSRF
// token on changes, Sec-Fetch-Site same-origin.
func (e *portalEnv) call(t *testing.T, b *browser, method, path, body string, extra ...string) resp {
	t.Helper()
	h := map[string]string{"Sec-Fetch-Site": "same-origin"}
	if b != nil {
		h["Cookie"] = ownerCookie + "=" + b.cookie
		if method != "GET" {
			h[csrfHeader] = b.csrf
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	remote := ""
	if b != nil {
		remote = b.remote
	}
	return e.do(t, req{method: method, path: path, body: body, header: h, remote: remote})
}

func TestPortalSignIn(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk()
		a, email := e.owner(t, "Acme")

		r := e.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":" ACME@example.com ","password":"` + testPassword + `"}`})
		if r.Code != 200 {
			t.Fatalf("sign in: %d %s", r.Code, r.Body)
		}
		c := cookieOf(t, r.Header(), ownerCookie)
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/account" || c.Secure || c.Value == "" {
			t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/account, not Secure over HTTP", c)
		}
		if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control %q", cc)
		}
		if ao := r.Header().Get("Access-Control-Allow-Origin"); ao != "" {
			t.Errorf("the portal answers CORS: %q", ao)
		}
		si := decode[SignedIn](t, r)
		if si.AccountID != a.ID || si.Owner.Email != email || !si.Owner.HasPassword {
			t.Errorf("signed in as %+v", si)
		}
		b := &browser{cookie: c.Value, csrf: si.CSRF}

		r = e.call(t, b, "GET", "/account/api/me", "")
		if r.Code != 200 {
			t.Fatalf("me: %d %s", r.Code, r.Body)
		}
		me := decode[Me](t, r)
		if me.Account.ID != a.ID || me.Period != "2026-11" || !me.Reset.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) ||
			me.CSRF != si.CSRF || me.PendingRequest != nil || me.Account.Credits != 500 {
			t.Errorf("me: %+v", me)
		}

		// Wrong password and unknown email: the same answer, byte for byte.
		wrong := e.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":"` + email + `","password":"not the password at all"}`})
		unknown := e.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":"nobody@example.com","password":"not the password at all"}`})
		for _, x := range []resp{wrong, unknown} {
			wantAdminError(t, x, http.StatusUnauthorized, CodeSignInFailed)
			if x.Header().Get("Set-Cookie") != "" {
				t.Errorf("a refused sign-in set a cookie")
			}
		}
		if wrong.Body.String() != unknown.Body.String() {
			t.Errorf("wrong password %s, unknown email %s: the answers differ", wrong.Body, unknown.Body)
		}

		// Without a session, or with a forged one: 401.
		wantAdminError(t, e.call(t, nil, "GET", "/account/api/me", ""), http.StatusUnauthorized, CodeUnauthorized)
		wantAdminError(t, e.call(t, &browser{cookie: "forged", csrf: "x"}, "GET", "/account/api/keys", ""), http.StatusUnauthorized, CodeUnauthorized)

		// Bad bodies are the client's mistake.
		wantAdminError(t, e.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":"a","password":"b","admin":true}`}), 400, CodeInvalidRequest)
		wantAdminError(t, e.do(t, req{method: "POST", path: "/account/api/signin", body: `[`}), 400, CodeInvalidRequest)

		// Signing out ends the session, and only this one.
		other := e.signIn(t, email)
		if r := e.call(t, b, "POST", "/account/api/signout", ""); r.Code != http.StatusNoContent {
			t.Fatalf("sign out: %d %s", r.Code, r.Body)
		} else if c := cookieOf(t, r.Header(), ownerCookie); c.MaxAge >= 0 {
			t.Errorf("sign out kept the cookie: %+v", c)
		}
		wantAdminError(t, e.call(t, b, "GET", "/account/api/me", ""), http.StatusUnauthorized, CodeUnauthorized)
		if r := e.call(t, other, "GET", "/account/api/me", ""); r.Code != 200 {
			t.Errorf("the other session after sign out: %d", r.Code)
		}

		// Sign out everywhere revokes every session of the owner.
		third := e.signIn(t, email)
		r = e.call(t, other, "POST", "/account/api/signout-everywhere", "")
		if r.Code != 200 || decode[Revoked](t, r).Revoked != 2 {
			t.Fatalf("sign out everywhere: %d %s", r.Code, r.Body)
		}
		wantAdminError(t, e.call(t, third, "GET", "/account/api/me", ""), http.StatusUnauthorized, CodeUnauthorized)
		wantAdminError(t, e.call(t, other, "GET", "/account/api/me", ""), http.StatusUnauthorized, CodeUnauthorized)
	})
}

func TestPortalSessionExpiry(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk()
		e.svc.OwnerSessions = account.SessionPolicy{Idle: time.Hour, Max: 3 * time.Hour}
		_, email := e.owner(t, "Expiring")

		idle := e.signIn(t, email)
		busy := e.signIn(t, email)
		// busy makes a request every 50 minutes, idle none after sign-in.
		for i := 1; i <= 3; i++ {
			e.clk.Advance(50 * time.Minute)
			if r := e.call(t, busy, "GET", "/account/api/me", ""); r.Code != 200 {
				t.Fatalf("active session after %d min: %d %s", 50*i, r.Code, r.Body)
			}
			if i == 1 {
				if r := e.call(t, idle, "GET", "/account/api/me", ""); r.Code != 200 {
					t.Fatalf("50 min after sign-in: %d %s", r.Code, r.Body)
				}
			}
		}
		// 100 minutes without a request: idle's session is over.
		wantAdminError(t, e.call(t, idle, "GET", "/account/api/me", ""), http.StatusUnauthorized, CodeUnauthorized)
		// Active or not, busy's ends 3 hours after sign-in.
		e.clk.Advance(30 * time.Minute)
		wantAdminError(t, e.call(t, busy, "GET", "/account/api/keys", ""), http.StatusUnauthorized, CodeUnauthorized)
	})
}

func TestPortalCSRF(t *testing.T) {
	e := newPortalEnv(t, "", nil, func(c *Config) { c.PublicURL = "https://ip.example.net" })
	_, email := e.owner(t, "Csrf")
	b := e.signIn(t, email)

	keys := func() int {
		ks, err := e.svc.KeyViews(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		return len(ks)
	}
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"missing token", []string{csrfHeader, ""}},
		{"wrong token", []string{csrfHeader, b.csrf + "x"}},
		{"another session's token", []string{csrfHeader, e.signIn(t, email).csrf}},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}},
		{"same-site fetch", []string{"Sec-Fetch-Site", "same-site"}},
		{"foreign origin", []string{"Origin", "https://evil.example"}},
		{"null origin", []string{"Origin", "null"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []struct{ method, path, body string }{
				{"POST", "/account/api/keys", `{"label":"x"}`},
				{"POST", "/account/api/signout-everywhere", ""},
				{"POST", "/account/api/subscription/requests", `{"tier":"pro"}`},
			} {
				wantAdminError(t, e.call(t, b, p.method, p.path, p.body, tc.extra...), http.StatusForbidden, CodeForbidden)
			}
		})
	}
	if n := keys(); n != 0 {
		t.Fatalf("refused requests created %d keys", n)
	}
	if r := e.call(t, b, "GET", "/account/api/me", ""); r.Code != 200 {
		t.Fatalf("the session after refused changes: %d", r.Code)
	}

	// Over TLS, this host's plain-HTTP origin is another origin.
	tlsReq := req{method: "POST", path: "/account/api/keys", body: `{"label":"x"}`, header: map[string]string{
		"Cookie": ownerCookie + "=" + b.cookie, csrfHeader: b.csrf, "Origin": "http://example.com"}}
	rq, w := newRequest(tlsReq), httptest.NewRecorder()
	rq.TLS = &tls.ConnectionState{}
	e.pub.ServeHTTP(w, rq)
	wantAdminError(t, resp{w, rq}, http.StatusForbidden, CodeForbidden)

	// The right token, from this origin (through a TLS-terminating proxy
	// too) or PublicURL's, passes.
	for _, origin := range []string{"http://example.com", "https://example.com", "https://ip.example.net"} {
		if r := e.call(t, b, "POST", "/account/api/keys", `{"label":"ok"}`, "Origin", origin); r.Code != http.StatusCreated {
			t.Errorf("Origin %s: %d %s", origin, r.Code, r.Body)
		}
	}

	// Sign-in and set-password have no session yet: the origin is checked.
	for _, extra := range [][2]string{{"Origin", "https://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		h := map[string]string{extra[0]: extra[1]}
		wantAdminError(t, e.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":"` + email + `","password":"` + testPassword + `"}`, header: h}), http.StatusForbidden, CodeForbidden)
		wantAdminError(t, e.do(t, req{method: "POST", path: "/account/api/password", body: `{"token":"x","password":"y"}`, header: h}), http.StatusForbidden, CodeForbidden)
	}
}

func TestPortalSigninLimit(t *testing.T) {
	e := newPortalEnv(t, "", nil, func(c *Config) { c.SigninFailures = 3; c.SigninWindow = time.Hour })
	_, email := e.owner(t, "Limited")
	bad := `{"email":"nobody@example.com","password":"wrong wrong wrong"}`
	const attacker, other = "198.51.100.9:1000", "198.51.100.10:1000"
	for range 3 {
		wantAdminError(t, e.do(t, req{method: "POST", path: "/account/api/signin", body: bad, remote: attacker}), 401, CodeSignInFailed)
	}
	// The address is out of tries, even with the right password; the
	// wait is a third of the window per try.
	good := `{"email":"` + email + `","password":"` + testPassword + `"}`
	r := e.do(t, req{method: "POST", path: "/account/api/signin", body: good, remote: attacker})
	wantAdminError(t, r, http.StatusTooManyRequests, CodeTooMany)
	if ra, _ := strconv.Atoi(r.Header().Get("Retry-After")); ra < 1 || ra > 20*60 {
		t.Errorf("Retry-After %q, want 1..1200 s", r.Header().Get("Retry-After"))
	}
	if !strings.Contains(e.logs.String(), "too many failed sign-ins from this address") || strings.Contains(e.logs.String(), testPassword) {
		t.Errorf("the log should say the address waits, and never hold a password:\n%s", e.logs)
	}
	// Another address is not limited.
	if r := e.do(t, req{method: "POST", path: "/account/api/signin", body: good, remote: other}); r.Code != 200 {
		t.Errorf("another address: %d %s", r.Code, r.Body)
	}
	for outcome, want := range map[string]float64{"failed": 3, "limited": 1, "ok": 1} {
		if got := gathered(t, e.env, "ipatlas_portal_signins_total", map[string]string{"outcome": outcome}); got != want {
			t.Errorf("signins_total{outcome=%q} = %v, want %v", outcome, got, want)
		}
	}
	// A token comes back after window/3.
	e.clk.Advance(21 * time.Minute)
	if r := e.do(t, req{method: "POST", path: "/account/api/signin", body: good, remote: attacker}); r.Code != 200 {
		t.Errorf("after the wait: %d %s", r.Code, r.Body)
	}
}

func TestPortalOwnerBackoff(t *testing.T) {
	// The service locks an owner after repeated failures, whatever the
	// address. A locked owner is answered exactly as any other failure
	// (401, no Retry-After), even with the right password: a different
	// answer would tell a stranger that the email has an account.
	e := newPortalEnv(t, "", nil) // no sign-in limit per address
	_, email := e.owner(t, "Locked")
	signin := func(email, password string, i int) resp {
		return e.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":"` + email + `","password":"` + password + `"}`, remote: "198.51.100." + strconv.Itoa(i+1) + ":1"})
	}
	for i := range 12 {
		wantAdminError(t, signin(email, "wrong wrong wrong", i), 401, CodeSignInFailed)
	}
	locked := signin(email, testPassword, 13)
	unknown := signin("nobody@example.com", testPassword, 14)
	wantAdminError(t, locked, 401, CodeSignInFailed)
	if locked.Body.String() != unknown.Body.String() || locked.Header().Get("Retry-After") != "" || locked.Header().Get("Set-Cookie") != "" {
		t.Errorf("a locked owner's answer %q (Retry-After %q) differs from an unknown email's %q",
			locked.Body, locked.Header().Get("Retry-After"), unknown.Body)
	}
	// The lock ends: the right password works again.
	e.clk.Advance(16 * time.Minute)
	if r := signin(email, testPassword, 15); r.Code != 200 {
		t.Errorf("after the lock: %d %s", r.Code, r.Body)
	}
}

func TestPortalKeys(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk()
		a, email := e.owner(t, "Keyed")
		b := e.signIn(t, email)

		r := e.call(t, b, "POST", "/account/api/keys", `{"label":"production"}`)
		if r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		ck := decode[CreatedKey](t, r)
		if ck.Key.Label != "production" || !strings.HasPrefix(ck.Secret, ck.Key.Prefix+"_") || ck.Key.AccountID != a.ID {
			t.Fatalf("created %+v", ck)
		}
		if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control %q on a secret", cc)
		}

		// A query with the new key is counted on it.
		if q := e.query(t, ck.Secret, `{"ip":"8.8.8.8"}`); q.Code != 200 {
			t.Fatalf("query: %d %s", q.Code, q.Body)
		}
		r = e.call(t, b, "GET", "/account/api/keys", "")
		kv := decode[KeyViews](t, r)
		if len(kv.Keys) != 1 || kv.Keys[0].ID != ck.Key.ID || kv.Keys[0].Used != 1 || kv.Keys[0].LastUsedAt == nil {
			t.Fatalf("keys after a query: %s", r.Body)
		}
		if me := decode[Me](t, e.call(t, b, "GET", "/account/api/me", "")); me.Used != 1 {
			t.Errorf("me.used %d, want 1", me.Used)
		}

		r = e.call(t, b, "PATCH", "/account/api/keys/"+ck.Key.ID, `{"label":"prod"}`)
		if r.Code != 200 || decode[account.Key](t, r).Label != "prod" {
			t.Errorf("label: %d %s", r.Code, r.Body)
		}
		r = e.call(t, b, "POST", "/account/api/keys/"+ck.Key.ID+"/rotate", "")
		rot := decode[CreatedKey](t, r)
		if r.Code != 200 || rot.Secret == ck.Secret || rot.Key.ID != ck.Key.ID {
			t.Fatalf("rotate: %d %s", r.Code, r.Body)
		}

		// Another account's keys are not found.
		_, otherEmail := e.owner(t, "Other")
		ob := e.signIn(t, otherEmail)
		for _, p := range []struct{ method, path, body string }{
			{"PATCH", "/account/api/keys/" + ck.Key.ID, `{"label":"mine"}`},
			{"POST", "/account/api/keys/" + ck.Key.ID + "/rotate", ""},
			{"POST", "/account/api/keys/" + ck.Key.ID + "/revoke", ""},
			{"POST", "/account/api/keys/nosuchkey/revoke", ""},
		} {
			wantAdminError(t, e.call(t, ob, p.method, p.path, p.body), http.StatusNotFound, CodeNotFound)
		}
		if ks := decode[KeyViews](t, e.call(t, ob, "GET", "/account/api/keys", "")); len(ks.Keys) != 0 {
			t.Errorf("the other account sees keys: %+v", ks)
		}

		// Revoked, the key is refused by the API.
		r = e.call(t, b, "POST", "/account/api/keys/"+ck.Key.ID+"/revoke", "")
		if r.Code != 200 || decode[account.Key](t, r).RevokedAt == nil {
			t.Fatalf("revoke: %d %s", r.Code, r.Body)
		}
		if q := e.query(t, rot.Secret, `{"ip":"8.8.8.8"}`); q.Code != http.StatusUnauthorized {
			t.Errorf("query with a revoked key: %d", q.Code)
		}

		// The changes are in the audit log, each with the owner's session.
		es, err := e.svc.AuditLog(context.Background(), a.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		actions := map[string]string{}
		for _, x := range es {
			actions[x.Action] = x.Actor
		}
		for _, want := range []string{"key.create", "key.label", "key.rotate", "key.revoke"} {
			actor, ok := actions[want]
			if !ok {
				t.Errorf("no %s in the audit log: %+v", want, es)
				continue
			}
			if !strings.HasPrefix(actor, "owner:") || !strings.Contains(actor, "/session:") {
				t.Errorf("%s by %q, want owner:<id>/session:<id>", want, actor)
			}
		}
	})
}

func TestPortalUsageAndCredits(t *testing.T) {
	e := newPortalEnv(t, "", nil)
	a, email := e.owner(t, "Counted")
	b := e.signIn(t, email)
	ck := decode[CreatedKey](t, e.call(t, b, "POST", "/account/api/keys", `{"label":"=cmd|' /C calc'!A0"}`))
	for range 3 {
		if q := e.query(t, ck.Secret, `{"ip":"8.8.8.8"}`); q.Code != 200 {
			t.Fatalf("query: %d %s", q.Code, q.Body)
		}
	}
	e.clk.Advance(24 * time.Hour)
	if q := e.query(t, ck.Secret, `{"ip":"8.8.8.8"}`); q.Code != 200 {
		t.Fatalf("query: %d %s", q.Code, q.Body)
	}
	b = e.signIn(t, email) // a day idle ended the session

	r := e.call(t, b, "GET", "/account/api/usage?days=7", "")
	h := decode[account.History](t, r)
	if r.Code != 200 || h.To != "2026-11-15" || h.From != "2026-11-09" || len(h.Days) != 2 || h.Days[0].Queries != 3 || h.Days[1].Queries != 1 {
		t.Fatalf("usage: %d %s", r.Code, r.Body)
	}
	wantAdminError(t, e.call(t, b, "GET", "/account/api/usage?days=0", ""), 400, CodeInvalidRequest)
	wantAdminError(t, e.call(t, b, "GET", "/account/api/usage?days=x", ""), 400, CodeInvalidRequest)

	r = e.call(t, b, "GET", "/account/api/usage.csv", "")
	if r.Code != 200 || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/csv") || !strings.HasPrefix(r.Header().Get("Content-Disposition"), "attachment") {
		t.Fatalf("usage.csv: %d %q %q", r.Code, r.Header().Get("Content-Type"), r.Header().Get("Content-Disposition"))
	}
	rows, err := csv.NewReader(strings.NewReader(r.Body.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"day", "key_id", "label", "queries"},
		{"2026-11-14", ck.Key.ID, "'=cmd|' /C calc'!A0", "3"},
		{"2026-11-14", "total", "", "3"},
		{"2026-11-15", ck.Key.ID, "'=cmd|' /C calc'!A0", "1"},
		{"2026-11-15", "total", "", "1"},
	}
	if !equalRows(rows, want) {
		t.Errorf("usage.csv:\n%q\nwant\n%q", rows, want)
	}

	// Credits: the grant, then the charges, newest first, in pages.
	if _, err := e.svc.AddCredits(account.WithActor(context.Background(), "test"), a.ID, 25, "goodwill, \"thanks\""); err != nil {
		t.Fatal(err)
	}
	r = e.call(t, b, "GET", "/account/api/credits?limit=1", "")
	p := decode[CreditPage](t, r)
	if r.Code != 200 || len(p.Entries) != 1 || p.Entries[0].Delta != 25 || p.NextBefore != p.Entries[0].ID || p.Credits != 500-4+25 {
		t.Fatalf("credits: %d %s", r.Code, r.Body)
	}
	var all []account.LedgerEntry
	for before := p.NextBefore; before != 0; {
		p := decode[CreditPage](t, e.call(t, b, "GET", "/account/api/credits?limit=1&before="+strconv.FormatInt(before, 10), ""))
		all = append(all, p.Entries...)
		before = p.NextBefore
	}
	if len(all) < 2 || all[len(all)-1].Delta != 500 {
		t.Errorf("older pages: %+v", all)
	}
	wantAdminError(t, e.call(t, b, "GET", "/account/api/credits?limit=5000", ""), 400, CodeInvalidRequest)

	r = e.call(t, b, "GET", "/account/api/credits.csv", "")
	rows, err = csv.NewReader(strings.NewReader(r.Body.String())).ReadAll()
	if err != nil || r.Code != 200 {
		t.Fatalf("credits.csv: %d %v", r.Code, err)
	}
	if !equalRows(rows[:1], [][]string{{"time", "amount", "reason", "key_id", "queries", "balance"}}) || len(rows) != len(all)+2 ||
		rows[1][1] != "25" || rows[1][2] != `goodwill, "thanks"` || rows[1][5] != strconv.FormatInt(500-4+25, 10) {
		t.Errorf("credits.csv: %q", rows)
	}
}

func equalRows(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if strings.Join(a[i], "\x00") != strings.Join(b[i], "\x00") {
			return false
		}
	}
	return true
}

func TestPortalSubscription(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk()
		a, email := e.owner(t, "Growing")
		b := e.signIn(t, email)

		s := decode[Subscription](t, e.call(t, b, "GET", "/account/api/subscription", ""))
		if s.Tier != account.Free || len(s.Tiers) != 3 || len(s.Requests) != 0 {
			t.Fatalf("subscription: %+v", s)
		}
		r := e.call(t, b, "POST", "/account/api/subscription/requests", `{"tier":"pro","note":"launch"}`)
		tr := decode[account.TierRequest](t, r)
		if r.Code != http.StatusCreated || tr.Status != account.RequestPending || tr.Tier != account.Pro {
			t.Fatalf("request: %d %s", r.Code, r.Body)
		}
		wantAdminError(t, e.call(t, b, "POST", "/account/api/subscription/requests", `{"tier":"enterprise","monthly_limit":50000}`), http.StatusConflict, CodeConflict)
		wantAdminError(t, e.call(t, b, "POST", "/account/api/subscription/requests", `{"tier":"gold"}`), 400, CodeInvalidRequest)
		if me := decode[Me](t, e.call(t, b, "GET", "/account/api/me", "")); me.PendingRequest == nil || me.PendingRequest.ID != tr.ID {
			t.Errorf("me.pending_request: %+v", me.PendingRequest)
		}

		// The operator sees it and approves it.
		r = e.adminCall(t, "GET", "/admin/tier-requests?status=pending", "")
		if l := decode[TierRequestList](t, r); len(l.Requests) != 1 || l.Requests[0].ID != tr.ID {
			t.Fatalf("pending requests: %s", r.Body)
		}
		id := strconv.FormatInt(tr.ID, 10)
		r = e.adminCall(t, "POST", "/admin/tier-requests/"+id+"/approve", "")
		if r.Code != 200 || decode[account.TierRequest](t, r).Status != account.RequestApproved {
			t.Fatalf("approve: %d %s", r.Code, r.Body)
		}
		wantAdminError(t, e.adminCall(t, "POST", "/admin/tier-requests/"+id+"/refuse", ""), http.StatusConflict, CodeConflict)
		wantAdminError(t, e.adminCall(t, "POST", "/admin/tier-requests/999999/approve", ""), http.StatusNotFound, CodeNotFound)
		wantAdminError(t, e.adminCall(t, "POST", "/admin/tier-requests/x/approve", ""), 400, CodeInvalidRequest)
		s = decode[Subscription](t, e.call(t, b, "GET", "/account/api/subscription", ""))
		if s.Tier != account.Pro || s.MonthlyLimit != account.ProMonthlyLimit || len(s.Requests) != 1 {
			t.Errorf("after approval: %+v", s)
		}
		if l := decode[TierRequestList](t, e.adminCall(t, "GET", "/admin/tier-requests?account="+strconv.FormatInt(a.ID, 10), "")); len(l.Requests) != 1 {
			t.Errorf("requests of the account: %+v", l)
		}
		wantAdminError(t, e.adminCall(t, "GET", "/admin/tier-requests?status=maybe", ""), 400, CodeInvalidRequest)
	})
}

func TestPortalPages(t *testing.T) {
	e := newPortalEnv(t, "", nil)
	for _, p := range []string{"/account", "/account/keys", "/account/password"} {
		r := e.do(t, req{method: "GET", path: p})
		if r.Code != 200 || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q", p, r.Code, r.Header().Get("Content-Type"))
		}
	}
	wantAdminError(t, e.do(t, req{method: "GET", path: "/account/api/nope"}), 404, CodeNotFound)
	wantAdminError(t, e.do(t, req{method: "POST", path: "/account/keys"}), 405, CodeNotAllowed)
	// A known API path with another method: the portal's error body too.
	r := e.do(t, req{method: "DELETE", path: "/account/api/keys"})
	wantAdminError(t, r, 405, CodeNotAllowed)
	if allow := r.Header().Get("Allow"); !strings.Contains(allow, "POST") || !strings.Contains(allow, "GET") {
		t.Errorf("Allow %q on /account/api/keys", allow)
	}
	if r := e.do(t, req{method: "GET", path: "/console"}); r.Code != 404 {
		t.Errorf("the console on the public listener: %d", r.Code)
	}
	for _, p := range []string{"/console", "/console/accounts"} {
		r := e.doAdmin(t, req{method: "GET", path: p})
		if r.Code != 200 || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q", p, r.Code, r.Header().Get("Content-Type"))
		}
	}
	if r := e.doAdmin(t, req{method: "GET", path: "/account"}); r.Code == 200 {
		t.Errorf("the portal on the admin listener: %d", r.Code)
	}
}

// consoleSignIn exchanges the admin token for a console session.
func (e *portalEnv) consoleSignIn(t *testing.T) *browser {
	t.Helper()
	r := e.doAdmin(t, req{method: "POST", path: "/admin/session", header: map[string]string{"Authorization": bearerAdmin}})
	if r.Code != 200 {
		t.Fatalf("console session: %d %s", r.Code, r.Body)
	}
	c := cookieOf(t, r.Header(), consoleCookie)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Errorf("console cookie %+v", c)
	}
	cs := decode[ConsoleSession](t, r)
	if cs.CSRF == "" || !cs.ExpiresAt.After(e.clk.Now()) {
		t.Fatalf("console session %+v", cs)
	}
	return &browser{cookie: c.Value, csrf: cs.CSRF}
}

// console sends an admin request as the console page does.
func (e *portalEnv) console(t *testing.T, b *browser, method, path, body string, extra ...string) resp {
	t.Helper()
	h := map[string]string{"Cookie": consoleCookie + "=" + b.cookie, "Sec-Fetch-Site": "same-origin"}
	if method != "GET" {
		h[csrfHeader] = b.csrf
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return e.doAdmin(t, req{method: method, path: path, body: body, header: h})
}

func TestConsoleSession(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk(func(c *Config) { c.PublicURL = "https://ip.example.net/" })
		b := e.consoleSignIn(t)

		if r := e.console(t, b, "GET", "/admin/session", ""); r.Code != 200 || decode[ConsoleSession](t, r).CSRF != b.csrf {
			t.Fatalf("GET /admin/session: %d %s", r.Code, r.Body)
		}
		// The cookie works on the admin API, changes with the CSRF rules.
		r := e.console(t, b, "POST", "/admin/accounts", `{"name":"Console Co","tier":"free"}`)
		if r.Code != http.StatusCreated {
			t.Fatalf("create through the console: %d %s", r.Code, r.Body)
		}
		a := decode[account.Account](t, r)
		id := strconv.FormatInt(a.ID, 10)
		wantAdminError(t, e.console(t, b, "POST", "/admin/accounts", `{"name":"x","tier":"free"}`, csrfHeader, ""), http.StatusForbidden, CodeForbidden)
		wantAdminError(t, e.console(t, b, "POST", "/admin/accounts", `{"name":"x","tier":"free"}`, csrfHeader, "nope"), http.StatusForbidden, CodeForbidden)
		wantAdminError(t, e.console(t, b, "PATCH", "/admin/accounts/"+id, `{"tier":"pro"}`, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden, CodeForbidden)
		wantAdminError(t, e.console(t, b, "POST", "/admin/accounts/"+id+"/credits", `{"amount":5,"reason":"x"}`, "Origin", "https://evil.example"), http.StatusForbidden, CodeForbidden)
		// A cookie cannot make another session: only the token can.
		wantAdminError(t, e.console(t, b, "POST", "/admin/session", ""), http.StatusUnauthorized, CodeUnauthorized)

		// Credits through the console and through the token: the audit
		// log names each.
		if r := e.console(t, b, "POST", "/admin/accounts/"+id+"/credits", `{"amount":7,"reason":"console grant"}`); r.Code != 201 {
			t.Fatalf("credits: %d %s", r.Code, r.Body)
		}
		if r := e.adminCall(t, "POST", "/admin/accounts/"+id+"/credits", `{"amount":3,"reason":"script grant"}`); r.Code != 201 {
			t.Fatalf("credits: %d %s", r.Code, r.Body)
		}
		r = e.console(t, b, "GET", "/admin/audit?account="+id, "")
		page := decode[AuditPage](t, r)
		var actors []string
		for _, x := range page.Entries {
			actors = append(actors, x.Action+" "+x.Actor)
		}
		sess, err := e.svc.CheckSession(context.Background(), b.cookie, account.SessionOperator)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"credits.add token", "credits.add session:" + sess.ID, "account.create session:" + sess.ID} {
			if !strings.Contains(strings.Join(actors, "\n"), want) {
				t.Errorf("audit log %q lacks %q", actors, want)
			}
		}
		// Paging the log.
		p1 := decode[AuditPage](t, e.adminCall(t, "GET", "/admin/audit?limit=1", ""))
		if len(p1.Entries) != 1 || p1.NextBefore != p1.Entries[0].ID {
			t.Errorf("audit page of 1: %+v", p1)
		}
		p2 := decode[AuditPage](t, e.adminCall(t, "GET", "/admin/audit?limit=1&before="+strconv.FormatInt(p1.NextBefore, 10), ""))
		if len(p2.Entries) != 1 || p2.Entries[0].ID >= p1.Entries[0].ID {
			t.Errorf("audit page 2: %+v", p2)
		}
		wantAdminError(t, e.adminCall(t, "GET", "/admin/audit?limit=0", ""), 400, CodeInvalidRequest)

		// Invitations and reset links use PublicURL, token in the fragment.
		r = e.console(t, b, "POST", "/admin/accounts/"+id+"/invites", `{"email":"Boss@Example.com"}`)
		if r.Code != http.StatusCreated {
			t.Fatalf("invite: %d %s", r.Code, r.Body)
		}
		inv := decode[OwnerLink](t, r)
		if !strings.HasPrefix(inv.Link, "https://ip.example.net/account/password#token=") || inv.Owner.Email != "boss@example.com" || inv.Owner.HasPassword {
			t.Errorf("invite %+v", inv)
		}
		token := strings.TrimPrefix(inv.Link, "https://ip.example.net/account/password#token=")
		wantAdminError(t, e.console(t, b, "POST", "/admin/accounts/999999/invites", `{"email":"x@example.com"}`), 404, CodeNotFound)
		wantAdminError(t, e.console(t, b, "POST", "/admin/accounts/"+id+"/invites", `{"email":""}`), 400, CodeInvalidRequest)

		// The owner follows the link: a weak password is refused and
		// the link still works; then the owner is signed in.
		r = e.do(t, req{method: "POST", path: "/account/api/password", body: `{"token":"` + token + `","password":"short"}`})
		wantAdminError(t, r, 400, CodeWeakPassword)
		r = e.do(t, req{method: "POST", path: "/account/api/password", body: `{"token":"` + token + `","password":"` + testPassword + `"}`})
		if r.Code != 200 {
			t.Fatalf("set password: %d %s", r.Code, r.Body)
		}
		// A first password can end no other session, and says so.
		if si := decode[SignedIn](t, r); si.SignedOut != 0 || !strings.Contains(r.Body.String(), `"signed_out":0`) {
			t.Errorf("first password: %s, want signed_out 0", r.Body)
		}
		cookieOf(t, r.Header(), ownerCookie)
		wantAdminError(t, e.do(t, req{method: "POST", path: "/account/api/password", body: `{"token":"` + token + `","password":"` + testPassword + `"}`}), 400, CodeBadToken)

		ol := decode[OwnerList](t, e.console(t, b, "GET", "/admin/accounts/"+id+"/owners", ""))
		if len(ol.Owners) != 1 || !ol.Owners[0].HasPassword {
			t.Fatalf("owners: %+v", ol)
		}
		r = e.console(t, b, "POST", "/admin/owners/"+strconv.FormatInt(ol.Owners[0].ID, 10)+"/reset", "")
		reset := decode[OwnerLink](t, r).Link
		if r.Code != http.StatusCreated || !strings.Contains(reset, "#token=") {
			t.Errorf("reset link: %d %s", r.Code, r.Body)
		}
		// The reset ends the session the first password opened.
		_, resetToken, _ := strings.Cut(reset, "#token=")
		r = e.do(t, req{method: "POST", path: "/account/api/password", body: `{"token":"` + resetToken + `","password":"` + testPassword + `"}`})
		if si := decode[SignedIn](t, r); r.Code != 200 || si.SignedOut != 1 {
			t.Errorf("reset: %d %s, want signed_out 1", r.Code, r.Body)
		}
		wantAdminError(t, e.console(t, b, "POST", "/admin/owners/999999/reset", ""), 404, CodeNotFound)

		// Search and top.
		l := decode[SummaryList](t, e.console(t, b, "GET", "/admin/accounts?q=console", ""))
		if len(l.Accounts) != 1 || l.Accounts[0].ID != a.ID || l.Accounts[0].Period != "2026-11" {
			t.Errorf("search: %+v", l)
		}
		if l := decode[SummaryList](t, e.console(t, b, "GET", "/admin/accounts?q=boss@example.com", "")); len(l.Accounts) != 1 {
			t.Errorf("search by owner email: %+v", l)
		}
		if top := decode[TopList](t, e.console(t, b, "GET", "/admin/top?n=5", "")); top.Period != "2026-11" {
			t.Errorf("top: %+v", top)
		}
		wantAdminError(t, e.console(t, b, "GET", "/admin/top?n=0", ""), 400, CodeInvalidRequest)

		// Signing out ends the cookie's power.
		if r := e.console(t, b, "DELETE", "/admin/session", ""); r.Code != http.StatusNoContent {
			t.Fatalf("sign out: %d %s", r.Code, r.Body)
		}
		wantAdminError(t, e.console(t, b, "GET", "/admin/accounts", ""), http.StatusUnauthorized, CodeUnauthorized)
		wantAdminError(t, e.console(t, b, "GET", "/admin/session", ""), http.StatusUnauthorized, CodeUnauthorized)

		for name, secret := range map[string]string{"the console cookie": b.cookie, "the CSRF token": b.csrf, "the link's token": token, "the password": testPassword} {
			if strings.Contains(e.logs.String(), secret) {
				t.Errorf("the log holds %s", name)
			}
		}
	})
}

func TestConsoleSessionExpiry(t *testing.T) {
	e := newPortalEnv(t, "", nil)
	b := e.consoleSignIn(t)
	e.clk.Advance(29 * time.Minute)
	if r := e.console(t, b, "GET", "/admin/accounts", ""); r.Code != 200 {
		t.Fatalf("within 30 minutes: %d %s", r.Code, r.Body)
	}
	e.clk.Advance(31 * time.Minute)
	wantAdminError(t, e.console(t, b, "GET", "/admin/accounts", ""), http.StatusUnauthorized, CodeUnauthorized)
	// A portal cookie is no console cookie, and the reverse.
	_, email := e.owner(t, "Mixed")
	ob := e.signIn(t, email)
	wantAdminError(t, e.doAdmin(t, req{method: "GET", path: "/admin/accounts", header: map[string]string{"Cookie": consoleCookie + "=" + ob.cookie}}), http.StatusUnauthorized, CodeUnauthorized)
	cb := e.consoleSignIn(t)
	wantAdminError(t, e.call(t, &browser{cookie: cb.cookie, csrf: cb.csrf}, "GET", "/account/api/me", ""), http.StatusUnauthorized, CodeUnauthorized)
}

// TestSessionAcrossReplicas signs in on one server and uses the cookie on
// another that shares the PostgreSQL schema, as replicas behind a load
// balancer do.
func TestSessionAcrossReplicas(t *testing.T) {
	pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	clk := &clock{t: portalStart}
	one := newPortalEnv(t, schema, clk)
	two := newPortalEnv(t, schema, clk)
	_, email := one.owner(t, "Replicated")
	b := one.signIn(t, email)
	if r := two.call(t, b, "POST", "/account/api/keys", `{"label":"from two"}`); r.Code != http.StatusCreated {
		t.Fatalf("the session on the second server: %d %s", r.Code, r.Body)
	}
	if r := one.call(t, b, "POST", "/account/api/signout", ""); r.Code != http.StatusNoContent {
		t.Fatal(r.Code)
	}
	wantAdminError(t, two.call(t, b, "GET", "/account/api/me", ""), http.StatusUnauthorized, CodeUnauthorized)

	cb := one.consoleSignIn(t)
	if r := two.console(t, cb, "GET", "/admin/accounts", ""); r.Code != 200 {
		t.Errorf("the console session on the second server: %d %s", r.Code, r.Body)
	}
}

// TestSecureCookie checks the Secure attribute on real connections: over
// TLS, and behind a trusted proxy that says the browser used HTTPS.
func TestSecureCookie(t *testing.T) {
	e := newPortalEnv(t, "", nil, func(c *Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	})
	_, email := e.owner(t, "Secure")
	body := `{"email":"` + email + `","password":"` + testPassword + `"}`

	signin := func(t *testing.T, srv *httptest.Server, header map[string]string) *http.Cookie {
		t.Helper()
		rq, _ := http.NewRequest("POST", srv.URL+"/account/api/signin", strings.NewReader(body))
		rq.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			rq.Header.Set(k, v)
		}
		res, err := srv.Client().Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("sign in: %d", res.StatusCode)
		}
		return cookieOf(t, res.Header, ownerCookie)
	}

	tlsSrv := httptest.NewTLSServer(e.pub)
	defer tlsSrv.Close()
	if c := signin(t, tlsSrv, nil); !c.Secure {
		t.Errorf("over TLS: %+v", c)
	}
	plain := httptest.NewServer(e.pub)
	defer plain.Close()
	for _, tc := range []struct {
		header map[string]string
		secure bool
	}{
		{nil, false},
		{map[string]string{"X-Forwarded-Proto": "https"}, true},
		{map[string]string{"X-Forwarded-Proto": "http"}, false},
		{map[string]string{"Forwarded": "for=198.51.100.1;proto=https"}, true},
		{map[string]string{"Forwarded": "for=198.51.100.1;proto=http"}, false},
	} {
		if c := signin(t, plain, tc.header); c.Secure != tc.secure {
			t.Errorf("through the trusted proxy with %v: Secure %v, want %v", tc.header, c.Secure, tc.secure)
		}
	}

	// Nobody else's word counts.
	untrusted := newPortalEnv(t, "", nil)
	_, email2 := untrusted.owner(t, "Untrusted")
	r := untrusted.do(t, req{method: "POST", path: "/account/api/signin", body: `{"email":"` + email2 + `","password":"` + testPassword + `"}`,
		header: map[string]string{"X-Forwarded-Proto": "https", "Forwarded": "proto=https"}})
	if c := cookieOf(t, r.Header(), ownerCookie); c.Secure {
		t.Errorf("an untrusted peer's X-Forwarded-Proto made the cookie Secure")
	}

	// The console's cookie follows the same rule.
	adminTLS := httptest.NewTLSServer(e.admin)
	defer adminTLS.Close()
	rq, _ := http.NewRequest("POST", adminTLS.URL+"/admin/session", nil)
	rq.Header.Set("Authorization", bearerAdmin)
	res, err := adminTLS.Client().Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if c := cookieOf(t, res.Header, consoleCookie); !c.Secure {
		t.Errorf("console cookie over TLS: %+v", c)
	}
}
