package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// timeFormat is how times are stored: fixed-width UTC text with
// microseconds, so text order is time order.
const timeFormat = "2006-01-02T15:04:05.000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: bad time %q in database: %w", s, err)
	}
	return t.UTC(), nil
}

// dbErr is the one place sql.ErrNoRows becomes account.ErrNotFound.
func dbErr(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return account.ErrNotFound
	}
	return err
}

type scanner interface{ Scan(dest ...any) error }

// queryAll runs a query on db and reads every row with scan, as
// pgx.CollectRows does for the PostgreSQL store; no rows is an empty
// slice, never nil.
func queryAll[T any](ctx context.Context, db *sql.DB, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

const accountCols = "id, name, tier, custom_limit, credits, created_at"

func scanAccount(sc scanner) (account.Account, error) {
	var a account.Account
	var tier, created string
	if err := sc.Scan(&a.ID, &a.Name, &tier, &a.CustomLimit, &a.Credits, &created); err != nil {
		return account.Account{}, dbErr(err)
	}
	t, err := parseTime(created)
	if err != nil {
		return account.Account{}, err
	}
	a.Tier, a.CreatedAt = account.Tier(tier), t
	a.MonthlyLimit = account.Limit(a.Tier, a.CustomLimit)
	return a, nil
}

const keyCols = "id, account_id, hash, label, created_at, last_used_at, revoked_at"

func scanKey(sc scanner) (account.Key, error) {
	var k account.Key
	var created string
	var lastUsed, revoked sql.NullString
	if err := sc.Scan(&k.ID, &k.AccountID, &k.Hash, &k.Label, &created, &lastUsed, &revoked); err != nil {
		return account.Key{}, dbErr(err)
	}
	t, err := parseTime(created)
	if err != nil {
		return account.Key{}, err
	}
	k.CreatedAt, k.Prefix = t, account.KeyPrefix(k.ID)
	if k.LastUsedAt, err = parseNullTime(lastUsed); err != nil {
		return account.Key{}, err
	}
	if k.RevokedAt, err = parseNullTime(revoked); err != nil {
		return account.Key{}, err
	}
	return k, nil
}

func parseNullTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

const ledgerCols = "id, account_id, delta, balance, reason, key_id, queries, created_at"

func scanLedger(sc scanner) (account.LedgerEntry, error) {
	var e account.LedgerEntry
	var keyID sql.NullString
	var created string
	if err := sc.Scan(&e.ID, &e.AccountID, &e.Delta, &e.Balance, &e.Reason, &keyID, &e.Queries, &created); err != nil {
		return account.LedgerEntry{}, dbErr(err)
	}
	t, err := parseTime(created)
	if err != nil {
		return account.LedgerEntry{}, err
	}
	e.KeyID, e.CreatedAt = keyID.String, t
	return e, nil
}

// The charge journal and the tables: every read of balances and usage
// first brings the tables up to date with the journal (settle), so that
// what this process reports includes every charge it answered; another
// process on the same file (the CLI) catches up with the server's
// journal first (catchUpOutside), and so includes every charge the server
// answered before the call too. A change of accounts or keys runs with
// the journal applied and no charge in progress (journaled.exclusive),
// and drops the state the charges decide from: the next charge of the
// account reads the change.

// settle brings the tables up to date with the journal before a read.
func (s *Store) settle(ctx context.Context) error {
	if s.jm == nil {
		return s.catchUpOutside(ctx, false)
	}
	return s.jm.settle(ctx)
}

// exclusiveTx runs fn in a write transaction with no charge in progress
// and the journal applied (journaled.exclusive).
func (s *Store) exclusiveTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.jm.exclusive(ctx, func() error { return s.inTx(ctx, fn) })
}

// inTx runs fn in a write transaction (BEGIN IMMEDIATE, from the DSN):
// the write lock is taken up front, so the reads fn makes cannot be
// invalidated by another writer before fn writes.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	return nil
}

