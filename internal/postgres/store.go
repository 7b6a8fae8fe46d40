package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/jackc/pgx/v5"
)

// dbErr is the one place pgx.ErrNoRows becomes account.ErrNotFound; any
// other failure is wrapped by fail.
func dbErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return account.ErrNotFound
	case errors.Is(err, account.ErrNotFound), errors.Is(err, account.ErrInsufficient),
		errors.Is(err, account.ErrInvalid), errors.Is(err, account.ErrRevoked),
		errors.Is(err, account.ErrConflict):
		return err
	}
	return fail(op, err)
}

const accountCols = "id, name, tier, custom_limit, credits, created_at"

func scanAccount(row pgx.Row) (account.Account, error) {
	var a account.Account
	var tier string
	if err := row.Scan(&a.ID, &a.Name, &tier, &a.CustomLimit, &a.Credits, &a.CreatedAt); err != nil {
		return account.Account{}, err
	}
	a.Tier, a.CreatedAt = account.Tier(tier), a.CreatedAt.UTC()
	a.MonthlyLimit = account.Limit(a.Tier, a.CustomLimit)
	return a, nil
}

const keyCols = "id, account_id, hash, label, created_at, last_used_at, revoked_at"

func scanKey(row pgx.Row) (account.Key, error) {
	var k account.Key
	if err := row.Scan(&k.ID, &k.AccountID, &k.Hash, &k.Label, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt); err != nil {
		return account.Key{}, err
	}
	k.CreatedAt, k.Prefix = k.CreatedAt.UTC(), account.KeyPrefix(k.ID)
	k.LastUsedAt, k.RevokedAt = utcPtr(k.LastUsedAt), utcPtr(k.RevokedAt)
	return k, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

const ledgerCols = "id, account_id, delta, balance, reason, COALESCE(key_id, ''), queries, created_at"

func scanLedger(row pgx.Row) (account.LedgerEntry, error) {
	var e account.LedgerEntry
	if err := row.Scan(&e.ID, &e.AccountID, &e.Delta, &e.Balance, &e.Reason, &e.KeyID, &e.Queries, &e.CreatedAt); err != nil {
		return account.LedgerEntry{}, err
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return e, nil
}

// inTx runs fn in a transaction, again if it fails before its commit
// in a way that retryable allows.
func (s *Store) inTx(ctx context.Context, op string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.run(ctx, op, func(ctx context.Context) error {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) // a no-op after Commit
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return commitError{err}
		}
		return nil
	})
}

// insertLedger writes e and sets its ID; the caller holds the account's
// row lock, so ledger IDs follow balance order within an account.
func insertLedger(ctx context.Context, tx pgx.Tx, e *account.LedgerEntry) error {
	var keyID *string
	if e.KeyID != "" {
		keyID = &e.KeyID
	}
	err := tx.QueryRow(ctx,
		`INSERT INTO ledger (account_id, delta, balance, reason, key_id, queries, created_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at`,
		e.AccountID, e.Delta, e.Balance, e.Reason, keyID, e.Queries, e.CreatedAt).Scan(&e.ID, &e.CreatedAt)
	e.CreatedAt = e.CreatedAt.UTC()
	return err
}

func accountExists(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id int64) error {
	var one int
	return q.QueryRow(ctx, "SELECT 1 FROM accounts WHERE id = $1", id).Scan(&one)
}

// CreateAccount creates an account and, when it starts with credits,
// their ledger entry, in one transaction.
func (s *Store) CreateAccount(ctx context.Context, na account.NewAccount) (account.Account, error) {
	na, err := na.Normalized()
	if err != nil {
		return account.Account{}, err
	}
	at, reason := na.At, na.Reason
	var a account.Account
	err = s.inTx(ctx, "create account", func(ctx context.Context, tx pgx.Tx) error {
		var err error
		a, err = scanAccount(tx.QueryRow(ctx,
			`INSERT INTO accounts (name, tier, custom_limit, credits, created_at)
			 VALUES ($1, $2, $3, $4, $5) RETURNING `+accountCols,
			na.Name, string(na.Tier), na.CustomLimit, na.InitialCredits, at))
		if err != nil || na.InitialCredits == 0 {
			return err
		}
		return insertLedger(ctx, tx, &account.LedgerEntry{
			AccountID: a.ID, Delta: na.InitialCredits, Balance: na.InitialCredits,
			Reason: reason, CreatedAt: at,
		})
	})
	if err != nil {
		return account.Account{}, err
	}
	return a, nil
}

// Account returns one account.
func (s *Store) Account(ctx context.Context, id int64) (account.Account, error) {
	var a account.Account
	err := s.run(ctx, "account", func(ctx context.Context) (err error) {
		a, err = scanAccount(s.pool.QueryRow(ctx, "SELECT "+accountCols+" FROM accounts WHERE id = $1", id))
		return err
	})
	return a, err
}

// ListAccounts lists every account by ID.
func (s *Store) ListAccounts(ctx context.Context) ([]account.Account, error) {
	var as []account.Account
	err := s.run(ctx, "list accounts", func(ctx context.Context) (err error) {
		rows, _ := s.pool.Query(ctx, "SELECT "+accountCols+" FROM accounts ORDER BY id")
		as, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.Account, error) { return scanAccount(r) })
		return err
	})
	return as, err
}

