package server

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/prometheus/client_golang/prometheus"
)

// checkSecurityHeaders asserts the headers every answer carries; origin
// says whether the request carried an Origin header.
func checkSecurityHeaders(t *testing.T, h http.Header, admin, origin bool) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Content-Type-Options":  "nosniff",
		"Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
		// Documents only (internal/web); the quota headers have one spelling.
		"X-Frame-Options":       "",
		"X-RateLimit-Limit":     "",
		"X-RateLimit-Remaining": "",
		"X-RateLimit-Reset":     "",
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if admin {
		if got := h.Get("Cache-Control"); got != "no-store" {
			t.Errorf("admin Cache-Control = %q", got)
		}
		for name := range h {
			if strings.HasPrefix(name, "Access-Control-") {
				t.Errorf("the admin listener answers CORS: %s", name)
			}
		}
		return
	}
	if got := h.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin = %q", got)
	}
	expose := h.Get("Access-Control-Expose-Headers")
	if !origin && expose != "" {
		t.Errorf("Access-Control-Expose-Headers %q without an Origin to expose them to", expose)
	}
	if origin {
		for _, want := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"} {
			if !strings.Contains(expose, want) {
				t.Errorf("Access-Control-Expose-Headers %q lacks %s", expose, want)
			}
		}
	}
	// Exposure depends on Origin, which is safe only if no cache keeps an
	// answer carrying the headers exposed.
	for _, name := range []string{"RateLimit-Limit", "Retry-After"} {
		if h.Get(name) != "" && h.Get("Cache-Control") != "no-store" {
			t.Errorf("an answer with %s may be cached: Cache-Control %q", name, h.Get("Cache-Control"))
		}
	}
	if h.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("credentials allowed")
	}
}

// TestSecurityHeaders checks every kind of answer of both handlers,
// failures included.
func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AddrRate, c.AddrBurst, c.KeyRate, c.KeyBurst = 1, 1, 1, 1 })
	_, k := e.customer(t, account.Pro, 0, 10)
	origin := map[string]string{"Origin": "https://page.example"}
	for _, tc := range []struct {
		q      req
		status int
		auth   bool // the request carries Authorization: no-store
	}{
		{req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"8.8.8.8"}`, header: origin}, 200, true},
		{req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"8.8.8.8"}`, header: origin}, 429, true}, // burst
		{req{method: "POST", path: "/api/ip-query", key: "nope", body: `{"ip":"8.8.8.8"}`}, 401, true},
		{req{method: "POST", path: "/api/ip-query", body: `{"ip":`}, 400, false},
		{req{method: "GET", path: "/api/usage", key: "nope"}, 401, true},
		{req{method: "GET", path: "/api/ip/myip", header: origin}, 200, false},
		{req{method: "GET", path: "/api/ip/myip"}, 429, false},
		{req{method: "GET", path: "/ipv4", remote: "198.51.100.1:1"}, 200, false},
		{req{method: "GET", path: "/ipv6", remote: "198.51.100.2:1"}, 421, false},
		{req{method: "GET", path: "/openapi.yaml"}, 200, false},
		{req{method: "GET", path: "/nope"}, 404, false},
		{req{method: "DELETE", path: "/api/ping"}, 405, false},
	} {
		t.Run(fmt.Sprintf("%s %s %d", tc.q.method, tc.q.path, tc.status), func(t *testing.T) {
			r := e.do(t, tc.q)
			if r.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Code, tc.status, r.Body)
			}
			checkSecurityHeaders(t, r.Header(), false, tc.q.header["Origin"] != "")
			if tc.auth && r.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("an answer to a request with a key may be cached: %q", r.Header().Get("Cache-Control"))
			}
		})
	}
	for _, tc := range []struct {
		path, auth string
		status     int
	}{
		{"/healthz", "", 200},
		{"/metrics", "", 200},
		{"/admin/accounts", "", 401},
		{"/admin/accounts", bearerAdmin, 200},
		{"/admin/nope", bearerAdmin, 404},
		{"/debug/pprof/", bearerAdmin, 200},
	} {
		t.Run("admin "+tc.path, func(t *testing.T) {
			r := e.doAdmin(t, req{method: "GET", path: tc.path, header: map[string]string{"Authorization": tc.auth, "Origin": "https://page.example"}})
			if r.Code != tc.status {
				t.Fatalf("status %d, want %d", r.Code, tc.status)
			}
			checkSecurityHeaders(t, r.Header(), true, true)
		})
	}

	t.Run("after a panic", func(t *testing.T) {
		h := e.srv.instrument(oneRoute(e.srv, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Half-Done", "1")
			panic("boom")
		}), false)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code != 500 || w.Header().Get("X-Half-Done") != "" {
			t.Fatalf("%d %v", w.Code, w.Header())
		}
		checkSecurityHeaders(t, w.Header(), false, false)
	})

	t.Run("a route may set its own policy", func(t *testing.T) {
		const pageCSP = "default-src 'self'; img-src 'self' data:"
		h := e.srv.instrument(oneRoute(e.srv, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", pageCSP)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<!doctype html><title>page</title>"))
		}), false)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if got := w.Header().Values("Content-Security-Policy"); !slices.Equal(got, []string{pageCSP}) {
			t.Errorf("Content-Security-Policy %q, want the route's only", got)
		}
	})
}

