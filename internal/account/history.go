package account

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of the portal's usage methods.
const (
	MaxLabelLen     = 100  // characters (code points) of a key's label
	MaxHistoryDays  = 366  // days of usage history in one answer
	MaxPageLimit    = 1000 // entries of a ledger page or accounts of a search
	MaxTopConsumers = 100
	maxQueryLen     = 320 // bytes of a search: an email's longest
)

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

// Day names the UTC day that t falls in: "2006-01-02", the key of the
// daily usage counters.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// checkLabel trims a key's label and refuses one that is not valid UTF-8,
// is longer than MaxLabelLen characters or holds control characters
// (which would break a listing's line or a CSV row).
func checkLabel(label string) (string, error) {
	if !utf8.ValidString(label) {
		return "", Invalidf("the label is not valid UTF-8")
	}
	label = strings.TrimSpace(label)
	switch {
	case utf8.RuneCountInString(label) > MaxLabelLen:
		return "", Invalidf("the label is longer than %d characters", MaxLabelLen)
	case strings.ContainsFunc(label, unicode.IsControl):
		return "", Invalidf("the label contains control characters")
	}
	return label, nil
}

// CreateLabeledKey is CreateKey with a label.
func (s *Service) CreateLabeledKey(ctx context.Context, accountID int64, label string) (NewKey, error) {
	label, err := checkLabel(label)
	if err != nil {
		return NewKey{}, err
	}
	nk := GenerateKey(accountID, s.now())
	nk.Label = label
	if err := s.Store.CreateKey(ctx, nk.Key); err != nil {
		return NewKey{}, accountErr(accountID, "create key", err)
	}
	s.audit(ctx, "key.create", accountID, nk.ID, map[string]any{"label": label})
	return nk, nil
}

// SetKeyLabel changes a key's label (at most 100 characters).
func (s *Service) SetKeyLabel(ctx context.Context, id, label string) (Key, error) {
	label, err := checkLabel(label)
	if err != nil {
		return Key{}, err
	}
	k, err := s.Store.SetKeyLabel(ctx, id, label)
	if err != nil {
		return Key{}, keyErr(id, "", err)
	}
	s.forget(id) // so that Authenticate's key shows the new label
	s.audit(ctx, "key.label", k.AccountID, id, map[string]any{"label": label})
	return k, nil
}

// KeyViews lists an account's keys with their usage this month.
func (s *Service) KeyViews(ctx context.Context, accountID int64) ([]KeyView, error) {
	period := Period(s.now())
	ks, err := s.Store.ListKeys(ctx, accountID)
	if err != nil {
		return nil, accountErr(accountID, "list keys", err)
	}
	used, err := s.Store.KeyUsages(ctx, accountID, period)
	if err != nil {
		return nil, accountErr(accountID, "usage", err)
	}
	vs := make([]KeyView, len(ks))
	for i, k := range ks {
		vs[i] = KeyView{Key: k, Used: used[k.ID]}
	}
	return vs, nil
}

// History is an account's per-key daily usage for the last days days
// (1..366), today (UTC) included.
func (s *Service) History(ctx context.Context, accountID int64, days int) (History, error) {
	if days < 1 || days > MaxHistoryDays {
		return History{}, Invalidf("days must be between 1 and %d", MaxHistoryDays)
	}
	now := s.now().UTC()
	h := History{From: Day(now.AddDate(0, 0, 1-days)), To: Day(now)}
	ds, err := s.Store.DailyUsage(ctx, accountID, h.From, h.To)
	if err != nil {
		return History{}, accountErr(accountID, "usage history", err)
	}
	h.Days = ds
	if h.Days == nil {
		h.Days = []DayUsage{}
	}
	return h, nil
}

// LedgerPage lists an account's entries older than before (0: newest),
// newest first, at most limit (1..1000).
func (s *Service) LedgerPage(ctx context.Context, accountID, before int64, limit int) ([]LedgerEntry, error) {
	switch {
	case limit < 1 || limit > MaxPageLimit:
		return nil, Invalidf("the limit must be between 1 and %d", MaxPageLimit)
	case before < 0:
		return nil, Invalidf("the cursor is negative")
	}
	es, err := s.Store.LedgerPage(ctx, accountID, before, limit)
	if err != nil {
		return nil, accountErr(accountID, "ledger", err)
	}
	return es, nil
}

// SearchAccounts finds accounts by name, ID or owner email, with their
// usage this month; at most limit (1..1000).
func (s *Service) SearchAccounts(ctx context.Context, q string, limit int) ([]AccountSummary, error) {
	if limit < 1 || limit > MaxPageLimit {
		return nil, Invalidf("the limit must be between 1 and %d", MaxPageLimit)
	}
	if !utf8.ValidString(q) {
		return nil, Invalidf("the search is not valid UTF-8")
	}
	q = strings.TrimSpace(q)
	if len(q) > maxQueryLen {
		return nil, Invalidf("the search is longer than %d bytes", maxQueryLen)
	}
	as, err := s.Store.SearchAccounts(ctx, q, Period(s.now()), limit)
	if err != nil {
		return nil, storeErr("search accounts", err)
	}
	return summariesWithLimit(as), nil
}

// TopConsumers lists the n (1..100) accounts with the most queries this
// month.
func (s *Service) TopConsumers(ctx context.Context, n int) ([]AccountSummary, error) {
	if n < 1 || n > MaxTopConsumers {
		return nil, Invalidf("n must be between 1 and %d", MaxTopConsumers)
	}
	as, err := s.Store.TopConsumers(ctx, Period(s.now()), n)
	if err != nil {
		return nil, storeErr("top consumers", err)
	}
	return summariesWithLimit(as), nil
}

func summariesWithLimit(as []AccountSummary) []AccountSummary {
	if as == nil {
		return []AccountSummary{}
	}
	for i := range as {
		as[i].Account = withLimit(as[i].Account)
	}
	return as
}
