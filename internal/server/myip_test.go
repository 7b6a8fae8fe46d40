package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	apidoc "github.com/ipatlas/ipatlas/api"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

func TestMyIP(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		remote, ip, version string
	}{
		{"203.0.113.7:40000", "203.0.113.7", "IPv4"},
		{"[2001:db8::1]:40000", "2001:db8::1", "IPv6"},
		{"[::ffff:203.0.113.7]:40000", "203.0.113.7", "IPv4"}, // IPv4 client of a dual-stack socket
		{"[fe80::1%eth0]:40000", "fe80::1", "IPv6"},
		{"127.0.0.1:1", "127.0.0.1", "IPv4"},
	} {
		t.Run(tc.remote, func(t *testing.T) {
			r := e.do(t, req{method: "GET", path: "/api/ip/myip", remote: tc.remote})
			if r.Code != 200 {
				t.Fatalf("status %d: %s", r.Code, r.Body)
			}
			var got ipatlas.MyIPResponse
			if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			want := ipatlas.MyIPResponse{Result: true, Code: "querySuccess", Message: "Query Success", IP: tc.ip, IPVersion: tc.version}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q", cc)
			}
			if o := r.Header().Get("Access-Control-Allow-Origin"); o != "*" {
				t.Errorf("Access-Control-Allow-Origin %q", o)
			}
		})
	}
	t.Run("HEAD", func(t *testing.T) {
		r := e.do(t, req{method: "HEAD", path: "/api/ip/myip"})
		if r.Code != 200 || r.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("HEAD: %d %v", r.Code, r.Header())
		}
	})
	t.Run("no IP peer", func(t *testing.T) {
		r := e.do(t, req{method: "GET", path: "/api/ip/myip", remote: "@"})
		checkFailure(t, r, ipatlas.CodeInternal, "Internal server error", ipatlas.Meta{IsAPIRequest: true})
	})
}

func TestPlainTextFamilies(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.IPv4Host = "v4.example.net"
		c.IPv6Host = "V6.Example.NET:443" // normalized: case and port do not matter
	})
	const v4, v6, mapped = "198.51.100.9:5000", "[2001:db8::9]:5000", "[::ffff:198.51.100.9]:5000"
	for _, tc := range []struct {
		name, path, host, remote string
		status                   int
		body                     string // exact for 200; a fragment otherwise
	}{
		{"ipv4 over v4", "/ipv4", "", v4, 200, "198.51.100.9\n"},
		{"ipv4 over mapped", "/ipv4", "", mapped, 200, "198.51.100.9\n"},
		{"ipv4 over v6", "/ipv4", "", v6, 421, "answers IPv4 clients only; this request arrived over IPv6"},
		{"ipv6 over v6", "/ipv6", "", v6, 200, "2001:db8::9\n"},
		{"ipv6 over v4", "/ipv6", "", v4, 421, "answers IPv6 clients only; this request arrived over IPv4"},
		{"ipv6 over mapped", "/ipv6", "", mapped, 421, "answers IPv6 clients only; this request arrived over IPv4"},
		{"v4 host", "/", "v4.example.net", v4, 200, "198.51.100.9\n"},
		{"v4 host with port and case", "/", "V4.example.net:8080", v4, 200, "198.51.100.9\n"},
		{"v4 host over v6", "/", "v4.example.net", v6, 421, "answers IPv4 clients only"},
		{"v6 host", "/", "v6.example.net", v6, 200, "2001:db8::9\n"},
		{"v6 host over v4", "/", "v6.example.net", v4, 421, "answers IPv6 clients only"},
		{"no peer address", "/ipv4", "", "@", 500, "cannot see the client's address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, req{method: "GET", path: tc.path, host: tc.host, remote: tc.remote})
			body := r.Body.String()
			if r.Code != tc.status {
				t.Fatalf("status %d, want %d: %q", r.Code, tc.status, body)
			}
			if ct := r.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.status == 200 && body != tc.body {
				t.Errorf("body %q, want %q", body, tc.body)
			}
			if tc.status != 200 {
				if !strings.Contains(body, tc.body) {
					t.Errorf("body %q lacks %q", body, tc.body)
				}
				// Never the other family's address, in any form.
				for _, a := range []string{"198.51.100.9", "2001:db8::9"} {
					if strings.Contains(body, a) {
						t.Errorf("refusal %q contains the address %s", body, a)
					}
				}
			}
			if r.Header().Get("Cache-Control") != "no-store" || r.Header().Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("headers %v", r.Header())
			}
		})
	}
	t.Run("root elsewhere is the web page", func(t *testing.T) {
		// A client without a browser's Accept gets the address as text,
		// whatever its family; a browser gets the HTML page.
		r := e.do(t, req{method: "GET", path: "/", host: "api.example.net"})
		if r.Code != 200 || r.Body.String() != "203.0.113.7\n" {
			t.Errorf("GET / as a program: %d %q", r.Code, r.Body)
		}
		r = e.do(t, req{method: "GET", path: "/", host: "api.example.net", header: map[string]string{
			"Accept":     "text/html,application/xhtml+xml",
			"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0",
		}})
		if r.Code != 200 || !strings.HasPrefix(r.Header().Get("Content-Type"), "text/html") || !strings.Contains(r.Body.String(), "<html") {
			t.Errorf("GET / as a browser: %d %q", r.Code, r.Header().Get("Content-Type"))
		}
	})
}

