package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// handler is a route's handler: it answers, or returns an error that its
// surface's renderer answers (render.go). It receives the request's
// exchange (middleware.go) as a typed argument.
type handler func(w *exchange, r *http.Request) error

// serveHTTP makes a handler of a foreign http.Handler (the web pages,
// pprof, metrics), which answers everything itself.
func serveHTTP(h http.Handler) handler {
	return func(w *exchange, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
}

// route is one line of a route table (routes.go).
type route struct {
	pattern string     // a ServeMux pattern
	limit   limitClass // the abuse limit the router applies before h (limits.go)
	cors    bool       // answers CORS preflights (security.go)
	h       handler
}

// area is a part of a listener's paths, for the requests that match no
// route: its renderer answers their 404 and 405, after wrap (the admin
// API's token check) when set.
type area struct {
	match  func(path string) bool
	render renderer
	wrap   func(handler) handler
}

func anyPath(string) bool { return true }

// routeError is the router's own answer: 404 for an unknown path, 405
// with Allow for a known path asked with another method. Each renderer
// says it in its surface's body.
type routeError struct {
	allow string // "" for 404
	path  string
	hdr   []string
}

func (e *routeError) Error() string {
	if e.allow == "" {
		return "no such path: " + e.path
	}
	return "method not allowed; allowed: " + e.allow
}

// router is a ServeMux built from route tables. It is the one place that
// applies the routes' limits, answers CORS preflights, and answers, in
// the surface's format, what the mux would answer in plain text: 404 for
// an unknown path, and 405 with an Allow header for a known path asked
// with another method.
type router struct {
	mux     *http.ServeMux
	limit   func(w *exchange, r *http.Request, l limitClass) error
	methods map[string][]string // path pattern -> methods registered on it
	order   []string
	cors    map[string][]string // path -> the methods a preflight allows
	// corsWild matches a request's path to the paths of cors with a
	// wildcard; nil when there are none.
	corsWild *http.ServeMux
	areas    []area
}

func newRouter(limit func(w *exchange, r *http.Request, l limitClass) error) *router {
	return &router{mux: http.NewServeMux(), limit: limit, methods: make(map[string][]string), cors: make(map[string][]string)}
}

// mount registers a surface's routes, whose errors render answers.
func (rt *router) mount(routes []route, render renderer) {
	for _, rr := range routes {
		method, path, ok := strings.Cut(rr.pattern, " ")
		if !ok {
			// No method: it answers them all.
			rt.mux.Handle(rr.pattern, rt.adapt(render, rr.limit, rr.h))
			continue
		}
		rt.mux.Handle(rr.pattern, rt.adapt(render, rr.limit, rr.h))
		if _, ok := rt.methods[path]; !ok {
			rt.order = append(rt.order, path)
		}
		rt.methods[path] = append(rt.methods[path], method)
		if method == http.MethodGet {
			rt.methods[path] = append(rt.methods[path], http.MethodHead)
		}
		if rr.cors {
			if method == http.MethodGet {
				rt.cors[path] = hdrAllowGET
			} else {
				rt.cors[path] = []string{method}
			}
		}
	}
}

// adapt is a route's http.Handler: the limit, then the handler, then the
// renderer for an error of either.
func (rt *router) adapt(render renderer, l limitClass, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// serve gives the mux the exchange that instrument made, and the
		// mux passes it on as it is.
		x, ok := w.(*exchange)
		if !ok {
			x = &exchange{ResponseWriter: w}
		}
		var err error
		if l != unlimited {
			err = rt.limit(x, r, l)
		}
		if err == nil {
			err = h(x, r)
		}
		if err != nil {
			render(x, r, err)
		}
	})
}

