package web

import (
	"bytes"
	"compress/gzip"
	"html"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/names"
)

// Accept headers real clients send.
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

func TestNegotiate(t *testing.T) {
	for _, c := range []struct {
		name, accept, ua string
		want             Format
	}{
		{"curl default", "*/*", uaCurl, FormatText},
		{"curl without accept", "", uaCurl, FormatText},
		{"curl upper-case agent", "*/*", "CURL/7.88.1", FormatText},
		{"wget", "*/*", uaWget, FormatText},
		{"wget2", "*/*", uaWget2, FormatText},
		{"httpie default asks json but gets text", acceptHTTPie, uaHTTPie, FormatText},
		{"curl asking json", "application/json", uaCurl, FormatJSON},
		{"httpie asking json only", "application/json", uaHTTPie, FormatJSON},
		{"curl asking html", "text/html", uaCurl, FormatHTML},
		{"curl refusing text", "text/plain;q=0, application/json", uaCurl, FormatJSON},
		{"chrome", acceptChrome, uaChrome, FormatHTML},
		{"firefox", acceptFirefox, uaFirefox, FormatHTML},
		{"safari", acceptSafari, uaSafari, FormatHTML},
		{"browser asking text", "text/plain", uaFirefox, FormatText},
		{"browser fetch default", "*/*", uaChrome, FormatText},
		{"json", "application/json", "", FormatJSON},
		{"json with charset param", "application/json; charset=utf-8", "Go-http-client/1.1", FormatJSON},
		{"json preferred by weight", "text/plain;q=0.5, application/json;q=0.9", "", FormatJSON},
		{"text preferred by weight", "text/plain;q=0.9, application/json;q=0.5", "", FormatText},
		{"html weighted above json", "application/json;q=0.4, text/html", "", FormatHTML},
		{"no headers at all", "", "", FormatText},
		{"go client", "", "Go-http-client/1.1", FormatText},
		{"python requests", "*/*", "python-requests/2.32.3", FormatText},
		{"text wildcard", "text/*", "", FormatText},
		{"text wildcard without plain", "text/*, text/plain;q=0", "", FormatHTML},
		{"specific range beats wildcard", "text/plain;q=0, */*", uaFirefox, FormatJSON},
		{"nothing we have", "image/png", "", FormatText},
		{"only refusals", "text/plain;q=0, application/json;q=0, text/html;q=0", "", FormatText},
		{"upper-case type", "TEXT/HTML", "", FormatHTML},
		{"malformed weight ignored", "text/html;q=abc, application/json;q=0.1", "", FormatJSON},
		{"weight out of range ignored", "text/html;q=2, application/json;q=0.1", "", FormatJSON},
		{"garbage", ";;;,,,/", "", FormatText},
		{"spaces and tabs", " \ttext/html\t; q=1 ", "", FormatHTML},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := negotiate(c.accept, c.ua); got != c.want {
				t.Errorf("negotiate(%q, %q) = %v, want %v", c.accept, c.ua, got, c.want)
			}
		})
	}
}

