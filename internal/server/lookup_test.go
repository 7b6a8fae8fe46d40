package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// used is the number of queries charged to a key this month.
func used(t *testing.T, e *env, keyID string) int64 {
	t.Helper()
	u, err := e.svc.Usage(context.Background(), keyID)
	if err != nil {
		t.Fatal(err)
	}
	return u.Used
}

// GET /api/lookup/{ip} answers what POST /api/ip-query answers, charged
// the same, in both languages and on both stores; the field route answers
// the field as text.
func TestLookupGET(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk().env
		_, k := e.customer(t, account.Pro, 0, 1000)
		for _, tc := range []struct {
			ip   string
			lang string
		}{{geotest.MountainView.IP, ""}, {geotest.Beijing.IP, "zh"}, {geotest.GoogleV6.IP, "zh-CN"}, {geotest.Nuremberg.IP, "en"}} {
			before := used(t, e, k.ID)
			body := `{"ip":"` + tc.ip + `"`
			path := "/api/lookup/" + tc.ip
			if tc.lang != "" {
				body += `,"lang":"` + tc.lang + `"`
				path += "?lang=" + tc.lang
			}
			post := e.query(t, k.Secret, body+"}")
			get := e.do(t, req{method: "GET", path: path, key: k.Secret})
			if get.Code != http.StatusOK || post.Code != http.StatusOK {
				t.Fatalf("%s: GET %d %s, POST %d", path, get.Code, get.Body, post.Code)
			}
			ge, pe := get.env(), post.env()
			if !reflect.DeepEqual(ge.Data, pe.Data) || !ge.Success || !ge.Meta.IsLoggedIn {
				t.Errorf("%s: GET answered\n%+v\nPOST answered\n%+v", path, ge, pe)
			}
			if ge.Meta.CurrentCredits != pe.Meta.CurrentCredits-1 {
				t.Errorf("%s: credits %d after the GET, %d after the POST: each charges one", path, ge.Meta.CurrentCredits, pe.Meta.CurrentCredits)
			}
			if got := used(t, e, k.ID); got != before+2 {
				t.Errorf("%s: used %d, want %d", path, got, before+2)
			}
			if cc := get.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
			if get.Header().Get("RateLimit-Remaining") == "" {
				t.Errorf("no quota headers")
			}
		}

		// fields, comma-separated.
		r := e.do(t, req{method: "GET", path: "/api/lookup/8.8.8.8?fields=country,city&lang=zh", key: k.Secret})
		var partial struct{ Data map[string]any }
		if err := json.Unmarshal(r.Body.Bytes(), &partial); err != nil || r.Code != http.StatusOK {
			t.Fatalf("%d %s", r.Code, r.Body)
		}
		if len(partial.Data) != 3 || partial.Data["country"] != "美国" || partial.Data["city"] == nil {
			t.Errorf("fields=country,city: %v", partial.Data)
		}

		// One field as text; a value with nothing looked up in it (the
		// address itself, an empty or unknown value) costs nothing.
		for _, tc := range []struct {
			path, want string
			free       bool
		}{
			{"/api/lookup/8.8.8.8/city", "Mountain View\n", false},
			{"/api/lookup/8.8.8.8/country?lang=zh", "美国\n", false},
			{"/api/lookup/8.8.8.8/latitude", "37.422\n", false},
			{"/api/lookup/8.8.8.8/route", "8.8.8.0/24\n", false},
			{"/api/lookup/8.8.8.8/asn", "AS15169\n", false},
			{"/api/lookup/2001:4860:4860::8888/ip", "2001:4860:4860::8888\n", true},
			{"/api/lookup/" + geotest.Singapore.IP + "/latitude", "\n", true},
			{"/api/lookup/8.8.8.8/privacy", "null\n", true}, // no privacy data in the fixture: unknown
		} {
			before := used(t, e, k.ID)
			r := e.do(t, req{method: "GET", path: tc.path, key: k.Secret})
			if r.Code != http.StatusOK || r.Body.String() != tc.want || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/plain") {
				t.Errorf("%s: %d %q (%s), want %q", tc.path, r.Code, r.Body, r.Header().Get("Content-Type"), tc.want)
			}
			want := before + 1
			if tc.free {
				want = before
			}
			if got := used(t, e, k.ID); got != want {
				t.Errorf("%s: used %d, want %d", tc.path, got, want)
			}
		}
	})
}

