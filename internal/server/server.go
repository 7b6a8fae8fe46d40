// Package server is the HTTP face of ipatlas, one surface per audience on
// shared plumbing: the public API for callers (the metered query, written
// once in query.go, in the answer formats of shape_*.go, each one value
// of shape.go; Get my IP, ping, usage, the web page: public_*.go), the
// portal for account owners (portal_api.go) on the same listener, and the
// admin API and console for operators (admin_*.go) on their own.
// routes.go lists every route of the public API's own, the portal's and
// the admin listener's, with its limit, and the shapes, which list
// theirs; router.go, auth.go, errors.go, exchange.go and middleware.go
// are the plumbing they share (routing, keys, error bodies, request
// state, logging and metrics).
package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/rdns"
	"github.com/ipatlas/ipatlas/internal/web"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Config holds the server's settings.
//
// One rule for every number here: 0 turns its feature off, and no zero
// stands for a default. A limit that is on needs each of its numbers
// (its burst, window, backoff, and LimitTableSize), and New refuses one
// left at 0 rather than guess. The Default* constants are the values
// `ipatlas serve` passes unless told otherwise, so a Config literal gets
// only the limits it sets.
type Config struct {
	TrustedProxies []netip.Prefix // peers whose X-Forwarded-For / Forwarded headers are believed
	IPv4Host       string         // host name answering GET / with the caller's IPv4 address
	IPv6Host       string         // host name answering GET / with the caller's IPv6 address
	// EchoIPRoot serves echoip's paths (/ip, /country, /json...) at the
	// root as well as under /echoip/; New refuses it if one of them is
	// a path the server already answers.
	EchoIPRoot bool
	// PageIPv4URL and PageIPv6URL are where the web page at GET / asks for
	// the visitor's address of each family: "/ipv4" and "/ipv6" on this
	// origin by default, or the URLs of hosts with only an A or only an
	// AAAA record (see web.Options).
	PageIPv4URL, PageIPv6URL string
	AdminToken               string // bearer token of the admin API; the admin API refuses everything when empty
	// PublicURL is the public listener's address as browsers reach it
	// ("https://ip.example.com"), the base of the one-time links the admin
	// API makes; empty, the links are bare paths for the operator to
	// complete. Its origin is also accepted as a portal request's Origin.
	PublicURL string
	// SigninFailures failed portal sign-ins per client address (IPv6: its
	// /64) are allowed per SigninWindow, refilled gradually, and as many
	// wrong admin tokens on the admin listener (counted apart); past them
	// 429 with Retry-After. 0 turns the limit off.
	SigninFailures int
	SigninWindow   time.Duration // required when SigninFailures is on
	Version        string
	Logger         *slog.Logger
	Now            func() time.Time

	// ForwardedHeader pins the header that the trusted proxies maintain:
	// HeaderXForwardedFor ("X-Forwarded-For") or HeaderForwarded
	// ("Forwarded", RFC 7239). Empty (HeaderAuto) reads X-Forwarded-For
	// when the request has one and Forwarded otherwise; that is safe behind
	// proxies that set X-Forwarded-For (nearly all do), but behind a proxy
	// that only sets Forwarded a client could forge X-Forwarded-For, so
	// such deployments should pin HeaderForwarded. Ignored without
	// TrustedProxies.
	ForwardedHeader string

	// AccessLogLevel is the level of the one log line per request (method,
	// path, route template, status, duration, client address). The zero
	// value is slog.LevelInfo; set slog.LevelDebug to keep access lines
	// out of an Info log. Answers with a 5xx status are logged at
	// slog.LevelError, except the 503s of charges that cannot be written,
	// whose cause the meter logs once per interval, and /readyz's "not
	// ready".
	AccessLogLevel slog.Level

	// HSTSMaxAge is the max-age of the Strict-Transport-Security header
	// sent on answers over TLS that the server terminates itself (the
	// request's TLS is set), in whole seconds; 0 sends none. Answers over
	// plain HTTP never carry it: browsers ignore it there.
	HSTSMaxAge time.Duration

	// Abuse limits (limits.go). Each is off at its zero value, so a Config
	// literal gets none; `ipatlas serve` sets the Default* values below
	// unless flags say otherwise. Limiters run on Now, like the quota.

	// KeyRate and KeyBurst are a token bucket per API key, in front of the
	// monthly quota: at most KeyBurst requests at once and KeyRate per
	// second sustained, on every route that takes a key (the location
	// query, its batch, usage). Only requests whose key authenticates
	// count, so nobody can spend another key's bucket. A request over it
	// gets 429 RateLimitExceeded ("burst rate exceeded, retry in N s")
	// with Retry-After, before its body is read, and is never charged.
	// KeyRate 0 turns it off; KeyBurst is required when it is on.
	KeyRate  float64
	KeyBurst int

	// KeyDNSRate and KeyDNSBurst are a token bucket per API key of DNS
	// lookups (a host name, a domain query's name; each at most two
	// questions to the resolver): KeyDNSBurst at once, KeyDNSRate per
	// second sustained. A request that asks the resolver takes what it
	// may need before anything is looked up (query.go); without them it
	// gets 429 RateLimitExceeded ("too many DNS lookups") with
	// Retry-After, never charged. KeyDNSRate 0 turns it off; KeyDNSBurst
	// is required when it is on.
	KeyDNSRate  float64
	KeyDNSBurst int

	// AddrRate and AddrBurst are a token bucket per client address (after
	// trusted-proxy resolution; an IPv6 client is limited by its /64, the
	// block one subscriber gets) shared by the free endpoints: GET and
	// HEAD /api/ip/myip, /ipv4, /ipv6, /api/ping, and / on the IPv4 and
	// IPv6 hosts. Over it: 429 with Retry-After, plain text on the
	// plain-text endpoints, the JSON envelope on the others. AddrRate 0
	// turns it off; AddrBurst is required when it is on.
	AddrRate  float64
	AddrBurst int

	// AuthFailures slows down key guessing: after this many requests with
	// a rejected bearer key from one address (IPv6: its /64), the address
	// waits 1 s, then 2 s, 4 s... up to AuthMaxBackoff after each further
	// rejection; while it waits, its keyed requests get 429 without their
	// key being looked at (no store read, no answer to the guess). A key
	// that has authenticated on this server recently (it is in a table of
	// the last LimitTableSize such keys) still passes, so an attacker
	// sharing a customer's address (a NAT) cannot lock the customer out;
	// a key never seen before waits like a guess. The wait belongs to the
	// address, never to a key. Failures are forgotten after
	// AuthFailureWindow without one. 0 turns it off.
	AuthFailures      int
	AuthFailureWindow time.Duration // required when AuthFailures is on
	AuthMaxBackoff    time.Duration // required when AuthFailures is on

	// MeRate and MeBurst are a token bucket per client address (IPv6: its
	// /64) on GET /api/ip/me, which costs a lookup per request: MeRate
	// lookups per second sustained, MeBurst at once. MeRate 0 turns it
	// off; MeBurst is required when it is on.
	MeRate  float64
	MeBurst int

	// LimitTableSize bounds each limiter table (keys, their DNS lookups,
	// addresses, failing addresses, keys seen to authenticate, the
	// addresses of GET /api/ip/me); the least recently used entry
	// is forgotten first and starts afresh when it returns. About 250
	// bytes an entry. Required when any limit is on.
	LimitTableSize int
}

