package server

import (
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routeQuery is the metered location query; metrics count its outcomes.
const routeQuery = "POST /api/ip-query"

// routes is the whole public surface. A "GET" pattern also answers HEAD.
func (s *Server) routes() http.Handler {
	r := newRouter()
	r.handle(routeQuery, s.handleQuery)                 // metered location query (Bearer key)
	r.handle("POST /api/ip-query/batch", s.handleBatch) // up to 100 metered queries in one (Bearer key)
	r.handle("GET /api/ip/myip", s.handleMyIP)          // Get my IP, auto detection (JSON)
	r.handle("GET /ipv4", s.handleFamily(ipatlas.IPv4)) // Get my IP, IPv4 only (text), any host
	r.handle("GET /ipv6", s.handleFamily(ipatlas.IPv6)) // Get my IP, IPv6 only (text), any host
	r.handle("GET /{$}", s.handleRoot)                  // the same on the --ipv4-host / --ipv6-host hosts; elsewhere the web page (text for curl, JSON on request)
	r.handle("GET "+mePath, s.handleMe)                 // the caller's own record, free, limited per address (the page's map)
	r.handle("GET /assets/", s.page.ServeHTTP)          // the page's embedded scripts, styles and map
	r.handle("GET /api/ping", s.handlePing)             // round-trip test (JSON)
	r.handle("GET /api/usage", s.handleUsage)           // the calling key's quota and credits (Bearer key)
	r.handle("GET /openapi.yaml", serveDoc(publicDoc))  // this API's OpenAPI 3 document

	// The owners' portal: its page, and its JSON API (session cookie; see
	// portal.go and session.go).
	r.handle("GET /account", s.handleAccountPage)
	// Any method: a GET pattern here would conflict with the method-less
	// 405 patterns of the API's paths; the handler answers 405 itself.
	r.handleAny("/account/{rest...}", s.handleAccountPage)
	o := s.owner
	r.handle("POST /account/api/signin", s.portalSignIn)
	r.handle("POST /account/api/password", s.portalSetPassword) // redeems a one-time link
	r.handle("POST /account/api/signout", o(s.portalSignOut))
	r.handle("POST /account/api/signout-everywhere", o(s.portalSignOutEverywhere))
	r.handle("GET /account/api/me", o(s.portalMe))
	r.handle("GET /account/api/keys", o(s.portalKeys))
	r.handle("POST /account/api/keys", o(s.portalCreateKey))
	r.handle("PATCH /account/api/keys/{key}", o(s.portalLabelKey))
	r.handle("POST /account/api/keys/{key}/rotate", o(s.portalRotateKey))
	r.handle("POST /account/api/keys/{key}/revoke", o(s.portalRevokeKey))
	r.handle("GET /account/api/usage", o(s.portalUsage))
	r.handle("GET /account/api/usage.csv", o(s.portalUsageCSV))
	r.handle("GET /account/api/credits", o(s.portalCredits))
	r.handle("GET /account/api/credits.csv", o(s.portalCreditsCSV))
	r.handle("GET /account/api/subscription", o(s.portalSubscription))
	r.handle("POST /account/api/subscription/requests", o(s.portalRequestTier))
	return r.finish(s.notFound, s.methodNotAllowed)
}

// adminRoutes is the surface of the admin listener. Health, readiness and
// metrics are open (they reveal nothing secret and probes carry no
// tokens); the admin API and pprof need the admin token (pprof's cmdline
// would show a token given as a flag).
func (s *Server) adminRoutes() http.Handler {
	r := newRouter()
	r.handle("GET /healthz", s.handleHealthz)
	r.handle("GET /readyz", s.handleReadyz)
	r.handle("GET /metrics", promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{}).ServeHTTP)
	r.handle("GET /openapi.yaml", serveDoc(adminDoc))

	// The console's page (open: it holds no data) and its session, the
	// admin token exchanged for a cookie.
	r.handle("GET /console", s.handleConsolePage)
	r.handle("GET /console/{rest...}", s.handleConsolePage)
	r.handle("POST /admin/session", s.adminStartSession) // Bearer admin token only
	r.handle("GET /admin/session", s.adminShowSession)   // the cookie's session, or 401

	// The admin API: the admin token, or a console session's cookie.
	a := s.requireAdmin
	r.handle("DELETE /admin/session", a(s.adminEndSession))
	r.handle("POST /admin/accounts", a(s.adminCreateAccount))
	r.handle("GET /admin/accounts", a(s.adminSearchAccounts)) // ?q=&limit=, with this month's usage
	r.handle("GET /admin/top", a(s.adminTop))                 // this month's top consumers
	r.handle("POST /admin/accounts/{id}/invites", a(s.adminInvite))
	r.handle("GET /admin/accounts/{id}/owners", a(s.adminOwners))
	r.handle("POST /admin/owners/{id}/reset", a(s.adminResetLink))
	r.handle("GET /admin/tier-requests", a(s.adminTierRequests))
	r.handle("POST /admin/tier-requests/{id}/approve", a(s.adminDecide(true)))
	r.handle("POST /admin/tier-requests/{id}/refuse", a(s.adminDecide(false)))
	r.handle("GET /admin/audit", a(s.adminAudit))
	r.handle("GET /admin/accounts/{id}", a(s.adminShowAccount))
	r.handle("PATCH /admin/accounts/{id}", a(s.adminSetTier))
	r.handle("POST /admin/accounts/{id}/keys", a(s.adminCreateKey))
	r.handle("GET /admin/accounts/{id}/keys", a(s.adminListKeys))
	r.handle("GET /admin/accounts/{id}/credits", a(s.adminShowCredits))
	r.handle("POST /admin/accounts/{id}/credits", a(s.adminAddCredits))
	r.handle("GET /admin/accounts/{id}/credits/history", a(s.adminCreditHistory))
	r.handle("GET /admin/keys/{key}", a(s.adminShowKey))
	r.handle("GET /admin/keys/{key}/usage", a(s.adminKeyUsage))
	r.handle("POST /admin/keys/{key}/revoke", a(s.adminRevokeKey))
	r.handle("POST /admin/keys/{key}/rotate", a(s.adminRotateKey))
	r.handle("GET /admin/datasets", a(s.adminDatasets)) // files in service, their build dates, scheduled updates

	// pprof's handlers take any method (symbol reads POST bodies).
	r.handleAny("/debug/pprof/", a(pprof.Index)) // named profiles: heap, goroutine, allocs...
	r.handleAny("/debug/pprof/cmdline", a(pprof.Cmdline))
	r.handleAny("/debug/pprof/profile", a(pprof.Profile))
	r.handleAny("/debug/pprof/symbol", a(pprof.Symbol))
	r.handleAny("/debug/pprof/trace", a(pprof.Trace))
	return r.finish(s.adminNotFound, s.adminMethodNotAllowed)
}

