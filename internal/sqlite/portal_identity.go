package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The portal's identity side: owners, their one-time tokens, sessions,
// tier requests and the audit log.

// isUnique reports a UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// conflict maps a uniqueness violation to account.ErrConflict saying what
// clashed, and wraps any other failure of op.
func conflict(op, what string, err error) error {
	if isUnique(err) {
		return fmt.Errorf("%w: %s", account.ErrConflict, what)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return fmtTime(*t)
}

// checkAffected turns an UPDATE that matched no row into ErrNotFound.
func checkAffected(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return account.ErrNotFound
	}
	return nil
}

type queryRower interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

const ownerCols = "id, account_id, email, password_hash, created_at, failed_signins, locked_until"

func scanOwner(sc scanner) (account.Owner, error) {
	var o account.Owner
	var created string
	var locked sql.NullString
	if err := sc.Scan(&o.ID, &o.AccountID, &o.Email, &o.PasswordHash, &created, &o.FailedSignins, &locked); err != nil {
		return account.Owner{}, dbErr(err)
	}
	var err error
	if o.CreatedAt, err = parseTime(created); err != nil {
		return account.Owner{}, err
	}
	if o.LockedUntil, err = parseNullTime(locked); err != nil {
		return account.Owner{}, err
	}
	o.HasPassword = o.PasswordHash != ""
	return o, nil
}

func ownerExists(ctx context.Context, q queryRower, id int64) error {
	var one int
	return dbErr(q.QueryRowContext(ctx, "SELECT 1 FROM owners WHERE id = ?", id).Scan(&one))
}

// CreateOwner adds an owner without a password to an existing account;
// an email that already owns an account is ErrConflict.
func (s *Store) CreateOwner(ctx context.Context, accountID int64, email string, at time.Time) (account.Owner, error) {
	if err := account.CheckOwnerEmail(email); err != nil {
		return account.Owner{}, err
	}
	var o account.Owner
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		var err error
		o, err = scanOwner(tx.QueryRowContext(ctx,
			"INSERT INTO owners (account_id, email, created_at) VALUES (?, ?, ?) RETURNING "+ownerCols,
			accountID, email, fmtTime(account.OrNow(at))))
		if err != nil {
			return conflict("create owner", "the email "+email+" already owns an account", err)
		}
		return nil
	})
	if err != nil {
		return account.Owner{}, err
	}
	return o, nil
}

// Owner returns one owner.
func (s *Store) Owner(ctx context.Context, id int64) (account.Owner, error) {
	return scanOwner(s.r.QueryRowContext(ctx, "SELECT "+ownerCols+" FROM owners WHERE id = ?", id))
}

// OwnerByEmail returns the owner with an email (as stored: lower-cased).
func (s *Store) OwnerByEmail(ctx context.Context, email string) (account.Owner, error) {
	return scanOwner(s.r.QueryRowContext(ctx, "SELECT "+ownerCols+" FROM owners WHERE email = ?", email))
}

// ListOwners lists an account's owners, oldest first; ErrNotFound if
// there is no such account.
func (s *Store) ListOwners(ctx context.Context, accountID int64) ([]account.Owner, error) {
	if err := accountExists(ctx, s.r, accountID); err != nil {
		return nil, err
	}
	return queryAll(ctx, s.r, scanOwner, "SELECT "+ownerCols+" FROM owners WHERE account_id = ? ORDER BY id", accountID)
}

// SigninFailed counts a failure in one statement, so concurrent failures
// all count, and keeps the later of the two locks (times are fixed-width
// text, so they compare as text).
func (s *Store) SigninFailed(ctx context.Context, ownerID int64, lockedUntil *time.Time) (int64, error) {
	var n int64
	err := s.w.QueryRowContext(ctx,
		`UPDATE owners SET failed_signins = failed_signins + 1,
		   locked_until = CASE WHEN ?1 IS NOT NULL AND (locked_until IS NULL OR locked_until < ?1) THEN ?1 ELSE locked_until END
		 WHERE id = ?2 RETURNING failed_signins`,
		nullTime(lockedUntil), ownerID).Scan(&n)
	return n, dbErr(err)
}

// SigninSucceeded clears the failures and the lock.
func (s *Store) SigninSucceeded(ctx context.Context, ownerID int64) error {
	return checkAffected(s.w.ExecContext(ctx,
		"UPDATE owners SET failed_signins = 0, locked_until = NULL WHERE id = ?", ownerID))
}

