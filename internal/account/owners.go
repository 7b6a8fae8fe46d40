package account

import (
	"context"
	"errors"
	"time"
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

// NewSession is a session with the cookie's secret, given once.
type NewSession struct {
	Session
	Secret string `json:"-"`
}

// Invite adds an owner with email to an account (or finds the account's
// existing owner with that email) and makes a one-time link, valid
// LinkTTL, where the owner sets a password. An email that owns another
// account is ErrConflict.
func (s *Service) Invite(ctx context.Context, accountID int64, email string) (Link, error) {
	return Link{}, errNotYet
}

// ResetLink makes a one-time password reset link for an owner.
func (s *Service) ResetLink(ctx context.Context, ownerID int64) (Link, error) {
	return Link{}, errNotYet
}

// Owners lists an account's owners.
func (s *Service) Owners(ctx context.Context, accountID int64) ([]Owner, error) {
	return nil, errNotYet
}

// SetPassword redeems a one-time link's token: it checks the password's
// rules, stores its argon2id hash and signs out every session of the
// owner. A bad token is ErrBadToken, a weak password *WeakPasswordError.
func (s *Service) SetPassword(ctx context.Context, token, password string) (Owner, error) {
	return Owner{}, errNotYet
}

// SignIn checks an owner's email and password and opens a session. Every
// refusal is ErrSignIn (or a *ThrottledError wrapping it) and takes about
// as long whether or not the email is known.
func (s *Service) SignIn(ctx context.Context, email, password string) (NewSession, Owner, error) {
	return NewSession{}, Owner{}, errNotYet
}

// OperatorSession opens a console session; the caller has checked the
// admin token.
func (s *Service) OperatorSession(ctx context.Context) (NewSession, error) {
	return NewSession{}, errNotYet
}

// CheckSession finds the session of a cookie's secret and judges it
// against its kind's policy: revoked, idle too long or past its maximum
// is ErrNoSession. A live session's LastSeenAt is moved forward (written
// at most once a minute).
func (s *Service) CheckSession(ctx context.Context, secret, kind string) (Session, error) {
	return Session{}, errNotYet
}

// SignOut revokes one session.
func (s *Service) SignOut(ctx context.Context, sessionID string) error {
	return errNotYet
}

// SignOutEverywhere revokes every session of an owner.
func (s *Service) SignOutEverywhere(ctx context.Context, ownerID int64) (int64, error) {
	return 0, errNotYet
}

// RequestTier files an owner's request to move the account to tier
// (monthlyLimit for Enterprise). A second pending request is ErrConflict;
// asking for the current tier is ErrInvalid.
func (s *Service) RequestTier(ctx context.Context, accountID, ownerID int64, tier Tier, monthlyLimit int64, note string) (TierRequest, error) {
	return TierRequest{}, errNotYet
}

// TierRequests lists requests, newest first: of one account (0: all), of
// one status ("": all).
func (s *Service) TierRequests(ctx context.Context, accountID int64, status string) ([]TierRequest, error) {
	return nil, errNotYet
}

// DecideTierRequest approves or refuses a pending request.
func (s *Service) DecideTierRequest(ctx context.Context, id int64, approve bool) (TierRequest, error) {
	return TierRequest{}, errNotYet
}

// AuditLog lists audit entries older than before (0: newest), newest
// first, of one account (0: all), at most limit (1..1000).
func (s *Service) AuditLog(ctx context.Context, accountID, before int64, limit int) ([]AuditEntry, error) {
	return nil, errNotYet
}

// audit writes an entry for a change made with ctx (its actor). A failure
// to write it is logged by the caller's store error path: the change has
// been made and is not undone.
func (s *Service) audit(ctx context.Context, action string, accountID int64, target string, detail any) error {
	return errNotYet
}
