package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The portal's identity side: owners, their one-time tokens, sessions,
// tier requests and the audit log. Writes that are not idempotent run in
// a transaction, so that a lost answer to the commit is reported instead
// of retried (see inTx); idempotent ones may be retried as reads are.

// conflict maps a uniqueness violation to account.ErrConflict saying what
// clashed; other errors pass unchanged.
func conflict(what string, err error) error {
	if pgCode(err) == "23505" {
		return fmt.Errorf("%w: %s", account.ErrConflict, what)
	}
	return err
}

// nullID is id, or NULL for 0.
func nullID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// notFoundUnless turns a statement that touched no row into ErrNotFound.
func notFoundUnless(tag pgconn.CommandTag, err error) error {
	if err == nil && tag.RowsAffected() == 0 {
		return account.ErrNotFound
	}
	return err
}

type queryRower interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

const ownerCols = "id, account_id, email, password_hash, created_at, failed_signins, locked_until"

func scanOwner(row pgx.Row) (account.Owner, error) {
	var o account.Owner
	if err := row.Scan(&o.ID, &o.AccountID, &o.Email, &o.PasswordHash, &o.CreatedAt, &o.FailedSignins, &o.LockedUntil); err != nil {
		return account.Owner{}, err
	}
	o.CreatedAt, o.LockedUntil = o.CreatedAt.UTC(), utcPtr(o.LockedUntil)
	o.HasPassword = o.PasswordHash != ""
	return o, nil
}

func ownerExists(ctx context.Context, q queryRower, id int64) error {
	var one int
	return q.QueryRow(ctx, "SELECT 1 FROM owners WHERE id = $1", id).Scan(&one)
}

// CreateOwner adds an owner without a password to an existing account;
// an email that already owns an account is ErrConflict.
func (s *Store) CreateOwner(ctx context.Context, accountID int64, email string, at time.Time) (account.Owner, error) {
	if err := account.CheckOwnerEmail(email); err != nil {
		return account.Owner{}, err
	}
	at = account.OrNow(at)
	var o account.Owner
	err := s.inTx(ctx, "create owner", func(ctx context.Context, tx pgx.Tx) error {
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		var err error
		o, err = scanOwner(tx.QueryRow(ctx,
			"INSERT INTO owners (account_id, email, created_at) VALUES ($1, $2, $3) RETURNING "+ownerCols,
			accountID, email, at))
		return conflict("the email "+email+" already owns an account", err)
	})
	if err != nil {
		return account.Owner{}, err
	}
	return o, nil
}

// Owner returns one owner.
func (s *Store) Owner(ctx context.Context, id int64) (account.Owner, error) {
	var o account.Owner
	err := s.run(ctx, "owner", func(ctx context.Context) (err error) {
		o, err = scanOwner(s.pool.QueryRow(ctx, "SELECT "+ownerCols+" FROM owners WHERE id = $1", id))
		return err
	})
	return o, err
}

// OwnerByEmail returns the owner with an email (as stored: lower-cased).
func (s *Store) OwnerByEmail(ctx context.Context, email string) (account.Owner, error) {
	var o account.Owner
	err := s.run(ctx, "owner by email", func(ctx context.Context) (err error) {
		o, err = scanOwner(s.pool.QueryRow(ctx, "SELECT "+ownerCols+" FROM owners WHERE email = $1", email))
		return err
	})
	return o, err
}

