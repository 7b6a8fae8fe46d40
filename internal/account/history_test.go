package account_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
)

func isInvalid(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, account.ErrInvalid) {
		t.Fatalf("%s: error %v, want ErrInvalid", what, err)
	}
}

func newService(t *testing.T, now time.Time) (*account.Service, *storetest.Clock) {
	t.Helper()
	clock := storetest.NewClock(now)
	return &account.Service{Store: newStore(t), Now: clock.Now, KeyCacheTTL: time.Hour}, clock
}

func newProAccount(t *testing.T, svc *account.Service, name string) account.Account {
	t.Helper()
	a, err := svc.CreateAccount(t.Context(), account.AccountParams{Name: name, Tier: account.Pro})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestKeyLabels(t *testing.T) {
	svc, _ := newService(t, t0)
	a := newProAccount(t, svc, "acme")

	nk, err := svc.CreateLabeledKey(t.Context(), a.ID, "  production \u3000")
	if err != nil || nk.Label != "production" || nk.Secret == "" {
		t.Fatalf("CreateLabeledKey: %+v, %v; want the label trimmed", nk.Key, err)
	}
	if k, _ := svc.Key(t.Context(), nk.ID); k.Label != "production" {
		t.Fatalf("stored label %q", k.Label)
	}
	plain, err := svc.CreateKey(t.Context(), a.ID)
	if err != nil || plain.Label != "" {
		t.Fatalf("CreateKey: %+v, %v", plain.Key, err)
	}
	// 100 characters of three bytes each are 100 characters.
	long := strings.Repeat("键", account.MaxLabelLen)
	if k, err := svc.SetKeyLabel(t.Context(), plain.ID, long); err != nil || k.Label != long {
		t.Fatalf("SetKeyLabel of %d characters: %v", account.MaxLabelLen, err)
	}
	for _, bad := range []string{long + "x", "a\x00b", "tab\there", "\xff\xfe", "line\nbreak"} {
		_, err := svc.CreateLabeledKey(t.Context(), a.ID, bad)
		isInvalid(t, "CreateLabeledKey("+bad+")", err)
		_, err = svc.SetKeyLabel(t.Context(), nk.ID, bad)
		isInvalid(t, "SetKeyLabel("+bad+")", err)
	}
	ks, err := svc.Keys(t.Context(), a.ID)
	if err != nil || len(ks) != 2 {
		t.Fatalf("refused labels created keys: %d keys, %v", len(ks), err)
	}
	if k, _ := svc.Key(t.Context(), nk.ID); k.Label != "production" {
		t.Fatalf("a refused label changed the key: %q", k.Label)
	}
	if _, err := svc.CreateLabeledKey(t.Context(), 999999, "x"); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("CreateLabeledKey for an unknown account: %v, want ErrNotFound", err)
	}
	if _, err := svc.SetKeyLabel(t.Context(), "nosuchkey000", "x"); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("SetKeyLabel of an unknown key: %v, want ErrNotFound", err)
	}

	// A key cached by Authenticate shows its new label at once.
	if k, _, err := svc.Authenticate(t.Context(), nk.Secret); err != nil || k.Label != "production" {
		t.Fatalf("Authenticate: %+v, %v", k, err)
	}
	if _, err := svc.SetKeyLabel(t.Context(), nk.ID, "renamed"); err != nil {
		t.Fatal(err)
	}
	if k, _, err := svc.Authenticate(t.Context(), nk.Secret); err != nil || k.Label != "renamed" {
		t.Fatalf("Authenticate after a rename: label %q, %v", k.Label, err)
	}
}