// Every field of a record has a text form in the field route.
func TestLookupFieldEveryField(t *testing.T) {
	rec := geotest.Nuremberg.Want(ipatlas.English)
	for _, name := range ipatlas.RecordFields() {
		if name == "privacy" {
			continue // nil here, "null"
		}
		if name == "hostname" || name == "hostname_confirmed" {
			continue // filled only when asked for
		}
		if fieldText(&rec, name) == "" {
			t.Errorf("field %q has no text", name)
		}
	}
}

// A failure of the GET has the status of the same failure of the POST,
// and costs nothing; the field route says it in one line of text.
func TestLookupFailuresAsPOST(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Free, 0, 1000)
	_, spent := e.customer(t, account.Enterprise, 1, 1000)
	if r := e.query(t, spent.Secret, `{"ip":"8.8.8.8"}`); r.Code != http.StatusOK {
		t.Fatalf("spending the quota: %d", r.Code)
	}
	_, broke := e.customer(t, account.Pro, 0, 0)
	for _, tc := range []struct {
		name, key, ip, query, body string
		code                       ipatlas.ErrorCode
	}{
		{"no key", "", "8.8.8.8", "", `{"ip":"8.8.8.8"}`, ipatlas.CodeInvalidAPIKey},
		{"bad key", "ipa_nope_nope", "8.8.8.8", "", `{"ip":"8.8.8.8"}`, ipatlas.CodeInvalidAPIKey},
		{"invalid ip", k.Secret, "8.8.8.300", "", `{"ip":"8.8.8.300"}`, ipatlas.CodeInvalidIP},
		{"private ip", k.Secret, "10.1.2.3", "", `{"ip":"10.1.2.3"}`, ipatlas.CodePrivateIP},
		{"bad lang", k.Secret, "8.8.8.8", "?lang=fr", `{"ip":"8.8.8.8","lang":"fr"}`, ipatlas.CodeInvalidRequest},
		{"bad field", k.Secret, "8.8.8.8", "?fields=town", `{"ip":"8.8.8.8","fields":["town"]}`, ipatlas.CodeInvalidRequest},
		{"quota spent", spent.Secret, "8.8.8.8", "", `{"ip":"8.8.8.8"}`, ipatlas.CodeRateLimitExceeded},
		{"no credits", broke.Secret, "8.8.8.8", "", `{"ip":"8.8.8.8"}`, ipatlas.CodeInsufficientCredits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := used(t, e, k.ID)
			post := e.query(t, tc.key, tc.body)
			get := e.do(t, req{method: "GET", path: "/api/lookup/" + tc.ip + tc.query, key: tc.key})
			text := e.do(t, req{method: "GET", path: "/api/lookup/" + tc.ip + "/city" + tc.query, key: tc.key})
			if post.env().Code != tc.code || get.env().Code != tc.code || get.Code != post.Code {
				t.Errorf("POST %d %s, GET %d %s, want %s", post.Code, post.Body, get.Code, get.Body, tc.code)
			}
			if tc.name == "bad field" {
				return // the field route's own field is city
			}
			want := "(" + string(tc.code) + ")\n"
			if text.Code != post.Code || !strings.HasPrefix(text.Body.String(), "error: ") || !strings.HasSuffix(text.Body.String(), want) {
				t.Errorf("text route: %d %q, want %d ending %q", text.Code, text.Body, post.Code, want)
			}
			if tc.code == ipatlas.CodeRateLimitExceeded && (get.Header().Get("Retry-After") == "" || text.Header().Get("Retry-After") == "") {
				t.Errorf("no Retry-After")
			}
			if got := used(t, e, k.ID); got != before {
				t.Errorf("used %d after failures, want %d", got, before)
			}
		})
	}
	// An unknown field in the path: 400 before the key is even looked at.
	r := e.do(t, req{method: "GET", path: "/api/lookup/8.8.8.8/town?lang=zh", key: k.Secret})
	if r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), "town") || !strings.HasSuffix(r.Body.String(), "(InvalidRequest)\n") {
		t.Errorf("unknown field: %d %q", r.Code, r.Body)
	}
	// 405 on the text route is text, with Allow.
	r = e.do(t, req{method: "POST", path: "/api/lookup/8.8.8.8/city", key: k.Secret, body: "{}"})
	if r.Code != http.StatusMethodNotAllowed || r.Header().Get("Allow") == "" || !strings.HasPrefix(r.Body.String(), "error: ") {
		t.Errorf("POST on the text route: %d %q", r.Code, r.Body)
	}
}