// ListOwners lists an account's owners, oldest first; ErrNotFound if
// there is no such account.
func (s *Store) ListOwners(ctx context.Context, accountID int64) ([]account.Owner, error) {
	var os []account.Owner
	err := s.run(ctx, "list owners", func(ctx context.Context) (err error) {
		if err := accountExists(ctx, s.pool, accountID); err != nil {
			return err
		}
		rows, _ := s.pool.Query(ctx, "SELECT "+ownerCols+" FROM owners WHERE account_id = $1 ORDER BY id", accountID)
		os, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.Owner, error) { return scanOwner(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if os == nil {
		os = []account.Owner{}
	}
	return os, nil
}

// SigninFailed counts a failure in one statement, so concurrent failures
// all count (the row lock orders them), and keeps the later of the two
// locks (GREATEST skips a NULL).
func (s *Store) SigninFailed(ctx context.Context, ownerID int64, lockedUntil *time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, "sign-in failed", func(ctx context.Context, tx pgx.Tx) error {
		return tx.QueryRow(ctx,
			"UPDATE owners SET failed_signins = failed_signins + 1, locked_until = GREATEST(locked_until, $1::timestamptz) WHERE id = $2 RETURNING failed_signins",
			lockedUntil, ownerID).Scan(&n)
	})
	return n, err
}

// SigninSucceeded clears the failures and the lock.
func (s *Store) SigninSucceeded(ctx context.Context, ownerID int64) error {
	return s.run(ctx, "sign-in succeeded", func(ctx context.Context) error { // idempotent
		return notFoundUnless(s.pool.Exec(ctx,
			"UPDATE owners SET failed_signins = 0, locked_until = NULL WHERE id = $1", ownerID))
	})
}

// CreateOwnerToken stores a one-time token of an existing owner.
func (s *Store) CreateOwnerToken(ctx context.Context, t account.OwnerToken) error {
	if err := t.Validate(); err != nil {
		return err
	}
	created := account.OrNow(t.CreatedAt)
	return s.inTx(ctx, "create token", func(ctx context.Context, tx pgx.Tx) error {
		if err := ownerExists(ctx, tx, t.OwnerID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx,
			"INSERT INTO owner_tokens (hash, owner_id, purpose, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
			t.Hash, t.OwnerID, t.Purpose, created, t.ExpiresAt)
		return conflict("a token with this hash exists", err)
	})
}

// UseOwnerToken redeems a token in one transaction: it marks the token
// used, sets the password, clears the failures and the lock and revokes
// the owner's sessions. The first UPDATE is the gate: of two redemptions
// racing for one token, the second waits for the first's row lock and
// then, re-reading the row, finds it used and matches nothing.
func (s *Store) UseOwnerToken(ctx context.Context, hash []byte, at time.Time, passwordHash string) (account.Owner, error) {
	if err := account.CheckPasswordHash(passwordHash); err != nil {
		return account.Owner{}, err
	}
	if len(hash) == 0 {
		return account.Owner{}, account.ErrNotFound
	}
	var o account.Owner
	err := s.inTx(ctx, "use token", func(ctx context.Context, tx pgx.Tx) error {
		var ownerID int64
		err := tx.QueryRow(ctx,
			`UPDATE owner_tokens SET used_at = $1
			 WHERE hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING owner_id`,
			at, hash).Scan(&ownerID)
		if err != nil {
			return err
		}
		o, err = scanOwner(tx.QueryRow(ctx,
			`UPDATE owners SET password_hash = $1, failed_signins = 0, locked_until = NULL
			 WHERE id = $2 RETURNING `+ownerCols, passwordHash, ownerID))
		if err != nil {
			return err
		}
		if _, err = tx.Exec(ctx,
			"UPDATE owner_tokens SET used_at = $1 WHERE owner_id = $2 AND used_at IS NULL", at, ownerID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx,
			"UPDATE sessions SET revoked_at = $1 WHERE owner_id = $2 AND revoked_at IS NULL", at, ownerID)
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

func scanSession(row pgx.Row) (account.Session, error) {
	var se account.Session
	if err := row.Scan(&se.ID, &se.Hash, &se.Kind, &se.OwnerID, &se.AccountID, &se.CSRF,
		&se.CreatedAt, &se.LastSeenAt, &se.ExpiresAt, &se.RevokedAt); err != nil {
		return account.Session{}, err
	}
	se.CreatedAt, se.LastSeenAt, se.ExpiresAt = se.CreatedAt.UTC(), se.LastSeenAt.UTC(), se.ExpiresAt.UTC()
	se.RevokedAt = utcPtr(se.RevokedAt)
	return se, nil
}

// CreateSession stores a session; the owner of an owner's session must
// exist. A zero CreatedAt is now; a zero LastSeenAt is CreatedAt.
func (s *Store) CreateSession(ctx context.Context, se account.Session) error {
	if err := se.Validate(); err != nil {
		return err
	}
	se = se.Stamped()
	return s.inTx(ctx, "create session", func(ctx context.Context, tx pgx.Tx) error {
		if se.OwnerID != 0 {
			if err := ownerExists(ctx, tx, se.OwnerID); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx,
			`INSERT INTO sessions (id, hash, kind, owner_id, csrf, created_at, last_seen_at, expires_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			se.ID, se.Hash, se.Kind, nullID(se.OwnerID), se.CSRF, se.CreatedAt, se.LastSeenAt, se.ExpiresAt)
		return conflict("a session with this ID or hash exists", err)
	})
}

// SessionByHash returns a session, revoked and expired ones included,
// with its owner's account.
func (s *Store) SessionByHash(ctx context.Context, hash []byte) (account.Session, error) {
	var se account.Session
	err := s.run(ctx, "session", func(ctx context.Context) (err error) {
		se, err = scanSession(s.pool.QueryRow(ctx,
			"SELECT "+sessionCols+" FROM sessions s LEFT JOIN owners o ON o.id = s.owner_id WHERE s.hash = $1", hash))
		return err
	})
	return se, err
}

// TouchSession moves a session's LastSeenAt forward to at; an older at
// (a slower request finishing late, on this replica or another) leaves
// it where it is.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	return s.run(ctx, "touch session", func(ctx context.Context) error { // idempotent
		return notFoundUnless(s.pool.Exec(ctx,
			"UPDATE sessions SET last_seen_at = GREATEST(last_seen_at, $1) WHERE id = $2", at, id))
	})
}

// RevokeSession revokes a session; one already revoked keeps its first
// revocation time.
func (s *Store) RevokeSession(ctx context.Context, id string, at time.Time) error {
	return s.run(ctx, "revoke session", func(ctx context.Context) error { // idempotent
		return notFoundUnless(s.pool.Exec(ctx,
			"UPDATE sessions SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2", at, id))
	})
}

// RevokeOwnerSessions revokes an owner's unrevoked, unexpired sessions
// and counts them.
func (s *Store) RevokeOwnerSessions(ctx context.Context, ownerID int64, at time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, "revoke owner sessions", func(ctx context.Context, tx pgx.Tx) error {
		if err := ownerExists(ctx, tx, ownerID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx,
			"UPDATE sessions SET revoked_at = $1 WHERE owner_id = $2 AND revoked_at IS NULL AND expires_at > $1",
			at, ownerID)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// PurgeEnded deletes the sessions and one-time tokens that ended before
// before.
func (s *Store) PurgeEnded(ctx context.Context, before time.Time) (sessions, tokens int64, err error) {
	err = s.inTx(ctx, "purge ended sessions and tokens", func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM sessions WHERE expires_at < $1 OR revoked_at < $1", before)
		if err != nil {
			return err
		}
		sessions = tag.RowsAffected()
		tag, err = tx.Exec(ctx, "DELETE FROM owner_tokens WHERE expires_at < $1 OR used_at < $1", before)
		if err != nil {
			return err
		}
		tokens = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return sessions, tokens, nil
}

const requestCols = "id, account_id, COALESCE(owner_id, 0), tier, monthly_limit, note, status, created_at, decided_at"

func scanRequest(row pgx.Row) (account.TierRequest, error) {
	var r account.TierRequest
	var tier string
	if err := row.Scan(&r.ID, &r.AccountID, &r.OwnerID, &tier, &r.MonthlyLimit, &r.Note, &r.Status,
		&r.CreatedAt, &r.DecidedAt); err != nil {
		return account.TierRequest{}, err
	}
	r.Tier, r.CreatedAt, r.DecidedAt = account.Tier(tier), r.CreatedAt.UTC(), utcPtr(r.DecidedAt)
	return r, nil
}

// CreateTierRequest stores a pending request of an existing account (and
// owner of it, when OwnerID is set). The partial unique index on pending
// requests makes a second one ErrConflict: of two racing inserts, the
// second waits for the first to commit and then violates it.
func (s *Store) CreateTierRequest(ctx context.Context, r account.TierRequest) (account.TierRequest, error) {
	r, err := r.Checked()
	if err != nil {
		return account.TierRequest{}, err
	}
	var out account.TierRequest
	err = s.inTx(ctx, "create tier request", func(ctx context.Context, tx pgx.Tx) error {
		if err := accountExists(ctx, tx, r.AccountID); err != nil {
			return err
		}
		if r.OwnerID != 0 {
			var acct int64
			if err := tx.QueryRow(ctx, "SELECT account_id FROM owners WHERE id = $1", r.OwnerID).Scan(&acct); err != nil {
				return err
			}
			if err := r.CheckOwner(acct); err != nil {
				return err
			}
		}
		var err error
		out, err = scanRequest(tx.QueryRow(ctx,
			`INSERT INTO tier_requests (account_id, owner_id, tier, monthly_limit, note, status, created_at)
			 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+requestCols,
			r.AccountID, nullID(r.OwnerID), string(r.Tier), r.MonthlyLimit, r.Note, r.Status, r.CreatedAt))
		return conflict("the account already has a pending request", err)
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
	q, args := "SELECT "+requestCols+" FROM tier_requests WHERE true", []any{}
	if accountID != 0 {
		args = append(args, accountID)
		q += fmt.Sprintf(" AND account_id = $%d", len(args))
	}
	if status != "" {
		args = append(args, status)
		q += fmt.Sprintf(" AND status = $%d", len(args))
	}
	var rs []account.TierRequest
	err := s.run(ctx, "tier requests", func(ctx context.Context) (err error) {
		if accountID != 0 {
			if err := accountExists(ctx, s.pool, accountID); err != nil {
				return err
			}
		}
		rows, _ := s.pool.Query(ctx, q+" ORDER BY id DESC", args...)
		rs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.TierRequest, error) { return scanRequest(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if rs == nil {
		rs = []account.TierRequest{}
	}
	return rs, nil
}

// DecideTierRequest decides a pending request in one transaction: the
// request leaves pending (a compare-and-set on its status, so of two
// racing decisions one wins and the other is ErrConflict) and, when
// approved, the account takes its tier and limit.
func (s *Store) DecideTierRequest(ctx context.Context, id int64, approve bool, at time.Time) (account.TierRequest, account.Account, error) {
	status, at := account.Decision(approve), account.OrNow(at)
	var r account.TierRequest
	var a account.Account
	err := s.inTx(ctx, "decide tier request", func(ctx context.Context, tx pgx.Tx) error {
		var err error
		r, err = scanRequest(tx.QueryRow(ctx,
			`UPDATE tier_requests SET status = $1, decided_at = $2 WHERE id = $3 AND status = 'pending'
			 RETURNING `+requestCols, status, at, id))
		if errors.Is(err, pgx.ErrNoRows) {
			var one int
			if err := tx.QueryRow(ctx, "SELECT 1 FROM tier_requests WHERE id = $1", id).Scan(&one); err != nil {
				return err
			}
			return account.NotPending(id)
		}
		if err != nil {
			return err
		}
		if !approve {
			a, err = scanAccount(tx.QueryRow(ctx, "SELECT "+accountCols+" FROM accounts WHERE id = $1", r.AccountID))
			return err
		}
		limit, err := account.TierLimit(r.Tier, r.MonthlyLimit)
		if err != nil {
			return err
		}
		a, err = scanAccount(tx.QueryRow(ctx,
			"UPDATE accounts SET tier = $1, custom_limit = $2 WHERE id = $3 RETURNING "+accountCols,
			string(r.Tier), limit, r.AccountID))
		return err
	})
	if err != nil {
		return account.TierRequest{}, account.Account{}, err
	}
	return r, a, nil
}

const auditCols = "id, at, actor, action, COALESCE(account_id, 0), target, detail"

func scanAudit(row pgx.Row) (account.AuditEntry, error) {
	var e account.AuditEntry
	if err := row.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.AccountID, &e.Target, &e.Detail); err != nil {
		return account.AuditEntry{}, err
	}
	e.At = e.At.UTC()
	return e, nil
}

// AppendAudit stores an entry (a zero At is now) and returns it as
// stored, with its ID.
func (s *Store) AppendAudit(ctx context.Context, e account.AuditEntry) (account.AuditEntry, error) {
	if err := e.Validate(); err != nil {
		return account.AuditEntry{}, err
	}
	at := account.OrNow(e.At)
	var out account.AuditEntry
	err := s.inTx(ctx, "audit", func(ctx context.Context, tx pgx.Tx) (err error) {
		out, err = scanAudit(tx.QueryRow(ctx,
			`INSERT INTO audit_log (at, actor, action, account_id, target, detail)
			 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+auditCols,
			at, e.Actor, e.Action, nullID(e.AccountID), e.Target, e.Detail))
		return err
	})
	if err != nil {
		return account.AuditEntry{}, err
	}
	return out, nil
}

// Audit lists entries with ID < before (0: from the newest), newest
// first, of one account (0: all), at most limit (0: all).
func (s *Store) Audit(ctx context.Context, accountID, before int64, limit int) ([]account.AuditEntry, error) {
	// The conditions are added only when set, so that the planner uses
	// the (account_id, id) index or the primary key.
	q, args := "SELECT "+auditCols+" FROM audit_log WHERE true", []any{}
	if accountID != 0 {
		args = append(args, accountID)
		q += fmt.Sprintf(" AND account_id = $%d", len(args))
	}
	if before > 0 {
		args = append(args, before)
		q += fmt.Sprintf(" AND id < $%d", len(args))
	}
	q += " ORDER BY id DESC"
	if limit > 0 {
		args = append(args, limit)
		q += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	var es []account.AuditEntry
	err := s.run(ctx, "audit", func(ctx context.Context) (err error) {
		if accountID != 0 {
			if err := accountExists(ctx, s.pool, accountID); err != nil {
				return err
			}
		}
		rows, _ := s.pool.Query(ctx, q, args...)
		es, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (account.AuditEntry, error) { return scanAudit(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	if es == nil {
		es = []account.AuditEntry{}
	}
	return es, nil
}