// peer is the ClientAddr of these tests: the socket peer, as the server
// computes it without trusted proxies.
func peer(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func newHandler(t testing.TB, opts Options) http.Handler {
	t.Helper()
	if opts.ClientAddr == nil {
		opts.ClientAddr = peer
	}
	h, err := Handler(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func serve(h http.Handler, method, target, remote string, header map[string][]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://ipatlas.example"+target, nil)
	r.RemoteAddr = remote
	for k, vs := range header {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestPageEscapesAndConfigures(t *testing.T) {
	h := newHandler(t, Options{
		IPv4URL: "https://ipv4.ipatlas.example/",
		IPv6URL: "https://[2001:db8::1]:8443/ipv6",
	})
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "203.0.113.7:1"
	r.Host = `evil"><script>alert(1)</script>`
	r.Header.Set("Accept", "text/html")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	body := w.Body.String()
	if strings.Contains(body, "<script>alert(1)") {
		t.Error("the Host header reached the page unescaped")
	}
	for _, want := range []string{
		`data-ipv4-url="https://ipv4.ipatlas.example/"`,
		`data-ipv6-url="https://[2001:db8::1]:8443/ipv6"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Were the script missing, a native submit must not carry the key
	// anywhere: the field has no name and the CSP forbids form targets.
	i := strings.Index(body, `id="q-key"`)
	if i < 0 {
		t.Fatal("no key field")
	}
	start, end := strings.LastIndex(body[:i], "<"), i+strings.Index(body[i:], ">")
	if field := body[start : end+1]; strings.Contains(field, "name=") {
		t.Errorf("the key field has a name: %s", field)
	}
	csp := w.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "form-action 'none'") {
		t.Errorf("CSP %q lets forms submit", csp)
	}
	if !strings.Contains(csp, "connect-src 'self' https://ipv4.ipatlas.example https:;") {
		t.Errorf("CSP %q does not let the page reach the family endpoints", csp)
	}
}

func TestHandlerOptions(t *testing.T) {
	if _, err := Handler(Options{}); err == nil {
		t.Error("no ClientAddr accepted")
	}
	for _, bad := range []string{"ipv4", "//ipv4.example.com/", "ftp://x/", "javascript:alert(1)", "https://user:pw@x/", "http://%zz/"} {
		if _, err := Handler(Options{ClientAddr: peer, IPv4URL: bad}); err == nil {
			t.Errorf("IPv4URL %q accepted", bad)
		}
	}
	for _, good := range []string{"/ipv4", "http://127.0.0.1:8080/ipv4", "https://ipv4.example.com"} {
		if _, err := Handler(Options{ClientAddr: peer, IPv6URL: good}); err != nil {
			t.Errorf("IPv6URL %q: %v", good, err)
		}
	}
}

func TestOtherPathsAndMethods(t *testing.T) {
	h := newHandler(t, Options{})
	if w := serve(h, "POST", "/", "203.0.113.7:1", nil); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	if w := serve(h, "GET", "/nope", "203.0.113.7:1", nil); w.Code != http.StatusNotFound {
		t.Errorf("GET /nope: %d", w.Code)
	}
	if w := serve(h, "GET", "/assets/nope.js", "203.0.113.7:1", nil); w.Code != http.StatusNotFound {
		t.Errorf("unknown asset: %d", w.Code)
	}
	if w := serve(h, "DELETE", "/assets/favicon.svg", "203.0.113.7:1", nil); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE asset: %d", w.Code)
	}
}

func TestAssets(t *testing.T) {
	h := newHandler(t, Options{})
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, ctype string
		immutable   bool
	}{
		{m.Script, "text/javascript", true},
		{m.Style, "text/css", true},
		{m.Favicon, "image/svg+xml", false},
		{m.Licenses, "text/plain", false},
	} {
		t.Run(c.path, func(t *testing.T) {
			if c.path == "" {
				t.Fatal("the manifest lacks an asset")
			}
			raw, err := fs.ReadFile(dist, "dist/"+c.path)
			if err != nil {
				t.Fatal(err)
			}
			w := serve(h, "GET", "/"+c.path, "203.0.113.7:1", nil)
			if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), c.ctype) {
				t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
			}
			if !bytes.Equal(w.Body.Bytes(), raw) {
				t.Error("plain body differs from the embedded file")
			}
			if got := strings.Contains(w.Header().Get("Cache-Control"), "immutable"); got != c.immutable {
				t.Errorf("Cache-Control %q", w.Header().Get("Cache-Control"))
			}

			gz := serve(h, "GET", "/"+c.path, "203.0.113.7:1", map[string][]string{"Accept-Encoding": {"br, gzip;q=0.8"}})
			if gz.Header().Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(gz.Body)
				if err != nil {
					t.Fatal(err)
				}
				unz, err := io.ReadAll(zr)
				if err != nil || !bytes.Equal(unz, raw) {
					t.Errorf("gzip body does not inflate to the file (%v)", err)
				}
				if gz.Header().Get("Etag") == w.Header().Get("Etag") {
					t.Error("the gzip and plain forms share an ETag")
				}
			} else if len(raw) > 4096 {
				t.Error("a large text asset is not served compressed")
			}
			if no := serve(h, "GET", "/"+c.path, "203.0.113.7:1", map[string][]string{"Accept-Encoding": {"gzip;q=0"}}); no.Header().Get("Content-Encoding") != "" {
				t.Error("gzip;q=0 got gzip")
			}

			etag := w.Header().Get("Etag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			if nm := serve(h, "GET", "/"+c.path, "203.0.113.7:1", map[string][]string{"If-None-Match": {etag}}); nm.Code != http.StatusNotModified {
				t.Errorf("If-None-Match: %d", nm.Code)
			}
		})
	}
}

func TestEmbeddedPageReferencesItsAssets(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Inputs) != 64 {
		t.Errorf("manifest inputs hash %q", m.Inputs)
	}
	names := map[string]bool{}
	for _, p := range m.Packages {
		names[p.Name] = true
		if p.License == "" || p.Version == "" {
			t.Errorf("package %+v lacks a version or license", p)
		}
	}
	for _, want := range []string{"d3-geo", "topojson-client", "world-atlas"} {
		if !names[want] {
			t.Errorf("the bundle does not list %s", want)
		}
	}
	lic, err := fs.ReadFile(dist, "dist/"+m.Licenses)
	if err != nil {
		t.Fatal(err)
	}
	for n := range names {
		if !bytes.Contains(lic, []byte(n)) {
			t.Errorf("licenses.txt lacks %s", n)
		}
	}
	// The page must load nothing from elsewhere: no CDN, works offline.
	page, _ := fs.ReadFile(dist, "dist/index.html")
	script, _ := fs.ReadFile(dist, "dist/"+m.Script)
	style, _ := fs.ReadFile(dist, "dist/"+m.Style)
	for name, b := range map[string][]byte{"index.html": page, "script": script, "style": style} {
		for _, bad := range []string{"<script src=\"http", "<link rel=\"stylesheet\" href=\"http", "@import", "cdn.", "unpkg.com", "jsdelivr"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s contains %q: it must load nothing from elsewhere", name, bad)
			}
		}
	}
}

func TestContentHashed(t *testing.T) {
	for name, want := range map[string]bool{
		"main-VMUAEURJ.js": true, "style-ZQTXCHZX.css": true,
		"favicon.svg": false, "licenses.txt": false, "a-b.js": false,
	} {
		if got := contentHashed(name); got != want {
			t.Errorf("contentHashed(%q) = %v", name, got)
		}
	}
}

func BenchmarkNegotiate(b *testing.B) {
	for _, c := range []struct{ name, accept, ua string }{
		{"curl", "*/*", uaCurl},
		{"httpie", acceptHTTPie, uaHTTPie},
		{"chrome", acceptChrome, uaChrome},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				negotiate(c.accept, c.ua)
			}
		})
	}
}

// TestPageAttributesEverySource: the footer links every data source with
// its licence.
func TestPageAttributesEverySource(t *testing.T) {
	w := serve(newHandler(t, Options{}), "GET", "/", "203.0.113.7:1", map[string][]string{"Accept": {"text/html"}})
	body := w.Body.String()
	_, foot, ok := strings.Cut(body, `<footer class="foot">`)
	if !ok {
		t.Fatalf("the page has no footer:\n%s", body)
	}
	for _, s := range names.Sources() {
		link := `<a href="` + s.URL + `" title="` + html.EscapeString(s.Provides) + `">` + html.EscapeString(s.Name) + `</a> (` + html.EscapeString(s.Licence) + `)`
		if !strings.Contains(foot, link) {
			t.Errorf("the footer lacks %s", link)
		}
	}
}