func TestKeyViews(t *testing.T) {
	svc, clock := newService(t, t0)
	a := newProAccount(t, svc, "acme")
	k1, _ := svc.CreateLabeledKey(t.Context(), a.ID, "one")
	k2, _ := svc.CreateLabeledKey(t.Context(), a.ID, "two")
	m := account.NewMeter(svc.Store, account.MeterOptions{Now: clock.Now})
	defer m.Close(t.Context())

	clock.Set(t0.AddDate(0, -1, 0)) // last month: not this month's usage
	for range 5 {
		if o, err := m.Charge(t.Context(), k1.Key); err != nil || !o.Granted {
			t.Fatalf("Charge: %+v, %v", o, err)
		}
	}
	clock.Set(t0)
	for range 3 {
		if o, err := m.Charge(t.Context(), k1.Key); err != nil || !o.Granted {
			t.Fatalf("Charge: %+v, %v", o, err)
		}
	}
	vs, err := svc.KeyViews(t.Context(), a.ID)
	if err != nil || len(vs) != 2 {
		t.Fatalf("KeyViews: %+v, %v", vs, err)
	}
	got := map[string]int64{}
	for _, v := range vs {
		got[v.Label] = v.Used
		if v.ID == k1.ID && (v.LastUsedAt == nil || !v.LastUsedAt.Equal(t0)) {
			t.Fatalf("key one's last use %v, want %v", v.LastUsedAt, t0)
		}
		if v.ID == k2.ID && v.LastUsedAt != nil {
			t.Fatalf("key two was never used, last use %v", v.LastUsedAt)
		}
	}
	if want := map[string]int64{"one": 3, "two": 0}; !reflect.DeepEqual(got, want) {
		t.Fatalf("usage this month by label %v, want %v", got, want)
	}
	if _, err := svc.KeyViews(t.Context(), 999999); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("KeyViews of an unknown account: %v, want ErrNotFound", err)
	}
}

func TestHistory(t *testing.T) {
	// 02:00 on 21 May in UTC+8 is 18:00 on 20 May in UTC: today is the 20th.
	now := time.Date(2026, 5, 21, 2, 0, 0, 0, time.FixedZone("UTC+8", 8*3600))
	svc, _ := newService(t, now)
	a := newProAccount(t, svc, "acme")
	k, _ := svc.CreateKey(t.Context(), a.ID)
	charge := func(at time.Time, n int64) {
		t.Helper()
		req := []account.ChargeRequest{{KeyID: k.ID, Hash: k.Hash, N: n}}
		if _, err := svc.Store.Charge(t.Context(), account.Period(at), at, req); err != nil {
			t.Fatal(err)
		}
	}
	today := time.Date(2026, 5, 20, 18, 0, 0, 0, time.UTC)
	charge(today, 1)
	charge(today.AddDate(0, 0, -89), 2) // 20 February: the 90th day back
	charge(today.AddDate(0, 0, -90), 4) // 19 February: one too far

	h, err := svc.History(t.Context(), a.ID, 90)
	want := account.History{From: "2026-02-20", To: "2026-05-20", Days: []account.DayUsage{
		{Day: "2026-02-20", KeyID: k.ID, Queries: 2},
		{Day: "2026-05-20", KeyID: k.ID, Queries: 1},
	}}
	if err != nil || !reflect.DeepEqual(h, want) {
		t.Fatalf("History(90): %+v, %v\nwant %+v", h, err, want)
	}
	h, err = svc.History(t.Context(), a.ID, 1)
	if err != nil || h.From != "2026-05-20" || h.To != "2026-05-20" || len(h.Days) != 1 {
		t.Fatalf("History(1): %+v, %v", h, err)
	}
	if h, err = svc.History(t.Context(), a.ID, account.MaxHistoryDays); err != nil || h.From != "2025-05-20" || len(h.Days) != 3 {
		t.Fatalf("History(%d): %+v, %v", account.MaxHistoryDays, h, err)
	}
	for _, days := range []int{0, -1, account.MaxHistoryDays + 1} {
		_, err := svc.History(t.Context(), a.ID, days)
		isInvalid(t, fmt.Sprintf("History of %d days", days), err)
	}
	if _, err := svc.History(t.Context(), 999999, 7); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("History of an unknown account: %v, want ErrNotFound", err)
	}
	other := newProAccount(t, svc, "other")
	if h, err := svc.History(t.Context(), other.ID, 7); err != nil || h.Days == nil || len(h.Days) != 0 {
		t.Fatalf("History of an account without use: %+v, %v; want an empty list", h, err)
	}
}

