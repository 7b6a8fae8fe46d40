package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

const bearerAdmin = "Bearer " + testAdminToken

// admin sends an authorized request to the admin handler.
func (e *env) adminCall(t *testing.T, method, path, body string) resp {
	t.Helper()
	return e.doAdmin(t, req{method: method, path: path, body: body, header: map[string]string{"Authorization": bearerAdmin}})
}

func decode[T any](t *testing.T, r resp) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(r.Body.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %T from %s: %v", v, r.Body, err)
	}
	return v
}

func wantAdminError(t *testing.T, r resp, status int, code Code) {
	t.Helper()
	if r.Code != status {
		t.Errorf("status %d, want %d: %s", r.Code, status, r.Body)
	}
	if e := decode[AdminError](t, r); e.Code != code || e.Error == "" {
		t.Errorf("error body %+v, want code %s", e, code)
	}
}

func TestAdminAuth(t *testing.T) {
	// Without the limit on wrong tokens per address (off unless set),
	// which TestAdminTokenLimit tests: here every wrong token is a 401.
	e := newEnv(t)
	for _, tc := range []struct {
		name, auth string
	}{
		{"none", ""},
		{"wrong", "Bearer wrong"},
		{"prefix of the token", "Bearer " + testAdminToken[:10]},
		{"token plus more", bearerAdmin + "x"},
		{"basic", "Basic " + testAdminToken},
		{"empty bearer", "Bearer "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []struct{ method, path string }{
				{"GET", "/admin/accounts"}, {"POST", "/admin/accounts"}, {"GET", "/admin/accounts/1"},
				{"POST", "/admin/keys/x/rotate"}, {"GET", "/debug/pprof/"}, {"GET", "/debug/pprof/cmdline"},
				{"GET", "/admin/nope"}, {"DELETE", "/admin/accounts"},
			} {
				r := e.doAdmin(t, req{method: p.method, path: p.path, body: `{"name":"x","tier":"free"}`, header: map[string]string{"Authorization": tc.auth}})
				wantAdminError(t, r, http.StatusUnauthorized, CodeUnauthorized)
				if strings.Contains(r.Body.String(), testAdminToken) {
					t.Errorf("answer echoes the token")
				}
			}
		})
	}
	// Nothing was created by the refused requests.
	if as, _ := e.svc.Accounts(t.Context()); len(as) != 0 {
		t.Errorf("accounts after refused requests: %+v", as)
	}

	t.Run("no token configured", func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.AdminToken = "" })
		for _, auth := range []string{"", "Bearer ", "Bearer x"} {
			r := e.doAdmin(t, req{method: "GET", path: "/admin/accounts", header: map[string]string{"Authorization": auth}})
			wantAdminError(t, r, http.StatusUnauthorized, CodeUnauthorized)
		}
		// The open endpoints stay open.
		if r := e.doAdmin(t, req{method: "GET", path: "/healthz"}); r.Code != 200 {
			t.Errorf("/healthz: %d", r.Code)
		}
	})
}

