package server

import (
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

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// The admin API speaks JSON like the public one, with its own small error
// body, {"code": "...", "error": "..."}, and these codes. It is for
// operators and scripts; it has no languages.
const (
	adminUnauthorized   = "Unauthorized"        // 401: missing or wrong admin token, or none configured
	adminInvalidRequest = "InvalidRequest"      // 400: malformed body, bad field, bad id
	adminNotFound       = "NotFound"            // 404: no such account, key or path
	adminNotAllowed     = "MethodNotAllowed"    // 405
	adminConflict       = "Conflict"            // 409: e.g. rotating a revoked key
	adminInsufficient   = "InsufficientCredits" // 409: a deduction below zero
	adminTooLarge       = "PayloadTooLarge"     // 413
	adminMediaType      = "UnsupportedMediaType"
	adminUnavailable    = "ServiceUnavailable" // 503: the store cannot be reached
	adminInternal       = "InternalError"      // 500: a panic in a handler
)

// AdminError is the body of every admin API failure.
type AdminError struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// KeyList and Ledger are the admin API's collection bodies (SummaryList,
// the accounts, is in console.go).
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

func adminFail(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, &AdminError{Code: code, Error: msg})
}

// requireAdmin lets a request through with "Authorization: Bearer <admin
// token>" (scripts; the audit actor is "token") or with a live console
// session's cookie (the console; actor "session:<id>"), whose changes
// must pass the CSRF rules (session.go). A request that sends a bearer
// token is judged by it alone. Both sides of the token are hashed before
// the constant-time compare, so neither its content nor its length leaks
// through timing.
func (s *Server) requireAdmin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.AdminToken == "" {
			adminFail(w, http.StatusUnauthorized, adminUnauthorized, "the admin API is disabled: no admin token is configured")
			return
		}
		if _, sent := r.Header["Authorization"]; !sent && s.deps.Accounts != nil {
			if c, err := r.Cookie(consoleCookie); err == nil && c.Value != "" {
				sess, ok := s.session(w, r, consoleCookie, account.SessionOperator)
				if !ok {
					return
				}
				if stateChanging(r.Method) && !s.checkCSRF(w, r, sess) {
					return
				}
				next(w, r.WithContext(account.WithActor(r.Context(), "session:"+sess.ID)))
				return
			}
		}
		if !s.adminToken(r) {
			w.Header()["Www-Authenticate"] = []string{`Bearer realm="ipatlas-admin"`}
			adminFail(w, http.StatusUnauthorized, adminUnauthorized, "missing or wrong admin token")
			return
		}
		next(w, r.WithContext(account.WithActor(r.Context(), "token")))
	}
}

// adminToken reports whether r carries the admin token as its bearer.
func (s *Server) adminToken(r *http.Request) bool {
	if s.cfg.AdminToken == "" {
		return false
	}
	tok, ok := bearer(r)
	got := sha256.Sum256([]byte(tok))
	return ok && subtle.ConstantTimeCompare(got[:], s.adminHash[:]) == 1
}

// protected reports whether an unknown path lies in the token-protected
// part of the admin listener: its 404 and 405 answers go to token holders
// only, so that nobody else can map the API.
func protected(path string) bool {
	return strings.HasPrefix(path, "/admin/") || path == "/admin" || strings.HasPrefix(path, "/debug/")
}

func (s *Server) adminNotFound(w http.ResponseWriter, r *http.Request) {
	h := func(w http.ResponseWriter, r *http.Request) {
		adminFail(w, http.StatusNotFound, adminNotFound, "no such path: "+r.URL.Path)
	}
	if protected(r.URL.Path) {
		h = s.requireAdmin(h)
	}
	h(w, r)
}

func (s *Server) adminMethodNotAllowed(allow string) http.HandlerFunc {
	hdr := []string{allow}
	return func(w http.ResponseWriter, r *http.Request) {
		h := func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Allow"] = hdr
			adminFail(w, http.StatusMethodNotAllowed, adminNotAllowed, r.Method+" is not allowed here; allowed: "+allow)
		}
		if protected(r.URL.Path) {
			h = s.requireAdmin(h)
		}
		h(w, r)
	}
}

