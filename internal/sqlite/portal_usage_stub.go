package sqlite

import (
	"context"
	"errors"

	"github.com/ipatlas/ipatlas/internal/account"
)

var errNotYet = errors.New("sqlite: not implemented yet")

func (s *Store) SetKeyLabel(ctx context.Context, id, label string) (account.Key, error) {
	return account.Key{}, errNotYet
}
func (s *Store) KeyUsages(ctx context.Context, accountID int64, period string) (map[string]int64, error) {
	return nil, errNotYet
}
func (s *Store) DailyUsage(ctx context.Context, accountID int64, from, to string) ([]account.DayUsage, error) {
	return nil, errNotYet
}
func (s *Store) LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]account.LedgerEntry, error) {
	return nil, errNotYet
}
func (s *Store) SearchAccounts(ctx context.Context, q, period string, limit int) ([]account.AccountSummary, error) {
	return nil, errNotYet
}
func (s *Store) TopConsumers(ctx context.Context, period string, n int) ([]account.AccountSummary, error) {
	return nil, errNotYet
}
