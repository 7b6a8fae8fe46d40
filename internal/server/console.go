package server

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// The console's side of the admin API: the exchange of the admin token
// for a session cookie (so the page never keeps the token), and the
// endpoints behind its views: account search with usage, top consumers,
// owners and their one-time links, tier requests, the audit log.

// Bodies of the console's endpoints.
type (
	// ConsoleSession answers POST and GET /admin/session.
	ConsoleSession struct {
		CSRF      string    `json:"csrf"`
		ExpiresAt time.Time `json:"expires_at"`
	}
	// SummaryList lists accounts with their usage this month.
	SummaryList struct {
		Accounts []account.AccountSummary `json:"accounts"`
	}
	// TopList is this month's top consumers.
	TopList struct {
		Period   string                   `json:"period"`
		Accounts []account.AccountSummary `json:"accounts"`
	}
	// InviteRequest is the body of POST /admin/accounts/{id}/invites.
	InviteRequest struct {
		Email string `json:"email"`
	}
	// OwnerLink is a one-time link for an owner: an invitation or a
	// password reset. Link is PublicURL + path, or the bare path.
	OwnerLink struct {
		Owner     account.Owner `json:"owner"`
		Link      string        `json:"link"`
		ExpiresAt time.Time     `json:"expires_at"`
	}
	// OwnerList lists an account's owners.
	OwnerList struct {
		Owners []account.Owner `json:"owners"`
	}
	// TierRequestList lists tier requests.
	TierRequestList struct {
		Requests []account.TierRequest `json:"requests"`
	}
	// AuditPage is a page of the audit log.
	AuditPage struct {
		Entries    []account.AuditEntry `json:"entries"`
		NextBefore int64                `json:"next_before"` // 0: no older entries
	}
)

// handleConsolePage serves the console's page.
func (s *Server) handleConsolePage(w http.ResponseWriter, r *http.Request) {
	s.consolePage.ServeHTTP(w, r)
}

// adminStartSession exchanges the admin token (and only the token: a
// console cookie cannot extend itself) for a console session.
func (s *Server) adminStartSession(w http.ResponseWriter, r *http.Request) {
	if !s.adminToken(r) {
		w.Header()["Www-Authenticate"] = []string{`Bearer realm="ipatlas-admin"`}
		adminFail(w, http.StatusUnauthorized, adminUnauthorized, "missing or wrong admin token")
		return
	}
	var none struct{}
	if !adminDecode(w, r, &none, []string{}, true) {
		return
	}
	ns, err := s.deps.Accounts.OperatorSession(account.WithActor(r.Context(), "token"))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	// No Expires: the console's cookie ends with the browser's session,
	// or earlier with the session's own expiry.
	s.setCookie(w, r, consoleCookie, consolePath, ns.Secret, time.Time{})
	writeJSON(w, http.StatusOK, &ConsoleSession{CSRF: ns.CSRF, ExpiresAt: ns.ExpiresAt})
}

func (s *Server) adminShowSession(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r, consoleCookie, account.SessionOperator)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, &ConsoleSession{CSRF: sess.CSRF, ExpiresAt: sess.ExpiresAt})
}