// adminStoreError answers a failure of the account service.
func (s *Server) adminStoreError(w http.ResponseWriter, r *http.Request, err error) {
	var weak *account.WeakPasswordError
	switch {
	case errors.As(err, &weak):
		adminFail(w, http.StatusBadRequest, codeWeakPassword, weak.Reason)
	case errors.Is(err, account.ErrInvalid):
		adminFail(w, http.StatusBadRequest, adminInvalidRequest, err.Error())
	case errors.Is(err, account.ErrNotFound):
		adminFail(w, http.StatusNotFound, adminNotFound, err.Error())
	case errors.Is(err, account.ErrInsufficient):
		adminFail(w, http.StatusConflict, adminInsufficient, err.Error())
	case errors.Is(err, account.ErrRevoked), errors.Is(err, account.ErrConflict):
		adminFail(w, http.StatusConflict, adminConflict, err.Error())
	case errors.Is(err, account.ErrBadToken):
		adminFail(w, http.StatusBadRequest, codeBadToken, account.ErrBadToken.Error())
	case errors.Is(err, account.ErrNoSession):
		adminFail(w, http.StatusUnauthorized, adminUnauthorized, account.ErrNoSession.Error())
	default:
		// Whatever else fails is the store (the service validates all
		// input first), and stores do not always wrap ErrUnavailable
		// around their driver's errors: answer it as the transient
		// failure it most likely is. The cause goes to the log only.
		s.log.LogAttrs(r.Context(), slog.LevelError, "admin: store failure", errAttr(err))
		adminFail(w, http.StatusServiceUnavailable, adminUnavailable, "the store failed or cannot be reached; see the server log")
	}
}

// adminDecode reads a JSON body into v, strictly: only the given fields.
// An empty body is accepted when emptyOK (an action without parameters).
func adminDecode(w http.ResponseWriter, r *http.Request, v any, fields []string, emptyOK bool) bool {
	buf, berr := readBody(w, r)
	if berr == nil {
		defer putBuf(buf)
		if emptyOK && len(strings.TrimSpace(buf.String())) == 0 {
			return true
		}
		berr = decodeJSON(buf.Bytes(), v, fields)
	}
	if berr == nil {
		return true
	}
	switch berr.code {
	case ipatlas.CodePayloadTooLarge:
		adminFail(w, http.StatusRequestEntityTooLarge, adminTooLarge, berr.en)
	case ipatlas.CodeUnsupportedMediaType:
		adminFail(w, http.StatusUnsupportedMediaType, adminMediaType, "Content-Type must be application/json")
	default:
		adminFail(w, http.StatusBadRequest, adminInvalidRequest, berr.en)
	}
	return false
}

func accountID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	return pathID(w, r, "account")
}

func (s *Server) adminCreateAccount(w http.ResponseWriter, r *http.Request) {
	var req CreateAccountRequest
	if !adminDecode(w, r, &req, []string{"name", "tier", "monthly_limit", "credits"}, false) {
		return
	}
	a, err := s.deps.Accounts.CreateAccount(r.Context(), account.AccountParams{
		Name: req.Name, Tier: account.Tier(req.Tier), MonthlyLimit: req.MonthlyLimit, Credits: req.Credits,
	})
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	w.Header()["Location"] = []string{"/admin/accounts/" + strconv.FormatInt(a.ID, 10)}
	writeJSON(w, http.StatusCreated, a)
}

