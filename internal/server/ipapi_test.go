package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

// newPrivacyEnv is newEnv on an engine with privacy data: the built-in
// snapshot of the lists and a fresh Tor exit list naming 8.8.8.8.
func newPrivacyEnv(t *testing.T) *env {
	t.Helper()
	p := servertest.New(t, func() time.Time { return testNow })
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(200, "8.8.8.8"), testNow.Add(-time.Hour))
	eng, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	e := &env{store: p.Store, svc: p.Accounts, meter: p.Meter, reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	e.srv = mustNew(t, Config{LimitTableSize: DefaultLimitTableSize, AdminToken: testAdminToken,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil)), Now: p.Now},
		Deps{Geo: eng, Accounts: p.Accounts, Meter: p.Meter, Registry: e.reg})
	e.pub, e.admin = e.srv.Handler(), e.srv.AdminHandler()
	return e
}

// documentedIPAPI is ip-api's documented answer (testdata), by field.
func documentedIPAPI(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("testdata/ipapi/documented.txt")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.Lines(string(raw)) {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(strings.Join(lines, "")), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// jsonType is the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case map[string]any:
		return "object"
	}
	return "array"
}

// Every field ipatlas answers in the ip-api shape has ip-api's name and
// JSON type, as ip-api documents them; every field the shape promises is
// there, in both languages; and the answers match the OpenAPI document.
func TestIPAPIFieldsAsDocumented(t *testing.T) {
	doc := documentedIPAPI(t)
	e := newPrivacyEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1000)
	promised := []string{"status", "country", "countryCode", "region", "regionName", "city", "district", "zip",
		"lat", "lon", "timezone", "currency", "isp", "org", "as", "asname", "hosting", "proxy", "query"}
	for _, lang := range []string{"en", "zh-CN"} {
		for _, ip := range []string{geotest.Nuremberg.IP, "8.8.8.8"} {
			r := e.do(t, req{method: "GET", path: "/ip-api/json/" + ip + "?fields=66846719&lang=" + lang + "&key=" + url.QueryEscape(k.Secret)})
			var got map[string]any
			if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil || r.Code != http.StatusOK || got["status"] != "success" {
				t.Fatalf("%s %s: %d %s", ip, lang, r.Code, r.Body)
			}
			for name, v := range got {
				dv, ok := doc[name]
				if !ok {
					t.Errorf("%s: field %q is not one of ip-api's", ip, name)
				} else if jsonType(v) != jsonType(dv) {
					t.Errorf("%s: field %q is a %s, ip-api's is a %s", ip, name, jsonType(v), jsonType(dv))
				}
			}
			for _, name := range promised {
				if _, ok := got[name]; !ok {
					t.Errorf("%s %s: no field %q in %s", ip, lang, name, r.Body)
				}
			}
			if ip == "8.8.8.8" && (got["proxy"] != true || got["hosting"] != true || got["as"] != "AS15169 Google LLC") {
				t.Errorf("8.8.8.8 (a Tor exit in Google's ranges): %s", r.Body)
			}
			if ip == geotest.Nuremberg.IP {
				want := geotest.Nuremberg.Want(ipatlas.English)
				if lang == "zh-CN" {
					want = geotest.Nuremberg.Want(ipatlas.Chinese)
				}
				if got["country"] != want.Country || got["city"] != want.City || got["district"] != want.District ||
					got["lat"] != *want.Latitude || got["zip"] != want.ZipCode || got["countryCode"] != "DE" {
					t.Errorf("%s: %s, the record is %+v", lang, r.Body, want)
				}
			}
		}
	}
	// The failure answer: its fields are ip-api's too.
	r := e.do(t, req{method: "GET", path: "/ip-api/json/10.0.0.1?key=" + url.QueryEscape(k.Secret)})
	var fail map[string]any
	json.Unmarshal(r.Body.Bytes(), &fail)
	for name, v := range fail {
		if dv, ok := doc[name]; (!ok || jsonType(v) != jsonType(dv)) && name != "code" {
			t.Errorf("failure field %q (%s) is not ip-api's", name, jsonType(v))
		}
	}
	if r.Code != http.StatusOK || fail["status"] != "fail" || fail["message"] != "private range" || fail["query"] != "10.0.0.1" {
		t.Errorf("private: %d %s", r.Code, r.Body)
	}
}

