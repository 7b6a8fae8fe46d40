package server

import (
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/ipatlas/ipatlas"
)

// handler is a route's handler: it answers, or returns an error that its
// surface's renderer answers (errors.go). It receives the request's
// exchange (middleware.go) as a typed argument.
type handler func(w *exchange, r *http.Request) error

// keyedHandler is the handler of a route that takes an API key: the router
// has authenticated the key before it runs and hands it the outcome
// (auth.go), from which only admit makes the caller that the metered
// query takes.
type keyedHandler func(w *exchange, r *http.Request, cr credential) error

// serveHTTP makes a handler of a foreign http.Handler (the web pages,
// pprof, metrics), which answers everything itself.
func serveHTTP(h http.Handler) handler {
	return func(w *exchange, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
}

// route is one line of a route table (routes.go, and each shape's). A
// route has h, or k when it takes a key, which its caller names as its
// table says (keyScheme).
type route struct {
	pattern string     // a ServeMux pattern
	limit   limitClass // the abuse limit of a route that takes no key (limits.go)
	cors    bool       // answers CORS preflights (security.go)
	h       handler
	k       keyedHandler
}

// area is a part of a listener's paths: its renderer answers the failures
// that happen before a route is known or outside one (a refused framing,
// a panic, an unknown path, a method the path does not take), after wrap
// (the admin API's token check) when set.
type area struct {
	match  func(path string) bool
	render renderer
	wrap   func(handler) handler
}

func anyPath(string) bool { return true }

// endpoint is what the router runs for one registered pattern: the
// route's handler and limit, and the renderer of its failures.
type endpoint struct {
	render renderer
	limit  limitClass
	h      handler
	k      keyedHandler
	key    keyScheme // how a keyed route's caller names its key
	// wild are the pattern's wildcards, for the request's path values.
	wild []wildcard
}

// wildcard is one wildcard of a pattern: the path segment it takes (from
// 0, after the leading slash), its name, and whether it takes the rest of
// the path ("{rest...}").
type wildcard struct {
	seg  int
	name string
	rest bool
}

// router is a ServeMux built from route tables. The mux only matches: the
// router runs the endpoint of the matched pattern itself, with the
// exchange as a typed argument, so that no layer finds the exchange by
// asserting a ResponseWriter's type. It is the one place that
// authenticates keyed routes and applies the routes' limits, answers CORS
// preflights, and answers, in the surface's format, what the mux would
// answer in plain text: 404 for an unknown path, and 405 with an Allow
// header for a known path asked with another method. It serves a path
// that is not clean (//api/lookup/8.8.8.8) or lacks a subtree's slash
// (/ipinfo) as the path the mux would redirect it to, rather than
// redirect: a redirect would repeat a key that the URL carries in its
// Location and body.
type router struct {
	mux       *http.ServeMux
	srv       *Server
	endpoints map[string]*endpoint // by pattern, as registered
	methods   map[string][]string  // path pattern -> methods registered on it
	order     []string
	cors      map[string][]string // path -> the methods a preflight allows
	// corsWild matches a request's path to the paths of cors with a
	// wildcard; nil when there are none.
	corsWild *http.ServeMux
	areas    []area
}

func newRouter(s *Server) *router {
	return &router{mux: http.NewServeMux(), srv: s, endpoints: make(map[string]*endpoint),
		methods: make(map[string][]string), cors: make(map[string][]string)}
}

// handle registers an endpoint under a pattern.
func (rt *router) handle(pattern string, e *endpoint) {
	_, path, ok := strings.Cut(pattern, " ")
	if !ok {
		path = pattern
	}
	e.wild = wildcards(path)
	rt.endpoints[pattern] = e
	rt.mux.Handle(pattern, http.NotFoundHandler()) // the mux only matches
}

// wildcards lists the wildcards of a pattern's path.
func wildcards(path string) []wildcard {
	var out []wildcard
	for i, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if len(seg) < 3 || seg[0] != '{' || seg[len(seg)-1] != '}' || seg == "{$}" {
			continue
		}
		name := seg[1 : len(seg)-1]
		name, rest := strings.CutSuffix(name, "...")
		out = append(out, wildcard{seg: i, name: name, rest: rest})
	}
	return out
}

// mount registers a table's routes, whose errors render answers and whose
// keyed routes' callers name their key as key says (nil: requestKey).
func (rt *router) mount(t routeTable) {
	if t.key == nil {
		t.key = requestKey
	}
	for _, rr := range t.routes {
		e := &endpoint{render: t.render, limit: rr.limit, h: rr.h, k: rr.k, key: t.key}
		method, path, ok := strings.Cut(rr.pattern, " ")
		rt.handle(rr.pattern, e)
		if !ok {
			continue // no method: it answers them all
		}
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

// run is an endpoint's work on one request: for a keyed route the key's
// authentication and its limits, else the route's limit; then the
// handler; then the renderer for an error of either.
func (rt *router) run(e *endpoint, w *exchange, r *http.Request) {
	var err error
	switch {
	case e.k != nil:
		var cr credential
		if cr, err = rt.srv.authenticate(w, r, e.key); err == nil {
			err = e.k(w, r, cr)
		}
	default:
		if e.limit != unlimited {
			err = rt.srv.limitAddress(w, r, e.limit == byAddressText)
		}
		if err == nil {
			err = e.h(w, r)
		}
	}
	if err != nil {
		e.render(w, r, err)
	}
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
		if !rt.shadowed(path) {
			rt.handle(path, rt.unmatched(ms))
			continue
		}
		// A path inside a wildcard of another method ("POST
		// /ipinfo/batch" beside "GET /ipinfo/{what}", "GET
		// /ipinfo/lite/{ip}" beside "GET /ipinfo/{what}/{field}"): the
		// mux refuses a method-less pattern there as ambiguous, so the
		// path gets one pattern per method it does not take.
		for _, m := range stdMethods {
			if !slices.Contains(ms, m) {
				rt.handle(m+" "+path, rt.unmatched(ms))
			}
		}
	}
	if _, ok := rt.endpoints["/"]; !ok {
		rt.handle("/", rt.unmatched(nil))
	}
}

// stdMethods are the methods of RFC 9110 and PATCH.
var stdMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace}

// shadowed reports whether another path with a wildcard also matches
// path (with its own wildcards filled in), which the mux then holds to be
// ambiguous with a method-less pattern for path.
func (rt *router) shadowed(path string) bool {
	probePath := path
	if strings.Contains(path, "{") {
		segs := strings.Split(path, "/")
		for i, seg := range segs {
			if seg == "{$}" {
				segs[i] = ""
			} else if strings.HasPrefix(seg, "{") {
				segs[i] = "x"
			}
		}
		probePath = strings.Join(segs, "/")
	}
	for _, other := range rt.order {
		if other == path || !strings.Contains(other, "{") {
			continue
		}
		probe := http.NewServeMux()
		probe.Handle(other, http.NotFoundHandler())
		if _, p := probe.Handler(&http.Request{Method: http.MethodGet, URL: &url.URL{Path: probePath}}); p != "" {
			return true
		}
	}
	return false
}

// unmatched is the endpoint of the requests that no route takes: 404, or
// 405 with Allow when the path takes other methods (allow), in the format
// of the request's area.
func (rt *router) unmatched(allow []string) *endpoint {
	var hdr []string
	if len(allow) > 0 {
		hdr = []string{strings.Join(allow, ", ")}
	}
	return &endpoint{h: func(w *exchange, r *http.Request) error {
		a := rt.areas[rt.areaOf(r.URL.Path)]
		h := func(w *exchange, r *http.Request) error {
			if hdr == nil {
				return notFound(r)
			}
			return notAllowed(w, hdr)
		}
		if a.wrap != nil {
			h = a.wrap(h)
		}
		if err := h(w, r); err != nil {
			a.render(w, r, err)
		}
		return nil
	}}
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

// renderFor is the renderer of the area of a path: for the failures that
// happen before a route runs (a refused framing) or outside it (a panic).
func (rt *router) renderFor(path string) renderer { return rt.areas[rt.areaOf(path)].render }

// serve answers a CORS preflight for a route that takes them, and routes
// everything else. A CONNECT with a target in authority form
// ("CONNECT example.com:443") has no path, so no pattern matches it: it
// gets what the path "/" gets for CONNECT, 405 or 404 in the surface's
// format.
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
	if r.RequestURI == "*" {
		// The asterisk form is OPTIONS's alone, and no route's.
		w.Header()["Connection"] = hdrClose
		rt.renderFor("/")(w, r, errAsterisk)
		return
	}
	if r.Method == http.MethodConnect && !strings.HasPrefix(r.URL.Path, "/") {
		rt.dispatch(w, r, "/")
		return
	}
	// The escaped path is the one cleaned, as the mux cleans it: an
	// escaped slash (%2F) stays inside its segment.
	if ep := r.URL.EscapedPath(); cleanPath(ep) != ep {
		rt.dispatch(w, r, cleanPath(ep))
		return
	}
	rt.dispatch(w, r, "")
}

var errAsterisk = bodyFail(ipatlas.CodeInvalidRequest, `the request target "*" names no resource here`, `请求目标 "*" 不对应任何资源`)

// dispatch runs the endpoint of the pattern that matches r, with the
// escaped path in place of r's when it is not "" (a path served as
// another).
func (rt *router) dispatch(w *exchange, r *http.Request, escaped string) {
	if escaped != "" {
		setEscapedPath(r, escaped)
	}
	_, pat := rt.mux.Handler(r)
	e, ok := rt.endpoints[pat]
	if !ok && pat != "" {
		// The mux would redirect to pat, an escaped path: a subtree's
		// path without its slash ("/ipinfo" for "/ipinfo/"). Serve that
		// path instead.
		setEscapedPath(r, pat)
		_, pat = rt.mux.Handler(r)
		e, ok = rt.endpoints[pat]
	}
	if !ok {
		pat = "/"
		e = rt.endpoints[pat]
	}
	r.Pattern = pat
	if len(e.wild) > 0 {
		setPathValues(r, e.wild)
	}
	rt.run(e, w, r)
}

// setEscapedPath points r at another path, given escaped.
func setEscapedPath(r *http.Request, escaped string) {
	u := *r.URL
	u.Path, u.RawPath = escaped, ""
	if p, err := url.PathUnescape(escaped); err == nil && p != escaped {
		u.Path, u.RawPath = p, escaped
	}
	r.URL = &u
}

// setPathValues sets r's path values from its escaped path, segment by
// segment as the mux matched them: each unescaped, and a "{rest...}"
// wildcard the rest of the path.
func setPathValues(r *http.Request, wild []wildcard) {
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	seg := 0
	for _, wc := range wild {
		for seg < wc.seg {
			i := strings.IndexByte(p, '/')
			if i < 0 {
				p = ""
			} else {
				p = p[i+1:]
			}
			seg++
		}
		v := p
		if !wc.rest {
			if i := strings.IndexByte(p, '/'); i >= 0 {
				v = p[:i]
			}
		}
		if strings.IndexByte(v, '%') >= 0 {
			if u, err := url.PathUnescape(v); err == nil {
				v = u
			}
		}
		r.SetPathValue(wc.name, v)
	}
}

// cleanPath is the canonical form of a path, as the mux cleans it before
// matching: one slash between segments, no "." or ".." segments, and a
// trailing slash kept.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") && p[0] == '/' {
		return p // the common case, without allocating
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			return p
		}
		np += "/"
	}
	return np
}

// isPortalAPI reports whether a path is the portal's JSON API.
func isPortalAPI(path string) bool { return strings.HasPrefix(path, "/account/api/") }
