package account

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
)

// Defaults of the Service's key cache.
const (
	DefaultKeyCacheTTL  = 5 * time.Second
	DefaultKeyCacheSize = 10000

	lookupTimeout = 10 * time.Second
)

// Bounds on what management accepts, far beyond any real use, so that no
// sum of balances or limits can overflow an int64.
const (
	MaxNameLen      = 200
	MaxCreditChange = 1_000_000_000_000_000 // 1e15 per grant or deduction
	MaxMonthlyLimit = 1_000_000_000_000     // 1e12 queries per key and month
)

// Service is account, key and credit management on a Store, shared by the
// CLI, the admin API and the server's authentication. The server's is
// built by NewService, with its settings; a literal Service (the CLI's
// management commands) takes the defaults noted on each field.
type Service struct {
	Store Store
	Now   func() time.Time // injectable clock; time.Now when nil
	// KeyCacheTTL bounds how long an authenticated key is remembered
	// without asking the store. Revocation and rotation are still exact:
	// Store.Charge re-checks the key's hash in the charging transaction.
	// Zero means DefaultKeyCacheTTL; a negative TTL turns the cache off.
	KeyCacheTTL time.Duration
	// KeyCacheSize bounds the number of cached keys (DefaultKeyCacheSize
	// when zero).
	KeyCacheSize int
	// OwnerSessions and OperatorSessions bound portal and console
	// sessions; a zero field takes DefaultOwnerSessions' or
	// DefaultOperatorSessions'.
	OwnerSessions, OperatorSessions SessionPolicy
	// AuditFailed, when set, is told of an audit entry that could not be
	// written after its change was made (see audit); the server logs it.
	AuditFailed func(e AuditEntry, err error)

	init   sync.Once
	cache  *expirable.LRU[string, cachedKey] // nil when caching is off
	lookup singleflight.Group                // one store read per key ID at a time
}

// Options are the settings of a Service built by NewService. As with
// every ipatlas setting, 0 turns a feature off and no zero stands for a
// default: DefaultOptions holds the defaults, which `ipatlas serve`
// passes unless told otherwise.
type Options struct {
	Now func() time.Time // the clock; time.Now when nil
	// KeyCacheTTL is how long an authenticated key is remembered without
	// asking the store (see Service.KeyCacheTTL); 0 turns the cache off.
	KeyCacheTTL time.Duration
	// KeyCacheSize bounds the number of cached keys; required when the
	// cache is on.
	KeyCacheSize int
	// OwnerSessions and OperatorSessions bound portal and console
	// sessions; both numbers of each are required (a session without an
	// end is not an option).
	OwnerSessions, OperatorSessions SessionPolicy
	// AuditFailed, when set, is told of an audit entry that could not be
	// written after its change was made (see audit); serve logs it.
	AuditFailed func(e AuditEntry, err error)
}

// DefaultOptions are the Service's usual settings.
func DefaultOptions() Options {
	return Options{
		KeyCacheTTL:      DefaultKeyCacheTTL,
		KeyCacheSize:     DefaultKeyCacheSize,
		OwnerSessions:    DefaultOwnerSessions,
		OperatorSessions: DefaultOperatorSessions,
	}
}

