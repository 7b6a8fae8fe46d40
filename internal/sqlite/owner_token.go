package sqlite

import (
	"context"
	"database/sql"

	"github.com/ipatlas/ipatlas/internal/account"
)

// OwnerToken returns a one-time token by its hash, used or expired ones
// included.
func (s *Store) OwnerToken(ctx context.Context, hash []byte) (account.OwnerToken, error) {
	var t account.OwnerToken
	var created, expires string
	var used sql.NullString
	err := s.r.QueryRowContext(ctx,
		"SELECT hash, owner_id, purpose, created_at, expires_at, used_at FROM owner_tokens WHERE hash = ?", hash).
		Scan(&t.Hash, &t.OwnerID, &t.Purpose, &created, &expires, &used)
	if err != nil {
		return account.OwnerToken{}, dbErr(err)
	}
	if t.CreatedAt, err = parseTime(created); err != nil {
		return account.OwnerToken{}, err
	}
	if t.ExpiresAt, err = parseTime(expires); err != nil {
		return account.OwnerToken{}, err
	}
	if used.Valid {
		u, err := parseTime(used.String)
		if err != nil {
			return account.OwnerToken{}, err
		}
		t.UsedAt = &u
	}
	return t, nil
}