func TestLedgerPage(t *testing.T) {
	svc, _ := newService(t, t0)
	a := newProAccount(t, svc, "acme")
	for i := range 4 {
		if _, err := svc.AddCredits(t.Context(), a.ID, int64(i+1), "top-up"); err != nil {
			t.Fatal(err)
		}
	}
	first, err := svc.LedgerPage(t.Context(), a.ID, 0, 2)
	if err != nil || len(first) != 2 || first[0].Delta != 4 || first[1].Delta != 3 {
		t.Fatalf("first page: %+v, %v", first, err)
	}
	rest, err := svc.LedgerPage(t.Context(), a.ID, first[1].ID, account.MaxPageLimit)
	if err != nil || len(rest) != 3 || rest[2].Reason != "initial grant" {
		t.Fatalf("second page: %+v, %v; want the three older entries", rest, err)
	}
	for _, c := range []struct {
		before int64
		limit  int
	}{{0, 0}, {0, -5}, {0, account.MaxPageLimit + 1}, {-1, 10}} {
		_, err := svc.LedgerPage(t.Context(), a.ID, c.before, c.limit)
		isInvalid(t, "LedgerPage with a bad cursor or limit", err)
	}
	if _, err := svc.LedgerPage(t.Context(), 999999, 0, 10); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("LedgerPage of an unknown account: %v, want ErrNotFound", err)
	}
}

func TestSearchAndTopConsumers(t *testing.T) {
	svc, clock := newService(t, t0)
	acme := newProAccount(t, svc, "Acme")
	globex := newProAccount(t, svc, "Globex")
	newProAccount(t, svc, "Initech")
	ka, _ := svc.CreateKey(t.Context(), acme.ID)
	kg, _ := svc.CreateKey(t.Context(), globex.ID)
	m := account.NewMeter(svc.Store, account.MeterOptions{Now: clock.Now})
	defer m.Close(t.Context())
	for i := range 5 {
		if _, err := m.Charge(t.Context(), kg.Key); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if _, err := m.Charge(t.Context(), ka.Key); err != nil {
				t.Fatal(err)
			}
		}
	}

	ss, err := svc.SearchAccounts(t.Context(), " acme ", 10)
	if err != nil || len(ss) != 1 || ss[0].ID != acme.ID || ss[0].Used != 2 || ss[0].Keys != 1 ||
		ss[0].Period != "2026-05" || ss[0].MonthlyLimit != account.Limit(account.Pro, 0) {
		t.Fatalf("SearchAccounts(acme): %+v, %v", ss, err)
	}
	if ss, err = svc.SearchAccounts(t.Context(), "", 2); err != nil || len(ss) != 2 {
		t.Fatalf("SearchAccounts with limit 2: %d accounts, %v", len(ss), err)
	}
	if ss, err = svc.SearchAccounts(t.Context(), "nobody", 10); err != nil || ss == nil || len(ss) != 0 {
		t.Fatalf("SearchAccounts(nobody): %+v, %v; want an empty list", ss, err)
	}
	for _, c := range []struct {
		q     string
		limit int
	}{{"", 0}, {"", account.MaxPageLimit + 1}, {"\xff", 10}, {strings.Repeat("a", 321), 10}} {
		_, err := svc.SearchAccounts(t.Context(), c.q, c.limit)
		isInvalid(t, "SearchAccounts with a bad search or limit", err)
	}

	top, err := svc.TopConsumers(t.Context(), 10)
	if err != nil || len(top) != 2 || top[0].ID != globex.ID || top[0].Used != 5 || top[1].ID != acme.ID || top[1].Used != 2 {
		t.Fatalf("TopConsumers: %+v, %v", top, err)
	}
	// Next month nobody has used anything yet.
	clock.Set(t0.AddDate(0, 1, 0))
	if top, err = svc.TopConsumers(t.Context(), 10); err != nil || top == nil || len(top) != 0 {
		t.Fatalf("TopConsumers of a new month: %+v, %v; want an empty list", top, err)
	}
	for _, n := range []int{0, -1, account.MaxTopConsumers + 1} {
		_, err := svc.TopConsumers(t.Context(), n)
		isInvalid(t, "TopConsumers with a bad n", err)
	}
}