// NewService builds a Service on store with the settings of o, refusing
// one it cannot use. The service's settings are fixed here, by whoever
// builds it, and not changed afterwards by its users.
func NewService(store Store, o Options) (*Service, error) {
	var errs []error
	if o.KeyCacheTTL < 0 {
		errs = append(errs, fmt.Errorf("account: Options.KeyCacheTTL %v: want 0 (off) or more", o.KeyCacheTTL))
	}
	if o.KeyCacheTTL > 0 && o.KeyCacheSize <= 0 {
		errs = append(errs, fmt.Errorf("account: Options.KeyCacheSize %d: the key cache is on and needs a size (DefaultKeyCacheSize is the usual value)", o.KeyCacheSize))
	}
	for name, p := range map[string]SessionPolicy{"OwnerSessions": o.OwnerSessions, "OperatorSessions": o.OperatorSessions} {
		if p.Idle <= 0 || p.Max <= 0 {
			errs = append(errs, fmt.Errorf("account: Options.%s %+v: want a positive Idle and Max", name, p))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	ttl := o.KeyCacheTTL
	if ttl == 0 {
		ttl = -1 // the field's "off"
	}
	return &Service{
		Store: store, Now: o.Now, KeyCacheTTL: ttl, KeyCacheSize: o.KeyCacheSize,
		OwnerSessions: o.OwnerSessions, OperatorSessions: o.OperatorSessions, AuditFailed: o.AuditFailed,
	}, nil
}

// cachedKey is what Authenticate remembers of a key ID: the key (with its
// hash, compared on every use) and its account as it was then.
type cachedKey struct {
	key  Key
	acct Account
}

// NewKey is a freshly created key with its secret, shown once.
type NewKey struct {
	Key
	Secret string `json:"key"`
}

// AccountParams describes an account to create.
type AccountParams struct {
	Name string `json:"name"`
	Tier Tier   `json:"tier"`
	// MonthlyLimit is the custom limit per key and month; required for
	// Enterprise and refused for the other tiers, whose limits are fixed.
	MonthlyLimit int64 `json:"monthly_limit,omitempty"`
	// Credits is the initial grant, written as the account's first ledger
	// entry; nil means the tier's monthly limit.
	Credits *int64 `json:"credits,omitempty"`
}

// Usage is a key's standing this month, for GET /api/usage and listings.
type Usage struct {
	KeyID     string    `json:"key_id"`
	AccountID int64     `json:"account_id"`
	Tier      Tier      `json:"tier"`
	Period    string    `json:"period"` // "2006-01", UTC
	Used      int64     `json:"used"`
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"` // start of next month, UTC
	Credits   int64     `json:"credits"`
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) setup() {
	s.init.Do(func() {
		ttl, size := s.KeyCacheTTL, s.KeyCacheSize
		if ttl == 0 {
			ttl = DefaultKeyCacheTTL
		}
		if size <= 0 {
			size = DefaultKeyCacheSize
		}
		if ttl > 0 {
			s.cache = expirable.NewLRU[string, cachedKey](size, nil, ttl)
		}
	})
}

// Authenticate checks a bearer secret ("ipa_<id>_<secret>"): parse, find
// the key by ID (cached), compare hashes in constant time. Any failure is
// ErrBadKey, whatever the cause, so callers cannot probe which part was
// wrong. A store failure is ErrUnavailable.
//
// A rejection does the same work whether the key's ID exists or not: an
// unknown ID is read as a known one is, its account too (one that does
// not exist), and its hash compared (with one no secret has), so that the
// time of the answer does not tell an ID that exists from one that does
// not. (One difference is left: the secret for a known ID that a recent
// success cached is also compared with the cached hash before the store
// is read; that takes nanoseconds, the reads tens of microseconds.)
//
// The Account is as the store had it when the key was cached, so its
// Credits may be up to KeyCacheTTL old: Meter.Charge's Outcome.Credits and
// Service.Account are exact.
func (s *Service) Authenticate(ctx context.Context, secret string) (Key, Account, error) {
	s.setup()
	id, ok := ParseSecret(secret)
	if !ok {
		return Key{}, Account{}, ErrBadKey
	}
	sum := sumSecret(secret)
	hash := sum[:]
	if s.cache != nil {
		// A mismatch may mean the key was rotated since it was cached, so
		// it falls through to the store rather than failing here.
		if c, ok := s.cache.Get(id); ok && subtle.ConstantTimeCompare(c.key.Hash, hash) == 1 {
			return c.key, c.acct, nil
		}
	}
	// Concurrent misses on one key share a single read. It runs detached
	// from the first caller's ctx, so that caller giving up does not fail
	// the others.
	ch := s.lookup.DoChan(id, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		k, err := s.Store.Key(ctx, id)
		unknown := errors.Is(err, ErrNotFound)
		if unknown {
			k = Key{AccountID: noAccount, Hash: noHash[:]}
		} else if err != nil {
			return nil, err
		}
		a, err := s.Store.Account(ctx, k.AccountID)
		if unknown && errors.Is(err, ErrNotFound) {
			err = nil
		}
		if err != nil {
			return nil, err
		}
		return cachedKey{key: k, acct: withLimit(a)}, nil
	})
	var r singleflight.Result
	select {
	case r = <-ch:
	case <-ctx.Done():
		return Key{}, Account{}, unavailable("authenticate", ctx.Err())
	}
	v, err := r.Val, r.Err
	if errors.Is(err, ErrNotFound) {
		return Key{}, Account{}, ErrBadKey
	}
	if err != nil {
		return Key{}, Account{}, unavailable("authenticate", err)
	}
	c := v.(cachedKey)
	if !keyAccepts(c.key.Hash, c.key.Revoked(), hash) {
		return Key{}, Account{}, ErrBadKey
	}
	if s.cache != nil {
		s.cache.Add(id, c)
	}
	return c.key, c.acct, nil
}

// noAccount and noHash stand for the account and the hash of a key ID
// that does not exist: no account has ID 0, and no secret's SHA-256 is
// all zeros (finding one would break SHA-256).
const noAccount = 0

var noHash [sha256.Size]byte

// forget drops a key from the cache after this process changed it, so the
// change takes effect here at once rather than after KeyCacheTTL.
func (s *Service) forget(id string) {
	s.setup()
	if s.cache != nil {
		s.cache.Remove(id)
	}
}

// unavailable wraps a store failure so that it matches ErrUnavailable and
// still says what failed.
func unavailable(op string, err error) error {
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
}

// storeErr wraps a management failure: the domain's refusals keep their
// identity, anything else is the store failing (ErrUnavailable), so the
// admin API answers 503 rather than 500 and the CLI says the store is
// unreachable.
func storeErr(op string, err error) error {
	for _, known := range []error{ErrNotFound, ErrInvalid, ErrInsufficient, ErrRevoked, ErrConflict, ErrUnavailable} {
		if errors.Is(err, known) {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	return unavailable(op, err)
}

// missing is an ErrNotFound that names what is missing: "no account 99",
// "no key AbC123xyz789".
type missing string

func (m missing) Error() string { return "no " + string(m) }
func (m missing) Unwrap() error { return ErrNotFound }

// accountErr is storeErr for an operation op ("" for none) on account
// id: the store's ErrNotFound means the account does not exist, and says
// so by its ID.
func accountErr(id int64, op string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return missing(fmt.Sprintf("account %d", id))
	}
	if op != "" {
		return storeErr(fmt.Sprintf("account %d: %s", id, op), err)
	}
	return storeErr(fmt.Sprintf("account %d", id), err)
}

// keyErr is accountErr for a key.
func keyErr(id, op string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return missing("key " + id)
	}
	if op != "" {
		return storeErr("key "+id+": "+op, err)
	}
	return storeErr("key "+id, err)
}

func checkLimit(tier Tier, limit int64) error {
	switch {
	case tier == Enterprise && limit <= 0:
		return Invalidf("an enterprise account needs a monthly limit above 0")
	case tier == Enterprise && limit > MaxMonthlyLimit:
		return Invalidf("monthly limit %d is above the maximum %d", limit, int64(MaxMonthlyLimit))
	case tier != Enterprise && limit != 0:
		return Invalidf("the %s tier has a fixed monthly limit of %d; a custom limit is for enterprise accounts", tier, Limit(tier, 0))
	}
	return nil
}

func checkName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", Invalidf("the account name is empty")
	case len(name) > MaxNameLen:
		return "", Invalidf("the account name is longer than %d bytes", MaxNameLen)
	case !utf8.ValidString(name):
		return "", Invalidf("the account name is not valid UTF-8")
	case strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return "", Invalidf("the account name contains control characters")
	}
	return name, nil
}