func (s *Server) adminShowAccount(w http.ResponseWriter, r *http.Request) {
	id, ok := accountID(w, r)
	if !ok {
		return
	}
	a, err := s.deps.Accounts.Account(r.Context(), id)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) adminSetTier(w http.ResponseWriter, r *http.Request) {
	id, ok := accountID(w, r)
	if !ok {
		return
	}
	var req SetTierRequest
	if !adminDecode(w, r, &req, []string{"tier", "monthly_limit"}, false) {
		return
	}
	if req.Tier == "" {
		adminFail(w, http.StatusBadRequest, adminInvalidRequest, `the field "tier" is required`)
		return
	}
	a, err := s.deps.Accounts.SetTier(r.Context(), id, account.Tier(req.Tier), req.MonthlyLimit)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// requireAccount answers 404 for an account that does not exist, so that
// listing the keys of a missing account is not an empty success.
func (s *Server) requireAccount(w http.ResponseWriter, r *http.Request) (account.Account, bool) {
	id, ok := accountID(w, r)
	if !ok {
		return account.Account{}, false
	}
	a, err := s.deps.Accounts.Account(r.Context(), id)
	if err != nil {
		s.adminStoreError(w, r, err)
		return account.Account{}, false
	}
	return a, true
}

func (s *Server) adminCreateKey(w http.ResponseWriter, r *http.Request) {
	a, ok := s.requireAccount(w, r)
	if !ok {
		return
	}
	var none struct{}
	if !adminDecode(w, r, &none, []string{}, true) {
		return
	}
	nk, err := s.deps.Accounts.CreateKey(r.Context(), a.ID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	w.Header()["Location"] = []string{"/admin/keys/" + nk.ID}
	w.Header()["Cache-Control"] = hdrNoStore // the body holds a secret
	writeJSON(w, http.StatusCreated, nk)
}

func (s *Server) adminListKeys(w http.ResponseWriter, r *http.Request) {
	a, ok := s.requireAccount(w, r)
	if !ok {
		return
	}
	ks, err := s.deps.Accounts.Keys(r.Context(), a.ID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if ks == nil {
		ks = []account.Key{}
	}
	writeJSON(w, http.StatusOK, &KeyList{Keys: ks})
}

func (s *Server) adminShowKey(w http.ResponseWriter, r *http.Request) {
	k, err := s.deps.Accounts.Key(r.Context(), r.PathValue("key"))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

func (s *Server) adminKeyUsage(w http.ResponseWriter, r *http.Request) {
	u, err := s.deps.Accounts.Usage(r.Context(), r.PathValue("key"))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.wireUsage(u))
}

func (s *Server) adminRevokeKey(w http.ResponseWriter, r *http.Request) {
	var none struct{}
	if !adminDecode(w, r, &none, []string{}, true) {
		return
	}
	k, err := s.deps.Accounts.RevokeKey(r.Context(), r.PathValue("key"))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

func (s *Server) adminRotateKey(w http.ResponseWriter, r *http.Request) {
	var none struct{}
	if !adminDecode(w, r, &none, []string{}, true) {
		return
	}
	nk, err := s.deps.Accounts.RotateKey(r.Context(), r.PathValue("key"))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	w.Header()["Cache-Control"] = hdrNoStore
	writeJSON(w, http.StatusOK, nk)
}

func (s *Server) adminShowCredits(w http.ResponseWriter, r *http.Request) {
	a, ok := s.requireAccount(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, &Credits{AccountID: a.ID, Credits: a.Credits})
}

func (s *Server) adminAddCredits(w http.ResponseWriter, r *http.Request) {
	id, ok := accountID(w, r)
	if !ok {
		return
	}
	var req AddCreditsRequest
	if !adminDecode(w, r, &req, []string{"amount", "reason"}, false) {
		return
	}
	e, err := s.deps.Accounts.AddCredits(r.Context(), id, req.Amount, req.Reason)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, e)
}

func (s *Server) adminCreditHistory(w http.ResponseWriter, r *http.Request) {
	a, ok := s.requireAccount(w, r)
	if !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", 0, 0, math.MaxInt32) // 0: all
	if !ok {
		return
	}
	es, err := s.deps.Accounts.Ledger(r.Context(), a.ID, int(limit))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if es == nil {
		es = []account.LedgerEntry{}
	}
	writeJSON(w, http.StatusOK, &Ledger{Entries: es})
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string `json:"status"` // "ok" or "unavailable"
	Error  string `json:"error,omitempty"`
}

// handleHealthz is liveness: the process serves HTTP.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = hdrNoStore
	writeJSON(w, http.StatusOK, &Health{Status: "ok"})
}

// handleReadyz is readiness: the store answers and deps.Ready (dataset
// loaded, not draining) agrees.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = hdrNoStore
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var err error
	if s.deps.Accounts == nil || s.deps.Accounts.Store == nil {
		err = errors.New("no store")
	} else if perr := s.deps.Accounts.Store.Ping(ctx); perr != nil {
		err = errors.New("store: " + perr.Error())
	}
	if err == nil && s.deps.Ready != nil {
		err = s.deps.Ready()
	}
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, &Health{Status: "unavailable", Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, &Health{Status: "ok"})
}
