package account

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxLabelLen bounds a key's label, in characters.
const MaxLabelLen = 100

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

func checkLabel(label string) (string, error) {
	label = strings.TrimSpace(label)
	switch {
	case !utf8.ValidString(label):
		return "", invalid("the label is not valid UTF-8")
	case utf8.RuneCountInString(label) > MaxLabelLen:
		return "", invalid("the label is longer than %d characters", MaxLabelLen)
	case strings.ContainsFunc(label, unicode.IsControl):
		return "", invalid("the label contains control characters")
	}
	return label, nil
}

// CreateLabeledKey is CreateKey with a label.
func (s *Service) CreateLabeledKey(ctx context.Context, accountID int64, label string) (NewKey, error) {
	label, err := checkLabel(label)
	if err != nil {
		return NewKey{}, err
	}
	return s.createKey(ctx, accountID, label)
}

// SetKeyLabel changes a key's label (at most 100 characters).
func (s *Service) SetKeyLabel(ctx context.Context, id, label string) (Key, error) {
	label, err := checkLabel(label)
	if err != nil {
		return Key{}, err
	}
	k, err := s.Store.SetKeyLabel(ctx, id, label)
	if err != nil {
		return Key{}, storeErr("key "+id, err)
	}
	s.audit(ctx, "key.label", k.AccountID, k.ID, map[string]any{"label": label})
	return k, nil
}

// KeyViews lists an account's keys with their usage this month.
func (s *Service) KeyViews(ctx context.Context, accountID int64) ([]KeyView, error) {
	ks, err := s.Store.ListKeys(ctx, accountID)
	if err != nil {
		return nil, storeErr(fmt.Sprintf("account %d: list keys", accountID), err)
	}
	used, err := s.Store.KeyUsages(ctx, accountID, Period(s.now()))
	if err != nil {
		return nil, storeErr(fmt.Sprintf("account %d: usage", accountID), err)
	}
	out := make([]KeyView, 0, len(ks))
	for _, k := range ks {
		out = append(out, KeyView{Key: k, Used: used[k.ID]})
	}
	return out, nil
}

// History is an account's per-key daily usage for the last days days
// (1..366), today (UTC) included.
func (s *Service) History(ctx context.Context, accountID int64, days int) (History, error) {
	if days < 1 || days > 366 {
		return History{}, invalid("days must be between 1 and 366")
	}
	if _, err := s.Store.Account(ctx, accountID); err != nil {
		return History{}, storeErr(fmt.Sprintf("account %d", accountID), err)
	}
	to := s.now().UTC()
	from := to.AddDate(0, 0, -(days - 1))
	h := History{From: from.Format(time.DateOnly), To: to.Format(time.DateOnly)}
	ds, err := s.Store.DailyUsage(ctx, accountID, h.From, h.To)
	if err != nil {
		return History{}, storeErr(fmt.Sprintf("account %d: usage history", accountID), err)
	}
	if ds == nil {
		ds = []DayUsage{}
	}
	h.Days = ds
	return h, nil
}

// LedgerPage lists an account's entries older than before (0: newest),
// newest first, at most limit (1..1000).
func (s *Service) LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]LedgerEntry, error) {
	switch {
	case limit < 1 || limit > 1000:
		return nil, invalid("the limit must be between 1 and 1000")
	case before < 0:
		return nil, invalid("before is negative")
	}
	if _, err := s.Store.Account(ctx, accountID); err != nil {
		return nil, storeErr(fmt.Sprintf("account %d", accountID), err)
	}
	es, err := s.Store.LedgerPage(ctx, accountID, before, limit)
	if err != nil {
		return nil, storeErr(fmt.Sprintf("account %d: ledger", accountID), err)
	}
	if es == nil {
		es = []LedgerEntry{}
	}
	return es, nil
}

// SearchAccounts finds accounts by name, ID or owner email, with their
// usage this month; at most limit (1..1000).
func (s *Service) SearchAccounts(ctx context.Context, q string, limit int) ([]AccountSummary, error) {
	q = strings.TrimSpace(q)
	switch {
	case limit < 1 || limit > 1000:
		return nil, invalid("the limit must be between 1 and 1000")
	case len(q) > MaxEmailLen || !utf8.ValidString(q):
		return nil, invalid("the search must be valid UTF-8 of at most %d bytes", MaxEmailLen)
	}
	as, err := s.Store.SearchAccounts(ctx, q, Period(s.now()), limit)
	if err != nil {
		return nil, storeErr("search accounts", err)
	}
	return summaries(as), nil
}

// TopConsumers lists the n (1..100) accounts with the most queries this
// month.
func (s *Service) TopConsumers(ctx context.Context, n int) ([]AccountSummary, error) {
	if n < 1 || n > 100 {
		return nil, invalid("n must be between 1 and 100")
	}
	as, err := s.Store.TopConsumers(ctx, Period(s.now()), n)
	if err != nil {
		return nil, storeErr("top consumers", err)
	}
	return summaries(as), nil
}

func summaries(as []AccountSummary) []AccountSummary {
	if as == nil {
		return []AccountSummary{}
	}
	for i := range as {
		as[i].Account = withLimit(as[i].Account)
	}
	return as
}

// Day names the UTC day that t falls in: "2006-01-02", the key of the
// daily usage counters.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }
