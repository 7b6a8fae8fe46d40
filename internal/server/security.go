package server

import (
	"net/http"
	"strings"
)

// Headers every response carries (set before the handler runs, so that a
// handler may replace one, e.g. a web page its Content-Security-Policy):
//
//   - X-Content-Type-Options: nosniff, so that a browser never runs an
//     answer (a plain-text address, an error echoing input) as HTML or
//     script;
//   - Content-Security-Policy: default-src 'none' and frame-ancestors
//     'none': the answers are data, a browser that renders one anyway may
//     load nothing, and no page may frame it;
//   - Cache-Control: no-store on every admin answer and on every public
//     answer to a request that carries Authorization: those depend on who
//     asks and may hold secrets (a created key);
//   - Strict-Transport-Security: max-age=Config.HSTSMaxAge on answers
//     over a TLS connection the server itself terminates (r.TLS is set):
//     a browser that has seen it never sends a key in clear text to this
//     host again, even from an http:// link. Without includeSubDomains:
//     other names under the domain are not ipatlas's to commit. Behind a
//     proxy that ends TLS, r.TLS is nil and the proxy sends the header.
//
// Referrer-Policy and X-Frame-Options are left to the web pages
// (internal/web sets them): an API answer under nosniff and default-src
// 'none' is never a document that links or loads anything, and every
// browser that frames a document honours frame-ancestors, so the headers
// would only cost every answer.
//
// CORS, public handler only: any origin may call the API from a browser
// (Access-Control-Allow-Origin: *), the free endpoints with simple GETs and
// the keyed ones with a preflight for Authorization and Content-Type.
// The API uses no cookies and Access-Control-Allow-Credentials is never
// sent, so a page can only use a key its user gives it: no request is ever
// made with the visitor's ambient authority. The portal (/account), whose
// session is a cookie, answers no CORS at all and nothing a cache keeps:
// only its own page may read it (session.go). The quota and retry headers are
// exposed to scripts (Access-Control-Expose-Headers) on answers to
// requests that carry Origin, which every browser request subject to CORS
// does; other clients read every header anyway. No cache can hand such an
// answer to a browser without it: the headers it exposes appear only on
// no-store answers (keyed requests, and 429s). The admin listener answers
// no CORS at all, so that no web page can read from it.
//
// Every header counts: each one is a map entry the server fills, copies and
// sorts and every client parses. A Go map keeps 8 keys in its first group,
// and a metered answer to a request without Origin holds exactly 8: the
// four set here, Content-Type and the three quota headers. One more grows
// the map into a table, which net/http then copies at WriteHeader
// (TestQueryHeaderKeys).
var (
	hdrAPICSP = []string{"default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"}
	hdrExpose = []string{"RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Rl, X-Ttl"}

	hdrAllowHeaders = []string{"Authorization, Content-Type, Accept-Language"}
	hdrMaxAge       = []string{"7200"} // Chromium's cap; Firefox allows a day
	hdrAllowGET     = []string{"GET, HEAD"}
)

// securityHeaders sets the headers above on h for a request r.
func (s *Server) securityHeaders(h http.Header, r *http.Request, admin bool) {
	h["X-Content-Type-Options"] = hdrNosniff
	h["Content-Security-Policy"] = hdrAPICSP
	if r.TLS != nil && s.hsts != nil {
		h["Strict-Transport-Security"] = s.hsts
	}
	if admin {
		h["Cache-Control"] = hdrNoStore
		return
	}
	if portalPath(r.URL.Path) {
		// The portal answers only its own page, with the owner's cookie:
		// no CORS, and nothing kept by caches.
		h["Cache-Control"] = hdrNoStore
		return
	}
	h["Access-Control-Allow-Origin"] = hdrAnyOrig
	if _, ok := r.Header["Origin"]; ok {
		h["Access-Control-Expose-Headers"] = hdrExpose
	}
	if _, ok := r.Header["Authorization"]; ok {
		h["Cache-Control"] = hdrNoStore
	}
}

// preflight answers a CORS preflight (OPTIONS with
// Access-Control-Request-Method) for a route of the public API that takes
// them (router.go): 204 with the methods the path takes and the headers a
// browser may send. path is the route's path as its pattern writes it,
// the metrics' label. Other paths are routed as any request (404, or 405
// for OPTIONS on a known path).
func preflight(w *exchange, r *http.Request, methods []string, path string) {
	h := w.Header()
	h["Access-Control-Allow-Origin"] = hdrAnyOrig
	h["Access-Control-Allow-Methods"] = methods
	h["Access-Control-Allow-Headers"] = hdrAllowHeaders
	h["Access-Control-Max-Age"] = hdrMaxAge
	r.Pattern = "OPTIONS " + path // a route's path: a bounded label
	w.WriteHeader(http.StatusNoContent)
}

// portalPath reports whether a path is the portal's (its page and API).
func portalPath(p string) bool {
	return strings.HasPrefix(p, "/account") && (len(p) == len("/account") || p[len("/account")] == '/')
}