// Defaults of the abuse limits, for `ipatlas serve`'s flags. Generous:
// a key gets 50 requests per second (100 at once), far above what the
// monthly quotas allow on average, as many DNS lookups (a whole batch of
// host names at once), and one address 20 free requests per
// second (40 at once), which basic use of Get my IP, free and unlimited,
// never meets. Behind carrier-grade NAT many people share one IPv4
// address; operators serving such networks may raise AddrRate.
const (
	DefaultKeyRate           = 50
	DefaultKeyBurst          = 100
	DefaultKeyDNSRate        = 50
	DefaultKeyDNSBurst       = 100
	DefaultAddrRate          = 20
	DefaultAddrBurst         = 40
	DefaultAuthFailures      = 10
	DefaultAuthFailureWindow = 15 * time.Minute
	DefaultAuthMaxBackoff    = 5 * time.Minute
	DefaultLimitTableSize    = 1 << 16
)

// Deps are the server's collaborators.
type Deps struct {
	Geo      geo.Locator
	Accounts *account.Service
	Meter    *account.Meter
	Registry *prometheus.Registry // metrics are registered here and served by the admin API
	Ready    func() error         // readiness beyond the store, e.g. "dataset loaded"
	// Resolver looks up host names (fields=hostname) and the names of
	// ip-api's domain queries; nil turns both off (a nil *rdns.Resolver
	// answers every Hostname with an empty name).
	Resolver *rdns.Resolver
	// DatasetSources adds the manifest and the update schedule to GET
	// /admin/datasets; nil leaves them out.
	DatasetSources DatasetSources
}

