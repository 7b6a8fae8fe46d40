package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors of signing in and of one-time links. Their texts never say
// whether an email is known.
var (
	// ErrSignIn is any refused sign-in: unknown email, wrong password, no
	// password set yet.
	ErrSignIn = errors.New("wrong email or password")
	// ErrBadToken is an unknown, used or expired invitation or reset link.
	ErrBadToken = errors.New("this link is invalid, used or expired")
	// ErrNoSession is a missing, unknown, revoked or expired session.
	ErrNoSession = errors.New("not signed in, or the session expired")
)

// ThrottledError refuses a sign-in for an owner locked after repeated
// failures; it wraps ErrSignIn so that its text reveals nothing more
// than a failure would, and carries when to try again.
type ThrottledError struct{ RetryAfter time.Duration }

func (e *ThrottledError) Error() string { return "too many failed sign-ins; try again later" }
func (e *ThrottledError) Unwrap() error { return ErrSignIn }

// WeakPasswordError refuses a password that breaks the length rules or is
// on the blocklist; Reason says which, for the person choosing it.
type WeakPasswordError struct{ Reason string }

func (e *WeakPasswordError) Error() string { return "password refused: " + e.Reason }
func (e *WeakPasswordError) Unwrap() error { return ErrInvalid }

// Lifetimes of links and sessions.
const (
	LinkTTL = 72 * time.Hour
)

// Default session policies: an owner stays signed in through a working
// day and for a week at most; an operator's console, which can change
// every account, for half an hour idle and a shift at most.
var (
	DefaultOwnerSessions    = SessionPolicy{Idle: 12 * time.Hour, Max: 7 * 24 * time.Hour}
	DefaultOperatorSessions = SessionPolicy{Idle: 30 * time.Minute, Max: 12 * time.Hour}
)

// Sign-in backoff per owner: the first signinFreeFailures failures in a
// row cost nothing; each further one locks the owner for twice as long as
// the one before, from one second up to signinMaxLock.
const (
	signinFreeFailures = 5
	signinMaxLock      = 15 * time.Minute
	// touchEvery bounds how often a session's LastSeenAt is written.
	touchEvery = time.Minute
	// maxSigninBytes bounds the password a sign-in hashes, in bytes.
	maxSigninBytes = 4096
	// maxNoteLen bounds a tier request's note, in bytes.
	maxNoteLen = 1000
)

// signinLock is how long an owner is locked after n failures in a row.
func signinLock(n int64) time.Duration {
	if n < signinFreeFailures {
		return 0
	}
	e := n - signinFreeFailures
	if e >= 10 { // 2^10 s is beyond the cap already
		return signinMaxLock
	}
	return min(time.Duration(1<<e)*time.Second, signinMaxLock)
}

// SessionPolicy bounds a kind of session: idle is the longest gap between
// two requests, max the longest life whatever the activity.
type SessionPolicy struct {
	Idle, Max time.Duration
}

// Link is a one-time link's secret and when it expires. The caller turns
// Token into a URL: /account/password#token=<Token>.
type Link struct {
	Owner     Owner     `json:"owner"`
	Token     string    `json:"-"`
	Purpose   string    `json:"purpose"`
	ExpiresAt time.Time `json:"expires_at"`
}

// PasswordPath is the portal's page where a one-time link's token is
// redeemed; the token follows in the fragment, which browsers send to no
// server and put in no Referer.
const PasswordPath = "/account/password#token="

// Path is the link without the service's address:
// /account/password#token=<Token>.
func (l Link) Path() string { return PasswordPath + l.Token }

// NewSession is a session with the cookie's secret, given once.
type NewSession struct {
	Session
	Secret string `json:"-"`
}

// policy is the session policy of a kind, defaults filled in.
func (s *Service) policy(kind string) SessionPolicy {
	p, def := s.OwnerSessions, DefaultOwnerSessions
	if kind == SessionOperator {
		p, def = s.OperatorSessions, DefaultOperatorSessions
	}
	if p.Idle <= 0 {
		p.Idle = def.Idle
	}
	if p.Max <= 0 {
		p.Max = def.Max
	}
	return p
}

