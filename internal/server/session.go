package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Browser sessions: the portal's owners and the console's operators sign
// in once and then send a cookie. The cookie's value is the session's
// secret; the store keeps only its SHA-256 (account.Service.CheckSession).
// Cookies are HttpOnly (no script reads them) and SameSite=Strict (no
// other site's page sends them), Secure whenever the request came over
// HTTPS, and every state-changing request that a cookie authenticates
// must also carry the session's CSRF token in X-CSRF-Token and come from
// this origin (Sec-Fetch-Site, Origin): SameSite alone does not cover old
// browsers nor sibling subdomains, which count as the same site.

// Cookie names and paths.
const (
	ownerCookie   = "ipatlas_session"
	ownerPath     = "/account"
	consoleCookie = "ipatlas_console"
	consolePath   = "/"
	csrfHeader    = "X-CSRF-Token"
)

// Defaults of Config.SigninFailures and SigninWindow, for `ipatlas
// serve`'s flags. Sign-in failures per client address (IPv6: its /64)
// are a token bucket of SigninFailures tokens refilled over SigninWindow;
// each failure spends one, and an address without a token is answered
// 429 before its password is checked. The per-owner backoff is the
// service's.
const (
	DefaultSigninFailures = 10
	DefaultSigninWindow   = 15 * time.Minute
)

// The label values of ipatlas_portal_signins_total.
const (
	signinOK      = "ok"      // a session was opened
	signinFailed  = "failed"  // wrong email or password, or a locked owner
	signinLimited = "limited" // the address was out of tries: 429
)

// newSignins registers the sign-in counter.
func newSignins(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	var errs []error
	c := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ipatlas", Subsystem: "portal", Name: "signins_total",
		Help: "Portal sign-ins by outcome: ok, failed (wrong email or password, or a locked owner) or limited (the address must wait).",
	}, []string{"outcome"}), &errs)
	if len(errs) > 0 {
		return nil, fmt.Errorf("server: registering metrics: %w", errors.Join(errs...))
	}
	for _, v := range []string{signinOK, signinFailed, signinLimited} {
		c.WithLabelValues(v)
	}
	return c, nil
}

// failureLimit allows each client address (IPv6: its /64) a number of
// failures (wrong passwords, wrong admin tokens) per window: a token
// bucket that each failure spends and time refills. An address without
// a token is refused before its next attempt is checked. A nil
// failureLimit is off.
type failureLimit struct {
	table *table[netip.Addr, *rate.Limiter]
	rate  rate.Limit
	burst int
}

// newFailureLimit allows n failures per window, or is nil (off) when n is 0.
func newFailureLimit(n int, window time.Duration, size int) *failureLimit {
	if n <= 0 {
		return nil
	}
	return &failureLimit{table: newTable[netip.Addr, *rate.Limiter](size), rate: rate.Limit(float64(n) / window.Seconds()), burst: n}
}

// wait is how long the client must wait before its next attempt; 0 when
// it may try now.
func (f *failureLimit) wait(a netip.Addr, now time.Time) time.Duration {
	if f == nil || !a.IsValid() {
		return 0
	}
	lim, ok := f.table.peek(clientGroup(a))
	if !ok {
		return 0
	}
	if t := lim.TokensAt(now); t < 1 {
		return max(time.Second, time.Duration((1-t)/float64(lim.Limit())*float64(time.Second)))
	}
	return 0
}

// fail spends one of the client's tokens; it reports whether the client
// has none left (to log that once).
func (f *failureLimit) fail(a netip.Addr, now time.Time) (exhausted bool) {
	if f == nil || !a.IsValid() {
		return false
	}
	lim := f.table.getOrAdd(clientGroup(a), func() *rate.Limiter { return rate.NewLimiter(f.rate, f.burst) })
	lim.AllowN(now, 1)
	return lim.TokensAt(now) < 1
}

// tooMany is 429 with Retry-After.
func tooMany(w *exchange, wait time.Duration, msg string) error {
	w.Header()["Retry-After"] = []string{strconv.FormatInt(retrySeconds(wait), 10)}
	return fail(CodeTooMany, msg)
}