// Server is the shared plumbing of the three surfaces (the public API,
// the owners' portal, the operators' admin API): settings, dependencies,
// the client address, the limits, the metrics and the log. Each surface
// is its own type (api, portal, admin) with its own routes (routes.go).
type Server struct {
	cfg     Config
	deps    Deps
	log     *slog.Logger
	now     func() time.Time
	trusted proxies
	metrics *metrics
	limits  *limits // nil when every limit of the public API is off
	// publicOrigin is Config.PublicURL's origin, lower case: a page of
	// the portal or the console may come from there.
	publicOrigin string
	hsts         []string // the Strict-Transport-Security header; nil: none

	api    *api
	portal *portal
	admin  *admin

	public, adminH http.Handler
}

// New builds the server. It refuses a setting it cannot use (an invalid
// trusted prefix, an unknown forwarded header, one host for both families,
// a negative or NaN rate, a page endpoint URL it cannot admit, a metric
// name taken in Registry) rather than serve without it.
func New(cfg Config, deps Deps) (*Server, error) {
	s := &Server{cfg: cfg, deps: deps, log: cfg.Logger, now: cfg.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if deps.Registry == nil {
		s.deps.Registry = prometheus.NewRegistry()
	}
	if deps.Geo == nil {
		return nil, errors.New("server: Deps.Geo is required")
	}
	switch cfg.ForwardedHeader {
	case HeaderAuto, HeaderXForwardedFor, HeaderForwarded:
	default:
		return nil, fmt.Errorf("server: Config.ForwardedHeader %q: want %q, %q or empty", cfg.ForwardedHeader, HeaderXForwardedFor, HeaderForwarded)
	}
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() || (p.Addr().Is4In6() && p.Bits() < 96) {
			return nil, fmt.Errorf("server: Config.TrustedProxies: %v is not a valid IPv4 or IPv6 prefix", p)
		}
	}
	s.trusted = newProxies(cfg.TrustedProxies)
	s.api = &api{Server: s, ipv4: normalizeHost(cfg.IPv4Host), ipv6: normalizeHost(cfg.IPv6Host)}
	if s.api.ipv4 != "" && s.api.ipv4 == s.api.ipv6 {
		return nil, fmt.Errorf("server: Config.IPv4Host and IPv6Host are both %q; GET / there could answer neither", s.api.ipv4)
	}
	if err := checkLimits(cfg); err != nil {
		return nil, err
	}
	m, err := newMetrics(s.deps.Registry)
	if err != nil {
		return nil, fmt.Errorf("server: registering metrics: %w", err)
	}
	s.metrics = m
	if cfg.PublicURL != "" {
		if s.publicOrigin = originOf(cfg.PublicURL); s.publicOrigin == "" {
			return nil, fmt.Errorf("server: Config.PublicURL %q: want an absolute URL such as https://ip.example.com", cfg.PublicURL)
		}
	}
	if sec := int64(cfg.HSTSMaxAge / time.Second); sec > 0 {
		s.hsts = []string{"max-age=" + strconv.FormatInt(sec, 10)}
	} else if cfg.HSTSMaxAge < 0 {
		return nil, fmt.Errorf("server: Config.HSTSMaxAge %v: want 0 (off) or more", cfg.HSTSMaxAge)
	}
	if s.limits, err = s.newLimits(); err != nil {
		return nil, err
	}
	if err := s.newSurfaces(); err != nil {
		return nil, err
	}
	if err := s.checkRoots(); err != nil {
		return nil, err
	}
	s.public = s.instrument(s.publicHandler(), false)
	s.adminH = s.instrument(s.adminHandler(), true)
	return s, nil
}