func withLimit(a Account) Account {
	a.MonthlyLimit = Limit(a.Tier, a.CustomLimit)
	return a
}

// CreateAccount creates an account and grants its initial credits (by
// default its tier's monthly limit) as its first ledger entry.
func (s *Service) CreateAccount(ctx context.Context, p AccountParams) (Account, error) {
	name, err := checkName(p.Name)
	if err != nil {
		return Account{}, err
	}
	tier, err := ParseTier(string(p.Tier))
	if err != nil {
		return Account{}, Invalidf("%v", err)
	}
	if err := checkLimit(tier, p.MonthlyLimit); err != nil {
		return Account{}, err
	}
	credits := Limit(tier, p.MonthlyLimit)
	if p.Credits != nil {
		credits = *p.Credits
	}
	if credits < 0 || credits > MaxCreditChange {
		return Account{}, Invalidf("initial credits must be between 0 and %d", int64(MaxCreditChange))
	}
	a, err := s.Store.CreateAccount(ctx, NewAccount{
		Name:           name,
		Tier:           tier,
		CustomLimit:    p.MonthlyLimit,
		InitialCredits: credits,
		Reason:         "initial grant",
		At:             s.now(),
	})
	if err != nil {
		return Account{}, storeErr("create account", err)
	}
	a = withLimit(a)
	s.audit(ctx, "account.create", a.ID, "", map[string]any{"name": a.Name, "tier": a.Tier, "monthly_limit": a.MonthlyLimit, "credits": a.Credits})
	return a, nil
}