// Invite adds an owner with email to an account (or finds the account's
// existing owner with that email) and makes a one-time link, valid
// LinkTTL, where the owner sets a password. An email that owns another
// account is ErrConflict. An owner who has a password already gets a
// reset link.
func (s *Service) Invite(ctx context.Context, accountID int64, email string) (Link, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return Link{}, err
	}
	if _, err := s.Store.Account(ctx, accountID); err != nil {
		return Link{}, accountErr(accountID, "", err)
	}
	o, err := s.Store.OwnerByEmail(ctx, email)
	switch {
	case errors.Is(err, ErrNotFound):
		o, err = s.Store.CreateOwner(ctx, accountID, email, s.now())
		if err != nil {
			return Link{}, storeErr("invite "+email, err)
		}
	case err != nil:
		return Link{}, storeErr("invite "+email, err)
	case o.AccountID != accountID:
		return Link{}, fmt.Errorf("invite %s: %w: the email owns another account", email, ErrConflict)
	}
	purpose := TokenInvite
	if o.HasPassword {
		purpose = TokenReset
	}
	l, err := s.link(ctx, o, purpose)
	if err != nil {
		return Link{}, err
	}
	s.audit(ctx, "owner.invite", o.AccountID, o.Email, map[string]any{"owner_id": o.ID, "purpose": purpose, "expires_at": l.ExpiresAt})
	return l, nil
}

// link stores a fresh one-time token for o.
func (s *Service) link(ctx context.Context, o Owner, purpose string) (Link, error) {
	now := s.now()
	token, hash := randomSecret()
	t := OwnerToken{Hash: hash, OwnerID: o.ID, Purpose: purpose, CreatedAt: now, ExpiresAt: now.Add(LinkTTL)}
	if err := s.Store.CreateOwnerToken(ctx, t); err != nil {
		return Link{}, storeErr("owner "+o.Email+": link", err)
	}
	return Link{Owner: o, Token: token, Purpose: purpose, ExpiresAt: t.ExpiresAt}, nil
}

// ResetLink makes a one-time password reset link for an owner.
func (s *Service) ResetLink(ctx context.Context, ownerID int64) (Link, error) {
	o, err := s.Store.Owner(ctx, ownerID)
	if err != nil {
		return Link{}, storeErr(fmt.Sprintf("owner %d", ownerID), err)
	}
	l, err := s.link(ctx, o, TokenReset)
	if err != nil {
		return Link{}, err
	}
	s.audit(ctx, "owner.reset_link", o.AccountID, o.Email, map[string]any{"owner_id": o.ID, "expires_at": l.ExpiresAt})
	return l, nil
}

// Owners lists an account's owners.
func (s *Service) Owners(ctx context.Context, accountID int64) ([]Owner, error) {
	if _, err := s.Store.Account(ctx, accountID); err != nil {
		return nil, accountErr(accountID, "", err)
	}
	os, err := s.Store.ListOwners(ctx, accountID)
	if err != nil {
		return nil, accountErr(accountID, "owners", err)
	}
	if os == nil {
		os = []Owner{}
	}
	return os, nil
}

// OwnerByEmail finds the owner with an email (trimmed, any case).
func (s *Service) OwnerByEmail(ctx context.Context, email string) (Owner, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return Owner{}, err
	}
	o, err := s.Store.OwnerByEmail(ctx, email)
	if err != nil {
		return Owner{}, storeErr("owner "+email, err)
	}
	return o, nil
}