// adminEndSession signs the console out (through requireAdmin, so the
// CSRF rules apply); with the bearer token and no cookie it has nothing
// to end and still answers 204.
func (s *Server) adminEndSession(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(consoleCookie); err == nil && c.Value != "" {
		if sess, err := s.deps.Accounts.CheckSession(r.Context(), c.Value, account.SessionOperator); err == nil {
			if err := s.deps.Accounts.SignOut(r.Context(), sess.ID); err != nil {
				s.adminStoreError(w, r, err)
				return
			}
		}
	}
	s.clearCookie(w, r, consoleCookie, consolePath)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminSearchAccounts(w http.ResponseWriter, r *http.Request) {
	limit, ok := intParam(w, r, "limit", maxPageSize, 1, maxPageSize)
	if !ok {
		return
	}
	as, err := s.deps.Accounts.SearchAccounts(r.Context(), strings.TrimSpace(r.URL.Query().Get("q")), int(limit))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if as == nil {
		as = []account.AccountSummary{}
	}
	writeJSON(w, http.StatusOK, &SummaryList{Accounts: as})
}

func (s *Server) adminTop(w http.ResponseWriter, r *http.Request) {
	n, ok := intParam(w, r, "n", 10, 1, 100)
	if !ok {
		return
	}
	as, err := s.deps.Accounts.TopConsumers(r.Context(), int(n))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if as == nil {
		as = []account.AccountSummary{}
	}
	period, _ := s.period()
	writeJSON(w, http.StatusOK, &TopList{Period: period, Accounts: as})
}

// ownerLink answers a one-time link: the token travels in the fragment,
// which browsers never send to a server nor put in a Referer.
func (s *Server) ownerLink(w http.ResponseWriter, l account.Link) {
	path := "/account/password#token=" + url.QueryEscape(l.Token)
	w.Header()["Cache-Control"] = hdrNoStore // the body holds a secret
	writeJSON(w, http.StatusCreated, &OwnerLink{Owner: l.Owner, Link: strings.TrimRight(s.cfg.PublicURL, "/") + path, ExpiresAt: l.ExpiresAt})
}

func (s *Server) adminInvite(w http.ResponseWriter, r *http.Request) {
	a, ok := s.requireAccount(w, r)
	if !ok {
		return
	}
	var req InviteRequest
	if !adminDecode(w, r, &req, []string{"email"}, false) {
		return
	}
	l, err := s.deps.Accounts.Invite(r.Context(), a.ID, req.Email)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	s.ownerLink(w, l)
}

func (s *Server) adminOwners(w http.ResponseWriter, r *http.Request) {
	a, ok := s.requireAccount(w, r)
	if !ok {
		return
	}
	os, err := s.deps.Accounts.Owners(r.Context(), a.ID)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if os == nil {
		os = []account.Owner{}
	}
	writeJSON(w, http.StatusOK, &OwnerList{Owners: os})
}

// pathID reads the positive integer id of the path.
func pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		adminFail(w, http.StatusBadRequest, adminInvalidRequest, "the "+what+" id must be a positive integer")
		return 0, false
	}
	return id, true
}

func (s *Server) adminResetLink(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "owner")
	if !ok {
		return
	}
	var none struct{}
	if !adminDecode(w, r, &none, []string{}, true) {
		return
	}
	l, err := s.deps.Accounts.ResetLink(r.Context(), id)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	s.ownerLink(w, l)
}

func (s *Server) adminTierRequests(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	switch status {
	case "", account.RequestPending, account.RequestApproved, account.RequestRefused:
	default:
		adminFail(w, http.StatusBadRequest, adminInvalidRequest, "status must be pending, approved or refused")
		return
	}
	acct, ok := intParam(w, r, "account", 0, 0, 1<<62)
	if !ok {
		return
	}
	rs, err := s.deps.Accounts.TierRequests(r.Context(), acct, status)
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	if rs == nil {
		rs = []account.TierRequest{}
	}
	writeJSON(w, http.StatusOK, &TierRequestList{Requests: rs})
}

func (s *Server) adminDecide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(w, r, "request")
		if !ok {
			return
		}
		var none struct{}
		if !adminDecode(w, r, &none, []string{}, true) {
			return
		}
		tr, err := s.deps.Accounts.DecideTierRequest(r.Context(), id, approve)
		if err != nil {
			s.adminStoreError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, tr)
	}
}

func (s *Server) adminAudit(w http.ResponseWriter, r *http.Request) {
	acct, ok := intParam(w, r, "account", 0, 0, 1<<62)
	if !ok {
		return
	}
	before, ok := intParam(w, r, "before", 0, 0, 1<<62)
	if !ok {
		return
	}
	limit, ok := intParam(w, r, "limit", defaultPageSize, 1, maxPageSize)
	if !ok {
		return
	}
	es, err := s.deps.Accounts.AuditLog(r.Context(), acct, before, int(limit))
	if err != nil {
		s.adminStoreError(w, r, err)
		return
	}
	p := &AuditPage{Entries: es}
	if p.Entries == nil {
		p.Entries = []account.AuditEntry{}
	}
	if int64(len(es)) == limit {
		p.NextBefore = es[len(es)-1].ID
	}
	writeJSON(w, http.StatusOK, p)
}
