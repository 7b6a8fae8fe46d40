// Package account owns accounts, API keys, subscription tiers, monthly
// quotas, credits and the ledger, and the charging engine (Meter) that
// meters location queries exactly. Storage is behind the Store interface,
// implemented by the sqlite and postgres packages; this package imports no
// database driver.
package account

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"
)

// Tier is a subscription tier.
type Tier string

// The subscription tiers. Free and Pro have fixed monthly limits;
// Enterprise has a per-account custom limit.
const (
	Free       Tier = "free"
	Pro        Tier = "pro"
	Enterprise Tier = "enterprise"
)

// Monthly request limits per key of the fixed tiers.
const (
	FreeMonthlyLimit = 1000
	ProMonthlyLimit  = 10000
)

// ParseTier reads a tier name.
func ParseTier(s string) (Tier, error) {
	switch Tier(s) {
	case Free, Pro, Enterprise:
		return Tier(s), nil
	}
	return "", fmt.Errorf("unknown tier %q (want free, pro or enterprise)", s)
}

// Account is a customer: a tier, a credit balance shared by its keys, and
// one or more API keys.
type Account struct {
	ID           int64     `json:"id"`
	Name         string    `json:"name"`
	Tier         Tier      `json:"tier"`
	CustomLimit  int64     `json:"custom_limit,omitempty"` // monthly limit per key; enterprise only
	Credits      int64     `json:"credits"`
	CreatedAt    time.Time `json:"created_at"`
	MonthlyLimit int64     `json:"monthly_limit"` // the effective limit per key, filled by Limit()
}

// Limit is the monthly request limit per key of an account of this tier.
func Limit(t Tier, custom int64) int64 {
	switch t {
	case Pro:
		return ProMonthlyLimit
	case Enterprise:
		return custom
	}
	return FreeMonthlyLimit
}

// Key is an API key. The secret itself is never stored: only its SHA-256
// hash. ID is public: it is the visible part of the secret
// ("ipa_<ID>_<secret>") and names the key in listings and commands.
type Key struct {
	ID        string    `json:"id"`
	AccountID int64     `json:"account_id"`
	Hash      []byte    `json:"-"`
	Prefix    string    `json:"prefix"` // "ipa_<ID>", what a person sees of a key
	Label     string    `json:"label"`  // the owner's name for the key; may be empty
	CreatedAt time.Time `json:"created_at"`
	// LastUsedAt is the time of the last charge made to the key, to
	// LastUseStep, nil before its first; kept by Store.Charge in the
	// charging transaction.
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
}

// LastUseStep is how far a key's recorded last use may lag its last
// charge: a charge records its time only when the recorded one is that
// much older. A key's last use is read by people ("used 3 minutes ago");
// writing it at every batch would cost a page write in every commit.
const LastUseStep = time.Minute

// Revoked reports whether the key has been revoked.
func (k Key) Revoked() bool { return k.RevokedAt != nil }

// ReasonUsage is the reason of the ledger entries that charges write.
const ReasonUsage = "usage"

// UsageEntryStep is the span of one usage entry of the ledger: a key's
// charges at one cost within one UTC minute are one entry, while no other
// entry of the account comes between them. Without it a busy key would
// write an entry per group commit, hundreds a second, and a quiet one an
// entry per query.
const UsageEntryStep = time.Minute

// TakesUsage reports whether a usage charge of keyID at cost credits per
// query, made at at, is added to e, the account's latest entry, rather
// than written as a new entry: e is a usage entry of the same key at the
// same cost, made in the same UsageEntryStep. The merged entry keeps its
// time and ID, sums the deltas and queries, and takes the new balance,
// so every entry's balance still follows from the one before it.
func (e LedgerEntry) TakesUsage(keyID string, cost int64, at time.Time) bool {
	return e.ID != 0 && e.Reason == ReasonUsage && e.KeyID == keyID && e.Queries > 0 &&
		e.Delta == -e.Queries*cost &&
		e.CreatedAt.UTC().Truncate(UsageEntryStep).Equal(at.UTC().Truncate(UsageEntryStep))
}

