package server

import (
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// The portal's JSON API, /account/api on the public listener: an owner
// signs in with an email and a password and then manages the account's
// keys, sees its usage and credits, and asks for another tier. Bodies and
// errors are the admin API's ({"code", "error"}); the page translates by
// code. Every answer is no-store (securityHeaders) and has no CORS: only
// the portal's own page, on this origin, may read it.

// Bodies of the portal API.
type (
	// SignInRequest is the body of POST /account/api/signin.
	SignInRequest struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	// SetPasswordRequest is the body of POST /account/api/password.
	SetPasswordRequest struct {
		Token    string `json:"token"`
		Password string `json:"password"`
	}
	// SignedIn answers a sign-in and a password set through a link.
	SignedIn struct {
		Owner     account.Owner `json:"owner"`
		AccountID int64         `json:"account_id"`
		CSRF      string        `json:"csrf"`
		// SignedOut answers a password set: how many other sessions of
		// the owner the new password ended (none on a first password).
		SignedOut int64 `json:"signed_out"`
	}
	// Revoked answers "sign out everywhere".
	Revoked struct {
		Revoked int64 `json:"revoked"`
	}
	// Me is the signed-in owner's overview.
	Me struct {
		Owner          account.Owner        `json:"owner"`
		Account        account.Account      `json:"account"`
		Period         string               `json:"period"` // "2006-01", UTC
		Reset          time.Time            `json:"reset"`  // start of next month, UTC
		Used           int64                `json:"used"`   // queries of all keys in Period
		CSRF           string               `json:"csrf"`
		PendingRequest *account.TierRequest `json:"pending_request"`
	}
	// KeyViews lists an account's keys with this month's usage.
	KeyViews struct {
		Keys []account.KeyView `json:"keys"`
	}
	// LabelRequest is the body of POST /account/api/keys and PATCH
	// /account/api/keys/{key}.
	LabelRequest struct {
		Label string `json:"label"`
	}
	// CreatedKey answers creating and rotating a key: the secret is
	// shown once.
	CreatedKey struct {
		Key    account.Key `json:"key"`
		Secret string      `json:"secret"`
	}
	// CreditPage is a page of the ledger.
	CreditPage struct {
		Credits    int64                 `json:"credits"`
		Entries    []account.LedgerEntry `json:"entries"`
		NextBefore int64                 `json:"next_before"` // 0: no older entries
	}
	// TierOffer is a tier and its monthly limit per key (0: set by the
	// operator).
	TierOffer struct {
		Tier         account.Tier `json:"tier"`
		MonthlyLimit int64        `json:"monthly_limit"`
	}
	// Subscription is the account's tier, the tiers on offer and its
	// requests.
	Subscription struct {
		Tier         account.Tier          `json:"tier"`
		MonthlyLimit int64                 `json:"monthly_limit"`
		Tiers        []TierOffer           `json:"tiers"`
		Requests     []account.TierRequest `json:"requests"`
	}
	// TierChangeRequest is the body of POST
	// /account/api/subscription/requests.
	TierChangeRequest struct {
		Tier         string `json:"tier"`
		MonthlyLimit int64  `json:"monthly_limit,omitempty"`
		Note         string `json:"note,omitempty"`
	}
)

// Paging defaults.
const (
	defaultHistoryDays = 90
	defaultPageSize    = 50
	maxPageSize        = 1000
)

// handleAccountPage serves the portal's page; unknown API paths get the
// API's JSON 404, never the page, and other methods a JSON 405.
func (s *Server) handleAccountPage(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/account/api/"):
		adminFail(w, http.StatusNotFound, adminNotFound, "no such path: "+r.URL.Path)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		w.Header()["Allow"] = []string{"GET, HEAD"}
		adminFail(w, http.StatusMethodNotAllowed, adminNotAllowed, r.Method+" is not allowed here; allowed: GET, HEAD")
	default:
		s.portalPage.ServeHTTP(w, r)
	}
}

// startSession sets the owner's cookie and answers a sign-in.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, ns account.NewSession, o account.Owner) {
	s.setCookie(w, r, ownerCookie, ownerPath, ns.Secret, ns.ExpiresAt)
	writeJSON(w, http.StatusOK, &SignedIn{Owner: o, AccountID: o.AccountID, CSRF: ns.CSRF})
}