// The ip-api shape is metered like the location query on both stores:
// each answered address is one query, failures (200 "fail" or not) cost
// nothing; fields, by name or number, select as ip-api's do.
func TestIPAPIMetering(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk().env
		_, k := e.customer(t, account.Pro, 0, 1000)
		key := "key=" + url.QueryEscape(k.Secret)

		r := e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?" + key})
		var got map[string]any
		json.Unmarshal(r.Body.Bytes(), &got)
		var names []string
		for n := range got {
			names = append(names, n)
		}
		slices.Sort(names)
		// ip-api's default selection; privacy is unknown here, message is
		// for failures only.
		want := sorted("status", "country", "countryCode", "region", "regionName", "city", "zip", "lat", "lon", "timezone", "isp", "org", "as", "query")
		if r.Code != http.StatusOK || !slices.Equal(names, want) {
			t.Errorf("default fields: %d %v, want %v", r.Code, names, want)
		}
		byName := e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?fields=status,city,lat,query&" + key})
		byMask := e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?fields=24656&" + key}) // 16384+16+64+8192
		if byName.Body.String() != `{"status":"success","city":"Mountain View","lat":37.422,"query":"8.8.8.8"}`+"\n" || byMask.Body.String() != byName.Body.String() {
			t.Errorf("fields by name %s, by number %s", byName.Body, byMask.Body)
		}
		zh := e.do(t, req{method: "GET", path: "/ip-api/json/" + geotest.Beijing.IP + "?fields=country,city&lang=zh-CN&" + key})
		bj := geotest.Beijing.Want(ipatlas.Chinese)
		if zh.Body.String() != `{"country":"中国","city":"`+bj.City+`"}`+"\n" {
			t.Errorf("zh-CN: %s", zh.Body)
		}
		if n := used(t, e, k.ID); n != 4 {
			t.Errorf("used %d, want 4", n)
		}
		for path, msg := range map[string]string{
			"/ip-api/json/10.0.0.1": "private range", "/ip-api/json/127.0.0.1": "reserved range",
			"/ip-api/json/fe80::1": "reserved range", "/ip-api/json/nope": "invalid query", "/ip-api/json/1.2.3.4.5": "invalid query",
		} {
			r := e.do(t, req{method: "GET", path: path + "?" + key})
			var f map[string]any
			json.Unmarshal(r.Body.Bytes(), &f)
			if r.Code != http.StatusOK || f["status"] != "fail" || f["message"] != msg {
				t.Errorf("%s: %d %s, want fail %q", path, r.Code, r.Body, msg)
			}
		}
		if n := used(t, e, k.ID); n != 4 {
			t.Errorf("failures charged: used %d, want 4", n)
		}

		// The batch: strings and objects, in order, failures free, and
		// the repeat of 8.8.8.8 (with other fields) is answered in its own
		// form but costs nothing more.
		r = e.do(t, req{method: "POST", path: "/ip-api/batch?fields=status,country,query&" + key,
			body: `["8.8.8.8",{"query":"10.0.0.1"},{"query":"` + geotest.Beijing.IP + `","fields":"city,query","lang":"zh-CN"},{"query":"8.8.8.8","fields":16385}]`})
		want4 := `[{"status":"success","country":"United States","query":"8.8.8.8"},` +
			`{"status":"fail","message":"private range","query":"10.0.0.1","code":"PrivateIP"},` +
			`{"city":"` + bj.City + `","query":"` + geotest.Beijing.IP + `"},{"status":"success","country":"United States"}]` + "\n"
		if r.Code != http.StatusOK || r.Body.String() != want4 {
			t.Errorf("batch: %d\n%s\nwant\n%s", r.Code, r.Body, want4)
		}
		if n := used(t, e, k.ID); n != 6 {
			t.Errorf("batch: used %d, want 6", n)
		}

		// Key, quota and body failures keep ipatlas's statuses.
		_, spent := e.customer(t, account.Enterprise, 1, 100)
		sk := "key=" + url.QueryEscape(spent.Secret)
		e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?" + sk})
		for _, tc := range []struct {
			method, path, body string
			code               ipatlas.ErrorCode
		}{
			{"GET", "/ip-api/json/8.8.8.8", "", ipatlas.CodeInvalidAPIKey},
			{"GET", "/ip-api/json/8.8.8.8?key=ipa_bad_key", "", ipatlas.CodeInvalidAPIKey},
			{"GET", "/ip-api/json/8.8.8.8?" + sk, "", ipatlas.CodeRateLimitExceeded},
			{"POST", "/ip-api/batch?" + sk, `["8.8.8.8"]`, ipatlas.CodeRateLimitExceeded},
			{"POST", "/ip-api/batch?" + key, `{"query":"8.8.8.8"}`, ipatlas.CodeInvalidRequest},
			{"POST", "/ip-api/batch?" + key, `null`, ipatlas.CodeInvalidRequest},
			{"POST", "/ip-api/batch?" + key, `[]`, ipatlas.CodeInvalidRequest},
			{"POST", "/ip-api/batch?" + key, `[` + strings.Repeat(`"8.8.8.8",`, 100) + `"8.8.8.8"]`, ipatlas.CodeTooManyItems},
			{"DELETE", "/ip-api/batch?" + key, "", ipatlas.CodeMethodNotAllowed},
			{"GET", "/ip-api/xml/8.8.8.8?" + key, "", ipatlas.CodeNotFound},
		} {
			r := e.do(t, req{method: tc.method, path: tc.path, body: tc.body})
			var f map[string]any
			json.Unmarshal(r.Body.Bytes(), &f)
			if r.Code != tc.code.HTTPStatus() || f["status"] != "fail" || f["code"] != string(tc.code) || f["message"] == "" {
				t.Errorf("%s %s: %d %s, want %s", tc.method, tc.path, r.Code, r.Body, tc.code)
			}
		}
		if n := used(t, e, k.ID); n != 6 {
			t.Errorf("refusals charged: used %d, want 6", n)
		}
		if n := used(t, e, spent.ID); n != 1 {
			t.Errorf("spent key: used %d, want 1", n)
		}
	})
}