// CreateOwnerToken stores a one-time token of an existing owner.
func (s *Store) CreateOwnerToken(ctx context.Context, t account.OwnerToken) error {
	if err := t.Validate(); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := ownerExists(ctx, tx, t.OwnerID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			"INSERT INTO owner_tokens (hash, owner_id, purpose, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
			t.Hash, t.OwnerID, t.Purpose, fmtTime(account.OrNow(t.CreatedAt)), fmtTime(t.ExpiresAt))
		if err != nil {
			return conflict("create token", "a token with this hash exists", err)
		}
		return nil
	})
}

// UseOwnerToken redeems a token: one write transaction marks it used,
// sets the password, clears the failures and the lock and revokes the
// owner's sessions. The write lock taken at BEGIN serializes redemptions,
// so of two racing for one token the second finds it used.
func (s *Store) UseOwnerToken(ctx context.Context, hash []byte, at time.Time, passwordHash string) (account.Owner, error) {
	if err := account.CheckPasswordHash(passwordHash); err != nil {
		return account.Owner{}, err
	}
	if len(hash) == 0 {
		return account.Owner{}, account.ErrNotFound
	}
	ts := fmtTime(at)
	var o account.Owner
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var ownerID int64
		err := tx.QueryRowContext(ctx,
			`UPDATE owner_tokens SET used_at = ?1
			 WHERE hash = ?2 AND used_at IS NULL AND expires_at > ?1 RETURNING owner_id`,
			ts, hash).Scan(&ownerID)
		if err != nil {
			return dbErr(err)
		}
		o, err = scanOwner(tx.QueryRowContext(ctx,
			`UPDATE owners SET password_hash = ?, failed_signins = 0, locked_until = NULL
			 WHERE id = ? RETURNING `+ownerCols, passwordHash, ownerID))
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx,
			"UPDATE owner_tokens SET used_at = ? WHERE owner_id = ? AND used_at IS NULL", ts, ownerID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx,
			"UPDATE sessions SET revoked_at = ? WHERE owner_id = ? AND revoked_at IS NULL", ts, ownerID)
		return err
	})
	if err != nil {
		return account.Owner{}, err
	}
	return o, nil
}

// Sessions are read with their owner's account.
const sessionCols = `s.id, s.hash, s.kind, COALESCE(s.owner_id, 0), COALESCE(o.account_id, 0), s.csrf,
	s.created_at, s.last_seen_at, s.expires_at, s.revoked_at`

func scanSession(sc scanner) (account.Session, error) {
	var se account.Session
	var created, seen, expires string
	var revoked sql.NullString
	if err := sc.Scan(&se.ID, &se.Hash, &se.Kind, &se.OwnerID, &se.AccountID, &se.CSRF,
		&created, &seen, &expires, &revoked); err != nil {
		return account.Session{}, dbErr(err)
	}
	var err error
	for _, p := range []struct {
		dst *time.Time
		s   string
	}{{&se.CreatedAt, created}, {&se.LastSeenAt, seen}, {&se.ExpiresAt, expires}} {
		if *p.dst, err = parseTime(p.s); err != nil {
			return account.Session{}, err
		}
	}
	if se.RevokedAt, err = parseNullTime(revoked); err != nil {
		return account.Session{}, err
	}
	return se, nil
}

