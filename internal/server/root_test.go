package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/ipatlas/ipatlas/internal/web"
)

// Accept headers and User-Agents real clients send.
const (
	acceptChrome  = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
	acceptFirefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	acceptSafari  = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	acceptHTTPie  = "application/json, */*;q=0.5"

	uaCurl    = "curl/8.5.0"
	uaWget    = "Wget/1.21.3"
	uaWget2   = "Wget2/2.1.0"
	uaHTTPie  = "HTTPie/3.2.2"
	uaChrome  = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	uaFirefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	uaSafari  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
)

// newRoot is the public handler over the fixture's engine, for GET / .
func newRoot(t testing.TB) http.Handler {
	t.Helper()
	p := servertest.New(t, nil)
	return mustNew(t, Config{Logger: slog.New(slog.DiscardHandler), Now: p.Now},
		Deps{Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter}).Handler()
}

func serveRoot(h http.Handler, method, remote string, header map[string][]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://ipatlas.example/", nil)
	r.RemoteAddr = remote
	for k, vs := range header {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestRootNegotiated(t *testing.T) {
	h := newRoot(t)
	m, err := web.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	const v4, v6 = "203.0.113.7:40000", "[2001:db8::7]:40000"
	for _, c := range []struct {
		name        string
		method      string
		remote      string
		accept      []string
		ua          string
		wantType    string
		wantBody    string // exact, for text; the IP for JSON; a fragment for HTML
		wantVersion string
	}{
		{"curl ipv4", "GET", v4, []string{"*/*"}, uaCurl, "text/plain", "203.0.113.7\n", ""},
		{"curl ipv6", "GET", v6, []string{"*/*"}, uaCurl, "text/plain", "2001:db8::7\n", ""},
		{"mapped peer is ipv4", "GET", "[::ffff:203.0.113.7]:1", nil, uaWget, "text/plain", "203.0.113.7\n", ""},
		{"wget", "GET", v4, []string{"*/*"}, uaWget, "text/plain", "203.0.113.7\n", ""},
		{"httpie", "GET", v4, []string{acceptHTTPie}, uaHTTPie, "text/plain", "203.0.113.7\n", ""},
		{"accept text", "GET", v4, []string{"text/plain"}, uaChrome, "text/plain", "203.0.113.7\n", ""},
		{"json ipv4", "GET", v4, []string{"application/json"}, uaCurl, "application/json", "203.0.113.7", ipatlas.IPv4},
		{"json ipv6", "GET", v6, []string{"application/json"}, "", "application/json", "2001:db8::7", ipatlas.IPv6},
		{"json over two accept lines", "GET", v4, []string{"text/plain;q=0.1", "application/json"}, "", "application/json", "203.0.113.7", ipatlas.IPv4},
		{"chrome", "GET", v4, []string{acceptChrome}, uaChrome, "text/html", `src="/` + m.Script + `"`, ""},
		{"safari phone", "GET", v6, []string{acceptSafari}, uaSafari, "text/html", `<code class="ip">2001:db8::7</code>`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string][]string{"Accept": c.accept, "User-Agent": {c.ua}}
			w := serveRoot(h, c.method, c.remote, hdr)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d, body %q", w.Code, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, c.wantType) {
				t.Fatalf("Content-Type %q, want %s", ct, c.wantType)
			}
			if v := w.Header().Get("Vary"); !strings.Contains(v, "Accept") || !strings.Contains(v, "User-Agent") {
				t.Errorf("Vary %q must name Accept and User-Agent: caches would mix the formats", v)
			}
			if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q: the answer is per caller", cc)
			}
			body := w.Body.String()
			switch {
			case c.wantType == "text/plain":
				if body != c.wantBody {
					t.Errorf("body %q, want %q", body, c.wantBody)
				}
			case c.wantType == "application/json":
				var got ipatlas.MyIPResponse
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
					t.Fatalf("%v: %s", err, body)
				}
				want := ipatlas.MyIPResponse{Result: true, Code: ipatlas.MyIPCodeSuccess, Message: ipatlas.MyIPMessageSuccess, IP: c.wantBody, IPVersion: c.wantVersion}
				if got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
			case c.wantType == "text/html":
				if !strings.Contains(body, c.wantBody) {
					t.Errorf("page lacks %q", c.wantBody)
				}
				if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
					t.Errorf("CSP %q", csp)
				}
			}
		})
	}
}

// TestRootOverRealSockets asks over real connections, as curl would, on
// IPv4 and (when the machine has it) IPv6 loopback.
func TestRootOverRealSockets(t *testing.T) {
	h := newRoot(t)
	for _, network := range []struct{ name, listen, want string }{
		{"ipv4", "127.0.0.1:0", "127.0.0.1\n"},
		{"ipv6", "[::1]:0", "::1\n"},
	} {
		t.Run(network.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", network.listen)
			if err != nil {
				t.Skipf("cannot listen on %s here: %v", network.listen, err)
			}
			srv := httptest.NewUnstartedServer(h)
			srv.Listener.Close()
			srv.Listener = ln
			srv.Start()
			defer srv.Close()
			for _, method := range []string{"GET", "HEAD"} {
				req, _ := http.NewRequest(method, srv.URL+"/", nil)
				req.Header.Set("User-Agent", uaCurl)
				res, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				want := network.want
				if method == "HEAD" {
					want = ""
				}
				if res.StatusCode != 200 || string(body) != want || res.ContentLength != int64(len(network.want)) {
					t.Errorf("%s: %d %q (length %d), want %q", method, res.StatusCode, body, res.ContentLength, want)
				}
			}
		})
	}
}

func TestRootWithoutClientAddress(t *testing.T) {
	h := newRoot(t)
	for _, c := range []struct {
		accept, wantType string
		wantStatus       int
	}{
		{"*/*", "text/plain", http.StatusInternalServerError},
		{"application/json", "application/json", http.StatusInternalServerError},
		{"text/html", "text/html", http.StatusOK}, // the page still works: the browser asks itself
	} {
		w := serveRoot(h, "GET", "@", map[string][]string{"Accept": {c.accept}})
		if w.Code != c.wantStatus || !strings.HasPrefix(w.Header().Get("Content-Type"), c.wantType) {
			t.Errorf("Accept %s: %d %s, want %d %s", c.accept, w.Code, w.Header().Get("Content-Type"), c.wantStatus, c.wantType)
		}
		if c.wantType == "application/json" {
			var env ipatlas.Envelope
			if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Success || env.Code != ipatlas.CodeInternal {
				t.Errorf("JSON failure %s (%v)", w.Body, err)
			}
		}
	}
}

func BenchmarkRoot(b *testing.B) {
	h := newRoot(b)
	for _, c := range []struct{ name, accept, ua string }{
		{"curl-text", "*/*", uaCurl},
		{"json", "application/json", ""},
		{"browser-html", acceptChrome, uaChrome},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = "203.0.113.7:40000"
			r.Header.Set("Accept", c.accept)
			r.Header.Set("User-Agent", c.ua)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