// TestCORS: a page of any origin can ask the free endpoints and, after a
// preflight, the query with a key; the admin listener answers no CORS.
func TestCORS(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 10)
	preflight := func(admin bool, path, method, headers string) *httptest.ResponseRecorder {
		h := e.pub
		if admin {
			h = e.admin
		}
		r := httptest.NewRequest("OPTIONS", "http://example.com"+path, nil)
		r.RemoteAddr = testPeer
		r.Header.Set("Origin", "https://page.example")
		r.Header.Set("Access-Control-Request-Method", method)
		if headers != "" {
			r.Header.Set("Access-Control-Request-Headers", headers)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		// The batch's section of the document is another change's; its
		// preflight is checked by the assertions below only.
		if !admin && w.Code == http.StatusNoContent && path != "/api/ip-query/batch" {
			checkDoc(t, publicSpec(t), r, w)
		}
		return w
	}
	for _, tc := range []struct{ path, method, allow string }{
		{"/api/ip-query", "POST", "POST"},
		{"/api/ip-query/batch", "POST", "POST"},
		{"/api/usage", "GET", "GET, HEAD"},
		{"/api/ip/myip", "GET", "GET, HEAD"},
		{"/api/ping", "GET", "GET, HEAD"},
		{"/ipv4", "GET", "GET, HEAD"},
		{"/ipv6", "GET", "GET, HEAD"},
	} {
		w := preflight(false, tc.path, tc.method, "authorization, content-type")
		if w.Code != http.StatusNoContent {
			t.Errorf("preflight %s: %d", tc.path, w.Code)
			continue
		}
		h := w.Header()
		if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Allow-Methods") != tc.allow ||
			h.Get("Access-Control-Max-Age") == "" || h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("preflight %s: %v", tc.path, h)
		}
		allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
		for _, want := range []string{"authorization", "content-type"} {
			if !strings.Contains(allowed, want) {
				t.Errorf("preflight %s: %s not allowed (%q)", tc.path, want, allowed)
			}
		}
		if w.Body.Len() != 0 {
			t.Errorf("preflight %s has a body", tc.path)
		}
	}
	// Unknown paths are not preflighted; OPTIONS that is not a preflight
	// is a method like any other.
	if w := preflight(false, "/nope", "POST", ""); w.Code != http.StatusNotFound {
		t.Errorf("preflight of an unknown path: %d", w.Code)
	}
	if r := e.do(t, req{method: "OPTIONS", path: "/api/ip-query"}); r.Code != http.StatusMethodNotAllowed {
		t.Errorf("plain OPTIONS: %d", r.Code)
	}
	// The request that follows: readable, with the quota headers exposed.
	r := e.do(t, req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"8.8.8.8"}`,
		header: map[string]string{"Origin": "https://page.example"}})
	if r.Code != 200 {
		t.Fatal(r.Code)
	}
	checkSecurityHeaders(t, r.Header(), false, true)

	// The admin listener: no preflight, no CORS headers on anything.
	for _, path := range []string{"/admin/accounts", "/healthz", "/metrics"} {
		w := preflight(true, path, "GET", "authorization")
		if w.Code == http.StatusNoContent || w.Code == http.StatusOK {
			t.Errorf("admin preflight %s: %d", path, w.Code)
		}
		checkSecurityHeaders(t, w.Header(), true, true)
	}
}

// TestKeysHashedAtRest creates keys through the admin API, rotates one,
// revokes one, uses them, and then reads the raw bytes of the SQLite
// database and its WAL: no secret (nor its random part) is there, while
// each key's SHA-256 is, which shows that the scan looks at the right bytes.
func TestKeysHashedAtRest(t *testing.T) {
	e := newEnv(t)
	var secrets []string
	var hashes [][]byte
	r := e.adminCall(t, "POST", "/admin/accounts", `{"name":"acme","tier":"pro"}`)
	acct := decode[account.Account](t, r)
	for range 3 {
		nk := decode[account.NewKey](t, e.adminCall(t, "POST", fmt.Sprintf("/admin/accounts/%d/keys", acct.ID), ""))
		secrets = append(secrets, nk.Secret)
	}
	first, _ := account.ParseSecret(secrets[0])
	rot := decode[account.NewKey](t, e.adminCall(t, "POST", "/admin/keys/"+first+"/rotate", ""))
	secrets = append(secrets, rot.Secret)
	second, _ := account.ParseSecret(secrets[1])
	e.adminCall(t, "POST", "/admin/keys/"+second+"/revoke", "")
	for _, s := range secrets {
		e.query(t, s, `{"ip":"8.8.8.8"}`)
		hashes = append(hashes, account.HashSecret(s))
	}
	// The current keys' hashes: the rotated-away and live ones.
	live := [][]byte{hashes[1], hashes[2], hashes[3]}

	path := e.store.Path()
	scan := func(when string) {
		var all []byte
		files := 0
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			b, err := os.ReadFile(path + suffix)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			files++
			all = append(all, b...)
		}
		if files == 0 || len(all) == 0 {
			t.Fatalf("%s: no database bytes at %s", when, path)
		}
		for _, s := range secrets {
			tail := s[strings.LastIndexByte(s, '_')+1:]
			for _, needle := range []string{s, tail, tail[:16], tail[len(tail)-16:]} {
				if bytes.Contains(all, []byte(needle)) {
					t.Errorf("%s: the database holds %q of a secret", when, needle)
				}
			}
		}
		for i, h := range live {
			if !bytes.Contains(all, h) {
				t.Errorf("%s: the hash of live key %d is not in the scanned bytes; the scan looks in the wrong place", when, i)
			}
		}
	}
	scan("open")
	e.meter.Close(t.Context())
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	scan("closed") // the WAL checkpointed into the main file
}

// TestWrongSecretRejected exercises the key check from outside: every
// single-character change of a real secret, a truncation and an extension
// are refused, before and after the key is cached, and the answers are
// identical whether the key's ID exists or not, so the answer tells a
// guesser nothing. (account.Service compares SHA-256 hashes with
// crypto/subtle.ConstantTimeCompare; the hashes have a fixed length, so
// the comparison takes the same time for every wrong secret.)
func TestWrongSecretRejected(t *testing.T) {
	e := newEnv(t, func(c *Config) { // the backoff is on, not reached
		c.AuthFailures, c.AuthFailureWindow, c.AuthMaxBackoff = 1000, DefaultAuthFailureWindow, DefaultAuthMaxBackoff
	})
	_, k := e.customer(t, account.Pro, 0, 100)
	sep := strings.LastIndexByte(k.Secret, '_')
	variants := func() []string {
		var out []string
		for _, i := range []int{sep + 1, sep + 2, (sep + len(k.Secret)) / 2, len(k.Secret) - 1} {
			b := []byte(k.Secret)
			if b[i] == 'A' {
				b[i] = 'B'
			} else {
				b[i] = 'A'
			}
			out = append(out, string(b))
		}
		return append(out, k.Secret[:len(k.Secret)-1], k.Secret+"A", strings.ToUpper(k.Secret), k.Secret+" x")
	}()
	anon := ipatlas.Meta{IsAPIRequest: true}
	try := func(when string) {
		for _, v := range variants {
			checkFailure(t, e.query(t, v, `{"ip":"8.8.8.8"}`), ipatlas.CodeInvalidAPIKey, "Invalid or missing API key", anon)
		}
	}
	try("cold")
	if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
		t.Fatalf("the real key: %d", r.Code)
	}
	try("cached")

	// An existing ID with a wrong secret and an unknown ID get byte-for-byte
	// the same answer.
	answer := func(key string) string {
		r := e.query(t, key, `{"ip":"8.8.8.8"}`)
		h := r.Header().Clone()
		h.Del("Date")
		var b strings.Builder
		h.Write(&b)
		return fmt.Sprintf("%d\n%s\n%s", r.Code, b.String(), r.Body)
	}
	unknownID := "ipa_" + strings.Repeat("Z", account.KeyIDLen) + k.Secret[sep:]
	if a, b := answer(variants[0]), answer(unknownID); a != b {
		t.Errorf("answers differ for a known and an unknown ID:\n%s\n---\n%s", a, b)
	}
}

// TestNoSecretsInLogs runs a full session through both handlers, with the
// logger at Debug and every access line on, including the limits' answers,
// the admin API creating, rotating and revoking keys, and failures of
// every kind; then it scans every log line for the secrets, their random
// parts, the admin token and any Authorization header.
func TestNoSecretsInLogs(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.KeyRate, c.KeyBurst = 1, 2
		c.AddrRate, c.AddrBurst = 1, 2
		c.AuthFailures, c.AuthFailureWindow, c.AuthMaxBackoff = 2, DefaultAuthFailureWindow, DefaultAuthMaxBackoff
	})
	acct := decode[account.Account](t, e.adminCall(t, "POST", "/admin/accounts", `{"name":"acme","tier":"pro"}`))
	var secrets []string
	for range 2 {
		nk := decode[account.NewKey](t, e.adminCall(t, "POST", fmt.Sprintf("/admin/accounts/%d/keys", acct.ID), ""))
		secrets = append(secrets, nk.Secret)
	}
	id1, _ := account.ParseSecret(secrets[1])
	rot := decode[account.NewKey](t, e.adminCall(t, "POST", "/admin/keys/"+id1+"/rotate", ""))
	secrets = append(secrets, rot.Secret)
	e.adminCall(t, "POST", "/admin/keys/"+id1+"/revoke", "")
	unknown := "ipa_" + strings.Repeat("Q", account.KeyIDLen) + "_" + strings.Repeat("w", 43)
	secrets = append(secrets, unknown, "garbage-key-"+strings.Repeat("v", 20))

	pub := func(q req) {
		r := newRequest(q)
		e.pub.ServeHTTP(httptest.NewRecorder(), r)
	}
	for i, s := range secrets {
		remote := fmt.Sprintf("198.51.100.%d:1", 10+i)
		for _, body := range []string{`{"ip":"8.8.8.8"}`, `{"ip":"10.0.0.1"}`, `{"ip":"` + s + `"}`, `{"ip":`, `{"ips":["8.8.8.8","` + s + `"]}`} {
			pub(req{method: "POST", path: "/api/ip-query", key: s, body: body, remote: remote})
			pub(req{method: "POST", path: "/api/ip-query/batch", key: s, body: body, remote: remote})
		}
		pub(req{method: "GET", path: "/api/usage", key: s, remote: remote})
		pub(req{method: "GET", path: "/api/usage?key=" + s, remote: remote})
		if strings.HasPrefix(s, "ipa_") {
			// A key pasted into the path: the log keeps its ID only.
			pub(req{method: "POST", path: "/api/ip-query/" + s, key: s, body: `{}`, remote: remote})
		}
		pub(req{method: "GET", path: "/api/ip/myip", key: s, remote: remote})
		pub(req{method: "POST", path: "/api/ip-query", body: `{"ip":"8.8.8.8"}`, remote: remote,
			header: map[string]string{"Authorization": "bearer " + s}})
		pub(req{method: "POST", path: "/api/ip-query", body: `{"ip":"8.8.8.8"}`, remote: remote,
			header: map[string]string{"Authorization": "Basic " + s, "X-Api-Key": s, "Cookie": "key=" + s}})
		two := newRequest(req{method: "POST", path: "/api/ip-query", key: s, body: `{"ip":"8.8.8.8"}`, remote: remote})
		two.Header.Add("Authorization", "Bearer "+s)
		e.pub.ServeHTTP(httptest.NewRecorder(), two)
	}
	for range 3 { // the address limit
		pub(req{method: "GET", path: "/ipv4", key: secrets[0]})
	}
	for _, auth := range []string{bearerAdmin, "Bearer " + testAdminToken + "x", "Basic " + testAdminToken, ""} {
		for _, path := range []string{"/admin/accounts", "/admin/keys/" + id1, "/debug/pprof/cmdline", "/metrics"} {
			e.doAdmin(t, req{method: "GET", path: path, header: map[string]string{"Authorization": auth}})
		}
	}
	secrets = append(secrets, testAdminToken)

	logs := e.logs.String()
	if strings.Count(logs, `"msg":"request"`) < 100 {
		t.Fatalf("only %d request lines: the run did not log", strings.Count(logs, `"msg":"request"`))
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the log holds the secret %q", s)
		}
		if i := strings.LastIndexByte(s, '_'); i > 0 && strings.Contains(logs, s[i+1:]) {
			t.Errorf("the log holds the random part of %q", s)
		}
	}
	if regexp.MustCompile(`(?i)bearer|authorization|basic `).MatchString(logs) {
		t.Errorf("the log mentions an Authorization header")
	}
	// The log is still useful: every line is JSON, and the limits'
	// refusals are there with their code.
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("not a JSON line: %q", line)
		}
	}
	for _, want := range []string{`"code":"RateLimitExceeded"`, `"code":"InvalidAPIKey"`, "client slowed down after invalid API keys",
		`"path":"/api/ip-query/ipa_` + strings.Repeat("Q", account.KeyIDLen) + `_REDACTED"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}

