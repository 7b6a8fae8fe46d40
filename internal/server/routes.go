package server

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routeQuery is the metered location query.
const routeQuery = "POST /api/ip-query"

// The whole surface, one table per audience: the public API's (its own,
// and each shape's, listed by shapes below), the portal's and the admin
// listener's. A route with k takes an API key: the router accepts it
// before anything else (auth.go) and hands the caller to k; the others
// name their limit (limits.go): byAddress routes share the free
// endpoints' per-address bucket. cors routes answer CORS preflights. A
// "GET" pattern also answers HEAD; a pattern without a method answers
// every method.

// routes are the public API's own: the location query, the AS query, Get
// my IP and the web page (the native shape's, shape_native.go).
func (s *api) routes() []route {
	return []route{
		{pattern: routeQuery, cors: true, k: s.handleQuery},                                 // metered location query (Bearer key)
		{pattern: "POST /api/ip-query/batch", cors: true, k: s.handleBatch},                 // up to 100 metered queries in one (Bearer key)
		{pattern: "GET /api/asn/{asn}", cors: true, k: s.handleAS},                          // one AS: name, country, prefixes (Bearer key, metered)
		{pattern: "GET /api/ip/myip", limit: byAddress, cors: true, h: s.handleMyIP},        // Get my IP, auto detection (JSON)
		{pattern: "GET /ipv4", limit: byAddressText, cors: true, h: s.family(ipatlas.IPv4)}, // Get my IP, IPv4 only (text), any host
		{pattern: "GET /ipv6", limit: byAddressText, cors: true, h: s.family(ipatlas.IPv6)}, // Get my IP, IPv6 only (text), any host
		{pattern: "GET /{$}", limit: byAddressText, h: s.handleRoot},                        // the same on the --ipv4-host / --ipv6-host hosts; elsewhere the web page (text for curl, JSON on request)
		{pattern: "GET " + mePath, h: s.handleMe},                                           // the caller's own record, free, limited per address (the page's map)
		{pattern: "GET /assets/", h: serveHTTP(s.page)},                                     // the page's embedded scripts, styles and map
		{pattern: "GET /api/ping", limit: byAddress, cors: true, h: s.handlePing},           // round-trip test (JSON)
		{pattern: "GET /api/usage", cors: true, k: s.handleUsage},                           // the calling key's quota and credits (Bearer key)
		{pattern: "GET /api/lookup/{ip}", cors: true, k: s.handleLookup},                    // the metered query as a GET (?lang=&fields=)
		{pattern: "GET /openapi.yaml", h: serveDoc(publicDoc)},                              // this API's OpenAPI 3 document
	}
}

// routes is the owners' portal on the public listener: its page, and its
// JSON API (session cookie; see portal_api.go and session.go).
func (s *portal) routes() []route {
	o := s.owner
	return []route{
		{pattern: "GET /account", h: s.handlePage},
		// Any method: a GET pattern here would conflict with the
		// method-less 405 patterns of the API's paths; the handler
		// answers the router's 404 and 405 itself.
		{pattern: "/account/{rest...}", h: s.handlePage},
		{pattern: "POST /account/api/signin", h: s.signIn},
		{pattern: "POST /account/api/password", h: s.setPassword}, // redeems a one-time link
		{pattern: "POST /account/api/signout", h: o(s.signOut)},
		{pattern: "POST /account/api/signout-everywhere", h: o(s.signOutEverywhere)},
		{pattern: "GET /account/api/me", h: o(s.me)},
		{pattern: "GET /account/api/keys", h: o(s.keys)},
		{pattern: "POST /account/api/keys", h: o(s.createKey)},
		{pattern: "PATCH /account/api/keys/{key}", h: o(s.labelKey)},
		{pattern: "POST /account/api/keys/{key}/rotate", h: o(s.rotateKey)},
		{pattern: "POST /account/api/keys/{key}/revoke", h: o(s.revokeKey)},
		{pattern: "GET /account/api/usage", h: o(s.usage)},
		{pattern: "GET /account/api/usage.csv", h: o(s.usageCSV)},
		{pattern: "GET /account/api/credits", h: o(s.credits)},
		{pattern: "GET /account/api/credits.csv", h: o(s.creditsCSV)},
		{pattern: "GET /account/api/subscription", h: o(s.subscription)},
		{pattern: "POST /account/api/subscription/requests", h: o(s.requestTier)},
	}
}