// SetPassword redeems a one-time link's token: it checks the password's
// rules, stores its argon2id hash and signs out every session of the
// owner, and returns how many live sessions that ended, so that a page
// says "other browsers were signed out" only when some were. A bad token
// is ErrBadToken, a weak password *WeakPasswordError. The token is judged
// before the password, so that only the link's holder learns whether a
// password is refused for resembling the owner's email.
func (s *Service) SetPassword(ctx context.Context, token, password string) (Owner, int64, error) {
	if !validSecret(token) {
		return Owner{}, 0, ErrBadToken
	}
	now := s.now()
	hash := HashSecret(token)
	t, err := s.Store.OwnerToken(ctx, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return Owner{}, 0, ErrBadToken
	case err != nil:
		return Owner{}, 0, storeErr("set password", err)
	case t.UsedAt != nil || !now.Before(t.ExpiresAt):
		return Owner{}, 0, ErrBadToken
	}
	o, err := s.Store.Owner(ctx, t.OwnerID)
	if errors.Is(err, ErrNotFound) {
		return Owner{}, 0, ErrBadToken
	} else if err != nil {
		return Owner{}, 0, storeErr("set password", err)
	}
	if err := CheckPasswordRules(password, o.Email); err != nil {
		return Owner{}, 0, err
	}
	// The live sessions are ended first to count them; UseOwnerToken
	// then ends, in the transaction that sets the password, any opened
	// since. Should that fail, the owner signs in again: nothing is lost.
	ended, err := s.Store.RevokeOwnerSessions(ctx, o.ID, now)
	if err != nil {
		return Owner{}, 0, storeErr("set password", err)
	}
	o, err = s.Store.UseOwnerToken(ctx, hash, now, HashPassword(password))
	if errors.Is(err, ErrNotFound) { // spent or expired meanwhile
		return Owner{}, 0, ErrBadToken
	} else if err != nil {
		return Owner{}, 0, storeErr("set password", err)
	}
	if ActorFrom(ctx) == "unknown" {
		ctx = WithActor(ctx, "owner:"+strconv.FormatInt(o.ID, 10))
	}
	s.audit(ctx, "owner.password", o.AccountID, o.Email, map[string]any{"owner_id": o.ID, "purpose": t.Purpose, "signed_out": ended})
	return o, ended, nil
}

// SignIn checks an owner's email and password and opens a session. Every
// refusal is ErrSignIn (or a *ThrottledError wrapping it) and takes about
// as long whether or not the email is known: an unknown email, or an
// owner without a password, is checked against a dummy hash. After
// signinFreeFailures failures in a row an owner is locked for 1 s, then
// 2 s, 4 s, ... up to signinMaxLock; a locked owner is refused before the
// password is looked at. Sign-ins are not audited: they change no
// account.
func (s *Service) SignIn(ctx context.Context, email, password string) (NewSession, Owner, error) {
	o, err := s.Store.OwnerByEmail(ctx, strings.ToLower(strings.TrimSpace(email)))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return NewSession{}, Owner{}, storeErr("sign in", err)
	}
	// No stored password is this long in bytes (MaxPasswordLen code
	// points after NFKC): refuse it without hashing a megabyte.
	long := len(password) > maxSigninBytes
	if err != nil || !o.HasPassword || long {
		CheckPassword(dummyHash(), "")
		return NewSession{}, Owner{}, ErrSignIn
	}
	now := s.now()
	if o.LockedUntil != nil && now.Before(*o.LockedUntil) {
		CheckPassword(dummyHash(), "")
		return NewSession{}, Owner{}, &ThrottledError{RetryAfter: retryAfter(o.LockedUntil.Sub(now))}
	}
	ok, err := CheckPassword(o.PasswordHash, password)
	if err != nil || !ok {
		// The lock follows the count read above; failures racing with
		// this one all count (the store adds in one statement), the store
		// keeps the latest lock any of them set, and the next failure's
		// lock catches up with the count.
		n := o.FailedSignins + 1
		var until *time.Time
		if d := signinLock(n); d > 0 {
			u := now.Add(d)
			until = &u
		}
		if _, err := s.Store.SigninFailed(ctx, o.ID, until); err != nil {
			return NewSession{}, Owner{}, storeErr("sign in", err)
		}
		return NewSession{}, Owner{}, ErrSignIn
	}
	if o.FailedSignins != 0 || o.LockedUntil != nil {
		if err := s.Store.SigninSucceeded(ctx, o.ID); err != nil {
			return NewSession{}, Owner{}, storeErr("sign in", err)
		}
		o.FailedSignins, o.LockedUntil = 0, nil
	}
	ns, err := s.openSession(ctx, SessionOwner, o)
	if err != nil {
		return NewSession{}, Owner{}, err
	}
	return ns, o, nil
}

// retryAfter rounds a wait up to whole seconds, as Retry-After counts.
func retryAfter(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(d.Seconds())) * time.Second
}

// openSession stores a new session of kind (for owner o, or an operator
// when o is zero) with its policy's absolute expiry.
func (s *Service) openSession(ctx context.Context, kind string, o Owner) (NewSession, error) {
	now := s.now()
	secret, hash := randomSecret()
	sess := Session{
		ID:         randomBase62(22),
		Hash:       hash,
		Kind:       kind,
		OwnerID:    o.ID,
		AccountID:  o.AccountID,
		CSRF:       randomBase62(keySecretLen),
		CreatedAt:  now,
		LastSeenAt: now,
		ExpiresAt:  now.Add(s.policy(kind).Max),
	}
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		return NewSession{}, storeErr("open session", err)
	}
	return NewSession{Session: sess, Secret: secret}, nil
}