// SetTier changes an account's tier; customLimit counts for Enterprise
// only and is stored as 0 for the others.
func (s *Store) SetTier(ctx context.Context, id int64, tier account.Tier, customLimit int64) (account.Account, error) {
	customLimit, err := account.TierLimit(tier, customLimit)
	if err != nil {
		return account.Account{}, err
	}
	var a account.Account
	// Setting the same values twice is harmless, so a lost answer may be
	// retried like a read.
	err = s.run(ctx, "set tier", func(ctx context.Context) (err error) {
		a, err = scanAccount(s.pool.QueryRow(ctx,
			"UPDATE accounts SET tier = $1, custom_limit = $2 WHERE id = $3 RETURNING "+accountCols,
			string(tier), customLimit, id))
		return err
	})
	return a, err
}

// CreateKey stores a new key of an existing account.
func (s *Store) CreateKey(ctx context.Context, k account.Key) error {
	if err := k.Validate(); err != nil {
		return err
	}
	at := account.OrNow(k.CreatedAt)
	return s.inTx(ctx, "create key", func(ctx context.Context, tx pgx.Tx) error {
		if err := accountExists(ctx, tx, k.AccountID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx,
			"INSERT INTO api_keys (id, account_id, hash, label, created_at) VALUES ($1, $2, $3, $4, $5)",
			k.ID, k.AccountID, k.Hash, k.Label, at)
		return err
	})
}

// Key returns one key.
func (s *Store) Key(ctx context.Context, id string) (account.Key, error) {
	var k account.Key
	err := s.run(ctx, "key", func(ctx context.Context) (err error) {
		k, err = scanKey(s.pool.QueryRow(ctx, "SELECT "+keyCols+" FROM api_keys WHERE id = $1", id))
		return err
	})
	return k, err
}

// ListKeys lists an account's keys, oldest first; ErrNotFound if there is
// no such account.
func (s *Store) ListKeys(ctx context.Context, accountID int64) ([]account.Key, error) {
	var ks []account.Key
	err := s.run(ctx, "list keys", func(ctx context.Context) (err error) {
		if err := accountExists(ctx, s.pool, accountID); err != nil {
			return err
		}
		rows, _ := s.pool.Query(ctx,
			"SELECT "+keyCols+" FROM api_keys WHERE account_id = $1 ORDER BY created_at, id", accountID)
		ks, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.Key, error) { return scanKey(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if ks == nil {
		ks = []account.Key{}
	}
	return ks, nil
}

// RevokeKey marks a key revoked at at; a key already revoked keeps its
// first revocation time.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) (account.Key, error) {
	var k account.Key
	err := s.run(ctx, "revoke key", func(ctx context.Context) (err error) { // idempotent
		k, err = scanKey(s.pool.QueryRow(ctx,
			"UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2 RETURNING "+keyCols,
			at, id))
		return err
	})
	return k, err
}

// RotateKey replaces a live key's hash; ErrRevoked for a revoked key.
func (s *Store) RotateKey(ctx context.Context, id string, hash []byte) (account.Key, error) {
	if err := account.CheckHash(hash); err != nil {
		return account.Key{}, err
	}
	var k account.Key
	err := s.run(ctx, "rotate key", func(ctx context.Context) (err error) { // idempotent
		k, err = scanKey(s.pool.QueryRow(ctx,
			"UPDATE api_keys SET hash = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING "+keyCols,
			hash, id))
		return err
	})
	if errors.Is(err, account.ErrNotFound) {
		if _, err := s.Key(ctx, id); err != nil {
			return account.Key{}, err
		}
		return account.Key{}, account.ErrRevoked
	}
	return k, err
}

// AddCredits changes a balance and writes its ledger entry in one
// transaction; the UPDATE's row lock orders it with charges.
func (s *Store) AddCredits(ctx context.Context, accountID, delta int64, reason string, at time.Time) (account.LedgerEntry, error) {
	e := account.LedgerEntry{AccountID: accountID, Delta: delta, Reason: reason, CreatedAt: at}
	err := s.inTx(ctx, "add credits", func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx,
			`UPDATE accounts SET credits = credits + $1
			 WHERE id = $2 AND credits + $1 >= 0 RETURNING credits`,
			delta, accountID).Scan(&e.Balance)
		if errors.Is(err, pgx.ErrNoRows) {
			if err := accountExists(ctx, tx, accountID); err != nil {
				return err
			}
			return account.ErrInsufficient
		}
		if err != nil {
			return err
		}
		return insertLedger(ctx, tx, &e)
	})
	if err != nil {
		return account.LedgerEntry{}, err
	}
	return e, nil
}

// Ledger lists an account's entries, newest first.
func (s *Store) Ledger(ctx context.Context, accountID int64, limit int) ([]account.LedgerEntry, error) {
	q := "SELECT " + ledgerCols + " FROM ledger WHERE account_id = $1 ORDER BY id DESC"
	args := []any{accountID}
	if limit > 0 {
		q += " LIMIT $2"
		args = append(args, limit)
	}
	var es []account.LedgerEntry
	err := s.run(ctx, "ledger", func(ctx context.Context) (err error) {
		if err := accountExists(ctx, s.pool, accountID); err != nil {
			return err
		}
		rows, _ := s.pool.Query(ctx, q, args...)
		es, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.LedgerEntry, error) { return scanLedger(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if es == nil {
		es = []account.LedgerEntry{}
	}
	return es, nil
}

// Usage is a key's counter for a period: 0 when nothing was charged,
// ErrNotFound when there is no such key.
func (s *Store) Usage(ctx context.Context, keyID, period string) (int64, error) {
	var used int64
	err := s.run(ctx, "usage", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx,
			`SELECT COALESCE((SELECT used FROM key_usage WHERE key_id = $1 AND period = $2), 0)
			 FROM api_keys WHERE id = $1`, keyID, period).Scan(&used)
	})
	return used, err
}
