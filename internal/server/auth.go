package server

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"golang.org/x/time/rate"
)

// keyed is a caller whose API key the router accepted. Only authenticate
// makes one, and the router hands it to the handlers of the routes that
// take a key (keyedHandler): a handler that meters cannot be reached
// without an accepted key, and cannot forget to check it.
type keyed struct {
	key  account.Key
	acct account.Account // as cached at authentication
}

// credential is the outcome of a keyed route's authentication: the
// accepted caller, or why there is none (no key, a key not accepted, a
// store that could not say), which the handler answers after the
// request's own checks, so that their errors are in the language the
// request names (admit).
type credential struct {
	c   *keyed
	err error
}

// admit is the gate of every keyed route, the one place that makes the
// caller the metered query takes: the request's own refusal f (of its
// parameters or body) comes first, free, then a key that was not
// accepted.
func (s *api) admit(w *exchange, r *http.Request, cr credential, f *failure) (*keyed, error) {
	w.metered = true
	switch {
	case f != nil && cr.c != nil:
		return nil, s.uncharged(r.Context(), w, cr.c, f)
	case f != nil:
		return nil, f
	case cr.c == nil:
		return nil, s.keyError(w, r, cr.err)
	}
	return cr.c, nil
}

// meta is the meta of an answer to c: logged in, with the balance as
// cached at authentication until a charge or a read of the store says
// better.
func (c *keyed) meta() ipatlas.Meta {
	return ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: c.acct.Credits}
}

// keyScheme reads the key that a request to a keyed route names, in its
// shape's way (shape.key): ipatlas's is requestKey. It returns the key and
// the account the request names beside it, if any (0: none), which must
// then be the key's account. Its error is a *failure that refuses the
// request at once, or one that wraps errNoKey: the request names no key
// that can be looked up, which the handler answers after the request's
// own checks (admit), and which a shape's renderer may tell apart by what
// else it wraps (failure.why).
type keyScheme func(w *exchange, r *http.Request) (key string, accountID int64, err error)

// authenticate looks up the API key of a request to a route that takes
// one, once per request (cached, compared in constant time, by
// account.Service), before anything of the request is read. A request
// it refuses (two keys, or a limit below) is answered at once; a key
// that is missing or not accepted is the handler's to answer (admit).
// The limits:
//
//   - rejected keys count against the client's address, which waits
//     after Config.AuthFailures of them (a key that authenticated on this
//     server recently still passes, so that a guesser sharing a
//     customer's address cannot lock the customer out);
//   - an accepted key spends a token of its bucket (Config.KeyRate).
func (s *Server) authenticate(w *exchange, r *http.Request, scheme keyScheme) (credential, error) {
	if len(r.Header["Authorization"]) > 1 {
		// Which one would count is a guess that a proxy in front may make
		// differently (like duplicate JSON keys): refuse both.
		w.Header()["Www-Authenticate"] = hdrBearer
		detail := "send exactly one Authorization header"
		if w.langOf(r) == ipatlas.Chinese {
			detail = "只能发送一个 Authorization 请求头"
		}
		return credential{}, apiFail(ipatlas.CodeInvalidAPIKey, detail)
	}
	token, claimed, err := scheme(w, r)
	switch {
	case errors.Is(err, errNoKey):
		return credential{err: err}, nil
	case err != nil:
		return credential{}, err
	}
	if s.deps.Accounts == nil {
		return credential{err: account.ErrUnavailable}, nil
	}
	l := s.limits
	now := s.now()
	var group netip.Addr
	byAddr := l != nil && l.failing != nil && w.client.IsValid()
	if byAddr {
		group = clientGroup(w.client)
		if f, ok := l.failing.peek(group); ok {
			if d := f.wait(now, l.window); d > 0 && !l.known(token) {
				l.refused.WithLabelValues(limitInvalidKeys).Inc()
				return credential{}, limited(w, r, apiMeta, retrySeconds(d),
					"too many invalid API keys from this address, retry in %d s", "来自此地址的无效 API 密钥过多，请在 %d 秒后重试")
			}
		}
	}

	k, acct, err := s.deps.Accounts.Authenticate(r.Context(), token)
	if err == nil && claimed != 0 && acct.ID != claimed {
		// A key named with another account's ID is a wrong key.
		err = account.ErrBadKey
	}
	if err != nil {
		if errors.Is(err, account.ErrBadKey) && byAddr {
			f := l.failing.getOrAdd(group, func() *failures { return new(failures) })
			if f.fail(now, l) {
				s.log.LogAttrs(r.Context(), slog.LevelWarn, "client slowed down after invalid API keys",
					slog.String("client", group.String()), slog.Int("failures", l.maxFails))
			}
		}
		return credential{err: err}, nil
	}
	// The caller lives in the request's exchange, which is pooled: a
	// request allocates nothing for it.
	w.keyed = keyed{key: k, acct: acct}
	c := &w.keyed
	if l == nil {
		return credential{c: c}, nil
	}
	if l.good != nil {
		// The key's hash is the token's SHA-256: authentication has
		// just compared the two.
		l.good.add([sha256.Size]byte(k.Hash), struct{}{})
	}
	if l.keys != nil {
		lim := l.keys.getOrAdd(k.ID, func() *rate.Limiter { return rate.NewLimiter(l.keyRate, l.keyBurst) })
		if d := take(lim, now); d > 0 {
			l.refused.WithLabelValues(limitKeyBurst).Inc()
			// The cached balance: reading the store here would spend
			// what the limit is there to save.
			return credential{}, limited(w, r, c.meta(), retrySeconds(d),
				"burst rate exceeded, retry in %d s", "突发请求过多，请在 %d 秒后重试")
		}
	}
	return credential{c: c}, nil
}

var errNoKey = errors.New("no API key")

// keyError is the failure of a request whose key was not accepted: 401
// for a missing or bad key, 503 when the store could not say.
func (s *Server) keyError(w *exchange, r *http.Request, err error) error {
	if errors.Is(err, errNoKey) || errors.Is(err, account.ErrBadKey) {
		w.Header()["Www-Authenticate"] = hdrBearer
		f := apiFail(ipatlas.CodeInvalidAPIKey, "")
		f.why = err
		return f
	}
	s.log.LogAttrs(r.Context(), slog.LevelWarn, "authenticating", errAttr(err))
	return apiFail(ipatlas.CodeServiceUnavailable, "")
}

// bearer extracts the key of an "Authorization: Bearer <key>" header. The
// scheme is case-insensitive (RFC 9110 section 11.1).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return "", false
	}
	k := strings.TrimSpace(h[7:])
	return k, k != ""
}

// basicKey extracts an API key sent with HTTP Basic authentication, as
// ipinfo documents it (`curl -u KEY: …`): the key as the user name and an
// empty password, or, for clients that cannot leave the user name empty
// either way round, the key as the password and an empty user name.
func basicKey(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 6 || !strings.EqualFold(h[:6], "Basic ") {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(h[6:]))
	if err != nil {
		return "", false
	}
	user, pass, _ := strings.Cut(string(raw), ":")
	switch {
	case user != "" && pass == "":
		return user, true
	case user == "" && pass != "":
		return pass, true
	}
	return "", false
}

// keyParams are the query parameters that may carry a key, for tools that
// cannot set a header: "key" (ip-api's name) and "token" (ipinfo's).
var keyParams = [...]string{"key", "token"}

// requestKey is ipatlas's keyScheme: the bearer key of the Authorization
// header (or a key sent with Basic authentication), or a key in the URL's
// query ("?key=" or "?token=").
// One request names one key: the same key given in several places is
// accepted, different ones are refused (which one counts would be a guess
// that a proxy in front may make differently).
//
// A key in the URL is a secret in a place that proxies and browsers log.
// The server's own log never holds it (the access log writes the path,
// never the query), no metric is labelled with it, no error text repeats
// it (echo) and no redirect carries it (the router serves an unclean path
// without redirecting); the answer is no-store, so that no cache keeps it
// either.
func requestKey(w *exchange, r *http.Request) (token string, _ int64, err error) {
	token, ok := bearer(r)
	if !ok {
		token, ok = basicKey(r)
	}
	if r.URL.RawQuery == "" || !strings.Contains(r.URL.RawQuery, "key=") && !strings.Contains(r.URL.RawQuery, "token=") {
		return keyFound(token, ok) // the common case costs no parsing
	}
	// ParseQuery keeps the pairs it could read: a malformed pair
	// elsewhere in the query does not hide a well-formed key.
	q, _ := url.ParseQuery(r.URL.RawQuery)
	inURL := false
	for _, name := range keyParams {
		for _, v := range q[name] {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			switch {
			case !ok:
				token, ok, inURL = v, true, true
			case v != token:
				w.Header()["Www-Authenticate"] = hdrBearer
				detail := "send one API key: this request names two different keys (header or URL)"
				if w.langOf(r) == ipatlas.Chinese {
					detail = "只能发送一个 API 密钥：此请求（请求头或 URL 中）含有两个不同的密钥"
				}
				return "", 0, apiFail(ipatlas.CodeInvalidAPIKey, detail)
			default:
				inURL = true
			}
		}
	}
	if inURL {
		w.Header()["Cache-Control"] = hdrNoStore
	}
	return keyFound(token, ok)
}

// keyFound is requestKey's answer: the key, or errNoKey.
func keyFound(token string, ok bool) (string, int64, error) {
	if !ok {
		return "", 0, errNoKey
	}
	return token, 0, nil
}

// echo is a value of the request as an error text may repeat it: cut to
// 32 bytes, and nothing of it when it looks like a secret (an API key
// sent in the wrong place), so that an error never spreads one further.
func echo(v string) string {
	if looksSecret(v) {
		return "(a value that looks like an API key, not repeated here)"
	}
	if len(v) > 32 {
		return v[:32] + "..."
	}
	return v
}

// looksSecret reports whether v looks like a key: ipatlas's ("ipa_…"), or
// a run of 12 or more letters and digits with at least 4 of each, as the
// tokens of other services are. Field names, language tags and AS
// numbers never are.
func looksSecret(v string) bool {
	if strings.Contains(strings.ToLower(v), "ipa_") {
		return true
	}
	run, letters, digits := 0, 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case '0' <= c && c <= '9':
			digits++
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			letters++
		case c == '_' || c == '-':
		default:
			run, letters, digits = 0, 0, 0
			continue
		}
		run++
		if run >= 12 && letters >= 4 && digits >= 4 {
			return true
		}
	}
	return false
}