// Account returns an account with its current balance.
func (s *Service) Account(ctx context.Context, id int64) (Account, error) {
	a, err := s.Store.Account(ctx, id)
	if err != nil {
		return Account{}, accountErr(id, "", err)
	}
	return withLimit(a), nil
}

// Accounts lists every account.
func (s *Service) Accounts(ctx context.Context) ([]Account, error) {
	as, err := s.Store.ListAccounts(ctx)
	if err != nil {
		return nil, storeErr("list accounts", err)
	}
	for i := range as {
		as[i] = withLimit(as[i])
	}
	return as, nil
}

// SetTier moves an account to another tier; monthlyLimit is the custom
// limit of Enterprise and must be 0 for the other tiers. Usage this month
// is kept: a key that used 2,000 queries on Pro and moves to Free is over
// its quota until the month resets.
func (s *Service) SetTier(ctx context.Context, id int64, tier Tier, monthlyLimit int64) (Account, error) {
	tier, err := ParseTier(string(tier))
	if err != nil {
		return Account{}, Invalidf("%v", err)
	}
	if err := checkLimit(tier, monthlyLimit); err != nil {
		return Account{}, err
	}
	a, err := s.Store.SetTier(ctx, id, tier, monthlyLimit)
	if err != nil {
		return Account{}, accountErr(id, "", err)
	}
	s.purgeKeys()
	a = withLimit(a)
	s.audit(ctx, "account.tier", a.ID, "", map[string]any{"tier": a.Tier, "monthly_limit": a.MonthlyLimit})
	return a, nil
}

// purgeKeys empties the key cache after an account's tier changed.
// Cached accounts of this account's keys show the old tier; the charge is
// exact anyway, this only keeps what Authenticate reports current in this
// process.
func (s *Service) purgeKeys() {
	s.setup()
	if s.cache != nil {
		s.cache.Purge()
	}
}

// CreateKey makes a new key for an account. The secret is in the result
// and nowhere else: it cannot be shown again.
func (s *Service) CreateKey(ctx context.Context, accountID int64) (NewKey, error) {
	return s.CreateLabeledKey(ctx, accountID, "")
}

// Key returns a key (without its secret, which is not kept).
func (s *Service) Key(ctx context.Context, id string) (Key, error) {
	k, err := s.Store.Key(ctx, id)
	if err != nil {
		return Key{}, keyErr(id, "", err)
	}
	return k, nil
}

// Keys lists an account's keys, revoked ones included.
func (s *Service) Keys(ctx context.Context, accountID int64) ([]Key, error) {
	ks, err := s.Store.ListKeys(ctx, accountID)
	if err != nil {
		return nil, accountErr(accountID, "list keys", err)
	}
	return ks, nil
}

