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

// adminStartSession exchanges the admin token (and only the token: a
// console cookie cannot extend itself) for a console session.
func (s *admin) startSession(w *exchange, r *http.Request) error {
	if err := s.checkToken(w, r); err != nil {
		return err
	}
	var none struct{}
	if err := decodeBody(w, r, &none, []string{}, true); err != nil {
		return err
	}
	ns, err := s.deps.Accounts.OperatorSession(account.WithActor(r.Context(), "token"))
	if err != nil {
		return err
	}
	// No Expires: the console's cookie ends with the browser's session,
	// or earlier with the session's own expiry.
	s.setCookie(w, r, consoleCookie, consolePath, ns.Secret, time.Time{})
	return reply(w, http.StatusOK, &ConsoleSession{CSRF: ns.CSRF, ExpiresAt: ns.ExpiresAt})
}

func (s *admin) showSession(w *exchange, r *http.Request) error {
	sess, err := s.session(r, consoleCookie, account.SessionOperator)
	if err != nil {
		return err
	}
	return reply(w, http.StatusOK, &ConsoleSession{CSRF: sess.CSRF, ExpiresAt: sess.ExpiresAt})
}

// endSession signs the console out (through require, so the
// CSRF rules apply); with the bearer token and no cookie it has nothing
// to end and still answers 204.
func (s *admin) endSession(w *exchange, r *http.Request) error {
	if c, err := r.Cookie(consoleCookie); err == nil && c.Value != "" {
		if sess, err := s.deps.Accounts.CheckSession(r.Context(), c.Value, account.SessionOperator); err == nil {
			if err := s.deps.Accounts.SignOut(r.Context(), sess.ID); err != nil {
				return err
			}
		}
	}
	s.clearCookie(w, r, consoleCookie, consolePath)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *admin) searchAccounts(w *exchange, r *http.Request) error {
	limit, err := intParam(r, "limit", maxPageSize, 1, maxPageSize)
	if err != nil {
		return err
	}
	as, err := s.deps.Accounts.SearchAccounts(r.Context(), strings.TrimSpace(r.URL.Query().Get("q")), int(limit))
	if err != nil {
		return err
	}
	if as == nil {
		as = []account.AccountSummary{}
	}
	return reply(w, http.StatusOK, &SummaryList{Accounts: as})
}

func (s *admin) top(w *exchange, r *http.Request) error {
	n, err := intParam(r, "n", 10, 1, 100)
	if err != nil {
		return err
	}
	as, err := s.deps.Accounts.TopConsumers(r.Context(), int(n))
	if err != nil {
		return err
	}
	if as == nil {
		as = []account.AccountSummary{}
	}
	period, _ := s.period()
	return reply(w, http.StatusOK, &TopList{Period: period, Accounts: as})
}

// ownerLink answers a one-time link: the token travels in the fragment,
// which browsers never send to a server nor put in a Referer.
func (s *admin) ownerLink(w *exchange, l account.Link) error {
	path := "/account/password#token=" + url.QueryEscape(l.Token)
	w.Header()["Cache-Control"] = hdrNoStore // the body holds a secret
	return reply(w, http.StatusCreated, &OwnerLink{Owner: l.Owner, Link: strings.TrimRight(s.cfg.PublicURL, "/") + path, ExpiresAt: l.ExpiresAt})
}

func (s *admin) invite(w *exchange, r *http.Request) error {
	a, err := s.requireAccount(r)
	if err != nil {
		return err
	}
	var req InviteRequest
	if err := decodeBody(w, r, &req, []string{"email"}, false); err != nil {
		return err
	}
	l, err := s.deps.Accounts.Invite(r.Context(), a.ID, req.Email)
	if err != nil {
		return err
	}
	return s.ownerLink(w, l)
}

func (s *admin) owners(w *exchange, r *http.Request) error {
	a, err := s.requireAccount(r)
	if err != nil {
		return err
	}
	os, err := s.deps.Accounts.Owners(r.Context(), a.ID)
	if err != nil {
		return err
	}
	if os == nil {
		os = []account.Owner{}
	}
	return reply(w, http.StatusOK, &OwnerList{Owners: os})
}

// pathID reads the positive integer id of the path.
func pathID(r *http.Request, what string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fail(CodeInvalidRequest, "the "+what+" id must be a positive integer")
	}
	return id, nil
}

func (s *admin) resetLink(w *exchange, r *http.Request) error {
	id, err := pathID(r, "owner")
	if err != nil {
		return err
	}
	var none struct{}
	if err := decodeBody(w, r, &none, []string{}, true); err != nil {
		return err
	}
	l, err := s.deps.Accounts.ResetLink(r.Context(), id)
	if err != nil {
		return err
	}
	return s.ownerLink(w, l)
}

func (s *admin) tierRequests(w *exchange, r *http.Request) error {
	status := r.URL.Query().Get("status")
	switch status {
	case "", account.RequestPending, account.RequestApproved, account.RequestRefused:
	default:
		return fail(CodeInvalidRequest, "status must be pending, approved or refused")
	}
	acct, err := intParam(r, "account", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	rs, err := s.deps.Accounts.TierRequests(r.Context(), acct, status)
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []account.TierRequest{}
	}
	return reply(w, http.StatusOK, &TierRequestList{Requests: rs})
}

func (s *admin) decide(approve bool) handler {
	return func(w *exchange, r *http.Request) error {
		id, err := pathID(r, "request")
		if err != nil {
			return err
		}
		var none struct{}
		if err := decodeBody(w, r, &none, []string{}, true); err != nil {
			return err
		}
		tr, err := s.deps.Accounts.DecideTierRequest(r.Context(), id, approve)
		if err != nil {
			return err
		}
		return reply(w, http.StatusOK, tr)
	}
}

func (s *admin) audit(w *exchange, r *http.Request) error {
	acct, err := intParam(r, "account", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	before, err := intParam(r, "before", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", defaultPageSize, 1, maxPageSize)
	if err != nil {
		return err
	}
	es, err := s.deps.Accounts.AuditLog(r.Context(), acct, before, int(limit))
	if err != nil {
		return err
	}
	p := &AuditPage{Entries: es}
	if p.Entries == nil {
		p.Entries = []account.AuditEntry{}
	}
	if int64(len(es)) == limit {
		p.NextBefore = es[len(es)-1].ID
	}
	return reply(w, http.StatusOK, p)
}
