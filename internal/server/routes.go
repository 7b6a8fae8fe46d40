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

// The whole surface, one table per audience. A route with k takes an API
// key: the router accepts it before anything else (auth.go) and hands the
// caller to k; the others name their limit (limits.go): byAddress routes
// share the free endpoints' per-address bucket. cors routes answer CORS
// preflights. A "GET" pattern also answers HEAD; a pattern without a
// method answers every method.

// routes is the public API: the location query, the AS query, Get my IP
// and the web page.
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

// textRoutes are the public API's plain-text routes: their failures are
// a line of text (renderText).
func (s *api) textRoutes() []route {
	return []route{
		{pattern: "GET /api/lookup/{ip}/{field}", cors: true, k: s.handleLookupField}, // one field of the metered query, as text
	}
}

// ipinfoRoutes are the ipinfo shape (shape_ipinfo.go): ipinfo's paths under
// /ipinfo/, its answers and its error body (renderIPInfo). "GET
// /ipinfo/json" and "POST /ipinfo/batch" are fixed paths beside the
// wildcard; the router gives them their own 405s.
func (s *api) ipinfoRoutes() []route {
	return []route{
		{pattern: "GET /ipinfo", cors: true, k: s.handleIPInfoSelf},                 // the caller's own address
		{pattern: "GET /ipinfo/{$}", cors: true, k: s.handleIPInfoSelf},             // the same
		{pattern: "GET /ipinfo/json", cors: true, k: s.handleIPInfoSelf},            // the same
		{pattern: "GET /ipinfo/{what}", cors: true, k: s.handleIPInfo},              // an address, or an AS ("AS15169")
		{pattern: "GET /ipinfo/{what}/{field}", cors: true, k: s.handleIPInfoField}, // one field of an address ("8.8.8.8/city"), or "json"
		{pattern: "POST /ipinfo/batch", cors: true, k: s.handleIPInfoBatch},         // up to 1,000 items, metered per item
		// ipinfo's current API (shape_ipinfo_v2.go): Lite, and Core and Plus.
		{pattern: "GET /ipinfo/lite/me", cors: true, k: s.handleIPInfoLiteSelf},      // Lite: the caller's own address
		{pattern: "GET /ipinfo/lite/{ip}", cors: true, k: s.handleIPInfoLite},        // Lite: an address's country and AS
		{pattern: "GET /ipinfo/lookup/{$}", cors: true, k: s.handleIPInfoLookupSelf}, // Core and Plus: the caller's own address
		{pattern: "GET /ipinfo/lookup/me", cors: true, k: s.handleIPInfoLookupSelf},  // the same
		{pattern: "GET /ipinfo/lookup/{ip}", cors: true, k: s.handleIPInfoLookup},    // Core and Plus: an address
	}
}

// maxmindRoutes are the MaxMind shape (shape_maxmind.go): MaxMind's
// GeoIP2 web services under /geoip/v2.1/, with MaxMind's authentication
// (authMaxMind) and error body (renderMaxMind).
func (s *api) maxmindRoutes() []route {
	var out []route
	for _, sv := range []struct {
		name string
		p    maxmindProduct
	}{{"country", maxmindCountryService}, {"city", maxmindCityService}, {"insights", maxmindInsightsService}} {
		prefix := "GET " + maxmindPrefix + sv.name + "/"
		out = append(out,
			route{pattern: prefix + "{$}", auth: authMaxMind, k: s.maxmindRequired},  // no address: IP_ADDRESS_REQUIRED
			route{pattern: prefix + "me", auth: authMaxMind, k: s.maxmindSelf(sv.p)}, // the caller's own address
			route{pattern: prefix + "{ip}", auth: authMaxMind, k: s.maxmind(sv.p)})   // an address
	}
	return out
}

// ipapiRoutes are the ip-api shape (ipapi.go): ip-api's paths under
// /ip-api/, its answers and its failure body (renderIPAPI).
func (s *api) ipapiRoutes() []route {
	return []route{
		{pattern: "GET /ip-api/json", cors: true, k: s.handleIPAPISelf},     // the caller's own address
		{pattern: "GET /ip-api/json/{$}", cors: true, k: s.handleIPAPISelf}, // the same
		{pattern: "GET /ip-api/json/{ip}", cors: true, k: s.handleIPAPI},    // one address (?fields=&lang=&key=)
		{pattern: "POST /ip-api/batch", cors: true, k: s.handleIPAPIBatch},  // up to 100 queries, metered per address
	}
}