// overHTTPS reports whether the browser reached us over HTTPS: TLS on the
// connection, or a trusted proxy saying so in X-Forwarded-Proto or in
// Forwarded's proto (the last value: the one the nearest proxy wrote).
// Anyone else's word for it is ignored.
func (s *Server) overHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	peer := peerAddr(r.RemoteAddr)
	if len(s.trusted) == 0 || !peer.IsValid() || !s.trusted.contains(peer) {
		return false
	}
	xfp := r.Header.Values("X-Forwarded-Proto")
	useXFP := s.cfg.ForwardedHeader == HeaderXForwardedFor || (s.cfg.ForwardedHeader == HeaderAuto && len(xfp) > 0)
	var last string
	if useXFP {
		if len(xfp) > 0 {
			vs := strings.Split(xfp[len(xfp)-1], ",")
			last = vs[len(vs)-1]
		}
	} else if ps := forwardedParam(r.Header.Values("Forwarded"), "proto"); len(ps) > 0 {
		last = ps[len(ps)-1]
	}
	return strings.EqualFold(strings.TrimSpace(last), "https")
}

// setCookie sends a session cookie; expires zero makes it last as long as
// the browser's session.
func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, path, value string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: path, Expires: expires,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.overHTTPS(r),
	})
}

// clearCookie tells the browser to drop a session cookie.
func (s *Server) clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: path, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.overHTTPS(r),
	})
}

// stateChanging reports whether a method changes something.
func stateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// sameOrigin reports whether a request that a browser marks as coming
// from another origin is absent: Sec-Fetch-Site present and not
// same-origin, or Origin present and neither this request's own origin
// nor extra (PublicURL's origin on the public listener; "" on the admin
// listener, which accepts only its own). Clients that send neither header
// (scripts, old browsers) pass: the CSRF token and SameSite cover them.
func (s *Server) sameOrigin(r *http.Request, extra string) bool {
	if v, ok := r.Header["Sec-Fetch-Site"]; ok && (len(v) != 1 || v[0] != "same-origin") {
		return false
	}
	vs, ok := r.Header["Origin"]
	if !ok {
		return true
	}
	if len(vs) != 1 {
		return false
	}
	origin, host := strings.ToLower(vs[0]), strings.ToLower(r.Host)
	// This host over HTTPS is always ours: a proxy that terminates TLS
	// without being a configured trusted proxy hides the scheme, not the
	// page's origin. Plain HTTP is ours only when the request came so.
	if origin == "https://"+host || (origin == "http://"+host && !s.overHTTPS(r)) {
		return true
	}
	return extra != "" && origin == extra
}

// errCrossOrigin refuses a request from another origin.
var errCrossOrigin = fail(CodeForbidden, "cross-origin request refused")

// checkCSRF applies the rules of a cookie-authenticated change: same
// origin (extra as for sameOrigin), and the session's CSRF token in
// X-CSRF-Token.
func (s *Server) checkCSRF(r *http.Request, sess account.Session, extra string) error {
	if !s.sameOrigin(r, extra) {
		return errCrossOrigin
	}
	got := r.Header.Get(csrfHeader)
	if got == "" || sess.CSRF == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.CSRF)) != 1 {
		return fail(CodeForbidden, "missing or wrong "+csrfHeader+" header")
	}
	return nil
}

// errNoSession is a request without a live session.
var errNoSession = fail(CodeUnauthorized, account.ErrNoSession.Error())

// session finds the live session of the request's cookie.
func (s *Server) session(r *http.Request, cookie, kind string) (account.Session, error) {
	c, err := r.Cookie(cookie)
	if err != nil || c.Value == "" {
		return account.Session{}, errNoSession
	}
	sess, err := s.deps.Accounts.CheckSession(r.Context(), c.Value, kind)
	if err != nil {
		if errors.Is(err, account.ErrNoSession) || errors.Is(err, account.ErrNotFound) {
			return account.Session{}, errNoSession
		}
		return account.Session{}, err
	}
	return sess, nil
}

// originOf is the origin ("https://host[:port]") of an absolute URL, or ""
// when it has none.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}