// CreateSession stores a session; the owner of an owner's session must
// exist. A zero CreatedAt is now; a zero LastSeenAt is CreatedAt.
func (s *Store) CreateSession(ctx context.Context, se account.Session) error {
	if err := se.Validate(); err != nil {
		return err
	}
	se = se.Stamped()
	var owner any
	if se.OwnerID != 0 {
		owner = se.OwnerID
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if se.OwnerID != 0 {
			if err := ownerExists(ctx, tx, se.OwnerID); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx,
			`INSERT INTO sessions (id, hash, kind, owner_id, csrf, created_at, last_seen_at, expires_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			se.ID, se.Hash, se.Kind, owner, se.CSRF, fmtTime(se.CreatedAt), fmtTime(se.LastSeenAt), fmtTime(se.ExpiresAt))
		if err != nil {
			return conflict("create session", "a session with this ID or hash exists", err)
		}
		return nil
	})
}

// SessionByHash returns a session, revoked and expired ones included,
// with its owner's account.
func (s *Store) SessionByHash(ctx context.Context, hash []byte) (account.Session, error) {
	return scanSession(s.r.QueryRowContext(ctx,
		"SELECT "+sessionCols+" FROM sessions s LEFT JOIN owners o ON o.id = s.owner_id WHERE s.hash = ?", hash))
}

// TouchSession moves a session's LastSeenAt forward to at; an older at
// (a slower request finishing late) leaves it where it is.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	return checkAffected(s.w.ExecContext(ctx,
		"UPDATE sessions SET last_seen_at = max(last_seen_at, ?) WHERE id = ?", fmtTime(at), id))
}

// RevokeSession revokes a session; one already revoked keeps its first
// revocation time.
func (s *Store) RevokeSession(ctx context.Context, id string, at time.Time) error {
	return checkAffected(s.w.ExecContext(ctx,
		"UPDATE sessions SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", fmtTime(at), id))
}

// RevokeOwnerSessions revokes an owner's unrevoked, unexpired sessions
// and counts them.
func (s *Store) RevokeOwnerSessions(ctx context.Context, ownerID int64, at time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := ownerExists(ctx, tx, ownerID); err != nil {
			return err
		}
		ts := fmtTime(at)
		res, err := tx.ExecContext(ctx,
			"UPDATE sessions SET revoked_at = ?1 WHERE owner_id = ?2 AND revoked_at IS NULL AND expires_at > ?1",
			ts, ownerID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// PurgeEnded deletes the sessions and one-time tokens that ended before
// before.
func (s *Store) PurgeEnded(ctx context.Context, before time.Time) (sessions, tokens int64, err error) {
	ts := fmtTime(before)
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			"DELETE FROM sessions WHERE expires_at < ?1 OR revoked_at < ?1", ts)
		if err != nil {
			return err
		}
		if sessions, err = res.RowsAffected(); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx,
			"DELETE FROM owner_tokens WHERE expires_at < ?1 OR used_at < ?1", ts)
		if err != nil {
			return err
		}
		tokens, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return sessions, tokens, nil
}

const requestCols = "id, account_id, COALESCE(owner_id, 0), tier, monthly_limit, note, status, created_at, decided_at"

func scanRequest(sc scanner) (account.TierRequest, error) {
	var r account.TierRequest
	var tier, created string
	var decided sql.NullString
	if err := sc.Scan(&r.ID, &r.AccountID, &r.OwnerID, &tier, &r.MonthlyLimit, &r.Note, &r.Status,
		&created, &decided); err != nil {
		return account.TierRequest{}, dbErr(err)
	}
	var err error
	r.Tier = account.Tier(tier)
	if r.CreatedAt, err = parseTime(created); err != nil {
		return account.TierRequest{}, err
	}
	if r.DecidedAt, err = parseNullTime(decided); err != nil {
		return account.TierRequest{}, err
	}
	return r, nil
}

// CreateTierRequest stores a pending request of an existing account (and
// owner of it, when OwnerID is set). The partial unique index on pending
// requests makes a second one ErrConflict, whoever races to insert it.
func (s *Store) CreateTierRequest(ctx context.Context, r account.TierRequest) (account.TierRequest, error) {
	r, err := r.Checked()
	if err != nil {
		return account.TierRequest{}, err
	}
	var owner any
	if r.OwnerID != 0 {
		owner = r.OwnerID
	}
	var out account.TierRequest
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if err := accountExists(ctx, tx, r.AccountID); err != nil {
			return err
		}
		if r.OwnerID != 0 {
			var acct int64
			if err := dbErr(tx.QueryRowContext(ctx, "SELECT account_id FROM owners WHERE id = ?", r.OwnerID).Scan(&acct)); err != nil {
				return err
			}
			if err := r.CheckOwner(acct); err != nil {
				return err
			}
		}
		var err error
		out, err = scanRequest(tx.QueryRowContext(ctx,
			`INSERT INTO tier_requests (account_id, owner_id, tier, monthly_limit, note, status, created_at)
			 VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+requestCols,
			r.AccountID, owner, string(r.Tier), r.MonthlyLimit, r.Note, r.Status, fmtTime(r.CreatedAt)))
		if err != nil {
			return conflict("create tier request", "the account already has a pending request", err)
		}
		return nil
	})
	if err != nil {
		return account.TierRequest{}, err
	}
	return out, nil
}

