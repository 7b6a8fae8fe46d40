package server

import (
	"regexp"
	"strings"
	"testing"
)

// TestEveryRouteDocumented reads the route tables (routes.go) and wants
// each route in its listener's OpenAPI document, method included, so that
// an endpoint no test happens to call is documented all the same. Left out:
// the page's root and assets, and pprof's sub-handlers (the document
// describes /debug/pprof/ once).
func TestEveryRouteDocumented(t *testing.T) {
	e := newEnv(t)
	undocumented := map[string]bool{
		"GET /{$}": true, "GET /assets/": true,
		"/debug/pprof/cmdline": true, "/debug/pprof/profile": true, "/debug/pprof/symbol": true, "/debug/pprof/trace": true,
	}
	param := regexp.MustCompile(`\{([^}.]+)(\.\.\.)?\}`)
	for _, part := range []struct {
		name   string
		routes []route
		spec   *spec
	}{
		{"public", publicRoutes(e.srv), publicSpec(t)},
		{"admin", e.srv.admin.routes(), adminSpec(t)},
	} {
		for _, rr := range part.routes {
			if undocumented[rr.pattern] {
				continue
			}
			method, path, ok := strings.Cut(rr.pattern, " ")
			if !ok {
				method, path = "", rr.pattern // any method
			}
			// The document names path parameters as the mux does, without
			// the mux's "..." for a rest parameter; "{$}", the end of the
			// path, is the path up to it.
			path = param.ReplaceAllString(strings.TrimSuffix(path, "{$}"), "{$1}")
			item := part.spec.doc.Paths.Find(path)
			if item == nil {
				t.Errorf("%s listener: %s is not in the OpenAPI document", part.name, rr.pattern)
				continue
			}
			if method != "" && item.GetOperation(method) == nil {
				t.Errorf("%s listener: %s has no %s operation in the OpenAPI document", part.name, path, method)
			}
		}
		if len(part.routes) < 10 {
			t.Errorf("%s listener: only %d routes", part.name, len(part.routes))
		}
	}
}

// publicRoutes are the routes of every table of the public listener.
func publicRoutes(s *Server) []route {
	var all []route
	for _, t := range s.publicTables() {
		all = append(all, t.routes...)
	}
	return all
}