// TestPlainTextOverRealSockets checks the family of real loopback
// connections, IPv4 and (when the machine has it) IPv6.
func TestPlainTextOverRealSockets(t *testing.T) {
	e := newEnv(t)
	get := func(t *testing.T, network, addr, path string) (int, string) {
		t.Helper()
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Skipf("no %s loopback on this machine (%v); CI should provide IPv4 and IPv6 loopback", network, err)
		}
		srv := httptest.NewUnstartedServer(e.pub)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		defer srv.Close()
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	t.Run("v4", func(t *testing.T) {
		if st, body := get(t, "tcp4", "127.0.0.1:0", "/ipv4"); st != 200 || body != "127.0.0.1\n" {
			t.Errorf("/ipv4 over IPv4: %d %q", st, body)
		}
		if st, body := get(t, "tcp4", "127.0.0.1:0", "/ipv6"); st != 421 || strings.Contains(body, "127.0.0.1") {
			t.Errorf("/ipv6 over IPv4: %d %q", st, body)
		}
	})
	t.Run("v6", func(t *testing.T) {
		if st, body := get(t, "tcp6", "[::1]:0", "/ipv6"); st != 200 || body != "::1\n" {
			t.Errorf("/ipv6 over IPv6: %d %q", st, body)
		}
		if st, body := get(t, "tcp6", "[::1]:0", "/ipv4"); st != 421 || strings.Contains(body, "::1") {
			t.Errorf("/ipv4 over IPv6: %d %q", st, body)
		}
	})
}

func TestPing(t *testing.T) {
	e := newEnv(t)
	r := e.do(t, req{method: "GET", path: "/api/ping", remote: "[2001:db8::5]:1"})
	if r.Code != 200 {
		t.Fatalf("status %d", r.Code)
	}
	var got ipatlas.PingResponse
	if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := ipatlas.PingResponse{Code: "pong", Time: testNow.Format(time.RFC3339Nano), IP: "2001:db8::5", Version: "test-1.2.3"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := time.Parse(time.RFC3339Nano, got.Time); err != nil {
		t.Errorf("time %q: %v", got.Time, err)
	}
	if r.Header().Get("Cache-Control") != "no-store" || r.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("headers %v", r.Header())
	}

	h := e.do(t, req{method: "HEAD", path: "/api/ping"})
	if h.Code != 200 || h.Header().Get("Content-Type") != "application/json" || h.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("HEAD: %d %v", h.Code, h.Header())
	}
}