// TierRequests lists requests newest first, of one account (0: all) and
// one status ("": all).
func (s *Store) TierRequests(ctx context.Context, accountID int64, status string) ([]account.TierRequest, error) {
	if err := account.CheckStatusFilter(status); err != nil {
		return nil, err
	}
	if accountID != 0 {
		if err := accountExists(ctx, s.r, accountID); err != nil {
			return nil, err
		}
	}
	q, args := "SELECT "+requestCols+" FROM tier_requests WHERE true", []any{}
	if accountID != 0 {
		q, args = q+" AND account_id = ?", append(args, accountID)
	}
	if status != "" {
		q, args = q+" AND status = ?", append(args, status)
	}
	return queryAll(ctx, s.r, scanRequest, q+" ORDER BY id DESC", args...)
}

// DecideTierRequest decides a pending request in one transaction, with no
// charge in progress: the request leaves pending and, when approved, the
// account takes its tier and limit.
func (s *Store) DecideTierRequest(ctx context.Context, id int64, approve bool, at time.Time) (account.TierRequest, account.Account, error) {
	status := account.Decision(approve)
	var r account.TierRequest
	var a account.Account
	err := s.exclusiveTx(ctx, func(tx *sql.Tx) error {
		var err error
		r, err = scanRequest(tx.QueryRowContext(ctx,
			`UPDATE tier_requests SET status = ?, decided_at = ? WHERE id = ? AND status = 'pending'
			 RETURNING `+requestCols, status, fmtTime(account.OrNow(at)), id))
		if errors.Is(err, account.ErrNotFound) {
			var one int
			if err := dbErr(tx.QueryRowContext(ctx, "SELECT 1 FROM tier_requests WHERE id = ?", id).Scan(&one)); err != nil {
				return err
			}
			return account.NotPending(id)
		}
		if err != nil {
			return err
		}
		if !approve {
			a, err = scanAccount(tx.QueryRowContext(ctx, "SELECT "+accountCols+" FROM accounts WHERE id = ?", r.AccountID))
			return err
		}
		limit, err := account.TierLimit(r.Tier, r.MonthlyLimit)
		if err != nil {
			return err
		}
		a, err = scanAccount(tx.QueryRowContext(ctx,
			"UPDATE accounts SET tier = ?, custom_limit = ? WHERE id = ? RETURNING "+accountCols,
			string(r.Tier), limit, r.AccountID))
		return err
	})
	if err != nil {
		return account.TierRequest{}, account.Account{}, err
	}
	return r, a, nil
}

const auditCols = "id, at, actor, action, COALESCE(account_id, 0), target, detail"

func scanAudit(sc scanner) (account.AuditEntry, error) {
	var e account.AuditEntry
	var at string
	if err := sc.Scan(&e.ID, &at, &e.Actor, &e.Action, &e.AccountID, &e.Target, &e.Detail); err != nil {
		return account.AuditEntry{}, dbErr(err)
	}
	var err error
	e.At, err = parseTime(at)
	return e, err
}

// AppendAudit stores an entry (a zero At is now) and returns it as
// stored, with its ID.
func (s *Store) AppendAudit(ctx context.Context, e account.AuditEntry) (account.AuditEntry, error) {
	if err := e.Validate(); err != nil {
		return account.AuditEntry{}, err
	}
	var acct any
	if e.AccountID != 0 {
		acct = e.AccountID
	}
	out, err := scanAudit(s.w.QueryRowContext(ctx,
		`INSERT INTO audit_log (at, actor, action, account_id, target, detail)
		 VALUES (?, ?, ?, ?, ?, ?) RETURNING `+auditCols,
		fmtTime(account.OrNow(e.At)), e.Actor, e.Action, acct, e.Target, e.Detail))
	if err != nil {
		return account.AuditEntry{}, fmt.Errorf("sqlite: audit: %w", err)
	}
	return out, nil
}

// Audit lists entries with ID < before (0: from the newest), newest
// first, of one account (0: all), at most limit (0: all).
func (s *Store) Audit(ctx context.Context, accountID, before int64, limit int) ([]account.AuditEntry, error) {
	if accountID != 0 {
		if err := accountExists(ctx, s.r, accountID); err != nil {
			return nil, err
		}
	}
	// The conditions are added only when set, so that the planner uses
	// the (account_id, id) index or the primary key.
	q, args := "SELECT "+auditCols+" FROM audit_log WHERE true", []any{}
	if accountID != 0 {
		q, args = q+" AND account_id = ?", append(args, accountID)
	}
	if before > 0 {
		q, args = q+" AND id < ?", append(args, before)
	}
	q += " ORDER BY id DESC"
	if limit > 0 {
		q, args = q+" LIMIT ?", append(args, limit)
	}
	return queryAll(ctx, s.r, scanAudit, q, args...)
}
