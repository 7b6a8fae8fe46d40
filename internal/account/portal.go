package account

import (
	"context"
	"time"
)

// The self-service side of accounts: owners who sign in with an email and
// a password, their sessions, the usage history the portal draws, tier
// requests the operator decides, and the audit log of every change.

// Owner is a person who signs in to an account's portal. An account has
// one or more; an email owns at most one account.
type Owner struct {
	ID        int64  `json:"id"`
	AccountID int64  `json:"account_id"`
	Email     string `json:"email"` // lower-cased, trimmed
	// PasswordHash is the argon2id hash in PHC form
	// ("$argon2id$v=19$m=...,t=...,p=...$salt$hash"); empty until the
	// owner accepts the invitation.
	PasswordHash string    `json:"-"`
	HasPassword  bool      `json:"has_password"`
	CreatedAt    time.Time `json:"created_at"`
	// FailedSignins counts sign-in failures since the last success;
	// LockedUntil, when set and in the future, refuses sign-ins before it.
	FailedSignins int64      `json:"-"`
	LockedUntil   *time.Time `json:"-"`
}

// Purposes of an OwnerToken.
const (
	TokenInvite = "invite"
	TokenReset  = "reset"
)

// OwnerToken is a one-time link's token: an invitation or a password
// reset. Only the SHA-256 of its secret is stored.
type OwnerToken struct {
	Hash      []byte
	OwnerID   int64
	Purpose   string // TokenInvite or TokenReset
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// Kinds of Session.
const (
	SessionOwner    = "owner"    // an account owner in the portal
	SessionOperator = "operator" // an operator in the console, exchanged for the admin token
)

// Session is a signed-in browser. The cookie holds a random secret; the
// store keeps its SHA-256 (Hash) and a public ID, which the audit log
// names. CSRF is the token the page must send back with every change.
type Session struct {
	ID         string     `json:"id"`
	Hash       []byte     `json:"-"`
	Kind       string     `json:"kind"`
	OwnerID    int64      `json:"owner_id,omitempty"`   // 0 for an operator session
	AccountID  int64      `json:"account_id,omitempty"` // the owner's account, filled on reads
	CSRF       string     `json:"-"`
	CreatedAt  time.Time  `json:"created_at"`
	LastSeenAt time.Time  `json:"last_seen_at"`
	ExpiresAt  time.Time  `json:"expires_at"` // absolute expiry
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// Statuses of a TierRequest.
const (
	RequestPending  = "pending"
	RequestApproved = "approved"
	RequestRefused  = "refused"
)

// TierRequest is an owner's request to change the account's tier. An
// account has at most one pending request; approving it sets the tier in
// the same transaction.
type TierRequest struct {
	ID           int64      `json:"id"`
	AccountID    int64      `json:"account_id"`
	OwnerID      int64      `json:"owner_id,omitempty"`
	Tier         Tier       `json:"tier"`
	MonthlyLimit int64      `json:"monthly_limit,omitempty"` // enterprise only
	Note         string     `json:"note,omitempty"`
	Status       string     `json:"status"`
	CreatedAt    time.Time  `json:"created_at"`
	DecidedAt    *time.Time `json:"decided_at,omitempty"`
}

// AuditEntry is one change made through the service: what (Action, e.g.
// "credits.add"), to what (AccountID, Target), when, and by whom (Actor:
// "session:<id>" for a console session, "token" for the admin token,
// "owner:<id>/session:<id>" for the portal, "cli" for the command line).
type AuditEntry struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Actor     string    `json:"actor"`
	Action    string    `json:"action"`
	AccountID int64     `json:"account_id,omitempty"`
	Target    string    `json:"target,omitempty"` // a key ID, an owner's email, a request ID
	Detail    string    `json:"detail,omitempty"` // a short JSON object of the change's values
}

// DayUsage is the number of queries charged to one key on one UTC day.
type DayUsage struct {
	Day     string `json:"day"` // "2006-01-02"
	KeyID   string `json:"key_id"`
	Queries int64  `json:"queries"`
}

// AccountSummary is an account with its keys' usage in a period, for the
// console's lists.
type AccountSummary struct {
	Account
	Period string `json:"period"`
	Used   int64  `json:"used"` // queries charged to all its keys in Period
	Keys   int64  `json:"keys"` // live (unrevoked) keys
}

// PortalStore is the part of Store behind the portal and the console.
// Unknown accounts, keys, owners, sessions and requests are ErrNotFound.
type PortalStore interface {
	// SetKeyLabel changes a key's label.
	SetKeyLabel(ctx context.Context, id, label string) (Key, error)
	// KeyUsages maps each key of an account to its usage in period; keys
	// without usage are absent.
	KeyUsages(ctx context.Context, accountID int64, period string) (map[string]int64, error)
	// DailyUsage lists an account's per-key daily counters for the days
	// from..to (inclusive, "2006-01-02"), ordered by day then key. Days and
	// keys without usage are absent.
	DailyUsage(ctx context.Context, accountID int64, from, to string) ([]DayUsage, error)
	// LedgerPage lists an account's entries with ID < before (0: from the
	// newest), newest first, at most limit.
	LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]LedgerEntry, error)
	// SearchAccounts lists accounts whose name contains q (case-insensitive)
	// or whose ID or owner email equals q (all when q is empty), ordered by
	// ID, with their usage in period; at most limit.
	SearchAccounts(ctx context.Context, q, period string, limit int) ([]AccountSummary, error)
	// TopConsumers lists the n accounts with the most queries in period,
	// most first (ties by ID); accounts without usage are absent.
	TopConsumers(ctx context.Context, period string, n int) ([]AccountSummary, error)

	// CreateOwner adds an owner (no password yet) to an account. An email
	// that already owns an account is ErrConflict.
	CreateOwner(ctx context.Context, accountID int64, email string, at time.Time) (Owner, error)
	Owner(ctx context.Context, id int64) (Owner, error)
	OwnerByEmail(ctx context.Context, email string) (Owner, error)
	ListOwners(ctx context.Context, accountID int64) ([]Owner, error)
	// SigninFailed counts one failed sign-in and moves the owner's lock
	// to lockedUntil when that is later than the lock in place: a failure
	// never shortens or clears a lock (nil leaves it), so one that read the
	// count before a racing failure cannot undo that failure's lock. It
	// returns the count after.
	SigninFailed(ctx context.Context, ownerID int64, lockedUntil *time.Time) (int64, error)
	// SigninSucceeded clears the failures and the lock.
	SigninSucceeded(ctx context.Context, ownerID int64) error

	// CreateOwnerToken stores a one-time token.
	CreateOwnerToken(ctx context.Context, t OwnerToken) error
	// OwnerToken returns a token by its hash, used and expired ones
	// included: the caller judges them. It lets a new password be checked
	// against its owner's email before the token is spent.
	OwnerToken(ctx context.Context, hash []byte) (OwnerToken, error)
	// UseOwnerToken redeems a token in one transaction: it must exist, be
	// unused and expire after at; it is marked used, and so is every
	// other unused token of the owner (a link left over from before must
	// not set the password again), the owner's password hash is set, the
	// failures and lock cleared, and every session of the owner revoked.
	// Anything else is ErrNotFound.
	UseOwnerToken(ctx context.Context, hash []byte, at time.Time, passwordHash string) (Owner, error)

	CreateSession(ctx context.Context, s Session) error
	// SessionByHash returns a session, revoked or expired ones included:
	// the caller judges them.
	SessionByHash(ctx context.Context, hash []byte) (Session, error)
	// TouchSession sets a session's LastSeenAt.
	TouchSession(ctx context.Context, id string, at time.Time) error
	RevokeSession(ctx context.Context, id string, at time.Time) error
	// RevokeOwnerSessions revokes every live session of an owner and
	// returns how many.
	RevokeOwnerSessions(ctx context.Context, ownerID int64, at time.Time) (int64, error)

	// PurgeEnded deletes the sessions that expired or were revoked, and
	// the one-time tokens that expired or were used, before before; it
	// returns how many of each.
	PurgeEnded(ctx context.Context, before time.Time) (sessions, tokens int64, err error)

	// CreateTierRequest stores a pending request; ErrConflict when the
	// account already has one.
	CreateTierRequest(ctx context.Context, r TierRequest) (TierRequest, error)
	// TierRequests lists requests, newest first: of one account (0: all),
	// of one status ("": all).
	TierRequests(ctx context.Context, accountID int64, status string) ([]TierRequest, error)
	// DecideTierRequest approves (setting the account's tier and limit in
	// the same transaction) or refuses a pending request; ErrConflict when
	// it is not pending.
	DecideTierRequest(ctx context.Context, id int64, approve bool, at time.Time) (TierRequest, Account, error)

	// AppendAudit stores an entry and returns it with its ID.
	AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// Audit lists entries with ID < before (0: from the newest), newest
	// first, of one account (0: all), at most limit.
	Audit(ctx context.Context, accountID, before int64, limit int) ([]AuditEntry, error)
}

type actorKey struct{}

// WithActor names who makes the changes done with ctx, for the audit log.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// ActorFrom is the actor WithActor set, or "unknown".
func ActorFrom(ctx context.Context) string {
	if a, ok := ctx.Value(actorKey{}).(string); ok && a != "" {
		return a
	}
	return "unknown"
}