// LedgerEntry is one change of an account's credit balance.
type LedgerEntry struct {
	ID        int64     `json:"id"`
	AccountID int64     `json:"account_id"`
	Delta     int64     `json:"delta"`
	Balance   int64     `json:"balance"` // the balance after this entry
	Reason    string    `json:"reason"`
	KeyID     string    `json:"key_id,omitempty"` // the key whose queries were charged, for usage entries
	Queries   int64     `json:"queries,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// NewAccount is what CreateAccount needs.
type NewAccount struct {
	Name           string
	Tier           Tier
	CustomLimit    int64
	InitialCredits int64  // written as the account's first ledger entry when > 0
	Reason         string // reason of that ledger entry
	At             time.Time
}

// DefaultGrantReason is the ledger reason of an account's initial credits
// when NewAccount.Reason is empty.
const DefaultGrantReason = "initial grant"

// Normalized checks na and fills in what a store writes for it: the
// custom limit kept for Enterprise only, At defaulting to now, Reason to
// DefaultGrantReason. An unknown tier or a negative amount is ErrInvalid.
func (na NewAccount) Normalized() (NewAccount, error) {
	if na.InitialCredits < 0 {
		return NewAccount{}, Invalidf("negative credits")
	}
	limit, err := TierLimit(na.Tier, na.CustomLimit)
	if err != nil {
		return NewAccount{}, err
	}
	na.CustomLimit = limit
	if na.At.IsZero() {
		na.At = time.Now()
	}
	if na.Reason == "" {
		na.Reason = DefaultGrantReason
	}
	return na, nil
}

// TierLimit checks a tier and the custom limit to store with it: the
// limit itself for Enterprise, 0 for the others, whose limits are fixed.
// An unknown tier or a negative limit is ErrInvalid.
func TierLimit(t Tier, customLimit int64) (int64, error) {
	if _, err := ParseTier(string(t)); err != nil {
		return 0, Invalidf("%v", err)
	}
	if customLimit < 0 {
		return 0, Invalidf("negative limit")
	}
	if t != Enterprise {
		return 0, nil
	}
	return customLimit, nil
}

// ChargeRequest asks to charge N queries to one key. Hash is the hash of
// the secret the requests authenticated with: a key rotated or revoked
// since is denied inside the same transaction, so a charge is never made
// for a key that no longer works.
type ChargeRequest struct {
	KeyID string
	Hash  []byte
	N     int64
	Cost  int64 // credits per query
}

// Deny says why (part of) a ChargeRequest was not granted.
type Deny uint8

// Reasons for denial, in the order the service checks them.
const (
	DenyNone    Deny = iota
	DenyKey          // unknown, revoked or rotated key
	DenyQuota        // the key's monthly quota is used up
	DenyCredits      // the account's balance is below the cost
)

// Grant is the store's answer to one ChargeRequest: Granted of the N
// queries were charged; the rest are denied for Deny.
type Grant struct {
	KeyID     string
	AccountID int64
	Tier      Tier
	Granted   int64
	Deny      Deny  // why N-Granted were refused; DenyNone when all granted
	Used      int64 // the key's usage this period after the charge
	Limit     int64 // the key's monthly limit
	Credits   int64 // the account's balance after the charge
}

// Allow decides how many of r's queries a key may have, given its monthly
// limit, its usage this period and its account's balance: every store's
// charge applies this one rule. Quota first, then credits, as a client
// would meet them one query at a time: a shortfall that ends exactly where
// the quota ends is the quota's (DenyQuota), one that ends earlier is the
// balance's (DenyCredits). A request granted in full is DenyNone.
func Allow(r ChargeRequest, limit, used, credits int64) (n int64, deny Deny) {
	quotaLeft := max(0, limit-used)
	n = min(r.N, quotaLeft)
	if r.Cost > 0 {
		n = min(n, credits/r.Cost)
	}
	switch {
	case n == r.N:
		return n, DenyNone
	case n == quotaLeft:
		return n, DenyQuota
	default:
		return n, DenyCredits
	}
}

// ChargedKey is a key of a charge batch as the store read it under the
// batch's lock, with what Decide needs of its account.
type ChargedKey struct {
	AccountID int64
	Hash      []byte
	Revoked   bool
	Tier      Tier
	Limit     int64 // Limit(Tier, the account's custom limit)
}

// Decide is the grant of one request of a charge batch, the decision every
// store's charge makes in its transaction: the key (nil when no key has
// r's ID) must be live with r's hash, else DenyKey; then Allow, against
// the key's usage and its account's balance as the batch has left them.
// The store adds Granted to the usage and takes Granted*Cost from the
// balance, as the grant's Used and Credits say.
func Decide(r ChargeRequest, k *ChargedKey, used, credits int64) Grant {
	if k == nil {
		keyAccepts(noHash[:], false, r.Hash) // the same work as a wrong hash
		return Grant{KeyID: r.KeyID, Deny: DenyKey}
	}
	if !keyAccepts(k.Hash, k.Revoked, r.Hash) {
		return Grant{KeyID: r.KeyID, Deny: DenyKey}
	}
	n, deny := Allow(r, k.Limit, used, credits)
	return Grant{KeyID: r.KeyID, AccountID: k.AccountID, Tier: k.Tier, Limit: k.Limit,
		Granted: n, Deny: deny, Used: used + n, Credits: credits - n*r.Cost}
}

// keyAccepts reports whether a key with the hash stored, revoked or not,
// accepts a secret of hash: compared in constant time, and compared also
// when the key is revoked, so that no refusal takes less work than
// another.
func keyAccepts(stored []byte, revoked bool, hash []byte) bool {
	return subtle.ConstantTimeCompare(stored, hash) == 1 && !revoked
}

// Store keeps accounts, keys, usage counters and the ledger. Every method is
// safe for concurrent use, including by several processes on one database.
// The contract suite internal/account/storetest checks every rule below.
// Methods fill Account.MonthlyLimit and Key.Prefix; an unknown account or
// key is ErrNotFound (also from ListKeys, Ledger and CreateKey); an
// unknown tier or negative amount is ErrInvalid; Close may be called
// twice.
type Store interface {
	CreateAccount(ctx context.Context, a NewAccount) (Account, error)
	Account(ctx context.Context, id int64) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	// SetTier changes an account's tier; customLimit is used by Enterprise.
	SetTier(ctx context.Context, id int64, tier Tier, customLimit int64) (Account, error)

	CreateKey(ctx context.Context, k Key) error
	Key(ctx context.Context, id string) (Key, error)
	ListKeys(ctx context.Context, accountID int64) ([]Key, error)
	// RevokeKey marks a key revoked; revoking again keeps the first time.
	RevokeKey(ctx context.Context, id string, at time.Time) (Key, error)
	// RotateKey replaces the key's secret hash; its ID and usage stay. A
	// revoked key is not rotated: ErrRevoked.
	RotateKey(ctx context.Context, id string, hash []byte) (Key, error)

	// AddCredits changes a balance by delta (negative to deduct) and writes
	// a ledger entry. A deduction below zero fails with ErrInsufficient.
	AddCredits(ctx context.Context, accountID, delta int64, reason string, at time.Time) (LedgerEntry, error)
	// Ledger lists an account's entries, newest first, at most limit (0: all).
	Ledger(ctx context.Context, accountID int64, limit int) ([]LedgerEntry, error)

	// Usage is the number of queries charged to a key in a period
	// ("2006-01"); 0 when none were.
	Usage(ctx context.Context, keyID, period string) (int64, error)
	// Charge applies a batch of charges in one transaction. For each request
	// in order it grants as many of its N queries as the key's quota for the
	// period and the account's balance allow (quota first, then credits),
	// adds them to the usage counter and to the key's counter of at's UTC
	// day, sets the key's LastUsedAt to at when the recorded one is
	// LastUseStep or more before at (or none), deducts Granted*Cost from the
	// balance and records it in a usage entry of the ledger: neighbouring
	// charges of one key at one cost are one entry, and the first of the
	// batch is added to the account's latest entry when that entry takes
	// it (LedgerEntry.TakesUsage). Grants never exceed the
	// quota or drive a balance below zero, whatever other processes do
	// concurrently. The returned slice is parallel to reqs.
	Charge(ctx context.Context, period string, at time.Time, reqs []ChargeRequest) ([]Grant, error)

	// The portal's and console's reads and writes (portal.go).
	PortalStore

	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	Close() error
}

// ChargeChecker is a Store whose charges can fail while it still answers
// reads and Ping (a full disk under SQLite's charge journal): CheckCharge
// says, without charging, whether a charge could be written now, by the
// path a charge takes. Meter.Ready asks it after a charge failed; a store
// without it is asked Ping.
type ChargeChecker interface {
	CheckCharge(ctx context.Context) error
}

// Errors the stores return, wrapped or as they are.
var (
	ErrNotFound     = errors.New("not found")
	ErrInsufficient = errors.New("insufficient credits")
	ErrUnavailable  = errors.New("store unavailable")
	ErrBadKey       = errors.New("invalid API key")
	// ErrInvalid is wrapped by every refusal of bad input (an empty name, an
	// unknown tier, a zero amount), so callers can answer it as the
	// client's mistake.
	ErrInvalid = errors.New("invalid input")
	// ErrRevoked refuses to rotate a revoked key: a revoked key stays dead.
	ErrRevoked = errors.New("key revoked")
	// ErrConflict refuses a change that the current state forbids: an
	// email that already owns another account, a second pending tier
	// request, deciding a request that is no longer pending.
	ErrConflict = errors.New("conflict")
)

// Period names the calendar month (UTC) that t falls in: "2006-01".
func Period(t time.Time) string { return t.UTC().Format("2006-01") }

// PeriodReset is the start of the month after t's, in UTC: when the
// quota of t's period resets.
func PeriodReset(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
}
