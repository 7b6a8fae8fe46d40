package postgres

import (
	"context"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// OwnerToken returns a one-time token by its hash, used or expired ones
// included.
func (s *Store) OwnerToken(ctx context.Context, hash []byte) (account.OwnerToken, error) {
	var t account.OwnerToken
	err := s.run(ctx, "owner token", func(ctx context.Context) error {
		var used *time.Time
		err := s.pool.QueryRow(ctx,
			"SELECT hash, owner_id, purpose, created_at, expires_at, used_at FROM owner_tokens WHERE hash = $1", hash).
			Scan(&t.Hash, &t.OwnerID, &t.Purpose, &t.CreatedAt, &t.ExpiresAt, &used)
		if err != nil {
			return err
		}
		t.CreatedAt, t.ExpiresAt = t.CreatedAt.UTC(), t.ExpiresAt.UTC()
		if used != nil {
			u := used.UTC()
			t.UsedAt = &u
		}
		return nil
	})
	return t, err
}
