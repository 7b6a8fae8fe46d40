package web

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestAppPages(t *testing.T) {
	m, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	portal, err := PortalHandler()
	if err != nil {
		t.Fatal(err)
	}
	console, err := ConsoleHandler()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		h      http.Handler
		paths  []string
		base   string // where the page's assets are
		script string
	}{
		{"portal", portal, []string{"/account", "/account/", "/account/keys", "/account/password"}, "/", m.Portal},
		{"console", console, []string{"/console", "/console/audit", "/console/account/7"}, "/console/", m.Console},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range c.paths {
				w := serve(c.h, "GET", p, "203.0.113.7:1", nil)
				if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
					t.Fatalf("GET %s: %d %q", p, w.Code, w.Header().Get("Content-Type"))
				}
				hd := w.Header()
				for k, want := range map[string]string{
					"Cache-Control":          "no-store",
					"X-Content-Type-Options": "nosniff",
					"Referrer-Policy":        "no-referrer",
					"X-Frame-Options":        "DENY",
				} {
					if hd.Get(k) != want {
						t.Errorf("GET %s: %s %q, want %q", p, k, hd.Get(k), want)
					}
				}
				csp := hd.Get("Content-Security-Policy")
				for _, want := range []string{"script-src 'self'", "connect-src 'self';", "form-action 'none'", "frame-ancestors 'none'", "default-src 'none'"} {
					if !strings.Contains(csp, want) {
						t.Errorf("GET %s: CSP %q lacks %q", p, csp, want)
					}
				}
				body := w.Body.String()
				for _, a := range []string{c.script, m.Style, m.AppStyle} {
					if !strings.Contains(body, `"`+c.base+a+`"`) {
						t.Errorf("GET %s: the page does not load %s%s", p, c.base, a)
					}
				}
				// The CSP forbids inline script; the page must not rely on it.
				if regexp.MustCompile(`<script(?:\s+defer)?>`).MatchString(body) || strings.Contains(body, " onclick=") || strings.Contains(body, " style=") {
					t.Errorf("GET %s: inline script or style in the page", p)
				}
			}
			if w := serve(c.h, "HEAD", c.paths[0], "203.0.113.7:1", nil); w.Code != 200 {
				t.Errorf("HEAD: %d", w.Code)
			}
			if w := serve(c.h, "POST", c.paths[0], "203.0.113.7:1", nil); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("POST: %d Allow %q", w.Code, w.Header().Get("Allow"))
			}
			for _, p := range []string{"/elsewhere", c.paths[0] + "x", c.paths[0] + "/api/nope"} {
				if w := serve(c.h, "GET", p, "203.0.113.7:1", nil); w.Code != http.StatusNotFound {
					t.Errorf("GET %s: %d, want 404", p, w.Code)
				}
			}
		})
	}

	// The console is on the admin listener, which has no /assets/: its
	// handler serves them.
	for _, a := range []string{m.Console, m.Style, m.AppStyle, m.Favicon, m.Licenses} {
		w := serve(console, "GET", "/console/"+a, "203.0.113.7:1", nil)
		raw, _ := fs.ReadFile(dist, "dist/"+a)
		if w.Code != 200 || w.Body.String() != string(raw) || w.Header().Get("Content-Type") != contentType(a) {
			t.Errorf("GET /console/%s: %d %q", a, w.Code, w.Header().Get("Content-Type"))
		}
	}
	if w := serve(console, "GET", "/console/assets/nope.js", "203.0.113.7:1", nil); w.Code != http.StatusNotFound {
		t.Errorf("unknown console asset: %d", w.Code)
	}
}

// TestPagesLabelEveryControl: every input, select and textarea of the
// three pages has a <label for> (or sits in one), so that screen readers
// name it; the browser tests check the rest with axe-core.
func TestPagesLabelEveryControl(t *testing.T) {
	control := regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`)
	id := regexp.MustCompile(`\bid="([^"]+)"`)
	for _, name := range []string{"index.html", "account.html", "console.html"} {
		b, err := fs.ReadFile(dist, "dist/"+name)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		for _, tag := range control.FindAllString(page, -1) {
			if strings.Contains(tag, `type="hidden"`) || strings.Contains(tag, " hidden") {
				continue
			}
			m := id.FindStringSubmatch(tag)
			if m == nil {
				t.Errorf("%s: %s has no id", name, tag)
				continue
			}
			i := strings.Index(page, tag)
			inLabel := strings.LastIndex(page[:i], "<label") > strings.LastIndex(page[:i], "</label>")
			if !strings.Contains(page, `for="`+m[1]+`"`) && !inLabel {
				t.Errorf("%s: #%s has no label", name, m[1])
			}
		}
	}
}

// TestTranslationsComplete: every string has both an English and a
// Chinese text, and every data-i18n key of the pages exists.
func TestTranslationsComplete(t *testing.T) {
	src := filepath.Join("..", "..", "web")
	files, _ := filepath.Glob(filepath.Join(src, "src", "msg-*.js"))
	files = append(files, filepath.Join(src, "src", "i18n.js"))
	key := regexp.MustCompile(`(?m)^\s+'([a-zA-Z0-9_.]+)':`)
	en, zh := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, "\n  zh: {")
		if i < 0 {
			t.Fatalf("%s: no zh table", f)
		}
		for _, m := range key.FindAllStringSubmatch(s[:i], -1) {
			en[m[1]] = true
		}
		for _, m := range key.FindAllStringSubmatch(s[i:], -1) {
			zh[m[1]] = true
		}
	}
	if len(en) < 100 {
		t.Fatalf("found only %d English strings: the test reads the tables wrongly", len(en))
	}
	for k := range en {
		if !zh[k] {
			t.Errorf("%q has no Chinese text", k)
		}
	}
	for k := range zh {
		if !en[k] {
			t.Errorf("%q has no English text", k)
		}
	}
	used := regexp.MustCompile(`data-i18n="([^"]+)"|=([a-zA-Z0-9_.]+)"`)
	for _, name := range []string{"index.html", "account.html", "console.html"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range used.FindAllStringSubmatch(string(b), -1) {
			k := m[1]
			if k == "" {
				k = m[2] // data-i18n-attr="attr=key"
				if !strings.Contains(k, ".") {
					continue
				}
			}
			if !en[k] {
				t.Errorf("%s uses %q, which no table defines", name, k)
			}
		}
	}
}

// The pages translate the admin and portal APIs' failures by code: every
// err.CODE text is for a code those APIs send (internal/server's Code
// constants), or for the page's own NetworkError, Timeout and other, so
// that no failure falls through to "Something went wrong" for a
// misspelt code.
func TestErrorTextsNameServerCodes(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "server", "errors.go"))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{"NetworkError": true, "Timeout": true, "other": true}
	for _, m := range regexp.MustCompile(`(?m)^\s+Code\w+\s+Code = "(\w+)"`).FindAllStringSubmatch(string(src), -1) {
		codes[m[1]] = true
	}
	if len(codes) < 10 {
		t.Fatalf("found %d codes in errors.go: the test reads it wrongly", len(codes))
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "web", "src", "i18n.js"))
	if err != nil {
		t.Fatal(err)
	}
	keys := regexp.MustCompile(`'err\.(\w+)':`).FindAllStringSubmatch(string(b), -1)
	if len(keys) < 10 {
		t.Fatalf("found %d err. texts in i18n.js", len(keys))
	}
	for _, k := range keys {
		if !codes[k[1]] {
			t.Errorf("i18n.js translates err.%s, but the APIs send no code %s", k[1], k[1])
		}
	}
}