// router is a ServeMux that also answers, in our JSON format, what the mux
// would answer in plain text: 404 for an unknown path, and 405 with an
// Allow header for a known path asked with another method.
type router struct {
	mux     *http.ServeMux
	methods map[string][]string // path pattern -> methods registered on it
	order   []string
}

func newRouter() *router {
	return &router{mux: http.NewServeMux(), methods: make(map[string][]string)}
}

func (r *router) handle(pattern string, h http.HandlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	r.mux.Handle(pattern, h)
	if _, ok := r.methods[path]; !ok {
		r.order = append(r.order, path)
	}
	r.methods[path] = append(r.methods[path], method)
	if method == http.MethodGet {
		r.methods[path] = append(r.methods[path], http.MethodHead)
	}
}

// handleAny registers a pattern without a method: it answers them all.
func (r *router) handleAny(pattern string, h http.HandlerFunc) {
	r.mux.Handle(pattern, h)
}

// finish registers a method-less pattern per path (less specific than the
// method patterns, so it only catches the other methods) and the catch-all.
func (r *router) finish(notFound http.HandlerFunc, notAllowed func(allow string) http.HandlerFunc) http.Handler {
	for _, path := range r.order {
		ms := r.methods[path]
		slices.Sort(ms)
		allow := strings.Join(slices.Compact(ms), ", ")
		r.mux.Handle(path, notAllowed(allow))
	}
	if _, ok := r.methods["/"]; !ok {
		r.mux.Handle("/", notFound)
	}
	return muxHandler{r.mux}
}

// muxHandler is a router's mux, which also answers CONNECT with a target
// in authority form ("CONNECT example.com:443"): no pattern matches a
// request without a path, and the mux would answer in plain text. It gets
// what the path "/" gets for CONNECT: 405 or 404 in our format.
type muxHandler struct{ *http.ServeMux }

func (m muxHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect && !strings.HasPrefix(r.URL.Path, "/") {
		root := r.WithContext(r.Context())
		u := *r.URL
		u.Path, u.RawPath = "/", ""
		root.URL = &u
		h, _ := m.Handler(root)
		h.ServeHTTP(w, r)
		return
	}
	m.ServeMux.ServeHTTP(w, r)
}