func TestAdminAccounts(t *testing.T) {
	e := newEnv(t)

	r := e.adminCall(t, "POST", "/admin/accounts", `{"name":" Acme ","tier":"free"}`)
	if r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	a := decode[account.Account](t, r)
	if a.ID <= 0 || a.Name != "Acme" || a.Tier != account.Free || a.MonthlyLimit != account.FreeMonthlyLimit || a.Credits != account.FreeMonthlyLimit {
		t.Errorf("created %+v", a)
	}
	if loc := r.Header().Get("Location"); loc != "/admin/accounts/"+strconv.FormatInt(a.ID, 10) {
		t.Errorf("Location %q", loc)
	}
	path := "/admin/accounts/" + strconv.FormatInt(a.ID, 10)

	r = e.adminCall(t, "POST", "/admin/accounts", `{"name":"Big","tier":"enterprise","monthly_limit":50000,"credits":7}`)
	big := decode[account.Account](t, r)
	if r.Code != 201 || big.MonthlyLimit != 50000 || big.CustomLimit != 50000 || big.Credits != 7 {
		t.Errorf("create enterprise: %d %+v", r.Code, big)
	}

	for _, tc := range []struct {
		name, body string
		status     int
		code       Code
		header     map[string]string
	}{
		{"missing name", `{"tier":"free"}`, 400, CodeInvalidRequest, nil},
		{"unknown tier", `{"name":"x","tier":"gold"}`, 400, CodeInvalidRequest, nil},
		{"enterprise without limit", `{"name":"x","tier":"enterprise"}`, 400, CodeInvalidRequest, nil},
		{"limit on free", `{"name":"x","tier":"free","monthly_limit":5}`, 400, CodeInvalidRequest, nil},
		{"negative credits", `{"name":"x","tier":"free","credits":-1}`, 400, CodeInvalidRequest, nil},
		{"unknown field", `{"name":"x","tier":"free","owner":"me"}`, 400, CodeInvalidRequest, nil},
		{"duplicate field", `{"name":"x","tier":"free","tier":"pro"}`, 400, CodeInvalidRequest, nil},
		{"wrong type", `{"name":1,"tier":"free"}`, 400, CodeInvalidRequest, nil},
		{"not json", `name=x`, 400, CodeInvalidRequest, nil},
		{"empty", ` `, 400, CodeInvalidRequest, nil},
		{"text/plain", `{"name":"x","tier":"free"}`, 415, CodeMediaType, map[string]string{"Content-Type": "text/plain"}},
		{"too large", `{"name":"` + strings.Repeat("x", maxBodyBytes) + `","tier":"free"}`, 413, CodeTooLarge, nil},
	} {
		t.Run("create "+tc.name, func(t *testing.T) {
			h := map[string]string{"Authorization": bearerAdmin}
			for k, v := range tc.header {
				h[k] = v
			}
			r := e.doAdmin(t, req{method: "POST", path: "/admin/accounts", body: tc.body, header: h})
			wantAdminError(t, r, tc.status, tc.code)
		})
	}

	r = e.adminCall(t, "GET", "/admin/accounts", "")
	list := decode[SummaryList](t, r)
	if r.Code != 200 || len(list.Accounts) != 2 || list.Accounts[0].ID != a.ID {
		t.Errorf("list: %d %+v", r.Code, list)
	}

	r = e.adminCall(t, "GET", path, "")
	if got := decode[account.Account](t, r); r.Code != 200 || got.ID != a.ID || got.Name != "Acme" {
		t.Errorf("show: %d %+v", r.Code, got)
	}
	wantAdminError(t, e.adminCall(t, "GET", "/admin/accounts/999", ""), 404, CodeNotFound)
	wantAdminError(t, e.adminCall(t, "GET", "/admin/accounts/abc", ""), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "GET", "/admin/accounts/-1", ""), 400, CodeInvalidRequest)

	r = e.adminCall(t, "PATCH", path, `{"tier":"pro"}`)
	if got := decode[account.Account](t, r); r.Code != 200 || got.Tier != account.Pro || got.MonthlyLimit != account.ProMonthlyLimit {
		t.Errorf("set tier pro: %d %+v", r.Code, got)
	}
	r = e.adminCall(t, "PATCH", path, `{"tier":"enterprise","monthly_limit":5}`)
	if got := decode[account.Account](t, r); r.Code != 200 || got.Tier != account.Enterprise || got.MonthlyLimit != 5 {
		t.Errorf("set tier enterprise: %d %+v", r.Code, got)
	}
	wantAdminError(t, e.adminCall(t, "PATCH", path, `{"tier":"gold"}`), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "PATCH", path, `{}`), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "PATCH", path, `{"name":"renamed","tier":"pro"}`), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "PATCH", "/admin/accounts/999", `{"tier":"pro"}`), 404, CodeNotFound)

	r = e.adminCall(t, "DELETE", path, "")
	wantAdminError(t, r, 405, CodeNotAllowed)
	if allow := r.Header().Get("Allow"); allow != "GET, HEAD, PATCH" {
		t.Errorf("Allow %q", allow)
	}
	wantAdminError(t, e.adminCall(t, "GET", "/admin/nope", ""), 404, CodeNotFound)
}

