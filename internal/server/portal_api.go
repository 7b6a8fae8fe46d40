package server

import (
	"encoding/csv"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/prometheus/client_golang/prometheus"
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

// portal is the owners' surface on the public listener: the portal's
// page and its JSON API. Its failures are renderCoded's {code, error}.
type portal struct {
	*Server
	page    http.Handler           // GET /account and below
	signin  *failureLimit          // failed sign-ins by client address; nil when off
	signins *prometheus.CounterVec // sign-ins by outcome
	origin  string                 // Config.PublicURL's origin, lower case: a portal page's origin too
}

// ownerHandler is a portal handler: it runs for a live owner session.
type ownerHandler func(w *exchange, r *http.Request, sess account.Session) error

// owner authenticates a portal request by its cookie, refuses any that a
// browser marks as coming from another origin (a cross-site GET could
// otherwise read nothing, but a script's no-cors request could still
// make a download happen, and the answer to GET /account/api/me holds
// the CSRF token), applies the CSRF rules to changes, and names the
// owner's session as the audit actor.
func (s *portal) owner(next ownerHandler) handler {
	return func(w *exchange, r *http.Request) error {
		if !s.sameOrigin(r, s.origin) {
			return errCrossOrigin
		}
		sess, err := s.session(r, ownerCookie, account.SessionOwner)
		if err != nil {
			return err
		}
		if stateChanging(r.Method) {
			if err := s.checkCSRF(r, sess, s.origin); err != nil {
				return err
			}
		}
		actor := "owner:" + strconv.FormatInt(sess.OwnerID, 10) + "/session:" + sess.ID
		return next(w, r.WithContext(account.WithActor(r.Context(), actor)), sess)
	}
}

// hdrAllowPage is the Allow of the portal's page.
var hdrAllowPage = []string{"GET, HEAD"}

// handlePage serves the portal's page; unknown API paths get the router's
// 404, never the page, and other methods its 405.
func (s *portal) handlePage(w *exchange, r *http.Request) error {
	switch {
	case strings.HasPrefix(r.URL.Path, "/account/api/"):
		return notFound(r)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		return notAllowed(w, hdrAllowPage)
	}
	s.page.ServeHTTP(w, r)
	return nil
}

// startSession sets the owner's cookie and answers a sign-in.
func (s *portal) startSession(w *exchange, r *http.Request, ns account.NewSession, o account.Owner) error {
	s.setCookie(w, r, ownerCookie, ownerPath, ns.Secret, ns.ExpiresAt)
	return reply(w, http.StatusOK, &SignedIn{Owner: o, AccountID: o.AccountID, CSRF: ns.CSRF})
}

func (s *portal) signIn(w *exchange, r *http.Request) error {
	if !s.sameOrigin(r, s.origin) {
		return errCrossOrigin
	}
	if wait := s.signin.wait(w.client, s.now()); wait > 0 {
		s.signins.WithLabelValues(signinLimited).Inc()
		return tooMany(w, wait, "too many failed sign-ins from this address; try again later")
	}
	var req SignInRequest
	if err := decodeBody(w, r, &req, []string{"email", "password"}, false); err != nil {
		return err
	}
	ns, o, err := s.deps.Accounts.SignIn(r.Context(), req.Email, req.Password)
	if err != nil {
		// A locked owner (a ThrottledError, which wraps ErrSignIn) is
		// answered as any other failure: telling it apart would confirm
		// to a stranger that the email has an account.
		if !errors.Is(err, account.ErrSignIn) {
			return err
		}
		s.signins.WithLabelValues(signinFailed).Inc()
		if s.signin.fail(w.client, s.now()) {
			// Logged when the address runs out: its next tries are
			// refused before they get here.
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "portal: too many failed sign-ins from this address; it must wait",
				slog.String("client", addrString(w.client)))
		}
		return fail(CodeSignInFailed, account.ErrSignIn.Error())
	}
	s.signins.WithLabelValues(signinOK).Inc()
	return s.startSession(w, r, ns, o)
}