// OperatorSession opens a console session; the caller has checked the
// admin token.
func (s *Service) OperatorSession(ctx context.Context) (NewSession, error) {
	return s.openSession(ctx, SessionOperator, Owner{})
}

// CheckSession finds the session of a cookie's secret and judges it
// against its kind's policy: another kind, revoked, idle too long or past
// its maximum (its ExpiresAt, or its creation plus the policy's Max if
// the policy was shortened since) is ErrNoSession. A live session's
// LastSeenAt is moved forward (written at most once a minute).
func (s *Service) CheckSession(ctx context.Context, secret, kind string) (Session, error) {
	if !validSecret(secret) {
		return Session{}, ErrNoSession
	}
	sess, err := s.Store.SessionByHash(ctx, HashSecret(secret))
	if errors.Is(err, ErrNotFound) {
		return Session{}, ErrNoSession
	} else if err != nil {
		return Session{}, storeErr("session", err)
	}
	now, p := s.now(), s.policy(kind)
	if sess.Kind != kind || sess.RevokedAt != nil ||
		now.Sub(sess.LastSeenAt) > p.Idle || !now.Before(sess.ExpiresAt) || now.Sub(sess.CreatedAt) >= p.Max {
		return Session{}, ErrNoSession
	}
	if now.Sub(sess.LastSeenAt) >= touchEvery {
		if err := s.Store.TouchSession(ctx, sess.ID, now); err != nil {
			return Session{}, storeErr("session", err)
		}
		sess.LastSeenAt = now
	}
	return sess, nil
}

// SignOut revokes one session. Signing out a session that is already
// revoked changes nothing.
func (s *Service) SignOut(ctx context.Context, sessionID string) error {
	if err := s.Store.RevokeSession(ctx, sessionID, s.now()); err != nil {
		return storeErr("sign out", err)
	}
	return nil
}

// SignOutEverywhere revokes every session of an owner.
func (s *Service) SignOutEverywhere(ctx context.Context, ownerID int64) (int64, error) {
	o, err := s.Store.Owner(ctx, ownerID)
	if err != nil {
		return 0, storeErr(fmt.Sprintf("owner %d", ownerID), err)
	}
	n, err := s.Store.RevokeOwnerSessions(ctx, ownerID, s.now())
	if err != nil {
		return 0, storeErr(fmt.Sprintf("owner %d: sign out everywhere", ownerID), err)
	}
	s.audit(ctx, "owner.signout_everywhere", o.AccountID, o.Email, map[string]any{"owner_id": o.ID, "revoked": n})
	return n, nil
}

// RequestTier files an owner's request to move the account to tier
// (monthlyLimit for Enterprise). A second pending request is ErrConflict;
// asking for the current tier is ErrInvalid.
func (s *Service) RequestTier(ctx context.Context, accountID, ownerID int64, tier Tier, monthlyLimit int64, note string) (TierRequest, error) {
	tier, err := ParseTier(string(tier))
	if err != nil {
		return TierRequest{}, Invalidf("%v", err)
	}
	if err := checkLimit(tier, monthlyLimit); err != nil {
		return TierRequest{}, err
	}
	note = strings.TrimSpace(note)
	if len(note) > maxNoteLen || !utf8.ValidString(note) {
		return TierRequest{}, Invalidf("the note must be valid UTF-8 of at most %d bytes", maxNoteLen)
	}
	a, err := s.Store.Account(ctx, accountID)
	if err != nil {
		return TierRequest{}, accountErr(accountID, "", err)
	}
	if a.Tier == tier && (tier != Enterprise || a.CustomLimit == monthlyLimit) {
		return TierRequest{}, Invalidf("the account is on the %s tier already", tier)
	}
	r, err := s.Store.CreateTierRequest(ctx, TierRequest{
		AccountID: accountID, OwnerID: ownerID, Tier: tier, MonthlyLimit: monthlyLimit,
		Note: note, Status: RequestPending, CreatedAt: s.now(),
	})
	if errors.Is(err, ErrConflict) {
		return TierRequest{}, fmt.Errorf("account %d: %w: a tier request is pending already", accountID, ErrConflict)
	} else if err != nil {
		return TierRequest{}, accountErr(accountID, "tier request", err)
	}
	s.audit(ctx, "tier.request", accountID, strconv.FormatInt(r.ID, 10), map[string]any{"tier": r.Tier, "monthly_limit": r.MonthlyLimit})
	return r, nil
}