// RevokeKey stops a key from working, for good. Revoking a revoked key
// changes nothing.
func (s *Service) RevokeKey(ctx context.Context, id string) (Key, error) {
	k, err := s.Store.RevokeKey(ctx, id, s.now())
	s.forget(id)
	if err != nil {
		return Key{}, keyErr(id, "", err)
	}
	s.audit(ctx, "key.revoke", k.AccountID, k.ID, nil)
	return k, nil
}

// RotateKey gives a key a new secret: same ID, same usage this month; the
// old secret stops working at once. A revoked key cannot be rotated
// (ErrRevoked).
func (s *Service) RotateKey(ctx context.Context, id string) (NewKey, error) {
	nk := newSecretFor(Key{ID: id})
	k, err := s.Store.RotateKey(ctx, id, nk.Hash)
	s.forget(id)
	if err != nil {
		return NewKey{}, keyErr(id, "", err)
	}
	k.Prefix = KeyPrefix(k.ID)
	s.audit(ctx, "key.rotate", k.AccountID, k.ID, nil)
	return NewKey{Key: k, Secret: nk.Secret}, nil
}

// AddCredits adds amount credits to an account's balance, or deducts them
// when amount is negative; a deduction below zero is refused with
// ErrInsufficient. The change is a ledger entry with reason.
func (s *Service) AddCredits(ctx context.Context, accountID, amount int64, reason string) (LedgerEntry, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case amount == 0:
		return LedgerEntry{}, Invalidf("the amount is 0")
	case amount > MaxCreditChange || amount < -MaxCreditChange:
		return LedgerEntry{}, Invalidf("the amount is beyond ±%d", int64(MaxCreditChange))
	case reason == "":
		return LedgerEntry{}, Invalidf("a reason is required")
	case len(reason) > 1000 || !utf8.ValidString(reason):
		return LedgerEntry{}, Invalidf("the reason must be valid UTF-8 of at most 1000 bytes")
	}
	e, err := s.Store.AddCredits(ctx, accountID, amount, reason, s.now())
	if errors.Is(err, ErrInsufficient) {
		// Say how far the balance is from the deduction, read now: what
		// a person needs to choose another amount.
		if a, aerr := s.Store.Account(ctx, accountID); aerr == nil {
			return LedgerEntry{}, fmt.Errorf("account %d: %w: the balance is %d, too little to deduct %d", accountID, ErrInsufficient, a.Credits, -amount)
		}
	}
	if err != nil {
		return LedgerEntry{}, accountErr(accountID, "", err)
	}
	s.audit(ctx, "credits.add", accountID, "", map[string]any{"amount": amount, "reason": reason, "balance": e.Balance, "ledger_id": e.ID})
	return e, nil
}

// Ledger lists an account's balance changes, newest first, at most limit
// (0: all).
func (s *Service) Ledger(ctx context.Context, accountID int64, limit int) ([]LedgerEntry, error) {
	if limit < 0 {
		return nil, Invalidf("the limit is negative")
	}
	es, err := s.Store.Ledger(ctx, accountID, limit)
	if err != nil {
		return nil, accountErr(accountID, "ledger", err)
	}
	return es, nil
}

// Usage is a key's usage this month with its account's limit and balance,
// read fresh from the store.
func (s *Service) Usage(ctx context.Context, keyID string) (Usage, error) {
	now := s.now()
	k, err := s.Store.Key(ctx, keyID)
	if err != nil {
		return Usage{}, keyErr(keyID, "", err)
	}
	a, err := s.Store.Account(ctx, k.AccountID)
	if err != nil {
		return Usage{}, accountErr(k.AccountID, "", err)
	}
	period := Period(now)
	used, err := s.Store.Usage(ctx, keyID, period)
	if err != nil {
		return Usage{}, keyErr(keyID, "usage", err)
	}
	limit := Limit(a.Tier, a.CustomLimit)
	return Usage{
		KeyID:     k.ID,
		AccountID: a.ID,
		Tier:      a.Tier,
		Period:    period,
		Used:      used,
		Limit:     limit,
		Remaining: max(0, limit-used),
		Reset:     PeriodReset(now),
		Credits:   a.Credits,
	}, nil
}
