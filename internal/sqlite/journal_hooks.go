package sqlite

import (
	"context"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// The reads of balances and usage first bring the tables up to date with
// the charge journal, so that what this process reports includes every
// charge it answered. Another process on the same file (the CLI) catches
// up with the server's journal first (catchUpOutside), and so includes
// every charge the server answered before the call too.

// settle brings the tables up to date with the journal before a read.
func (s *Store) settle(ctx context.Context) error {
	if s.jm == nil {
		return s.catchUpOutside(ctx, false)
	}
	return s.jm.settle(ctx)
}

// Account returns one account.
func (s *Store) Account(ctx context.Context, id int64) (account.Account, error) {
	if err := s.settle(ctx); err != nil {
		return account.Account{}, err
	}
	return s.tablesAccount(ctx, id)
}

// ListAccounts lists every account by ID.
func (s *Store) ListAccounts(ctx context.Context) ([]account.Account, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesListAccounts(ctx)
}

// Usage is a key's counter for a period: 0 when nothing was charged,
// ErrNotFound when there is no such key.
func (s *Store) Usage(ctx context.Context, keyID, period string) (int64, error) {
	if err := s.settle(ctx); err != nil {
		return 0, err
	}
	return s.tablesUsage(ctx, keyID, period)
}

// Ledger lists an account's entries, newest first.
func (s *Store) Ledger(ctx context.Context, accountID int64, limit int) ([]account.LedgerEntry, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesLedger(ctx, accountID, limit)
}

// KeyUsages maps each key of an account to its usage in period; keys
// without usage are absent.
func (s *Store) KeyUsages(ctx context.Context, accountID int64, period string) (map[string]int64, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesKeyUsages(ctx, accountID, period)
}

// DailyUsage lists an account's per-key daily counters for the days
// from..to, ordered by day then key.
func (s *Store) DailyUsage(ctx context.Context, accountID int64, from, to string) ([]account.DayUsage, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesDailyUsage(ctx, accountID, from, to)
}

// LedgerPage lists an account's entries with ID < before (0: from the
// newest), newest first, at most limit.
func (s *Store) LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]account.LedgerEntry, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesLedgerPage(ctx, accountID, before, limit)
}

// SearchAccounts lists accounts matching q with their usage in period.
func (s *Store) SearchAccounts(ctx context.Context, q, period string, limit int) ([]account.AccountSummary, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesSearchAccounts(ctx, q, period, limit)
}

// TopConsumers lists the n accounts with the most queries in period.
func (s *Store) TopConsumers(ctx context.Context, period string, n int) ([]account.AccountSummary, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesTopConsumers(ctx, period, n)
}

// The changes of accounts and keys run with the journal applied and no
// charge in progress, and drop the state the charges decide from: the
// next charge of the account reads the change.

// SetTier changes an account's tier; customLimit counts for Enterprise
// only and is stored as 0 for the others.
func (s *Store) SetTier(ctx context.Context, id int64, tier account.Tier, customLimit int64) (a account.Account, err error) {
	err = s.jm.exclusive(ctx, func() error {
		a, err = s.tablesSetTier(ctx, id, tier, customLimit)
		return err
	})
	return a, err
}

// RevokeKey marks a key revoked at at; a key already revoked keeps its
// first revocation time.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) (k account.Key, err error) {
	err = s.jm.exclusive(ctx, func() error {
		k, err = s.tablesRevokeKey(ctx, id, at)
		return err
	})
	return k, err
}

// RotateKey replaces a live key's hash; ErrRevoked for a revoked key.
func (s *Store) RotateKey(ctx context.Context, id string, hash []byte) (k account.Key, err error) {
	err = s.jm.exclusive(ctx, func() error {
		k, err = s.tablesRotateKey(ctx, id, hash)
		return err
	})
	return k, err
}

// SetKeyLabel changes a key's label.
func (s *Store) SetKeyLabel(ctx context.Context, id, label string) (account.Key, error) {
	return s.tablesSetKeyLabel(ctx, id, label)
}

// AddCredits changes a balance and writes its ledger entry in one
// transaction; a deduction is checked against the balance with every
// answered charge in it, and the charges answered before it come before
// it in the ledger, also when another process (the CLI) makes it.
func (s *Store) AddCredits(ctx context.Context, accountID, delta int64, reason string, at time.Time) (e account.LedgerEntry, err error) {
	if s.jm == nil {
		if err := s.catchUpOutside(ctx, true); err != nil {
			return account.LedgerEntry{}, err
		}
	}
	err = s.jm.exclusive(ctx, func() error {
		e, err = s.tablesAddCredits(ctx, accountID, delta, reason, at)
		return err
	})
	return e, err
}

// DecideTierRequest decides a pending request in one transaction: the
// request leaves pending and, when approved, the account takes its tier
// and limit.
func (s *Store) DecideTierRequest(ctx context.Context, id int64, approve bool, at time.Time) (r account.TierRequest, a account.Account, err error) {
	err = s.jm.exclusive(ctx, func() error {
		r, a, err = s.tablesDecideTierRequest(ctx, id, approve, at)
		return err
	})
	return r, a, err
}

// Key returns one key.
func (s *Store) Key(ctx context.Context, id string) (account.Key, error) {
	if err := s.settle(ctx); err != nil {
		return account.Key{}, err
	}
	return s.tablesKey(ctx, id)
}

// ListKeys lists an account's keys, oldest first; ErrNotFound if there is
// no such account.
func (s *Store) ListKeys(ctx context.Context, accountID int64) ([]account.Key, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return s.tablesListKeys(ctx, accountID)
}