// TierRequests lists requests, newest first: of one account (0: all), of
// one status ("": all).
func (s *Service) TierRequests(ctx context.Context, accountID int64, status string) ([]TierRequest, error) {
	switch status {
	case "", RequestPending, RequestApproved, RequestRefused:
	default:
		return nil, Invalidf("unknown status %q (want pending, approved or refused)", status)
	}
	if accountID < 0 {
		return nil, Invalidf("the account ID is negative")
	}
	rs, err := s.Store.TierRequests(ctx, accountID, status)
	if err != nil {
		return nil, storeErr("tier requests", err)
	}
	if rs == nil {
		rs = []TierRequest{}
	}
	return rs, nil
}

// DecideTierRequest approves or refuses a pending request. Approving it
// sets the account's tier and limit; a request that is no longer pending
// is ErrConflict.
func (s *Service) DecideTierRequest(ctx context.Context, id int64, approve bool) (TierRequest, error) {
	r, _, err := s.Store.DecideTierRequest(ctx, id, approve, s.now())
	if errors.Is(err, ErrConflict) {
		return TierRequest{}, fmt.Errorf("tier request %d: %w: it is not pending", id, ErrConflict)
	} else if err != nil {
		return TierRequest{}, storeErr(fmt.Sprintf("tier request %d", id), err)
	}
	action := "tier.refuse"
	if approve {
		action = "tier.approve"
		s.purgeKeys()
	}
	s.audit(ctx, action, r.AccountID, strconv.FormatInt(r.ID, 10), map[string]any{"tier": r.Tier, "monthly_limit": r.MonthlyLimit})
	return r, nil
}

// AuditLog lists audit entries older than before (0: newest), newest
// first, of one account (0: all), at most limit (1..1000).
func (s *Service) AuditLog(ctx context.Context, accountID, before int64, limit int) ([]AuditEntry, error) {
	switch {
	case limit < 1 || limit > 1000:
		return nil, Invalidf("the limit must be between 1 and 1000")
	case before < 0 || accountID < 0:
		return nil, Invalidf("IDs are not negative")
	}
	es, err := s.Store.Audit(ctx, accountID, before, limit)
	if err != nil {
		return nil, storeErr("audit log", err)
	}
	if es == nil {
		es = []AuditEntry{}
	}
	return es, nil
}

// audit writes an entry for a change made with ctx (its actor), detail
// marshalled to JSON.
//
// The rule when the write fails: the change has been made and is not
// undone, and the method that made it returns its result without an
// error, so that a caller does not retry a change that took (adding
// credits twice). The failed entry goes to Service.AuditFailed, where
// the server logs it.
func (s *Service) audit(ctx context.Context, action string, accountID int64, target string, detail any) {
	e := AuditEntry{At: s.now(), Actor: ActorFrom(ctx), Action: action, AccountID: accountID, Target: target}
	if detail != nil {
		b, err := json.Marshal(detail)
		if err == nil {
			e.Detail = string(b)
		}
	}
	// The change is done: a caller giving up now must not lose its record.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	if _, err := s.Store.AppendAudit(ctx, e); err != nil && s.AuditFailed != nil {
		s.AuditFailed(e, err)
	}
}

// EndedRetention is how long sessions and one-time links are kept after
// they end (expire, are revoked or used): the audit log names sessions by
// ID, and a month leaves time to look one up after an incident.
const EndedRetention = 30 * 24 * time.Hour

// PurgeEnded deletes the sessions and one-time links that ended more than
// EndedRetention ago, and says how many of each.
func (s *Service) PurgeEnded(ctx context.Context) (sessions, links int64, err error) {
	sessions, links, err = s.Store.PurgeEnded(ctx, s.now().Add(-EndedRetention))
	if err != nil {
		return 0, 0, storeErr("purge ended sessions and links", err)
	}
	return sessions, links, nil
}