func (s *portal) setPassword(w *exchange, r *http.Request) error {
	if !s.sameOrigin(r, s.origin) {
		return errCrossOrigin
	}
	var req SetPasswordRequest
	if err := decodeBody(w, r, &req, []string{"token", "password"}, false); err != nil {
		return err
	}
	// The actor is the owner, which the service names once the token
	// says who that is.
	ctx := r.Context()
	o, ended, err := s.deps.Accounts.SetPassword(ctx, req.Token, req.Password)
	if err != nil {
		return err
	}
	// The password is set: sign this browser in with it.
	ns, o, err := s.deps.Accounts.SignIn(ctx, o.Email, req.Password)
	if err != nil {
		if errors.Is(err, account.ErrSignIn) {
			return fail(CodeSignInFailed, account.ErrSignIn.Error())
		}
		return err
	}
	s.setCookie(w, r, ownerCookie, ownerPath, ns.Secret, ns.ExpiresAt)
	return reply(w, http.StatusOK, &SignedIn{Owner: o, AccountID: o.AccountID, CSRF: ns.CSRF, SignedOut: ended})
}

func (s *portal) signOut(w *exchange, r *http.Request, sess account.Session) error {
	if err := s.deps.Accounts.SignOut(r.Context(), sess.ID); err != nil && !errors.Is(err, account.ErrNotFound) {
		return err
	}
	s.clearCookie(w, r, ownerCookie, ownerPath)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *portal) signOutEverywhere(w *exchange, r *http.Request, sess account.Session) error {
	n, err := s.deps.Accounts.SignOutEverywhere(r.Context(), sess.OwnerID)
	if err != nil {
		return err
	}
	s.clearCookie(w, r, ownerCookie, ownerPath)
	return reply(w, http.StatusOK, &Revoked{Revoked: n})
}

// period is the month (UTC) of now and the start of the next.
func (s *Server) period() (string, time.Time) {
	now := s.now().UTC()
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start.Format("2006-01"), start.AddDate(0, 1, 0)
}

func (s *portal) me(w *exchange, r *http.Request, sess account.Session) error {
	ctx := r.Context()
	o, err := s.deps.Accounts.Store.Owner(ctx, sess.OwnerID)
	if err != nil {
		return err
	}
	a, err := s.deps.Accounts.Account(ctx, o.AccountID)
	if err != nil {
		return err
	}
	ks, err := s.deps.Accounts.KeyViews(ctx, a.ID)
	if err != nil {
		return err
	}
	pending, err := s.deps.Accounts.TierRequests(ctx, a.ID, account.RequestPending)
	if err != nil {
		return err
	}
	me := &Me{Owner: o, Account: a, CSRF: sess.CSRF}
	me.Period, me.Reset = s.period()
	for _, k := range ks {
		me.Used += k.Used
	}
	if len(pending) > 0 {
		me.PendingRequest = &pending[0]
	}
	return reply(w, http.StatusOK, me)
}

func (s *portal) keys(w *exchange, r *http.Request, sess account.Session) error {
	ks, err := s.deps.Accounts.KeyViews(r.Context(), sess.AccountID)
	if err != nil {
		return err
	}
	if ks == nil {
		ks = []account.KeyView{}
	}
	return reply(w, http.StatusOK, &KeyViews{Keys: ks})
}

func (s *portal) createKey(w *exchange, r *http.Request, sess account.Session) error {
	var req LabelRequest
	if err := decodeBody(w, r, &req, []string{"label"}, true); err != nil {
		return err
	}
	nk, err := s.deps.Accounts.CreateLabeledKey(r.Context(), sess.AccountID, req.Label)
	if err != nil {
		return err
	}
	w.Header()["Location"] = []string{"/account/api/keys/" + nk.ID}
	return reply(w, http.StatusCreated, &CreatedKey{Key: nk.Key, Secret: nk.Secret})
}

// ownKey finds the key of the path if it belongs to the session's
// account; another account's key is answered as missing.
func (s *portal) ownKey(r *http.Request, sess account.Session) (account.Key, error) {
	k, err := s.deps.Accounts.Key(r.Context(), r.PathValue("key"))
	if err == nil && k.AccountID != sess.AccountID {
		err = account.ErrNotFound
	}
	if errors.Is(err, account.ErrNotFound) {
		return account.Key{}, fail(CodeNotFound, "no such key")
	}
	return k, err
}

func (s *portal) labelKey(w *exchange, r *http.Request, sess account.Session) error {
	k, err := s.ownKey(r, sess)
	if err != nil {
		return err
	}
	var req LabelRequest
	if err := decodeBody(w, r, &req, []string{"label"}, false); err != nil {
		return err
	}
	k, err = s.deps.Accounts.SetKeyLabel(r.Context(), k.ID, req.Label)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, k)
}

