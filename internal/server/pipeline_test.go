package server

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/prometheus/client_golang/prometheus"
)

// countingGeo is the real engine, counting its AS lookups.
type countingGeo struct {
	geo.Locator
	ases *atomic.Int64
}

func (g countingGeo) AS(n uint32, lang ipatlas.Lang) (ipatlas.AS, error) {
	g.ases.Add(1)
	return g.Locator.(geo.ASLocator).AS(n, lang)
}

// TestIPInfoBatchBounded: a batch of AS items is bounded before anything
// is looked up or charged. More AS items than a batch may hold is refused
// whole, uncharged, with or without credits; a caller who can pay for
// nothing is refused before any lookup; the spellings of one AS are one
// lookup and one charge.
func TestIPInfoBatchBounded(t *testing.T) {
	e := newEnv(t)
	var ases atomic.Int64
	e.srv.deps.Geo = countingGeo{Locator: e.srv.deps.Geo, ases: &ases}
	spell := []string{"AS15169", "as015169", "AS15169/json", "15169", "As0015169"}
	batch := func(n int) string {
		var items []string
		for i := range n {
			items = append(items, spell[i%len(spell)])
		}
		items = append(items, "8.8.8.8")
		b, _ := json.Marshal(items)
		return string(b)
	}
	poor, pk := e.customer(t, account.Pro, 0, 0)
	acct, k := e.customer(t, account.Pro, 0, 100)
	for _, key := range []string{pk.Secret, k.Secret} {
		r := e.do(t, req{method: "POST", path: "/ipinfo/batch", key: key, body: batch(maxIPInfoBatch - 1)})
		var ie ipinfoError
		json.Unmarshal(r.Body.Bytes(), &ie)
		if r.Code != http.StatusUnprocessableEntity || ie.Code != ipatlas.CodeTooManyItems || ases.Load() != 0 {
			t.Errorf("%d AS items: %d %s after %d lookups", maxIPInfoBatch-1, r.Code, r.Body, ases.Load())
		}
	}

	// No credits: 402 before a lookup.
	r := e.do(t, req{method: "POST", path: "/ipinfo/batch", key: pk.Secret, body: batch(maxIPInfoBatchAS)})
	if r.Code != http.StatusPaymentRequired || ases.Load() != 0 {
		t.Errorf("no credits: %d after %d AS lookups, want 402 after none: %s", r.Code, ases.Load(), r.Body)
	}
	checkLedger(t, e, poor.ID, 0, 0)

	// With credits: the spellings of one AS are one lookup, one charge,
	// each answered under its own key.
	r = e.do(t, req{method: "POST", path: "/ipinfo/batch", key: k.Secret, body: batch(maxIPInfoBatchAS)})
	var got map[string]json.RawMessage
	if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil || r.Code != 200 || len(got) != len(spell)+1 ||
		!strings.Contains(string(got["as015169"]), `"asn":"AS15169"`) {
		t.Fatalf("spellings: %d %.300s", r.Code, r.Body)
	}
	if n := ases.Load(); n != 1 {
		t.Errorf("%d AS lookups for one AS", n)
	}
	checkLedger(t, e, acct.ID, 100, 2) // AS15169 and 8.8.8.8
}

// TestASPages: an AS's prefixes come a page at a time, with their counts.
func TestASPages(t *testing.T) {
	as := ipatlas.AS{}
	for i := range 2500 {
		as.Prefixes = append(as.Prefixes, ipatlas.ASPrefix{Netblock: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)})
	}
	for _, tc := range []struct{ page, n, first int }{{1, 1000, 0}, {3, 500, 2000}, {4, 0, 0}, {0, 1000, 0}} {
		a := as
		ipatlas.PageAS(&a, tc.page)
		if len(a.Prefixes) != tc.n || a.NumPrefixes != 2500 || a.Pages != 3 || (tc.n > 0 && a.Prefixes[0] != as.Prefixes[tc.first]) {
			t.Errorf("page %d: %d prefixes of %d, page %d of %d", tc.page, len(a.Prefixes), a.NumPrefixes, a.Page, a.Pages)
		}
	}
}