func TestAdminKeys(t *testing.T) {
	e := newEnv(t)
	a, err := e.svc.CreateAccount(t.Context(), account.AccountParams{Name: "acme", Tier: account.Pro})
	if err != nil {
		t.Fatal(err)
	}
	keysPath := "/admin/accounts/" + strconv.FormatInt(a.ID, 10) + "/keys"

	// Create: with no body, with {}, and refused with fields.
	var created []account.NewKey
	for _, body := range []string{"", "{}"} {
		r := e.adminCall(t, "POST", keysPath, body)
		if r.Code != http.StatusCreated {
			t.Fatalf("create key (%q): %d %s", body, r.Code, r.Body)
		}
		nk := decode[account.NewKey](t, r)
		if nk.Secret == "" || nk.ID == "" || nk.AccountID != a.ID || !strings.HasPrefix(nk.Secret, nk.Prefix) {
			t.Errorf("created key %+v", nk)
		}
		if r.Header().Get("Location") != "/admin/keys/"+nk.ID || r.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("headers %v", r.Header())
		}
		created = append(created, nk)
	}
	wantAdminError(t, e.adminCall(t, "POST", keysPath, `{"name":"x"}`), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "POST", "/admin/accounts/999/keys", ""), 404, CodeNotFound)
	k := created[0]

	// The secret works on the public API.
	if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
		t.Fatalf("query with the created key: %d %s", r.Code, r.Body)
	}

	r := e.adminCall(t, "GET", keysPath, "")
	list := decode[KeyList](t, r)
	if r.Code != 200 || len(list.Keys) != 2 {
		t.Errorf("list: %d %s", r.Code, r.Body)
	}
	for _, s := range []string{created[0].Secret, created[1].Secret, `"key":`, "hash"} {
		if strings.Contains(r.Body.String(), s) {
			t.Errorf("key listing contains %q: %s", s, r.Body)
		}
	}
	wantAdminError(t, e.adminCall(t, "GET", "/admin/accounts/999/keys", ""), 404, CodeNotFound)

	r = e.adminCall(t, "GET", "/admin/keys/"+k.ID, "")
	if got := decode[account.Key](t, r); r.Code != 200 || got.ID != k.ID || got.Revoked() {
		t.Errorf("show key: %d %s", r.Code, r.Body)
	}
	wantAdminError(t, e.adminCall(t, "GET", "/admin/keys/nope", ""), 404, CodeNotFound)

	r = e.adminCall(t, "GET", "/admin/keys/"+k.ID+"/usage", "")
	if r.Code != 200 || !strings.Contains(r.Body.String(), `"used":1,`) {
		t.Errorf("usage: %d %s", r.Code, r.Body)
	}

	// Rotate: new secret, same id; the old secret stops at once.
	r = e.adminCall(t, "POST", "/admin/keys/"+k.ID+"/rotate", "")
	rot := decode[account.NewKey](t, r)
	if r.Code != 200 || rot.ID != k.ID || rot.Secret == "" || rot.Secret == k.Secret || r.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("rotate: %d %s", r.Code, r.Body)
	}
	if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 401 {
		t.Errorf("old secret after rotation: %d", r.Code)
	}
	if r := e.query(t, rot.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
		t.Errorf("new secret after rotation: %d %s", r.Code, r.Body)
	}

	// Revoke: for good; rotating it afterwards is a conflict.
	r = e.adminCall(t, "POST", "/admin/keys/"+k.ID+"/revoke", "")
	if got := decode[account.Key](t, r); r.Code != 200 || !got.Revoked() {
		t.Errorf("revoke: %d %s", r.Code, r.Body)
	}
	if r := e.query(t, rot.Secret, `{"ip":"8.8.8.8"}`); r.Code != 401 {
		t.Errorf("revoked key: %d", r.Code)
	}
	wantAdminError(t, e.adminCall(t, "POST", "/admin/keys/"+k.ID+"/rotate", ""), 409, CodeConflict)
	wantAdminError(t, e.adminCall(t, "POST", "/admin/keys/nope/revoke", ""), 404, CodeNotFound)
	wantAdminError(t, e.adminCall(t, "GET", "/admin/keys/"+k.ID+"/rotate", ""), 405, CodeNotAllowed)
}