// TestAdminNotOnPublicHandler: the admin API, metrics, health and pprof
// are not served by the public handler, whatever the token; on the admin
// handler the protected parts need the token.
func TestAdminNotOnPublicHandler(t *testing.T) {
	e := newEnv(t)
	paths := []struct{ method, path string }{
		{"GET", "/admin/accounts"}, {"POST", "/admin/accounts"}, {"GET", "/admin/accounts/1"},
		{"POST", "/admin/accounts/1/keys"}, {"POST", "/admin/keys/x/revoke"}, {"GET", "/admin"},
		{"GET", "/metrics"}, {"GET", "/healthz"}, {"GET", "/readyz"},
		{"GET", "/debug/pprof/"}, {"GET", "/debug/pprof/cmdline"}, {"GET", "/debug/pprof/heap"},
	}
	for _, p := range paths {
		for _, auth := range []string{"", bearerAdmin} {
			r := e.do(t, req{method: p.method, path: p.path, body: `{"name":"x","tier":"free"}`, header: map[string]string{"Authorization": auth}})
			checkFailure(t, r, ipatlas.CodeNotFound, "Not found", ipatlas.Meta{IsAPIRequest: true})
		}
	}
	if as, _ := e.svc.Accounts(t.Context()); len(as) != 0 {
		t.Errorf("the public handler created accounts: %+v", as)
	}
	// Each from its own address: wrong tokens from one address are
	// limited (TestAdminTokenLimit).
	n := 0
	for _, p := range paths {
		if !protected(p.path) {
			continue
		}
		for _, auth := range []string{"", "Bearer x", "Bearer " + testAdminToken[:len(testAdminToken)-1] + "X"} {
			n++
			remote := "198.51.100." + strconv.Itoa(n) + ":1000"
			r := e.doAdmin(t, req{method: p.method, path: p.path, body: `{"name":"x","tier":"free"}`, header: map[string]string{"Authorization": auth}, remote: remote})
			wantAdminError(t, r, http.StatusUnauthorized, "Unauthorized")
		}
	}
	if r := e.doAdmin(t, req{method: "GET", path: "/admin/accounts", header: map[string]string{"Authorization": bearerAdmin}}); r.Code != 200 {
		t.Errorf("with the token: %d", r.Code)
	}
}