func (s *Server) portalSignIn(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) {
		adminFail(w, http.StatusForbidden, codeForbidden, "cross-origin request refused")
		return
	}
	if wait := s.signinWait(w, r); wait > 0 {
		s.signins.WithLabelValues(signinLimited).Inc()
		tooMany(w, wait, "too many failed sign-ins from this address; try again later")
		return
	}
	var req SignInRequest
	if !adminDecode(w, r, &req, []string{"email", "password"}, false) {
		return
	}
	ns, o, err := s.deps.Accounts.SignIn(r.Context(), req.Email, req.Password)
	if err != nil {
		// A locked owner (a ThrottledError, which wraps ErrSignIn) is
		// answered as any other failure: telling it apart would confirm
		// to a stranger that the email has an account.
		switch {
		case errors.Is(err, account.ErrSignIn):
			s.signins.WithLabelValues(signinFailed).Inc()
			s.signinFailed(w, r)
			adminFail(w, http.StatusUnauthorized, codeSignInFailed, account.ErrSignIn.Error())
		default:
			s.adminStoreError(w, r, err)
		}
		return
	}
	s.signins.WithLabelValues(signinOK).Inc()
	s.startSession(w, r, ns, o)
}

func (s *Server) portalSetPassword(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) {
		adminFail(w, http.StatusForbidden, codeForbidden, "cross-origin request refused")
		return
	}
	var req SetPasswordRequest
	if !adminDecode(w, r, &req, []string{"token", "password"}, false) {
		return
	}
	// The actor is the owner, which the service names once the token
	// says who that is.
	ctx := r.Context()
	o, ended, err := s.deps.Accounts.SetPassword(ctx, req.Token, req.Password)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	// The password is set: sign this browser in with it.
	ns, o, err := s.deps.Accounts.SignIn(ctx, o.Email, req.Password)
	if err != nil {
		if errors.Is(err, account.ErrSignIn) {
			adminFail(w, http.StatusUnauthorized, codeSignInFailed, account.ErrSignIn.Error())
			return
		}
		s.adminStoreError(w, r, err)
		return
	}
	s.setCookie(w, r, ownerCookie, ownerPath, ns.Secret, ns.ExpiresAt)
	writeJSON(w, http.StatusOK, &SignedIn{Owner: o, AccountID: o.AccountID, CSRF: ns.CSRF, SignedOut: ended})
}