// A key in the URL ("key" or "token") works on every route that takes a
// key, and never reaches the log, a metric or an error text.
func TestKeyInURL(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1000)
	secret := k.Secret[strings.LastIndexByte(k.Secret, '_')+1:]
	q := url.QueryEscape(k.Secret)
	for _, tc := range []struct {
		method, path, body string
		header             string
		status             int
	}{
		{"GET", "/api/lookup/8.8.8.8?key=" + q, "", "", http.StatusOK},
		{"GET", "/api/lookup/8.8.8.8?token=" + q + "&lang=zh", "", "", http.StatusOK},
		{"GET", "/api/lookup/8.8.8.8/city?key=" + q, "", "", http.StatusOK},
		{"POST", "/api/ip-query?key=" + q, `{"ip":"8.8.8.8"}`, "", http.StatusOK},
		{"POST", "/api/ip-query/batch?token=" + q, `{"ips":["8.8.8.8"]}`, "", http.StatusOK},
		{"GET", "/api/usage?key=" + q, "", "", http.StatusOK},
		{"GET", "/api/lookup/8.8.8.8?key=" + q, "", k.Secret, http.StatusOK},                       // the same key twice
		{"GET", "/api/lookup/8.8.8.8?key=" + q + "&token=" + q, "", "", http.StatusOK},             // the same key twice
		{"GET", "/api/lookup/8.8.8.8?key=" + q, "", "ipa_other_key", http.StatusUnauthorized},      // two keys
		{"GET", "/api/lookup/8.8.8.8?key=" + q + "x", "", "", http.StatusUnauthorized},             // a wrong key
		{"GET", "/api/lookup/8.8.8.8/city?token=" + q + "x", "", "", http.StatusUnauthorized},      // a wrong key
		{"GET", "/api/lookup/8.8.8.8/town?token=" + q + "x", "", "", http.StatusBadRequest},        // echoes the field only
		{"GET", "/api/lookup/" + q + "?token=" + q, "", "", http.StatusBadRequest},                 // a key where the address goes
		{"POST", "/api/ip-query?key=" + q, `{"ip":"` + k.Secret + `"}`, "", http.StatusBadRequest}, // the body's own echo
	} {
		r := e.do(t, req{method: tc.method, path: tc.path, body: tc.body, key: tc.header})
		if r.Code != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.Code, r.Body, tc.status)
		}
		if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s %s: Cache-Control %q: an answer to a key in the URL must not be kept", tc.method, tc.path, cc)
		}
		if tc.status == http.StatusUnauthorized && strings.Contains(r.Body.String(), secret) {
			t.Errorf("%s %s: the error repeats the key: %s", tc.method, tc.path, r.Body)
		}
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"path":"/api/lookup/8.8.8.8"`) {
		t.Fatalf("no access line for the lookups in the log:\n%s", logs)
	}
	if strings.Contains(logs, secret) || strings.Contains(logs, "key=") || strings.Contains(logs, "token=") {
		t.Errorf("the log holds a key from a URL:\n%s", logs)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), secret) || strings.Contains(l.GetValue(), "key=") {
					t.Errorf("metric %s has the label %s=%q", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

// BenchmarkLookupGET is GET /api/lookup/{ip} with the key in the URL
// through the whole public handler, as BenchmarkQuery measures the POST.
func BenchmarkLookupGET(b *testing.B) {
	e, k := benchEnv(b)
	var failed atomic.Int64
	b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest("GET", "/api/lookup/8.8.8.8?lang=zh&key="+url.QueryEscape(k.Secret), nil)
			r.RemoteAddr = testPeer
			w := httptest.NewRecorder()
			e.pub.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d lookups failed", n)
	}
}

// The caller's own address through the shapes: the test peer is in
// TEST-NET-3, so ipinfo answers a bogon and ip-api "reserved range",
// both free.
func TestShapesOwnAddress(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1000)
	for _, path := range []string{"/ipinfo/", "/ipinfo/json"} {
		r := e.do(t, req{method: "GET", path: path, key: k.Secret})
		if r.Code != http.StatusOK || r.Body.String() != `{"ip":"203.0.113.7","bogon":true}`+"\n" {
			t.Errorf("%s: %d %s", path, r.Code, r.Body)
		}
	}
	for _, path := range []string{"/ip-api/json", "/ip-api/json/"} {
		r := e.do(t, req{method: "GET", path: path, key: k.Secret})
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"message":"reserved range","query":"203.0.113.7"`) {
			t.Errorf("%s: %d %s", path, r.Code, r.Body)
		}
	}
	r := e.do(t, req{method: "GET", path: "/ipinfo/", key: k.Secret, remote: "8.8.8.8:1234"})
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"city":"Mountain View"`) {
		t.Errorf("/ipinfo/ from 8.8.8.8: %d %s", r.Code, r.Body)
	}
	if n := used(t, e, k.ID); n != 1 {
		t.Errorf("used %d, want 1", n)
	}
}
