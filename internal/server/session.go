package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
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

// Error codes of the portal and the console, beyond the admin API's.
const (
	codeForbidden    = "Forbidden"       // 403: CSRF token or origin refused
	codeTooMany      = "TooManyRequests" // 429: sign-in failures, with Retry-After
	codeSignInFailed = "SignInFailed"    // 401: any refused sign-in
	codeBadToken     = "BadToken"        // 400: unknown, used or expired link
	codeWeakPassword = "WeakPassword"    // 400: the error says why
)

// Sign-in failures per client address (IPv6: its /64): a token bucket of
// DefaultSigninFailures tokens refilled over DefaultSigninWindow; each
// failure spends one, and an address without a token is answered 429
// before its password is checked. The per-owner backoff is the service's.
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

// newSignin registers the sign-in counter and builds the sign-in
// limiter's table.
func (s *Server) newSignin() error {
	var errs []error
	s.signins = register(s.deps.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ipatlas", Subsystem: "portal", Name: "signins_total",
		Help: "Portal sign-ins by outcome: ok, failed (wrong email or password, or a locked owner) or limited (the address must wait).",
	}, []string{"outcome"}), &errs)
	if len(errs) > 0 {
		return fmt.Errorf("server: registering metrics: %w", errors.Join(errs...))
	}
	for _, v := range []string{signinOK, signinFailed, signinLimited} {
		s.signins.WithLabelValues(v)
	}
	n, window := s.cfg.SigninFailures, s.cfg.SigninWindow
	if n < 0 {
		return nil // off
	}
	if n == 0 {
		n = DefaultSigninFailures
	}
	if window <= 0 {
		window = DefaultSigninWindow
	}
	size := s.cfg.LimitTableSize
	if size <= 0 {
		size = DefaultLimitTableSize
	}
	s.signin = newTable[netip.Addr, *rate.Limiter](size)
	s.signinRate, s.signinBurst = rate.Limit(float64(n)/window.Seconds()), n
	return nil
}

// signinWait is how long the client must wait before its next sign-in
// attempt; 0 when it may try now.
func (s *Server) signinWait(w http.ResponseWriter, r *http.Request) time.Duration {
	if s.signin == nil {
		return 0
	}
	a := s.clientOf(w, r)
	if !a.IsValid() {
		return 0
	}
	lim, ok := s.signin.peek(clientGroup(a))
	if !ok {
		return 0
	}
	now := s.now()
	if t := lim.TokensAt(now); t < 1 {
		return max(time.Second, time.Duration((1-t)/float64(lim.Limit())*float64(time.Second)))
	}
	return 0
}

// signinFailed spends one of the client's tokens.
func (s *Server) signinFailed(w http.ResponseWriter, r *http.Request) {
	if s.signin == nil {
		return
	}
	a := s.clientOf(w, r)
	if !a.IsValid() {
		return
	}
	lim := s.signin.getOrAdd(clientGroup(a), func() *rate.Limiter { return rate.NewLimiter(s.signinRate, s.signinBurst) })
	now := s.now()
	lim.AllowN(now, 1)
	if lim.TokensAt(now) < 1 {
		// Logged when the address runs out: its next tries are refused
		// before they get here.
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "portal: too many failed sign-ins from this address; it must wait",
			slog.String("client", addrString(a)))
	}
}

// tooMany answers 429 with Retry-After.
func tooMany(w http.ResponseWriter, wait time.Duration, msg string) {
	w.Header()["Retry-After"] = []string{strconv.FormatInt(retrySeconds(wait), 10)}
	adminFail(w, http.StatusTooManyRequests, codeTooMany, msg)
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

// sameOrigin refuses a request that a browser says comes from another
// origin: Sec-Fetch-Site present and not same-origin, or Origin present
// and neither this request's own origin nor PublicURL's. Clients that send
// neither header (scripts, old browsers) pass: the CSRF token and
// SameSite cover them.
func (s *Server) sameOrigin(r *http.Request) bool {
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
	return s.publicOrigin != "" && origin == s.publicOrigin
}

// checkCSRF applies the rules of a cookie-authenticated change: same
// origin, and the session's CSRF token in X-CSRF-Token.
func (s *Server) checkCSRF(w http.ResponseWriter, r *http.Request, sess account.Session) bool {
	if !s.sameOrigin(r) {
		adminFail(w, http.StatusForbidden, codeForbidden, "cross-origin request refused")
		return false
	}
	got := r.Header.Get(csrfHeader)
	if got == "" || sess.CSRF == "" || subtle.ConstantTimeCompare([]byte(got), []byte(sess.CSRF)) != 1 {
		adminFail(w, http.StatusForbidden, codeForbidden, "missing or wrong "+csrfHeader+" header")
		return false
	}
	return true
}

// session finds the live session of the request's cookie; false means it
// has answered (401, or 503 when the store fails).
func (s *Server) session(w http.ResponseWriter, r *http.Request, cookie, kind string) (account.Session, bool) {
	c, err := r.Cookie(cookie)
	if err != nil || c.Value == "" {
		adminFail(w, http.StatusUnauthorized, adminUnauthorized, account.ErrNoSession.Error())
		return account.Session{}, false
	}
	sess, err := s.deps.Accounts.CheckSession(r.Context(), c.Value, kind)
	if err != nil {
		if errors.Is(err, account.ErrNoSession) || errors.Is(err, account.ErrNotFound) {
			adminFail(w, http.StatusUnauthorized, adminUnauthorized, account.ErrNoSession.Error())
			return account.Session{}, false
		}
		s.adminStoreError(w, r, err)
		return account.Session{}, false
	}
	return sess, true
}

// ownerHandler is a portal handler: it runs for a live owner session.
type ownerHandler func(w http.ResponseWriter, r *http.Request, sess account.Session)

// owner authenticates a portal request by its cookie, applies the CSRF
// rules to changes, and names the owner's session as the audit actor.
func (s *Server) owner(next ownerHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.session(w, r, ownerCookie, account.SessionOwner)
		if !ok {
			return
		}
		if stateChanging(r.Method) && !s.checkCSRF(w, r, sess) {
			return
		}
		actor := "owner:" + strconv.FormatInt(sess.OwnerID, 10) + "/session:" + sess.ID
		next(w, r.WithContext(account.WithActor(r.Context(), actor)), sess)
	}
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