// checkLimits refuses a negative or NaN number, and a limit that is on
// without each of its numbers (see Config).
func checkLimits(c Config) error {
	var errs []error
	for name, v := range map[string]float64{
		"KeyRate": c.KeyRate, "AddrRate": c.AddrRate, "MeRate": c.MeRate, "KeyDNSRate": c.KeyDNSRate,
		"KeyBurst": float64(c.KeyBurst), "KeyDNSBurst": float64(c.KeyDNSBurst), "AddrBurst": float64(c.AddrBurst), "MeBurst": float64(c.MeBurst),
		"AuthFailures": float64(c.AuthFailures), "AuthFailureWindow": float64(c.AuthFailureWindow), "AuthMaxBackoff": float64(c.AuthMaxBackoff),
		"SigninFailures": float64(c.SigninFailures), "SigninWindow": float64(c.SigninWindow), "LimitTableSize": float64(c.LimitTableSize),
	} {
		if v < 0 || math.IsNaN(v) {
			errs = append(errs, fmt.Errorf("server: Config.%s %v: want 0 (off) or more", name, v))
		}
	}
	need := func(on bool, limit, name string, v int64) {
		if on && v == 0 {
			errs = append(errs, fmt.Errorf("server: Config.%s is on but Config.%s is 0; set it (Default%s is the usual value) or turn the limit off", limit, name, name))
		}
	}
	need(c.KeyRate > 0, "KeyRate", "KeyBurst", int64(c.KeyBurst))
	need(c.KeyDNSRate > 0, "KeyDNSRate", "KeyDNSBurst", int64(c.KeyDNSBurst))
	need(c.AddrRate > 0, "AddrRate", "AddrBurst", int64(c.AddrBurst))
	need(c.AuthFailures > 0, "AuthFailures", "AuthFailureWindow", int64(c.AuthFailureWindow))
	need(c.AuthFailures > 0, "AuthFailures", "AuthMaxBackoff", int64(c.AuthMaxBackoff))
	need(c.MeRate > 0, "MeRate", "MeBurst", int64(c.MeBurst))
	need(c.SigninFailures > 0, "SigninFailures", "SigninWindow", int64(c.SigninWindow))
	for _, on := range []struct {
		name string
		on   bool
	}{{"KeyRate", c.KeyRate > 0}, {"KeyDNSRate", c.KeyDNSRate > 0}, {"AddrRate", c.AddrRate > 0}, {"AuthFailures", c.AuthFailures > 0}, {"MeRate", c.MeRate > 0}, {"SigninFailures", c.SigninFailures > 0}} {
		if on.on && c.LimitTableSize == 0 {
			need(true, on.name, "LimitTableSize", 0)
			break
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// Handler is the public API.
func (s *Server) Handler() http.Handler { return s.public }

// AdminHandler is the admin API, /metrics, /healthz, /readyz and pprof.
func (s *Server) AdminHandler() http.Handler { return s.adminH }

// normalizeHost lowers a host name and drops a port, the form requests'
// hosts are compared in.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if h == "" {
		return ""
	}
	if hp, err := netip.ParseAddrPort(h); err == nil {
		return hp.Addr().String()
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		return h[1 : len(h)-1]
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.Count(h, ":") == 1 {
		return h[:i]
	}
	return h
}

// newSurfaces builds what each surface holds of its own: the web pages,
// the limiters of GET /api/ip/me, of sign-ins and of admin tokens.
func (s *Server) newSurfaces() error {
	addr := func(r *http.Request) netip.Addr { return clientAddr(r, s.trusted, s.cfg.ForwardedHeader) }
	page, err := web.Handler(web.Options{ClientAddr: addr, IPv4URL: s.cfg.PageIPv4URL, IPv6URL: s.cfg.PageIPv6URL, Logger: s.log})
	if err != nil {
		return fmt.Errorf("server: the web page (Config.PageIPv4URL and PageIPv6URL are its Options.IPv4URL and IPv6URL): %w", err)
	}
	size := s.cfg.LimitTableSize
	a := s.api
	a.page = page
	if s.cfg.MeRate > 0 {
		a.meRate, a.meBurst = rate.Limit(s.cfg.MeRate), s.cfg.MeBurst
		a.me = newTable[netip.Addr, *rate.Limiter](size)
	}

	p := &portal{Server: s, origin: s.publicOrigin}
	if p.page, err = web.PortalHandler(); err != nil {
		return fmt.Errorf("server: the portal page: %w", err)
	}
	if p.signins, err = newSignins(s.deps.Registry); err != nil {
		return err
	}
	n, window := s.cfg.SigninFailures, s.cfg.SigninWindow
	p.signin = newFailureLimit(n, window, size)
	s.portal = p

	ad := &admin{Server: s, hash: sha256.Sum256([]byte(s.cfg.AdminToken)), failures: newFailureLimit(n, window, size)}
	if ad.page, err = web.ConsoleHandler(); err != nil {
		return fmt.Errorf("server: the console page: %w", err)
	}
	s.admin = ad
	return nil
}