func TestAdminCredits(t *testing.T) {
	e := newEnv(t)
	var zero int64
	a, err := e.svc.CreateAccount(t.Context(), account.AccountParams{Name: "acme", Tier: account.Free, Credits: &zero})
	if err != nil {
		t.Fatal(err)
	}
	base := "/admin/accounts/" + strconv.FormatInt(a.ID, 10) + "/credits"

	r := e.adminCall(t, "GET", base, "")
	if got := decode[Credits](t, r); r.Code != 200 || got != (Credits{AccountID: a.ID, Credits: 0}) {
		t.Errorf("show: %d %s", r.Code, r.Body)
	}
	r = e.adminCall(t, "POST", base, `{"amount":100,"reason":"welcome"}`)
	entry := decode[account.LedgerEntry](t, r)
	if r.Code != http.StatusCreated || entry.Delta != 100 || entry.Balance != 100 || entry.Reason != "welcome" || entry.AccountID != a.ID {
		t.Errorf("add: %d %s", r.Code, r.Body)
	}
	r = e.adminCall(t, "POST", base, `{"amount":-30,"reason":"refund"}`)
	if got := decode[account.LedgerEntry](t, r); r.Code != 201 || got.Balance != 70 {
		t.Errorf("deduct: %d %s", r.Code, r.Body)
	}
	wantAdminError(t, e.adminCall(t, "POST", base, `{"amount":-71,"reason":"too much"}`), 409, CodeInsufficient)
	wantAdminError(t, e.adminCall(t, "POST", base, `{"amount":0,"reason":"nothing"}`), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "POST", base, `{"amount":5}`), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "POST", base, `{"amount":"5","reason":"x"}`), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "POST", "/admin/accounts/999/credits", `{"amount":5,"reason":"x"}`), 404, CodeNotFound)

	r = e.adminCall(t, "GET", base, "")
	if got := decode[Credits](t, r); got.Credits != 70 {
		t.Errorf("balance after changes: %s", r.Body)
	}
	r = e.adminCall(t, "GET", base+"/history", "")
	hist := decode[Ledger](t, r)
	if r.Code != 200 || len(hist.Entries) != 2 || hist.Entries[0].Reason != "refund" || hist.Entries[1].Reason != "welcome" {
		t.Errorf("history (newest first): %d %s", r.Code, r.Body)
	}
	r = e.adminCall(t, "GET", base+"/history?limit=1", "")
	if hist := decode[Ledger](t, r); len(hist.Entries) != 1 || hist.Entries[0].Reason != "refund" {
		t.Errorf("history limit 1: %s", r.Body)
	}
	wantAdminError(t, e.adminCall(t, "GET", base+"/history?limit=-1", ""), 400, CodeInvalidRequest)
	wantAdminError(t, e.adminCall(t, "GET", "/admin/accounts/999/credits/history", ""), 404, CodeNotFound)
}