func TestUsage(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Pro, 0, 40)
	for range 2 {
		if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
			t.Fatal(r.Body)
		}
	}
	e.query(t, k.Secret, `{"ip":"10.0.0.1"}`) // failures are free

	r := e.do(t, req{method: "GET", path: "/api/usage", key: k.Secret})
	if r.Code != 200 {
		t.Fatalf("status %d: %s", r.Code, r.Body)
	}
	var got ipatlas.Usage
	if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := ipatlas.Usage{
		AccountID: acct.ID, KeyID: k.ID, Tier: "pro", Period: "2026-11",
		Used: 2, Limit: account.ProMonthlyLimit, Remaining: account.ProMonthlyLimit - 2,
		Reset: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Credits: 38, QueryCost: 1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-2)

	// Reading usage is free.
	if u, _ := e.svc.Usage(context.Background(), k.ID); u.Used != 2 || u.Credits != 38 {
		t.Errorf("usage read changed the usage: %+v", u)
	}
	for _, key := range []string{"", "ipa_nope"} {
		r := e.do(t, req{method: "GET", path: "/api/usage", key: key, header: map[string]string{"Accept-Language": "zh"}})
		checkFailure(t, r, ipatlas.CodeInvalidAPIKey, "API密钥无效或缺失", ipatlas.Meta{IsAPIRequest: true})
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		method, path string
		code         ipatlas.ErrorCode
		allow        string
		lang         string
	}{
		{"GET", "/nope", ipatlas.CodeNotFound, "", ""},
		{"POST", "/api/nope", ipatlas.CodeNotFound, "", "zh-CN"},
		{"GET", "/api/ip-query", ipatlas.CodeMethodNotAllowed, "POST", ""},
		{"PUT", "/api/ip-query", ipatlas.CodeMethodNotAllowed, "POST", "zh"},
		{"DELETE", "/api/ping", ipatlas.CodeMethodNotAllowed, "GET, HEAD", ""},
		{"POST", "/api/ip/myip", ipatlas.CodeMethodNotAllowed, "GET, HEAD", ""},
		{"POST", "/ipv4", ipatlas.CodeMethodNotAllowed, "GET, HEAD", ""},
		{"POST", "/", ipatlas.CodeMethodNotAllowed, "GET, HEAD", ""},
		{"POST", "/api/usage", ipatlas.CodeMethodNotAllowed, "GET, HEAD", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			q := req{method: tc.method, path: tc.path}
			lang := ipatlas.English
			if tc.lang != "" {
				q.header = map[string]string{"Accept-Language": tc.lang}
				lang = ipatlas.Chinese
			}
			r := e.do(t, q)
			checkFailure(t, r, tc.code, tc.code.Text(lang), ipatlas.Meta{IsAPIRequest: true})
			if got := r.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
		})
	}
}

func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	r := e.do(t, req{method: "GET", path: "/openapi.yaml"})
	if r.Code != 200 || r.Body.String() != string(apidoc.OpenAPI) || r.Header().Get("Content-Type") != "application/yaml" {
		t.Errorf("GET /openapi.yaml: %d %s", r.Code, r.Header())
	}
	r = e.doAdmin(t, req{method: "GET", path: "/openapi.yaml"})
	if r.Code != 200 || r.Body.String() != string(apidoc.AdminOpenAPI) {
		t.Errorf("admin GET /openapi.yaml: %d", r.Code)
	}
}

// TestOpenAPICheckCatchesDrift makes sure the document check used by every
// test can fail: a body that breaks the schema must be reported.
func TestOpenAPICheckCatchesDrift(t *testing.T) {
	s := publicSpec(t)
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/api/ping", `{"code":"pong","time":"now","ip":"1.2.3.4"}`, 200}, // missing version, bad time
		{"/api/ip/myip", `{"result":true,"code":"querySuccess","message":"Query Success","IP":"x","IPVersion":"IPv5"}`, 200},
		{"/api/ip/myip", `{}`, 418}, // undocumented status
	} {
		w := httptest.NewRecorder()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(tc.status)
		io.WriteString(w, tc.body)
		ft := &fakeT{}
		checkDoc(ft, s, httptest.NewRequest("GET", "http://example.com"+tc.path, nil), w)
		if !ft.failed {
			t.Errorf("%s %d %s passed the document check", tc.path, tc.status, tc.body)
		}
	}
}

// fakeT records failures instead of failing the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true }

// TestMyRecord checks GET /api/ip/me as the server mounts it: the record of
// the caller's own address (as trusted proxies report it), free, in either
// language, and PrivateIP for a caller without a public address.
func TestMyRecord(t *testing.T) {
	e := newEnv(t)
	bj := geotest.Beijing
	r := e.do(t, req{method: "GET", path: "/api/ip/me?lang=zh", remote: bj.IP + ":5555"})
	if r.Code != 200 {
		t.Fatalf("status %d: %s", r.Code, r.Body)
	}
	env := r.env()
	if !env.Success || env.Data == nil || env.Data.IP != bj.IP || env.Data.Country != bj.CountryZH || env.Data.City != "北京市" {
		t.Errorf("record %+v", env.Data)
	}
	if env.Meta.IsLoggedIn || env.Meta.CurrentCredits != 0 {
		t.Errorf("meta %+v: the free record has no caller", env.Meta)
	}
	r = e.do(t, req{method: "GET", path: "/api/ip/me", remote: "127.0.0.1:5555"})
	if r.Code != 400 || r.env().Code != ipatlas.CodePrivateIP {
		t.Errorf("loopback caller: %d %s", r.Code, r.Body)
	}
}