// routes is the admin listener. Health, readiness and metrics are open
// (they reveal nothing secret and probes carry no tokens); the admin API
// and pprof need the admin token (pprof's cmdline would show a token given
// as a flag).
func (s *admin) routes() []route {
	a := s.require
	return []route{
		{pattern: "GET /healthz", h: s.handleHealthz},
		{pattern: "GET /readyz", h: s.handleReadyz},
		{pattern: "GET /metrics", h: serveHTTP(promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{}))},
		{pattern: "GET /openapi.yaml", h: serveDoc(adminDoc)},

		// The console's page (open: it holds no data) and its session,
		// the admin token exchanged for a cookie.
		{pattern: "GET /console", h: serveHTTP(s.page)},
		{pattern: "GET /console/{rest...}", h: serveHTTP(s.page)},
		{pattern: "POST /admin/session", h: s.startSession}, // Bearer admin token only
		{pattern: "GET /admin/session", h: s.showSession},   // the cookie's session, or 401

		// The admin API: the admin token, or a console session's cookie.
		{pattern: "DELETE /admin/session", h: a(s.endSession)},
		{pattern: "POST /admin/accounts", h: a(s.createAccount)},
		{pattern: "GET /admin/accounts", h: a(s.searchAccounts)}, // ?q=&limit=, with this month's usage
		{pattern: "GET /admin/top", h: a(s.top)},                 // this month's top consumers
		{pattern: "POST /admin/accounts/{id}/invites", h: a(s.invite)},
		{pattern: "GET /admin/accounts/{id}/owners", h: a(s.owners)},
		{pattern: "POST /admin/owners/{id}/reset", h: a(s.resetLink)},
		{pattern: "GET /admin/tier-requests", h: a(s.tierRequests)},
		{pattern: "POST /admin/tier-requests/{id}/approve", h: a(s.decide(true))},
		{pattern: "POST /admin/tier-requests/{id}/refuse", h: a(s.decide(false))},
		{pattern: "GET /admin/audit", h: a(s.audit)},
		{pattern: "GET /admin/accounts/{id}", h: a(s.showAccount)},
		{pattern: "PATCH /admin/accounts/{id}", h: a(s.setTier)},
		{pattern: "POST /admin/accounts/{id}/keys", h: a(s.createKey)},
		{pattern: "GET /admin/accounts/{id}/keys", h: a(s.listKeys)},
		{pattern: "GET /admin/accounts/{id}/credits", h: a(s.showCredits)},
		{pattern: "POST /admin/accounts/{id}/credits", h: a(s.addCredits)},
		{pattern: "GET /admin/accounts/{id}/credits/history", h: a(s.creditHistory)},
		{pattern: "GET /admin/keys/{key}", h: a(s.showKey)},
		{pattern: "GET /admin/keys/{key}/usage", h: a(s.keyUsage)},
		{pattern: "POST /admin/keys/{key}/revoke", h: a(s.revokeKey)},
		{pattern: "POST /admin/keys/{key}/rotate", h: a(s.rotateKey)},
		{pattern: "GET /admin/datasets", h: a(s.datasets)}, // files in service, their build dates, scheduled updates

		// pprof's handlers take any method (symbol reads POST bodies).
		{pattern: "/debug/pprof/", h: a(serveHTTP(http.HandlerFunc(pprof.Index)))}, // named profiles: heap, goroutine, allocs...
		{pattern: "/debug/pprof/cmdline", h: a(serveHTTP(http.HandlerFunc(pprof.Cmdline)))},
		{pattern: "/debug/pprof/profile", h: a(serveHTTP(http.HandlerFunc(pprof.Profile)))},
		{pattern: "/debug/pprof/symbol", h: a(serveHTTP(http.HandlerFunc(pprof.Symbol)))},
		{pattern: "/debug/pprof/trace", h: a(serveHTTP(http.HandlerFunc(pprof.Trace)))},
	}
}