func TestLogPath(t *testing.T) {
	for in, want := range map[string]string{
		"/api/ip-query": "/api/ip-query",
		"/x/ipa_ABCDEFGHIJKL_" + strings.Repeat("s", 43): "/x/ipa_ABCDEFGHIJKL_REDACTED",
		"/ipa_ABCDEFGHIJKL":                    "/ipa_ABCDEFGHIJKL",
		"/ipa_short/ipa_ABCDEFGHIJKLmore/tail": "/ipa_short/ipa_ABCDEFGHIJKL_REDACTED/tail",
		"/ipa_":                                "/ipa_",
		"ipa_ipa_ipa_":                         "ipa_ipa_ipa_",
	} {
		if got := logPath(in); got != want {
			t.Errorf("logPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestQueryHeaderKeys holds a metered answer, a success or a client's
// mistake after the key was accepted, of the location query and of its GET
// form, to the 8 header keys a Go map keeps in its first group
// (security.go), over a real net/http server: what the client receives,
// less Date and Content-Length, which net/http writes without the map. The
// requests have no Origin, as most clients' have none.
func TestQueryHeaderKeys(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 10)
	srv := httptest.NewServer(e.pub)
	defer srv.Close()
	ip := geotest.Places[0].IP
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/api/ip-query", `{"ip":"` + ip + `"}`, http.StatusOK},
		{"POST", "/api/ip-query", `{"ip":"10.0.0.1"}`, http.StatusBadRequest},
		{"GET", "/api/lookup/" + ip, "", http.StatusOK},
		{"GET", "/api/lookup/10.0.0.1", "", http.StatusBadRequest},
	} {
		name := tc.method + " " + tc.path + " " + tc.body
		r, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		r.Header.Set("Authorization", "Bearer "+k.Secret)
		res, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Fatalf("%s: status %d, want %d", name, res.StatusCode, tc.status)
		}
		var keys []string
		for key := range res.Header {
			if key != "Date" && key != "Content-Length" {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
		if len(keys) > 8 {
			t.Errorf("%s: %d header keys, more than a map's first group of 8: %v", name, len(keys), keys)
		}
		for _, h := range []string{"Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset", "Cache-Control", "Content-Type"} {
			if !slices.Contains(keys, h) {
				t.Errorf("%s: no %s among %v", name, h, keys)
			}
		}
	}
}

// oneRoute is a router that answers every request with h.
func oneRoute(s *Server, h http.HandlerFunc) *router {
	rt := newRouter(s)
	rt.mount(routeTable{routes: []route{{pattern: "/", h: serveHTTP(h)}}, render: s.renderAPI})
	rt.finish(area{match: anyPath, render: s.renderAPI})
	return rt
}

// TestRateHeadersAllocs holds the quota headers of a metered answer to
// one allocation: the digits and the three values share one block.
func TestRateHeadersAllocs(t *testing.T) {
	s := &Server{now: time.Now}
	w := httptest.NewRecorder()
	reset := time.Now().Add(90 * time.Second)
	if n := testing.AllocsPerRun(200, func() { s.rateHeaders(w, 1_000_000, 999_999, reset) }); n != 1 {
		t.Errorf("rateHeaders: %v allocations, want 1", n)
	}
	h := w.Header()
	if h.Get("RateLimit-Limit") != "1000000" || h.Get("RateLimit-Remaining") != "999999" || h.Get("RateLimit-Reset") != "90" {
		t.Errorf("headers %v", h)
	}
	// The largest values fit the block.
	s.rateHeaders(w, math.MaxInt64, math.MinInt64, reset)
	if h.Get("RateLimit-Limit") != "9223372036854775807" || h.Get("RateLimit-Remaining") != "-9223372036854775808" {
		t.Errorf("headers %v", h)
	}
}

// TestRequestSeriesAllocs holds a request's metrics, once its series
// exist, to no allocation and to the same series as the vectors' own.
func TestRequestSeriesAllocs(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	m.request("GET /api/lookup/{ip}", "GET", 200, 0.001)
	if n := testing.AllocsPerRun(200, func() { m.request("GET /api/lookup/{ip}", "GET", 200, 0.001) }); n != 0 {
		t.Errorf("request: %v allocations, want 0", n)
	}
	m.request("GET /api/lookup/{ip}", "GET", 429, 0.001)
	if got := counterValue(m.requests.WithLabelValues("GET /api/lookup/{ip}", "GET", "200")); got != 202 {
		t.Errorf("requests with 200: %v, want 202", got)
	}
	if got := counterValue(m.requests.WithLabelValues("GET /api/lookup/{ip}", "GET", "429")); got != 1 {
		t.Errorf("requests with 429: %v, want 1", got)
	}
}

// Answers over TLS that the server terminates carry Strict-Transport-
// Security with the configured max-age, whatever the route or status;
// answers over plain HTTP never do, nor any answer with HSTSMaxAge 0.
func TestHSTS(t *testing.T) {
	paths := []req{
		{method: "GET", path: "/api/ping"},
		{method: "GET", path: "/"},
		{method: "GET", path: "/nope"},
		{method: "POST", path: "/api/ip-query", key: "nope", body: `{"ip":"8.8.8.8"}`},
		{method: "GET", path: "/account"},
	}
	serve := func(e *env, q req, overTLS bool) http.Header {
		r := newRequest(q)
		if overTLS {
			r.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true}
		}
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		return w.Result().Header
	}
	on := newEnv(t, func(c *Config) { c.HSTSMaxAge = 365 * 24 * time.Hour })
	off := newEnv(t)
	for _, q := range paths {
		if got := serve(on, q, true).Values("Strict-Transport-Security"); len(got) != 1 || got[0] != "max-age=31536000" {
			t.Errorf("%s %s over TLS: Strict-Transport-Security %q, want max-age=31536000", q.method, q.path, got)
		}
		if got := serve(on, q, false).Get("Strict-Transport-Security"); got != "" {
			t.Errorf("%s %s over plain HTTP: Strict-Transport-Security %q", q.method, q.path, got)
		}
		if got := serve(off, q, true).Get("Strict-Transport-Security"); got != "" {
			t.Errorf("%s %s with HSTSMaxAge 0: Strict-Transport-Security %q", q.method, q.path, got)
		}
	}
	if _, err := New(Config{HSTSMaxAge: -time.Second}, Deps{Geo: off.srv.deps.Geo}); err == nil || !strings.Contains(err.Error(), "HSTSMaxAge") {
		t.Errorf("a negative HSTSMaxAge: %v", err)
	}
}