// TestNoRedirectRepeatsAKey: a path that is not clean, or a subtree's
// path without its slash, is served as the path it stands for, never
// redirected: a redirect would repeat a key of the URL in Location.
func TestNoRedirectRepeatsAKey(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	q := url.QueryEscape(k.Secret)
	for _, tc := range []struct{ path, want string }{
		{"//api/lookup/8.8.8.8?key=" + q, `"country_code":"US"`},
		{"/api/./lookup/8.8.8.8/country_code?key=" + q, "US\n"},
		{"/ipinfo//8.8.8.8?token=" + q, `"city":"Mountain View"`},
		{"/ipinfo?token=" + q, `"ip":"` + strings.TrimSuffix(strings.Split(testPeer, ":")[0], "") + `"`},
	} {
		r := newRequest(req{method: "GET", path: tc.path})
		if tc.path == "/ipinfo?token="+q {
			r.RemoteAddr = geotest.MountainView.IP + ":1234"
			tc.want = `"ip":"` + geotest.MountainView.IP + `"`
		}
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != 200 || w.Header().Get("Location") != "" || strings.Contains(w.Body.String(), k.Secret) || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d Location %q %.200s", tc.path, w.Code, w.Header().Get("Location"), w.Body)
		}
	}
}

// TestErrorsRepeatNoSecret: a secret sent as a field, a lang or an AS is
// not repeated in the error that refuses it.
func TestErrorsRepeatNoSecret(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	secret := k.Secret
	for _, path := range []string{
		"/api/lookup/8.8.8.8?fields=" + url.QueryEscape(secret),
		"/api/lookup/8.8.8.8?lang=" + url.QueryEscape(secret),
		"/api/lookup/8.8.8.8/" + url.PathEscape(secret),
		"/api/asn/" + url.PathEscape(secret),
		"/ipinfo/8.8.8.8/" + url.PathEscape(secret),
		"/ipinfo/AS" + url.PathEscape("1x2y3z4w5v6u7t8s9r"),
	} {
		r := e.do(t, req{method: "GET", path: path, key: k.Secret})
		if r.Code < 400 || r.Code >= 500 {
			t.Errorf("%s: %d", path, r.Code)
		}
		for _, part := range []string{secret[4:19], "1x2y3z4w5v"} {
			if strings.Contains(r.Body.String(), part) {
				t.Errorf("%s: the error repeats the secret: %s", path, r.Body)
			}
		}
	}
}

// TestShapesTakeWhatTheirServicesTake: ipinfo's Basic authentication
// (curl -u KEY:) and the documented curl examples of the ipinfo and
// ip-api batches, which send a form Content-Type with a JSON body.
func TestShapesTakeWhatTheirServicesTake(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(k.Secret+":"))
	r := e.do(t, req{method: "GET", path: "/ipinfo/8.8.8.8", header: map[string]string{"Authorization": basic}})
	if r.Code != 200 || !strings.Contains(r.Body.String(), `"city":"Mountain View"`) {
		t.Errorf("Basic: %d %s", r.Code, r.Body)
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	r = e.do(t, req{method: "POST", path: "/ipinfo/batch", key: k.Secret, body: `["8.8.8.8/city"]`, header: form})
	if r.Code != 200 || r.Body.String() != `{"8.8.8.8/city":"Mountain View"}`+"\n" {
		t.Errorf("ipinfo batch as curl -d sends it: %d %s", r.Code, r.Body)
	}
	r = e.do(t, req{method: "POST", path: "/ip-api/batch?fields=city", key: k.Secret, body: `["8.8.8.8"]`, header: form})
	if r.Code != 200 || r.Body.String() != `[{"city":"Mountain View"}]`+"\n" {
		t.Errorf("ip-api batch as curl -d sends it: %d %s", r.Code, r.Body)
	}
	// The native API keeps its contract: a JSON body says so.
	r = e.do(t, req{method: "POST", path: "/api/ip-query/batch", key: k.Secret, body: `{"ips":["8.8.8.8"]}`, header: form})
	if r.Code != http.StatusUnsupportedMediaType {
		t.Errorf("native batch with a form type: %d", r.Code)
	}
}