// A CORS preflight reaches the routes with wildcards and is labelled by
// the route's pattern.
func TestPreflightWildcard(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{"/api/lookup/8.8.8.8", "/ipinfo/8.8.8.8", "/ip-api/json/8.8.8.8", "/ipinfo/batch"} {
		r := e.do(t, req{method: "OPTIONS", path: path, header: map[string]string{"Origin": "https://a.example", "Access-Control-Request-Method": "GET"}})
		if r.Code != http.StatusNoContent || r.Header().Get("Access-Control-Allow-Methods") == "" {
			t.Errorf("%s: %d %v", path, r.Code, r.Header())
		}
	}
	if strings.Contains(e.logs.String(), `"route":"OPTIONS /api/lookup/8.8.8.8"`) {
		t.Errorf("a preflight labelled by its path:\n%s", e.logs)
	}
}

// TestIPAPIRateHeaders: the ip-api shape's answers carry ip-api's X-Rl and
// X-Ttl beside the quota headers, with the month as their window, so that
// a program that slows down on them keeps working; the burst limit's 429
// is X-Rl 0 for its Retry-After; a refused key has neither.
func TestIPAPIRateHeaders(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.KeyRate, c.KeyBurst = 0.001, 3 })
	_, k := e.customer(t, account.Enterprise, 2, 100)
	key := "key=" + url.QueryEscape(k.Secret)
	check := func(name string, r resp, status int, rl, ttl string) {
		t.Helper()
		if r.Code != status {
			t.Fatalf("%s: %d %s, want %d", name, r.Code, r.Body, status)
		}
		if got := r.Header().Get("X-Rl"); got != rl {
			t.Errorf("%s: X-Rl %q, want %q", name, got, rl)
		}
		if got := r.Header().Get("X-Ttl"); got != ttl {
			t.Errorf("%s: X-Ttl %q, want %q", name, got, ttl)
		}
	}
	check("one", e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?" + key}), http.StatusOK, "1", testResetSecs)
	// A failed address is free and reports the quota as it stands.
	check("private", e.do(t, req{method: "POST", path: "/ip-api/batch?" + key, body: `["10.0.0.1"]`}), http.StatusOK, "1", testResetSecs)
	// The quota spent: 429 until the month resets.
	check("spent", e.do(t, req{method: "POST", path: "/ip-api/batch?" + key, body: `["8.8.8.8","8.8.8.8"]`}), http.StatusOK, "0", testResetSecs)
	r := e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?" + key})
	check("burst", r, http.StatusTooManyRequests, "0", r.Header().Get("Retry-After"))
	if r.Header().Get("Retry-After") == "" {
		t.Errorf("burst 429 without Retry-After")
	}
	check("refused key", e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?key=ipa_bad_key"}), http.StatusUnauthorized, "", "")

	_, k2 := e.customer(t, account.Enterprise, 1, 100)
	key2 := "key=" + url.QueryEscape(k2.Secret)
	e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?" + key2})
	check("quota spent", e.do(t, req{method: "GET", path: "/ip-api/json/8.8.8.8?" + key2}), http.StatusTooManyRequests, "0", testResetSecs)
}
