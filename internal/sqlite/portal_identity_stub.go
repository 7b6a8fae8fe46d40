package sqlite

import (
	"context"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

func (s *Store) CreateOwner(ctx context.Context, accountID int64, email string, at time.Time) (account.Owner, error) {
	return account.Owner{}, errNotYet
}
func (s *Store) Owner(ctx context.Context, id int64) (account.Owner, error) {
	return account.Owner{}, errNotYet
}
func (s *Store) OwnerByEmail(ctx context.Context, email string) (account.Owner, error) {
	return account.Owner{}, errNotYet
}
func (s *Store) ListOwners(ctx context.Context, accountID int64) ([]account.Owner, error) {
	return nil, errNotYet
}
func (s *Store) SigninFailed(ctx context.Context, ownerID int64, lockedUntil *time.Time) (int64, error) {
	return 0, errNotYet
}
func (s *Store) SigninSucceeded(ctx context.Context, ownerID int64) error { return errNotYet }
func (s *Store) CreateOwnerToken(ctx context.Context, t account.OwnerToken) error {
	return errNotYet
}
func (s *Store) UseOwnerToken(ctx context.Context, hash []byte, at time.Time, passwordHash string) (account.Owner, error) {
	return account.Owner{}, errNotYet
}
func (s *Store) CreateSession(ctx context.Context, se account.Session) error { return errNotYet }
func (s *Store) SessionByHash(ctx context.Context, hash []byte) (account.Session, error) {
	return account.Session{}, errNotYet
}
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error  { return errNotYet }
func (s *Store) RevokeSession(ctx context.Context, id string, at time.Time) error { return errNotYet }
func (s *Store) RevokeOwnerSessions(ctx context.Context, ownerID int64, at time.Time) (int64, error) {
	return 0, errNotYet
}
func (s *Store) CreateTierRequest(ctx context.Context, r account.TierRequest) (account.TierRequest, error) {
	return account.TierRequest{}, errNotYet
}
func (s *Store) TierRequests(ctx context.Context, accountID int64, status string) ([]account.TierRequest, error) {
	return nil, errNotYet
}
func (s *Store) DecideTierRequest(ctx context.Context, id int64, approve bool, at time.Time) (account.TierRequest, account.Account, error) {
	return account.TierRequest{}, account.Account{}, errNotYet
}
func (s *Store) AppendAudit(ctx context.Context, e account.AuditEntry) (account.AuditEntry, error) {
	return account.AuditEntry{}, errNotYet
}
func (s *Store) Audit(ctx context.Context, accountID, before int64, limit int) ([]account.AuditEntry, error) {
	return nil, errNotYet
}