// shapes are the public API's answer formats, each one value made in its
// own file (shape.go). The router is built from this list: each shape's
// routes with its renderer and its key scheme; a failure outside a route
// (an unknown path, a method a path does not take, a refused framing, a
// panic) is answered by the first shape whose area holds the path, and
// the native API, last, holds every path the others do not.
func (s *api) shapes() []shape {
	return []shape{
		s.textShape(),    // GET /api/lookup/{ip}/{field}, as plain text (shape_native.go)
		s.ipinfoShape(),  // ipinfo.io's, legacy and current, under /ipinfo/
		s.ipapiShape(),   // ip-api.com's, under /ip-api/
		s.maxmindShape(), // MaxMind's GeoIP2 web services, under /geoip/v2.1/
		s.echoipShape(),  // echoip's (ifconfig.co), under /echoip/, and at the root with Config.EchoIPRoot
		s.nativeShape(),  // ipatlas's own envelope, everywhere else
	}
}

// publicHandler is the public listener: the API's shapes and the portal,
// whose JSON API's failures are its own under /account/api/.
func (s *Server) publicHandler() *router {
	rt := newRouter(s)
	for _, t := range s.publicTables() {
		rt.mount(t)
	}
	areas := []area{{match: isPortalAPI, render: s.renderCoded}}
	for _, sh := range s.api.shapes() {
		areas = append(areas, area{match: sh.holds, render: sh.render})
	}
	rt.finish(areas...)
	return rt
}

// routeTable is routes, the renderer of their failures and the key scheme
// of their callers (nil: requestKey).
type routeTable struct {
	routes []route
	render renderer
	key    keyScheme
}

// publicTables are the public listener's route tables: each shape's, its
// routes at the root included, and the portal's.
func (s *Server) publicTables() []routeTable {
	var out []routeTable
	for _, sh := range s.api.shapes() {
		out = append(out, routeTable{append(sh.routes, sh.root...), sh.render, sh.key})
	}
	return append(out, routeTable{s.portal.routes(), s.renderCoded, nil})
}

// ownTables are the public listener's route tables without the shapes'
// routes at the root, which must take no path of theirs (checkRoots).
func (s *Server) ownTables() []routeTable {
	var out []routeTable
	for _, sh := range s.api.shapes() {
		out = append(out, routeTable{sh.routes, sh.render, sh.key})
	}
	return append(out, routeTable{s.portal.routes(), s.renderCoded, nil})
}

// checkRoots refuses the setting that serves a shape's paths at the root
// (Config.EchoIPRoot) when one of them is a path the server already
// answers: the mux would panic on the same pattern twice, or one route
// would silently shadow the other.
func (s *Server) checkRoots() error {
	var others []route
	for _, t := range s.ownTables() {
		others = append(others, t.routes...)
	}
	for _, sh := range s.api.shapes() {
		if len(sh.root) == 0 {
			continue
		}
		if err := rootClash(sh.root, others); err != nil {
			return fmt.Errorf("server: %s: %s's %w; serve them under %s only", sh.rootSetting, sh.name, err, sh.prefix)
		}
	}
	return nil
}

// rootClash says which of mine another route would also match.
func rootClash(mine, others []route) error {
	probe := http.NewServeMux()
	for _, o := range others {
		probe.Handle(o.pattern, http.NotFoundHandler())
	}
	var clashes []string
	for _, m := range mine {
		method, path, ok := strings.Cut(m.pattern, " ")
		if !ok {
			method, path = http.MethodGet, m.pattern
		}
		if _, p := probe.Handler(&http.Request{Method: method, URL: &url.URL{Path: path}}); p != "" {
			clashes = append(clashes, m.pattern+" (taken by "+p+")")
		}
	}
	if len(clashes) > 0 {
		return fmt.Errorf("paths at the root clash with the server's own: %s", strings.Join(clashes, ", "))
	}
	return nil
}

// adminHandler is the admin listener. Its unmatched requests under the
// token-protected paths are answered to token holders only, so that
// nobody else can map the API.
func (s *Server) adminHandler() *router {
	rt := newRouter(s)
	rt.mount(routeTable{s.admin.routes(), s.renderCoded, nil})
	rt.finish(
		area{match: protected, render: s.renderCoded, wrap: s.admin.require},
		area{match: anyPath, render: s.renderCoded},
	)
	return rt
}
