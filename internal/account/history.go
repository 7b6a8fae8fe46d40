package account

import (
	"context"
	"errors"
	"time"
)

// errNotYet marks a method whose implementation is in progress.
var errNotYet = errors.New("not implemented yet")

// KeyView is a key with its usage this month, for listings.
type KeyView struct {
	Key
	Used int64 `json:"used"` // queries charged this month
}

// History is an account's daily usage over a span of days.
type History struct {
	From string     `json:"from"` // "2006-01-02", UTC, inclusive
	To   string     `json:"to"`
	Days []DayUsage `json:"days"` // per key and day, ordered by day then key; zero days absent
}

// CreateLabeledKey is CreateKey with a label.
func (s *Service) CreateLabeledKey(ctx context.Context, accountID int64, label string) (NewKey, error) {
	return NewKey{}, errNotYet
}

// SetKeyLabel changes a key's label (at most 100 characters).
func (s *Service) SetKeyLabel(ctx context.Context, id, label string) (Key, error) {
	return Key{}, errNotYet
}

// KeyViews lists an account's keys with their usage this month.
func (s *Service) KeyViews(ctx context.Context, accountID int64) ([]KeyView, error) {
	return nil, errNotYet
}

// History is an account's per-key daily usage for the last days days
// (1..366), today (UTC) included.
func (s *Service) History(ctx context.Context, accountID int64, days int) (History, error) {
	return History{}, errNotYet
}

// LedgerPage lists an account's entries older than before (0: newest),
// newest first, at most limit (1..1000).
func (s *Service) LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]LedgerEntry, error) {
	return nil, errNotYet
}

// SearchAccounts finds accounts by name, ID or owner email, with their
// usage this month; at most limit (1..1000).
func (s *Service) SearchAccounts(ctx context.Context, q string, limit int) ([]AccountSummary, error) {
	return nil, errNotYet
}

// TopConsumers lists the n (1..100) accounts with the most queries this
// month.
func (s *Service) TopConsumers(ctx context.Context, n int) ([]AccountSummary, error) {
	return nil, errNotYet
}

// Day names the UTC day that t falls in: "2006-01-02", the key of the
// daily usage counters.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }
