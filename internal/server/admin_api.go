package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// admin is the operators' surface on the admin listener: the admin API
// (this file), the console's session and views (admin_console.go), the
// datasets (admin_datasets.go), health, readiness, metrics and pprof. It
// speaks JSON like the public API, with the {"code", "error"} body of
// renderCoded; it is for operators and scripts and has no languages.
type admin struct {
	*Server
	hash     [sha256.Size]byte // SHA-256 of Config.AdminToken
	page     http.Handler      // GET /console and below
	failures *failureLimit     // wrong admin tokens by client address; nil when off
}

// KeyList and Ledger are the admin API's collection bodies (SummaryList,
// the accounts, is in admin_console.go).
// Collections are objects, not bare arrays, so that fields (paging) can be
// added later without breaking clients.
type (
	KeyList struct {
		Keys []account.Key `json:"keys"`
	}
	Ledger struct {
		Entries []account.LedgerEntry `json:"entries"`
	}
	// Credits is an account's balance.
	Credits struct {
		AccountID int64 `json:"account_id"`
		Credits   int64 `json:"credits"`
	}
)

// Request bodies of the admin API.
type (
	// CreateAccountRequest is the body of POST /admin/accounts.
	CreateAccountRequest struct {
		Name         string `json:"name"`
		Tier         string `json:"tier"`
		MonthlyLimit int64  `json:"monthly_limit,omitempty"` // enterprise only
		Credits      *int64 `json:"credits,omitempty"`       // initial grant; default the tier's monthly limit
	}
	// SetTierRequest is the body of PATCH /admin/accounts/{id}.
	SetTierRequest struct {
		Tier         string `json:"tier"`
		MonthlyLimit int64  `json:"monthly_limit,omitempty"`
	}
	// AddCreditsRequest is the body of POST /admin/accounts/{id}/credits.
	AddCreditsRequest struct {
		Amount int64  `json:"amount"` // negative to deduct
		Reason string `json:"reason"`
	}
)

// require lets a request through with "Authorization: Bearer <admin
// token>" (scripts; the audit actor is "token") or with a live console
// session's cookie (the console; actor "session:<id>"), whose changes
// must pass the CSRF rules (session.go). A request that sends a bearer
// token is judged by it alone. Both sides of the token are hashed before
// the constant-time compare, so neither its content nor its length leaks
// through timing.
func (s *admin) require(next handler) handler {
	return func(w *exchange, r *http.Request) error {
		if s.cfg.AdminToken == "" {
			return fail(CodeUnauthorized, "the admin API is disabled: no admin token is configured")
		}
		if _, sent := r.Header["Authorization"]; !sent && s.deps.Accounts != nil {
			if c, err := r.Cookie(consoleCookie); err == nil && c.Value != "" {
				sess, err := s.session(r, consoleCookie, account.SessionOperator)
				if err != nil {
					return err
				}
				// Only the admin listener's own origin: the console is
				// served here, never from the public listener.
				if stateChanging(r.Method) {
					if err := s.checkCSRF(r, sess, ""); err != nil {
						return err
					}
				}
				return next(w, r.WithContext(account.WithActor(r.Context(), "session:"+sess.ID)))
			}
		}
		if err := s.checkToken(w, r); err != nil {
			return err
		}
		return next(w, r.WithContext(account.WithActor(r.Context(), "token")))
	}
}

// checkToken accepts a request whose bearer is the admin token. Wrong
// tokens are limited per client address like the portal's sign-ins
// (Config.SigninFailures): past the limit, a request with a wrong token
// gets 429 with Retry-After and extends nothing, so guessing costs the
// guesser time. The right token still passes (it is compared in constant
// time either way, and is at least 32 characters that serve refuses to
// take weak): any local process could otherwise lock the operator out by
// sending ten wrong ones. A request without Authorization guesses
// nothing and is not counted.
func (s *admin) checkToken(w *exchange, r *http.Request) error {
	_, sent := r.Header["Authorization"]
	if s.adminToken(r) {
		return nil
	}
	now := s.now()
	if sent {
		if wait := s.failures.wait(w.client, now); wait > 0 {
			return tooMany(w, wait, "too many wrong admin tokens from this address; try again later")
		}
		if s.failures.fail(w.client, now) {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "admin: too many wrong admin tokens from this address; it must wait",
				slog.String("client", addrString(w.client)))
		}
	}
	w.Header()["Www-Authenticate"] = []string{`Bearer realm="ipatlas-admin"`}
	return fail(CodeUnauthorized, "missing or wrong admin token")
}

