package server

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryRouteDocumented reads the routes as routes.go registers them and
// wants each in its listener's OpenAPI document, method included, so that
// an endpoint no test happens to call is documented all the same. Left out:
// the page's root and assets, and pprof's sub-handlers (the document
// describes /debug/pprof/ once).
func TestEveryRouteDocumented(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	pubStart := strings.Index(text, "func (s *Server) routes()")
	admStart := strings.Index(text, "func (s *Server) adminRoutes()")
	end := strings.Index(text, "type router struct")
	if pubStart < 0 || admStart < pubStart || end < admStart {
		t.Fatal("routes.go no longer has routes(), adminRoutes() and the router in that order")
	}
	undocumented := map[string]bool{
		"GET /{$}": true, "GET /assets/": true,
		"/debug/pprof/cmdline": true, "/debug/pprof/profile": true, "/debug/pprof/symbol": true, "/debug/pprof/trace": true,
	}
	handle := regexp.MustCompile(`r\.handle(Any)?\("([^"]+)"(?:\+(\w+))?`)
	consts := map[string]string{"mePath": mePath} // paths routes.go names by a constant
	param := regexp.MustCompile(`\{([^}.]+)(\.\.\.)?\}`)
	for _, part := range []struct {
		name string
		code string
		spec *spec
	}{
		{"public", text[pubStart:admStart], publicSpec(t)},
		{"admin", text[admStart:end], adminSpec(t)},
	} {
		n := 0
		for _, m := range handle.FindAllStringSubmatch(part.code, -1) {
			pattern := m[2]
			if m[3] != "" {
				c, ok := consts[m[3]]
				if !ok {
					t.Errorf("routes.go builds a pattern with %s; add its value to this test", m[3])
					continue
				}
				pattern += c
			}
			n++
			if undocumented[pattern] {
				continue
			}
			method, path, ok := strings.Cut(pattern, " ")
			if !ok {
				method, path = "", pattern // any method
			}
			// The document names path parameters as the mux does, without
			// the mux's "..." for a rest parameter.
			path = param.ReplaceAllString(path, "{$1}")
			item := part.spec.doc.Paths.Find(path)
			if item == nil {
				t.Errorf("%s listener: %s is not in the OpenAPI document", part.name, pattern)
				continue
			}
			if method != "" && item.GetOperation(method) == nil {
				t.Errorf("%s listener: %s has no %s operation in the OpenAPI document", part.name, path, method)
			}
		}
		if n < 10 {
			t.Errorf("%s listener: read only %d routes from routes.go", part.name, n)
		}
	}
}