// echoipRoutes are the echoip shape (shape_echoip.go): echoip's
// (ifconfig.co's) paths under /echoip/. Each answers the caller's own
// address free, limited per address, or ?ip= with a key, metered; the
// route takes a key for the latter.
func (s *api) echoipRoutes() []route {
	return append([]route{
		{pattern: "GET /echoip", cors: true, k: s.echoip(echoNegotiated)},     // the address as text, or the JSON for a JSON client
		{pattern: "GET /echoip/{$}", cors: true, k: s.echoip(echoNegotiated)}, // the same
	}, s.echoipPaths(echoipPrefix)...)
}

// echoipPaths are echoip's paths under prefix.
func (s *api) echoipPaths(prefix string) []route {
	return []route{
		{pattern: "GET " + prefix + "ip", cors: true, k: s.echoip(echoAddr)},                 // the address (text)
		{pattern: "GET " + prefix + "country", cors: true, k: s.echoip(echoCountry)},         // the country's name (text)
		{pattern: "GET " + prefix + "country-iso", cors: true, k: s.echoip(echoCountryISO)},  // its ISO 3166-1 code (text)
		{pattern: "GET " + prefix + "city", cors: true, k: s.echoip(echoCity)},               // the city (text)
		{pattern: "GET " + prefix + "asn", cors: true, k: s.echoip(echoASN)},                 // "AS15169" (text)
		{pattern: "GET " + prefix + "asn-org", cors: true, k: s.echoip(echoASNOrg)},          // the AS's organisation (text)
		{pattern: "GET " + prefix + "coordinates", cors: true, k: s.echoip(echoCoordinates)}, // "lat,lon" (text)
		{pattern: "GET " + prefix + "json", cors: true, k: s.echoip(echoJSON)},               // the whole answer (echoip's JSON)
	}
}

// echoipRootRoutes are echoip's paths at the root, with Config.EchoIPRoot
// ("GET /json" beside "GET /echoip/json"). GET / stays the server's own
// (the web page; the address as text for curl, as echoip's "/").
func (s *api) echoipRootRoutes() []route {
	if !s.cfg.EchoIPRoot {
		return nil
	}
	return s.echoipPaths("/")
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

// publicHandler is the public listener: the API and the portal. Requests
// that match no route belong to the portal under /account/api/ and to the
// API elsewhere.
func (s *Server) publicHandler() *router {
	rt := newRouter(s)
	for _, t := range s.publicTables() {
		rt.mount(t.routes, t.render)
	}
	rt.finish(
		area{match: isPortalAPI, render: s.renderCoded},
		area{match: isLookupField, render: s.renderText},
		area{match: isIPInfo, render: s.renderIPInfo},
		area{match: isIPAPI, render: s.renderIPAPI},
		area{match: isMaxMind, render: s.renderMaxMind},
		area{match: s.isEchoIP, render: s.renderEchoIP},
		area{match: anyPath, render: s.renderAPI},
	)
	return rt
}

// routeTable is a route table and the renderer of its failures.
type routeTable struct {
	routes []route
	render renderer
}

// publicTables are the public listener's route tables.
func (s *Server) publicTables() []routeTable {
	return append(s.ownTables(), routeTable{s.api.echoipRootRoutes(), s.renderEchoIP})
}

// ownTables are the public listener's route tables but echoip's paths at
// the root, which must take no path of theirs (checkEchoIPRoot).
func (s *Server) ownTables() []routeTable {
	return []routeTable{
		{s.api.routes(), s.renderAPI},
		{s.api.textRoutes(), s.renderText},
		{s.api.ipinfoRoutes(), s.renderIPInfo},
		{s.api.ipapiRoutes(), s.renderIPAPI},
		{s.api.maxmindRoutes(), s.renderMaxMind},
		{s.api.echoipRoutes(), s.renderEchoIP},
		{s.portal.routes(), s.renderCoded},
	}
}

// checkEchoIPRoot refuses Config.EchoIPRoot when one of echoip's paths
// at the root is a path the server already answers: the mux would panic
// on the same pattern twice, or one route would silently shadow the
// other.
func (s *Server) checkEchoIPRoot() error {
	if !s.cfg.EchoIPRoot {
		return nil
	}
	var others []route
	for _, t := range s.ownTables() {
		others = append(others, t.routes...)
	}
	return rootClash(s.api.echoipRootRoutes(), others)
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
		return fmt.Errorf("server: Config.EchoIPRoot: echoip's paths at the root clash with the server's own: %s; serve them under %s only",
			strings.Join(clashes, ", "), echoipPrefix)
	}
	return nil
}

// adminHandler is the admin listener. Its unmatched requests under the
// token-protected paths are answered to token holders only, so that
// nobody else can map the API.
func (s *Server) adminHandler() *router {
	rt := newRouter(s)
	rt.mount(s.admin.routes(), s.renderCoded)
	rt.finish(
		area{match: protected, render: s.renderCoded, wrap: s.admin.require},
		area{match: anyPath, render: s.renderCoded},
	)
	return rt
}