func (s *Server) portalSignOut(w http.ResponseWriter, r *http.Request, sess account.Session) {
	if err := s.deps.Accounts.SignOut(r.Context(), sess.ID); err != nil && !errors.Is(err, account.ErrNotFound) {
		s.adminStoreError(w, r, err)
		return
	}
	s.clearCookie(w, r, ownerCookie, ownerPath)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) portalSignOutEverywhere(w http.ResponseWriter, r *http.Request, sess account.Session) {
	n, err := s.deps.Accounts.SignOutEverywhere(r.Context(), sess.OwnerID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	s.clearCookie(w, r, ownerCookie, ownerPath)
	writeJSON(w, http.StatusOK, &Revoked{Revoked: n})
}

// period is the month (UTC) of now and the start of the next.
func (s *Server) period() (string, time.Time) {
	now := s.now().UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start.Format("2006-01"), start.AddDate(0, 1, 0)
}

func (s *Server) portalMe(w http.ResponseWriter, r *http.Request, sess account.Session) {
	ctx := r.Context()
	o, err := s.deps.Accounts.Store.Owner(ctx, sess.OwnerID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	a, err := s.deps.Accounts.Account(ctx, o.AccountID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	ks, err := s.deps.Accounts.KeyViews(ctx, a.ID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	pending, err := s.deps.Accounts.TierRequests(ctx, a.ID, account.RequestPending)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	me := &Me{Owner: o, Account: a, CSRF: sess.CSRF}
	me.Period, me.Reset = s.period()
	for _, k := range ks {
		me.Used += k.Used
	}
	if len(pending) > 0 {
		me.PendingRequest = &pending[0]
	}
	writeJSON(w, http.StatusOK, me)
}

func (s *Server) portalKeys(w http.ResponseWriter, r *http.Request, sess account.Session) {
	ks, err := s.deps.Accounts.KeyViews(r.Context(), sess.AccountID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if ks == nil {
		ks = []account.KeyView{}
	}
	writeJSON(w, http.StatusOK, &KeyViews{Keys: ks})
}

func (s *Server) portalCreateKey(w http.ResponseWriter, r *http.Request, sess account.Session) {
	var req LabelRequest
	if !adminDecode(w, r, &req, []string{"label"}, true) {
		return
	}
	nk, err := s.deps.Accounts.CreateLabeledKey(r.Context(), sess.AccountID, req.Label)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	w.Header()["Location"] = []string{"/account/api/keys/" + nk.ID}
	writeJSON(w, http.StatusCreated, &CreatedKey{Key: nk.Key, Secret: nk.Secret})
}

// ownKey finds the key of the path if it belongs to the session's
// account; another account's key is answered as missing.
func (s *Server) ownKey(w http.ResponseWriter, r *http.Request, sess account.Session) (account.Key, bool) {
	k, err := s.deps.Accounts.Key(r.Context(), r.PathValue("key"))
	if err == nil && k.AccountID != sess.AccountID {
		err = account.ErrNotFound
	}
	if err != nil {
		if errors.Is(err, account.ErrNotFound) {
			adminFail(w, http.StatusNotFound, adminNotFound, "no such key")
			return account.Key{}, false
		}
		s.adminStoreError(w, r, err)
		return account.Key{}, false
	}
	return k, true
}

func (s *Server) portalLabelKey(w http.ResponseWriter, r *http.Request, sess account.Session) {
	k, ok := s.ownKey(w, r, sess)
	if !ok {
		return
	}
	var req LabelRequest
	if !adminDecode(w, r, &req, []string{"label"}, false) {
		return
	}
	k, err := s.deps.Accounts.SetKeyLabel(r.Context(), k.ID, req.Label)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

func (s *Server) portalRotateKey(w http.ResponseWriter, r *http.Request, sess account.Session) {
	k, ok := s.ownKey(w, r, sess)
	if !ok {
		return
	}
	var none struct{}
	if !adminDecode(w, r, &none, []string{}, true) {
		return
	}
	nk, err := s.deps.Accounts.RotateKey(r.Context(), k.ID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, &CreatedKey{Key: nk.Key, Secret: nk.Secret})
}

func (s *Server) portalRevokeKey(w http.ResponseWriter, r *http.Request, sess account.Session) {
	k, ok := s.ownKey(w, r, sess)
	if !ok {
		return
	}
	var none struct{}
	if !adminDecode(w, r, &none, []string{}, true) {
		return
	}
	k, err := s.deps.Accounts.RevokeKey(r.Context(), k.ID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, k)
}

// intParam reads an optional integer query parameter within [lo, hi].
func intParam(w http.ResponseWriter, r *http.Request, name string, def, lo, hi int64) (int64, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		adminFail(w, http.StatusBadRequest, adminInvalidRequest, name+" must be an integer from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
		return 0, false
	}
	return n, true
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, sess account.Session) (account.History, bool) {
	days, ok := intParam(w, r, "days", defaultHistoryDays, 1, 366)
	if !ok {
		return account.History{}, false
	}
	h, err := s.deps.Accounts.History(r.Context(), sess.AccountID, int(days))
	if err != nil {
		s.adminStoreError(w, r, err)
		return account.History{}, false
	}
	if h.Days == nil {
		h.Days = []account.DayUsage{}
	}
	return h, true
}

func (s *Server) portalUsage(w http.ResponseWriter, r *http.Request, sess account.Session) {
	if h, ok := s.history(w, r, sess); ok {
		writeJSON(w, http.StatusOK, &h)
	}
}

// csvHeaders prepares a CSV download named name.
func csvHeaders(w http.ResponseWriter, name string) *csv.Writer {
	h := w.Header()
	h["Content-Type"] = []string{"text/csv; charset=utf-8"}
	h["Content-Disposition"] = []string{`attachment; filename="` + name + `"`}
	w.WriteHeader(http.StatusOK)
	return csv.NewWriter(w)
}

// csvCell keeps a spreadsheet from reading a cell as a formula (a label
// or a reason starting with =, +, - or @ is someone's text, not code).
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func (s *Server) portalUsageCSV(w http.ResponseWriter, r *http.Request, sess account.Session) {
	h, ok := s.history(w, r, sess)
	if !ok {
		return
	}
	ks, err := s.deps.Accounts.KeyViews(r.Context(), sess.AccountID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	labels := make(map[string]string, len(ks))
	for _, k := range ks {
		labels[k.ID] = k.Label
	}
	cw := csvHeaders(w, "ipatlas-usage-"+h.From+"-"+h.To+".csv")
	cw.Write([]string{"day", "key_id", "label", "queries"})
	var total int64
	for i, d := range h.Days {
		cw.Write([]string{d.Day, d.KeyID, csvCell(labels[d.KeyID]), strconv.FormatInt(d.Queries, 10)})
		total += d.Queries
		if i == len(h.Days)-1 || h.Days[i+1].Day != d.Day {
			cw.Write([]string{d.Day, "total", "", strconv.FormatInt(total, 10)})
			total = 0
		}
	}
	cw.Flush()
}

func (s *Server) portalCredits(w http.ResponseWriter, r *http.Request, sess account.Session) {
	before, ok := intParam(w, r, "before", 0, 0, 1<<62)
	if !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", defaultPageSize, 1, maxPageSize)
	if !ok {
		return
	}
	a, err := s.deps.Accounts.Account(r.Context(), sess.AccountID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	es, err := s.deps.Accounts.LedgerPage(r.Context(), a.ID, before, int(limit))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	p := &CreditPage{Credits: a.Credits, Entries: es}
	if p.Entries == nil {
		p.Entries = []account.LedgerEntry{}
	}
	if int64(len(es)) == limit {
		p.NextBefore = es[len(es)-1].ID
	}
	writeJSON(w, http.StatusOK, p)
}

func (s *Server) portalCreditsCSV(w http.ResponseWriter, r *http.Request, sess account.Session) {
	// Read everything before answering, so that a store failure is a 503
	// and not a truncated file.
	var all []account.LedgerEntry
	for before := int64(0); ; {
		es, err := s.deps.Accounts.LedgerPage(r.Context(), sess.AccountID, before, maxPageSize)
		if err != nil {
			s.adminStoreError(w, r, err)
			return
		}
		all = append(all, es...)
		if len(es) < maxPageSize {
			break
		}
		before = es[len(es)-1].ID
	}
	cw := csvHeaders(w, "ipatlas-credits.csv")
	cw.Write([]string{"time", "amount", "reason", "key_id", "queries", "balance"})
	for _, e := range all {
		cw.Write([]string{
			e.CreatedAt.UTC().Format(time.RFC3339), strconv.FormatInt(e.Delta, 10), csvCell(e.Reason),
			e.KeyID, strconv.FormatInt(e.Queries, 10), strconv.FormatInt(e.Balance, 10),
		})
	}
	cw.Flush()
}

// tierOffers are the tiers an owner may ask for; Enterprise's limit is
// agreed with the operator.
var tierOffers = []TierOffer{
	{Tier: account.Free, MonthlyLimit: account.FreeMonthlyLimit},
	{Tier: account.Pro, MonthlyLimit: account.ProMonthlyLimit},
	{Tier: account.Enterprise, MonthlyLimit: 0},
}

func (s *Server) portalSubscription(w http.ResponseWriter, r *http.Request, sess account.Session) {
	a, err := s.deps.Accounts.Account(r.Context(), sess.AccountID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	rs, err := s.deps.Accounts.TierRequests(r.Context(), a.ID, "")
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if rs == nil {
		rs = []account.TierRequest{}
	}
	writeJSON(w, http.StatusOK, &Subscription{Tier: a.Tier, MonthlyLimit: a.MonthlyLimit, Tiers: tierOffers, Requests: rs})
}

func (s *Server) portalRequestTier(w http.ResponseWriter, r *http.Request, sess account.Session) {
	var req TierChangeRequest
	if !adminDecode(w, r, &req, []string{"tier", "monthly_limit", "note"}, false) {
		return
	}
	if req.Tier == "" {
		adminFail(w, http.StatusBadRequest, adminInvalidRequest, `the field "tier" is required`)
		return
	}
	tr, err := s.deps.Accounts.RequestTier(r.Context(), sess.AccountID, sess.OwnerID, account.Tier(req.Tier), req.MonthlyLimit, req.Note)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, tr)
}