// TestMeteringRules: the rules every shape keeps. An address in a path is
// its exact text; HEAD and answers with nothing looked up in them cost
// nothing.
func TestMeteringRules(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	for _, path := range []string{"/api/lookup/8.8.8.8%20", "/api/lookup/%208.8.8.8/city", "/ipinfo/8.8.8.8%20", "/ip-api/json/8.8.8.8%0A"} {
		r := e.do(t, req{method: "GET", path: path, key: k.Secret})
		if !strings.Contains(r.Body.String(), "InvalidIP") && !strings.Contains(r.Body.String(), "invalid query") {
			t.Errorf("%s: %d %s, want the address refused", path, r.Code, r.Body)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"HEAD", "/api/lookup/8.8.8.8"},
		{"HEAD", "/ipinfo/8.8.8.8"},
		{"HEAD", "/ip-api/json/8.8.8.8"},
		{"HEAD", "/api/asn/AS15169"},
		{"GET", "/ip-api/json/8.8.8.8?fields=bogus"},
		{"GET", "/ip-api/json/8.8.8.8?fields=status,query"},
		{"GET", "/api/lookup/8.8.8.8/district"},
		{"GET", "/api/lookup/8.8.8.8?fields=ip"},
		{"GET", "/ipinfo/" + geotest.Singapore.IP + "/loc"},
	} {
		before := used(t, e, k.ID)
		r := e.do(t, req{method: tc.method, path: tc.path, key: k.Secret})
		if r.Code != 200 || used(t, e, k.ID) != before || r.Header().Get("RateLimit-Remaining") == "" {
			t.Errorf("%s %s: %d, used %d after %d (want no charge, with the quota headers)", tc.method, tc.path, r.Code, used(t, e, k.ID), before)
		}
	}
}

// TestOutcomesOfEveryShape: the query outcome metric counts the
// failures and successes of every shape, not only POST /api/ip-query's.
func TestOutcomesOfEveryShape(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	count := func(outcome string) float64 {
		return gathered(t, e, "ipatlas_query_outcomes_total", map[string]string{"outcome": outcome})
	}
	keys, private, ok := count("InvalidAPIKey"), count("PrivateIP"), count("success")
	e.do(t, req{method: "GET", path: "/ipinfo/8.8.8.8"})
	e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8"})
	e.do(t, req{method: "GET", path: "/api/lookup/10.0.0.1", key: k.Secret})
	e.do(t, req{method: "GET", path: "/ip-api/json/10.0.0.1", key: k.Secret})
	e.do(t, req{method: "GET", path: "/ipinfo/8.8.8.8/city", key: k.Secret})
	e.do(t, req{method: "GET", path: "/api/asn/AS15169", key: k.Secret})
	if d := count("InvalidAPIKey") - keys; d != 2 {
		t.Errorf("InvalidAPIKey +%v, want +2", d)
	}
	if d := count("PrivateIP") - private; d != 2 {
		t.Errorf("PrivateIP +%v, want +2", d)
	}
	if d := count("success") - ok; d != 2 {
		t.Errorf("success +%v, want +2", d)
	}
}

// TestPanicAnswersInTheShapeOfItsPath: a panic is answered in the format
// of the request's path, as the route's own failures are.
func TestPanicAnswersInTheShapeOfItsPath(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 10)
	srv := mustNew(t, Config{Now: e.srv.now, AdminToken: testAdminToken, Logger: slog.New(slog.DiscardHandler)},
		Deps{Geo: panicky{}, Accounts: e.svc, Meter: e.meter, Registry: prometheus.NewRegistry()})
	for _, tc := range []struct{ path, want string }{
		{"/ipinfo/8.8.8.8", `"status":500`},
		{"/ip-api/json/8.8.8.8", `"status":"fail"`},
		{"/api/lookup/8.8.8.8/city", "error: "},
		{"/api/lookup/8.8.8.8", `"success":false`},
	} {
		w := httptest.NewRecorder()
		srv.Handler().ServeHTTP(w, newRequest(req{method: "GET", path: tc.path, key: k.Secret}))
		if w.Code != 500 || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want 500 with %s", tc.path, w.Code, w.Body, tc.want)
		}
	}
}