// finish registers a method-less pattern per path (less specific than the
// method patterns, so it only catches the other methods) and the
// catch-all, both answered by the area of the request's path (the first
// that matches).
func (rt *router) finish(areas ...area) {
	rt.areas = areas
	for path := range rt.cors {
		if strings.Contains(path, "{") {
			if rt.corsWild == nil {
				rt.corsWild = http.NewServeMux()
			}
			rt.corsWild.Handle(path, http.NotFoundHandler())
		}
	}
	for _, path := range rt.order {
		ms := rt.methods[path]
		slices.Sort(ms)
		ms = slices.Compact(ms)
		e := &routeError{allow: strings.Join(ms, ", ")}
		e.hdr = []string{e.allow}
		if !rt.shadowed(path) {
			rt.mux.Handle(path, rt.unmatched(e))
			continue
		}
		// A fixed path beside a wildcard of another method ("POST
		// /ipinfo/batch" beside "GET /ipinfo/{what}"): the mux refuses a
		// method-less pattern there as ambiguous, so the path gets one
		// pattern per method it does not take.
		for _, m := range stdMethods {
			if !slices.Contains(ms, m) {
				rt.mux.Handle(m+" "+path, rt.unmatched(e))
			}
		}
	}
	if _, ok := rt.methods["/"]; !ok {
		rt.mux.Handle("/", rt.unmatched(&routeError{}))
	}
}

// stdMethods are the methods of RFC 9110 and PATCH.
var stdMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace}

// shadowed reports whether another path with a wildcard also matches
// path, which the mux then holds to be ambiguous with a method-less
// pattern for path.
func (rt *router) shadowed(path string) bool {
	if strings.Contains(path, "{") {
		return false
	}
	for _, other := range rt.order {
		if other == path || !strings.Contains(other, "{") {
			continue
		}
		probe := http.NewServeMux()
		probe.Handle(other, http.NotFoundHandler())
		if _, p := probe.Handler(&http.Request{Method: http.MethodGet, URL: &url.URL{Path: path}}); p != "" {
			return true
		}
	}
	return false
}

func (rt *router) unmatched(e *routeError) http.Handler {
	hs := make([]http.Handler, len(rt.areas))
	for i, a := range rt.areas {
		h := notMatched(e)
		if a.wrap != nil {
			h = a.wrap(h)
		}
		hs[i] = rt.adapt(a.render, unlimited, h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs[rt.areaOf(r.URL.Path)].ServeHTTP(w, r)
	})
}

// notMatched is the handler of a request that no route takes.
func notMatched(e *routeError) handler {
	return func(w *exchange, r *http.Request) error {
		if e.allow != "" {
			w.Header()["Allow"] = e.hdr
			return e
		}
		return &routeError{path: r.URL.Path}
	}
}

// areaOf is the index of the first area that matches path; the last
// area answers when none does.
func (rt *router) areaOf(path string) int {
	for i, a := range rt.areas {
		if a.match(path) {
			return i
		}
	}
	return len(rt.areas) - 1
}

// notFound and notAllowed are the router's answers for a handler that
// serves a subtree of paths itself (the portal's page).
func notFound(r *http.Request) error { return &routeError{path: r.URL.Path} }

func notAllowed(w http.ResponseWriter, allow []string) error {
	w.Header()["Allow"] = allow
	return &routeError{allow: allow[0], hdr: allow}
}

// serve answers a CORS preflight for a route that takes them, and routes
// everything else. A CONNECT with a target in authority form
// ("CONNECT example.com:443") has no path, so no pattern matches it and
// the mux would answer in plain text: it gets what the path "/" gets for
// CONNECT, 405 or 404 in the surface's format.
func (rt *router) serve(w *exchange, r *http.Request) {
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		path := r.URL.Path
		methods, ok := rt.cors[path]
		if !ok && rt.corsWild != nil {
			// A path with a wildcard ("/api/lookup/{ip}"): its pattern,
			// never the request's path, is the route's name.
			if _, pat := rt.corsWild.Handler(r); pat != "" {
				path = pat
				methods, ok = rt.cors[pat]
			}
		}
		if ok {
			preflight(w, r, methods, path)
			return
		}
	}
	if r.Method == http.MethodConnect && !strings.HasPrefix(r.URL.Path, "/") {
		root := r.WithContext(r.Context())
		u := *r.URL
		u.Path, u.RawPath = "/", ""
		root.URL = &u
		h, _ := rt.mux.Handler(root)
		h.ServeHTTP(w, r)
		return
	}
	rt.mux.ServeHTTP(w, r)
}

// ServeHTTP serves a request outside instrument (which calls serve with
// the exchange it made).
func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt.serve(&exchange{ResponseWriter: w}, r)
}

// isPortalAPI reports whether a path is the portal's JSON API.
func isPortalAPI(path string) bool { return strings.HasPrefix(path, "/account/api/") }