func TestAdminOperations(t *testing.T) {
	e := newEnv(t)
	if r := e.doAdmin(t, req{method: "GET", path: "/healthz"}); r.Code != 200 || decode[Health](t, r).Status != "ok" {
		t.Errorf("healthz: %d %s", r.Code, r.Body)
	}
	if r := e.doAdmin(t, req{method: "GET", path: "/readyz"}); r.Code != 200 || decode[Health](t, r).Status != "ok" {
		t.Errorf("readyz: %d %s", r.Code, r.Body)
	}
	e.mu.Lock()
	e.ready = errors.New("draining")
	e.mu.Unlock()
	r := e.doAdmin(t, req{method: "GET", path: "/readyz"})
	if h := decode[Health](t, r); r.Code != 503 || h.Status != "unavailable" || h.Error != "draining" {
		t.Errorf("readyz while draining: %d %s", r.Code, r.Body)
	}

	r = e.doAdmin(t, req{method: "GET", path: "/debug/pprof/", header: map[string]string{"Authorization": bearerAdmin}})
	if r.Code != 200 || !strings.Contains(r.Body.String(), "goroutine") {
		t.Errorf("pprof index: %d", r.Code)
	}
	r = e.doAdmin(t, req{method: "GET", path: "/debug/pprof/heap?debug=1", header: map[string]string{"Authorization": bearerAdmin}})
	if r.Code != 200 || !strings.Contains(r.Body.String(), "heap profile") {
		t.Errorf("pprof heap: %d", r.Code)
	}
	r = e.doAdmin(t, req{method: "GET", path: "/metrics"})
	if r.Code != 200 || !strings.Contains(r.Body.String(), "ipatlas_http_requests_total") {
		t.Errorf("metrics: %d", r.Code)
	}
}

// TestStoreUnavailable closes the store under a running server: every
// metered answer becomes 503 ServiceUnavailable, nothing is a 500, and
// readiness reports it.
func TestStoreUnavailable(t *testing.T) {
	e := newEnv(t)
	_, cached := e.customer(t, account.Pro, 0, 10)
	_, uncached := e.customer(t, account.Pro, 0, 10)
	if r := e.query(t, cached.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
		t.Fatal(r.Body)
	}
	e.store.Close()

	// A key the server has not seen cannot be checked.
	r := e.query(t, uncached.Secret, `{"ip":"8.8.8.8"}`)
	checkFailure(t, r, ipatlas.CodeServiceUnavailable, "Service temporarily unavailable", ipatlas.Meta{IsAPIRequest: true})
	r = e.query(t, uncached.Secret, `{"ip":"8.8.8.8","lang":"zh"}`)
	checkFailure(t, r, ipatlas.CodeServiceUnavailable, "服务暂时不可用", ipatlas.Meta{IsAPIRequest: true})

	// A cached key passes authentication, but its charge cannot commit.
	r = e.query(t, cached.Secret, `{"ip":"8.8.8.8"}`)
	if r.Code != 503 || r.env().Code != ipatlas.CodeServiceUnavailable || !r.env().Meta.IsLoggedIn {
		t.Errorf("cached key with the store down: %d %s", r.Code, r.Body)
	}
	// Client mistakes are still the client's.
	if r := e.query(t, uncached.Secret, `{"ip":`); r.Code != 400 {
		t.Errorf("bad body with the store down: %d", r.Code)
	}
	if r := e.do(t, req{method: "GET", path: "/api/usage", key: uncached.Secret}); r.Code != 503 {
		t.Errorf("usage with the store down: %d", r.Code)
	}
	// Get my IP does not need the store.
	if r := e.do(t, req{method: "GET", path: "/api/ip/myip"}); r.Code != 200 {
		t.Errorf("myip with the store down: %d", r.Code)
	}
	if r := e.doAdmin(t, req{method: "GET", path: "/readyz"}); r.Code != 503 {
		t.Errorf("readyz with the store down: %d", r.Code)
	}
	wantAdminError(t, e.adminCall(t, "GET", "/admin/accounts", ""), 503, CodeUnavailable)
}