func (s *portal) rotateKey(w *exchange, r *http.Request, sess account.Session) error {
	k, err := s.ownKey(r, sess)
	if err != nil {
		return err
	}
	var none struct{}
	if err := decodeBody(w, r, &none, []string{}, true); err != nil {
		return err
	}
	nk, err := s.deps.Accounts.RotateKey(r.Context(), k.ID)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, &CreatedKey{Key: nk.Key, Secret: nk.Secret})
}

func (s *portal) revokeKey(w *exchange, r *http.Request, sess account.Session) error {
	k, err := s.ownKey(r, sess)
	if err != nil {
		return err
	}
	var none struct{}
	if err := decodeBody(w, r, &none, []string{}, true); err != nil {
		return err
	}
	k, err = s.deps.Accounts.RevokeKey(r.Context(), k.ID)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, k)
}

// intParam reads an optional integer query parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fail(CodeInvalidRequest, name+" must be an integer from "+strconv.FormatInt(lo, 10)+" to "+strconv.FormatInt(hi, 10))
	}
	return n, nil
}

func (s *portal) history(r *http.Request, sess account.Session) (account.History, error) {
	days, err := intParam(r, "days", defaultHistoryDays, 1, 366)
	if err != nil {
		return account.History{}, err
	}
	h, err := s.deps.Accounts.History(r.Context(), sess.AccountID, int(days))
	if err != nil {
		return account.History{}, err
	}
	if h.Days == nil {
		h.Days = []account.DayUsage{}
	}
	return h, nil
}

func (s *portal) usage(w *exchange, r *http.Request, sess account.Session) error {
	h, err := s.history(r, sess)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, &h)
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

func (s *portal) usageCSV(w *exchange, r *http.Request, sess account.Session) error {
	h, err := s.history(r, sess)
	if err != nil {
		return err
	}
	ks, err := s.deps.Accounts.KeyViews(r.Context(), sess.AccountID)
	if err != nil {
		return err
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
	return nil
}

func (s *portal) credits(w *exchange, r *http.Request, sess account.Session) error {
	before, err := intParam(r, "before", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", defaultPageSize, 1, maxPageSize)
	if err != nil {
		return err
	}
	a, err := s.deps.Accounts.Account(r.Context(), sess.AccountID)
	if err != nil {
		return err
	}
	es, err := s.deps.Accounts.LedgerPage(r.Context(), a.ID, before, int(limit))
	if err != nil {
		return err
	}
	p := &CreditPage{Credits: a.Credits, Entries: es}
	if p.Entries == nil {
		p.Entries = []account.LedgerEntry{}
	}
	if int64(len(es)) == limit {
		p.NextBefore = es[len(es)-1].ID
	}
	return reply(w, http.StatusOK, p)
}

func (s *portal) creditsCSV(w *exchange, r *http.Request, sess account.Session) error {
	// Read everything before answering, so that a store failure is a 503
	// and not a truncated file.
	var all []account.LedgerEntry
	for before := int64(0); ; {
		es, err := s.deps.Accounts.LedgerPage(r.Context(), sess.AccountID, before, maxPageSize)
		if err != nil {
			return err
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
	return nil
}

// tierOffers are the tiers an owner may ask for; Enterprise's limit is
// agreed with the operator.
var tierOffers = []TierOffer{
	{Tier: account.Free, MonthlyLimit: account.FreeMonthlyLimit},
	{Tier: account.Pro, MonthlyLimit: account.ProMonthlyLimit},
	{Tier: account.Enterprise, MonthlyLimit: 0},
}

func (s *portal) subscription(w *exchange, r *http.Request, sess account.Session) error {
	a, err := s.deps.Accounts.Account(r.Context(), sess.AccountID)
	if err != nil {
		return err
	}
	rs, err := s.deps.Accounts.TierRequests(r.Context(), a.ID, "")
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []account.TierRequest{}
	}
	return reply(w, http.StatusOK, &Subscription{Tier: a.Tier, MonthlyLimit: a.MonthlyLimit, Tiers: tierOffers, Requests: rs})
}

func (s *portal) requestTier(w *exchange, r *http.Request, sess account.Session) error {
	var req TierChangeRequest
	if err := decodeBody(w, r, &req, []string{"tier", "monthly_limit", "note"}, false); err != nil {
		return err
	}
	if req.Tier == "" {
		return fail(CodeInvalidRequest, `the field "tier" is required`)
	}
	tr, err := s.deps.Accounts.RequestTier(r.Context(), sess.AccountID, sess.OwnerID, account.Tier(req.Tier), req.MonthlyLimit, req.Note)
	if err != nil {
		return err
	}
	return reply(w, http.StatusCreated, tr)
}