// adminToken reports whether r carries the admin token as its bearer.
func (s *admin) adminToken(r *http.Request) bool {
	if s.cfg.AdminToken == "" {
		return false
	}
	tok, ok := bearer(r)
	got := sha256.Sum256([]byte(tok))
	return ok && subtle.ConstantTimeCompare(got[:], s.hash[:]) == 1
}

// protected reports whether an unknown path lies in the token-protected
// part of the admin listener: its 404 and 405 answers go to token holders
// only, so that nobody else can map the API.
func protected(path string) bool {
	return strings.HasPrefix(path, "/admin/") || path == "/admin" || strings.HasPrefix(path, "/debug/")
}

// decodeBody reads a JSON body into v, strictly: only the given fields. An
// empty body is accepted when emptyOK (an action without parameters).
func decodeBody(w *exchange, r *http.Request, v any, fields []string, emptyOK bool) error {
	buf, berr := readBody(w, r)
	if berr != nil {
		return berr
	}
	defer putBuf(buf)
	if emptyOK && len(bytes.TrimSpace(buf.Bytes())) == 0 {
		return nil
	}
	if berr := decodeJSON(buf.Bytes(), v, fields); berr != nil {
		return berr
	}
	return nil
}

func accountID(r *http.Request) (int64, error) {
	return pathID(r, "account")
}

func (s *admin) createAccount(w *exchange, r *http.Request) error {
	var req CreateAccountRequest
	if err := decodeBody(w, r, &req, []string{"name", "tier", "monthly_limit", "credits"}, false); err != nil {
		return err
	}
	a, err := s.deps.Accounts.CreateAccount(r.Context(), account.AccountParams{
		Name: req.Name, Tier: account.Tier(req.Tier), MonthlyLimit: req.MonthlyLimit, Credits: req.Credits,
	})
	if err != nil {
		return err
	}
	w.Header()["Location"] = []string{"/admin/accounts/" + strconv.FormatInt(a.ID, 10)}
	return reply(w, http.StatusCreated, a)
}

func (s *admin) showAccount(w *exchange, r *http.Request) error {
	id, err := accountID(r)
	if err != nil {
		return err
	}
	a, err := s.deps.Accounts.Account(r.Context(), id)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, a)
}

func (s *admin) setTier(w *exchange, r *http.Request) error {
	id, err := accountID(r)
	if err != nil {
		return err
	}
	var req SetTierRequest
	if err := decodeBody(w, r, &req, []string{"tier", "monthly_limit"}, false); err != nil {
		return err
	}
	if req.Tier == "" {
		return fail(CodeInvalidRequest, `the field "tier" is required`)
	}
	a, err := s.deps.Accounts.SetTier(r.Context(), id, account.Tier(req.Tier), req.MonthlyLimit)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, a)
}

// requireAccount answers 404 for an account that does not exist, so that
// listing the keys of a missing account is not an empty success.
func (s *admin) requireAccount(r *http.Request) (account.Account, error) {
	id, err := accountID(r)
	if err != nil {
		return account.Account{}, err
	}
	return s.deps.Accounts.Account(r.Context(), id)
}

func (s *admin) createKey(w *exchange, r *http.Request) error {
	a, err := s.requireAccount(r)
	if err != nil {
		return err
	}
	var none struct{}
	if err := decodeBody(w, r, &none, []string{}, true); err != nil {
		return err
	}
	nk, err := s.deps.Accounts.CreateKey(r.Context(), a.ID)
	if err != nil {
		return err
	}
	w.Header()["Location"] = []string{"/admin/keys/" + nk.ID}
	w.Header()["Cache-Control"] = hdrNoStore // the body holds a secret
	return reply(w, http.StatusCreated, nk)
}

func (s *admin) listKeys(w *exchange, r *http.Request) error {
	a, err := s.requireAccount(r)
	if err != nil {
		return err
	}
	ks, err := s.deps.Accounts.Keys(r.Context(), a.ID)
	if err != nil {
		return err
	}
	if ks == nil {
		ks = []account.Key{}
	}
	return reply(w, http.StatusOK, &KeyList{Keys: ks})
}

func (s *admin) showKey(w *exchange, r *http.Request) error {
	k, err := s.deps.Accounts.Key(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, k)
}

func (s *admin) keyUsage(w *exchange, r *http.Request) error {
	u, err := s.deps.Accounts.Usage(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, s.wireUsage(u))
}

func (s *admin) revokeKey(w *exchange, r *http.Request) error {
	var none struct{}
	if err := decodeBody(w, r, &none, []string{}, true); err != nil {
		return err
	}
	k, err := s.deps.Accounts.RevokeKey(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, k)
}

func (s *admin) rotateKey(w *exchange, r *http.Request) error {
	var none struct{}
	if err := decodeBody(w, r, &none, []string{}, true); err != nil {
		return err
	}
	nk, err := s.deps.Accounts.RotateKey(r.Context(), r.PathValue("key"))
	if err != nil {
		return err
	}
	w.Header()["Cache-Control"] = hdrNoStore
	return reply(w, http.StatusOK, nk)
}

func (s *admin) showCredits(w *exchange, r *http.Request) error {
	a, err := s.requireAccount(r)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, &Credits{AccountID: a.ID, Credits: a.Credits})
}

func (s *admin) addCredits(w *exchange, r *http.Request) error {
	id, err := accountID(r)
	if err != nil {
		return err
	}
	var req AddCreditsRequest
	if err := decodeBody(w, r, &req, []string{"amount", "reason"}, false); err != nil {
		return err
	}
	e, err := s.deps.Accounts.AddCredits(r.Context(), id, req.Amount, req.Reason)
	if err != nil {
		return err
	}
	return reply(w, http.StatusCreated, e)
}

func (s *admin) creditHistory(w *exchange, r *http.Request) error {
	a, err := s.requireAccount(r)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 0, 0, math.MaxInt32) // 0: all
	if err != nil {
		return err
	}
	es, err := s.deps.Accounts.Ledger(r.Context(), a.ID, int(limit))
	if err != nil {
		return err
	}
	if es == nil {
		es = []account.LedgerEntry{}
	}
	return reply(w, http.StatusOK, &Ledger{Entries: es})
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string `json:"status"` // "ok" or "unavailable"
	Error  string `json:"error,omitempty"`
}

// handleHealthz is liveness: the process serves HTTP.
func (s *admin) handleHealthz(w *exchange, r *http.Request) error {
	w.Header()["Cache-Control"] = hdrNoStore
	return reply(w, http.StatusOK, &Health{Status: "ok"})
}

// handleReadyz is readiness: the store answers, charges can be written
// (after a failed one, the meter asks the store again), and deps.Ready
// (dataset loaded, not draining) agrees.
func (s *admin) handleReadyz(w *exchange, r *http.Request) error {
	w.Header()["Cache-Control"] = hdrNoStore
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var err error
	if s.deps.Accounts == nil || s.deps.Accounts.Store == nil {
		err = errors.New("no store")
	} else if perr := s.deps.Accounts.Store.Ping(ctx); perr != nil {
		err = errors.New("store: " + perr.Error())
	} else if s.deps.Meter != nil {
		err = s.deps.Meter.Ready(ctx)
	}
	if err == nil && s.deps.Ready != nil {
		err = s.deps.Ready()
	}
	if err != nil {
		// The answer is the report, to a balancer that asks every few
		// seconds; its cause is logged where it happens (the meter, the
		// store), so the request's line stays at the access log's level.
		w.outage = true
		return reply(w, http.StatusServiceUnavailable, &Health{Status: "unavailable", Error: err.Error()})
	}
	return reply(w, http.StatusOK, &Health{Status: "ok"})
}