// insertLedger writes e and sets its ID.
func insertLedger(ctx context.Context, tx *sql.Tx, e *account.LedgerEntry) error {
	var keyID any
	if e.KeyID != "" {
		keyID = e.KeyID
	}
	err := tx.QueryRowContext(ctx,
		`INSERT INTO ledger (account_id, delta, balance, reason, key_id, queries, created_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		e.AccountID, e.Delta, e.Balance, e.Reason, keyID, e.Queries, fmtTime(e.CreatedAt)).Scan(&e.ID)
	if err != nil {
		return fmt.Errorf("sqlite: ledger: %w", err)
	}
	e.CreatedAt = e.CreatedAt.UTC().Truncate(time.Microsecond)
	return nil
}

func accountExists(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id int64) error {
	var one int
	return dbErr(q.QueryRowContext(ctx, "SELECT 1 FROM accounts WHERE id = ?", id).Scan(&one))
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
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		a, err = scanAccount(tx.QueryRowContext(ctx,
			`INSERT INTO accounts (name, tier, custom_limit, credits, created_at)
			 VALUES (?, ?, ?, ?, ?) RETURNING `+accountCols,
			na.Name, string(na.Tier), na.CustomLimit, na.InitialCredits, fmtTime(at)))
		if err != nil {
			return err
		}
		if na.InitialCredits == 0 {
			return nil
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
	if err := s.settle(ctx); err != nil {
		return account.Account{}, err
	}
	return scanAccount(s.r.QueryRowContext(ctx, "SELECT "+accountCols+" FROM accounts WHERE id = ?", id))
}

// ListAccounts lists every account by ID.
func (s *Store) ListAccounts(ctx context.Context) ([]account.Account, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	return queryAll(ctx, s.r, scanAccount, "SELECT "+accountCols+" FROM accounts ORDER BY id")
}

// SetTier changes an account's tier; customLimit counts for Enterprise
// only and is stored as 0 for the others.
func (s *Store) SetTier(ctx context.Context, id int64, tier account.Tier, customLimit int64) (a account.Account, err error) {
	if customLimit, err = account.TierLimit(tier, customLimit); err != nil {
		return account.Account{}, err
	}
	err = s.jm.exclusive(ctx, func() error {
		a, err = scanAccount(s.w.QueryRowContext(ctx,
			"UPDATE accounts SET tier = ?, custom_limit = ? WHERE id = ? RETURNING "+accountCols,
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
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := accountExists(ctx, tx, k.AccountID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			"INSERT INTO api_keys (id, account_id, hash, label, created_at) VALUES (?, ?, ?, ?, ?)",
			k.ID, k.AccountID, k.Hash, k.Label, fmtTime(at))
		if err != nil {
			return fmt.Errorf("sqlite: create key: %w", err)
		}
		return nil
	})
}

// Key returns one key.
func (s *Store) Key(ctx context.Context, id string) (account.Key, error) {
	if err := s.settle(ctx); err != nil {
		return account.Key{}, err
	}
	return scanKey(s.r.QueryRowContext(ctx, "SELECT "+keyCols+" FROM api_keys WHERE id = ?", id))
}

// ListKeys lists an account's keys, oldest first; ErrNotFound if there is
// no such account.
func (s *Store) ListKeys(ctx context.Context, accountID int64) ([]account.Key, error) {
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := accountExists(ctx, s.r, accountID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s.r, scanKey,
		"SELECT "+keyCols+" FROM api_keys WHERE account_id = ? ORDER BY created_at, id", accountID)
}

// RevokeKey marks a key revoked at at; a key already revoked keeps its
// first revocation time.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) (k account.Key, err error) {
	err = s.jm.exclusive(ctx, func() error {
		k, err = scanKey(s.w.QueryRowContext(ctx,
			"UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ? RETURNING "+keyCols,
			fmtTime(at), id))
		return err
	})
	return k, err
}

// RotateKey replaces a live key's hash; ErrRevoked for a revoked key.
func (s *Store) RotateKey(ctx context.Context, id string, hash []byte) (k account.Key, err error) {
	if err := account.CheckHash(hash); err != nil {
		return account.Key{}, err
	}
	err = s.jm.exclusive(ctx, func() error {
		k, err = scanKey(s.w.QueryRowContext(ctx,
			"UPDATE api_keys SET hash = ? WHERE id = ? AND revoked_at IS NULL RETURNING "+keyCols,
			hash, id))
		if errors.Is(err, account.ErrNotFound) {
			var one int
			if err := dbErr(s.w.QueryRowContext(ctx, "SELECT 1 FROM api_keys WHERE id = ?", id).Scan(&one)); err != nil {
				return err
			}
			return account.ErrRevoked
		}
		return err
	})
	if err != nil {
		return account.Key{}, err
	}
	return k, nil
}

// AddCredits changes a balance and writes its ledger entry in one
// transaction; a deduction is checked against the balance with every
// answered charge in it, and the charges answered before it come before
// it in the ledger, also when another process (the CLI) makes it.
func (s *Store) AddCredits(ctx context.Context, accountID, delta int64, reason string, at time.Time) (account.LedgerEntry, error) {
	if s.jm == nil {
		if err := s.catchUpOutside(ctx, true); err != nil {
			return account.LedgerEntry{}, err
		}
	}
	e := account.LedgerEntry{AccountID: accountID, Delta: delta, Reason: reason, CreatedAt: at}
	err := s.exclusiveTx(ctx, func(tx *sql.Tx) error {
		err := dbErr(tx.QueryRowContext(ctx,
			`UPDATE accounts SET credits = credits + ?1
			 WHERE id = ?2 AND credits + ?1 >= 0 RETURNING credits`,
			delta, accountID).Scan(&e.Balance))
		if errors.Is(err, account.ErrNotFound) {
			// No row: either no such account or not enough credits.
			if err := accountExists(ctx, tx, accountID); err != nil {
				return err
			}
			return account.ErrInsufficient
		}
		if err != nil {
			return fmt.Errorf("sqlite: add credits: %w", err)
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
	if err := s.settle(ctx); err != nil {
		return nil, err
	}
	if err := accountExists(ctx, s.r, accountID); err != nil {
		return nil, err
	}
	q := "SELECT " + ledgerCols + " FROM ledger WHERE account_id = ? ORDER BY id DESC"
	args := []any{accountID}
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	return queryAll(ctx, s.r, scanLedger, q, args...)
}

// Usage is a key's counter for a period: 0 when nothing was charged,
// ErrNotFound when there is no such key.
func (s *Store) Usage(ctx context.Context, keyID, period string) (int64, error) {
	if err := s.settle(ctx); err != nil {
		return 0, err
	}
	var used int64
	err := s.r.QueryRowContext(ctx,
		`SELECT COALESCE((SELECT used FROM key_usage WHERE key_id = ?1 AND period = ?2), 0)
		 FROM api_keys WHERE id = ?1`, keyID, period).Scan(&used)
	return used, dbErr(err)
}
