package storetest

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// The usage side of the portal: key labels and last use, the daily
// counters Charge keeps, ledger pages, account search and top consumers.

func chargeAt(t *testing.T, st account.Store, at time.Time, reqs ...account.ChargeRequest) []account.Grant {
	t.Helper()
	gs, err := st.Charge(ctx(t), account.Period(at), at, reqs)
	if err != nil {
		t.Fatalf("Charge at %v: %v", at, err)
	}
	return gs
}

func getKey(t *testing.T, st account.Store, id string) account.Key {
	t.Helper()
	k, err := st.Key(ctx(t), id)
	if err != nil {
		t.Fatalf("Key(%s): %v", id, err)
	}
	return k
}

func lastUsed(k account.Key) string {
	if k.LastUsedAt == nil {
		return "never"
	}
	return k.LastUsedAt.Format(time.RFC3339Nano)
}

func testKeyLabel(t *testing.T, st account.Store) {
	a := newAccount(t, st, 100, 100)
	nk := account.GenerateKey(a.ID, t0)
	nk.Label = "production 生产"
	if err := st.CreateKey(ctx(t), nk.Key); err != nil {
		t.Fatal(err)
	}
	plain := newKey(t, st, a.ID)
	if k := getKey(t, st, nk.ID); k.Label != "production 生产" || k.LastUsedAt != nil {
		t.Fatalf("new key %+v: want its label and no last use", k)
	}
	if k := getKey(t, st, plain.ID); k.Label != "" {
		t.Fatalf("key created without a label has label %q", k.Label)
	}
	k, err := st.SetKeyLabel(ctx(t), plain.ID, "staging")
	if err != nil || k.Label != "staging" || k.ID != plain.ID || k.AccountID != a.ID || k.Prefix != account.KeyPrefix(plain.ID) {
		t.Fatalf("SetKeyLabel: %+v, %v", k, err)
	}
	if k, err = st.SetKeyLabel(ctx(t), nk.ID, ""); err != nil || k.Label != "" {
		t.Fatalf("clearing a label: %+v, %v", k, err)
	}
	_, err = st.SetKeyLabel(ctx(t), "nosuchkey000", "x")
	isErr(t, "SetKeyLabel of an unknown key", err, account.ErrNotFound)

	ks, err := st.ListKeys(ctx(t), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{}
	for _, k := range ks {
		labels[k.ID] = k.Label
	}
	if want := map[string]string{nk.ID: "", plain.ID: "staging"}; !reflect.DeepEqual(labels, want) {
		t.Fatalf("ListKeys labels %v, want %v", labels, want)
	}
	// Every key read carries the label: revocation and rotation too.
	rot, err := st.RotateKey(ctx(t), plain.ID, account.HashSecret("another secret"))
	if err != nil || rot.Label != "staging" {
		t.Fatalf("RotateKey: %+v, %v; want the label kept", rot, err)
	}
	rev, err := st.RevokeKey(ctx(t), plain.ID, t0)
	if err != nil || rev.Label != "staging" {
		t.Fatalf("RevokeKey: %+v, %v; want the label kept", rev, err)
	}
}

func testKeyLastUsed(t *testing.T, st account.Store) {
	a := newAccount(t, st, 3, 100)
	k := newKey(t, st, a.ID)
	idle := newKey(t, st, a.ID)

	chargeAt(t, st, t0, req(k, 2, 1), req(idle, 0, 1))
	if got := getKey(t, st, k.ID); got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0) {
		t.Fatalf("last use after a charge at %v: %s", t0, lastUsed(got))
	}
	if got := getKey(t, st, idle.ID); got.LastUsedAt != nil {
		t.Fatalf("a key charged 0 queries has a last use: %s", lastUsed(got))
	}

	t1 := t0.Add(time.Hour)
	chargeAt(t, st, t1, req(k, 5, 1)) // 1 granted: the quota is 3
	if got := getKey(t, st, k.ID); got.LastUsedAt == nil || !got.LastUsedAt.Equal(t1) {
		t.Fatalf("last use after a partly granted charge at %v: %s", t1, lastUsed(got))
	}
	// A refused charge is no use.
	if g := chargeAt(t, st, t1.Add(time.Hour), req(k, 1, 1))[0]; g.Granted != 0 {
		t.Fatalf("charge beyond the quota granted %d", g.Granted)
	}
	if got := getKey(t, st, k.ID); !got.LastUsedAt.Equal(t1) {
		t.Fatalf("a refused charge moved the last use to %s", lastUsed(got))
	}
	// A wrong hash is no use either.
	wrong := account.ChargeRequest{KeyID: idle.ID, Hash: account.HashSecret("wrong"), N: 1, Cost: 1}
	chargeAt(t, st, t1, wrong)
	if got := getKey(t, st, idle.ID); got.LastUsedAt != nil {
		t.Fatalf("a charge with the wrong secret set a last use: %s", lastUsed(got))
	}
	// A batch stamped earlier (another replica's clock) that commits
	// later does not set the last use back.
	chargeAt(t, st, t0.Add(-time.Minute), req(idle, 1, 1))
	chargeAt(t, st, t0.Add(-2*time.Minute), req(idle, 1, 1))
	if got := getKey(t, st, idle.ID); got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0.Add(-time.Minute)) {
		t.Fatalf("last use %s, want the later of two stamps, %v", lastUsed(got), t0.Add(-time.Minute))
	}
	// It is kept to LastUseStep: a charge less than that after the
	// recorded use leaves it, one that much later moves it.
	busy := newKey(t, st, newAccount(t, st, 100, 100).ID)
	chargeAt(t, st, t0, req(busy, 1, 1))
	chargeAt(t, st, t0.Add(account.LastUseStep-time.Millisecond), req(busy, 1, 1))
	if got := getKey(t, st, busy.ID); got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0) {
		t.Fatalf("a charge within %v of the last use %v moved it to %s", account.LastUseStep, t0, lastUsed(got))
	}
	chargeAt(t, st, t0.Add(account.LastUseStep), req(busy, 1, 1))
	if got := getKey(t, st, busy.ID); got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0.Add(account.LastUseStep)) {
		t.Fatalf("last use %s after a charge %v after it, want %v", lastUsed(got), account.LastUseStep, t0.Add(account.LastUseStep))
	}
	// Listings carry it.
	ks, err := st.ListKeys(ctx(t), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range ks {
		if got.LastUsedAt == nil {
			t.Fatalf("ListKeys: key %s has no last use", got.ID)
		}
	}
}

func dailyUsage(t *testing.T, st account.Store, accountID int64, from, to string) []account.DayUsage {
	t.Helper()
	ds, err := st.DailyUsage(ctx(t), accountID, from, to)
	if err != nil {
		t.Fatalf("DailyUsage(%d, %s, %s): %v", accountID, from, to, err)
	}
	return ds
}

// sortedDays is want ordered as DailyUsage orders: by day, then key
// (byte order).
func sortedDays(want []account.DayUsage) []account.DayUsage {
	sort.Slice(want, func(i, j int) bool {
		if want[i].Day != want[j].Day {
			return want[i].Day < want[j].Day
		}
		return want[i].KeyID < want[j].KeyID
	})
	return want
}

func testDailyUsage(t *testing.T, st account.Store) {
	a := newAccount(t, st, 1000, 1000)
	k1, k2 := newKey(t, st, a.ID), newKey(t, st, a.ID)
	other := newAccount(t, st, 1000, 1000)
	ko := newKey(t, st, other.ID)

	// The last microsecond of 31 March (UTC) and the first of 1 April:
	// two days and two months. A time in another zone counts on its UTC
	// day: 02:00 on 1 April in UTC+8 is still 31 March.
	endMar := time.Date(2026, 3, 31, 23, 59, 59, 999999000, time.UTC)
	startApr := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	zoned := time.Date(2026, 4, 1, 2, 0, 0, 0, time.FixedZone("UTC+8", 8*3600))
	chargeAt(t, st, t0, req(k1, 3, 1), req(k2, 1, 1), req(k1, 2, 1))
	chargeAt(t, st, endMar, req(k1, 4, 1))
	chargeAt(t, st, zoned, req(k2, 6, 1))
	chargeAt(t, st, startApr, req(k1, 7, 1), req(k2, 8, 1), req(ko, 9, 1))
	chargeAt(t, st, startApr.Add(time.Hour), req(k1, 1, 1))

	want := sortedDays([]account.DayUsage{
		{Day: "2026-03-15", KeyID: k1.ID, Queries: 5},
		{Day: "2026-03-15", KeyID: k2.ID, Queries: 1},
		{Day: "2026-03-31", KeyID: k1.ID, Queries: 4},
		{Day: "2026-03-31", KeyID: k2.ID, Queries: 6},
		{Day: "2026-04-01", KeyID: k1.ID, Queries: 8},
		{Day: "2026-04-01", KeyID: k2.ID, Queries: 8},
	})
	if got := dailyUsage(t, st, a.ID, "2026-03-01", "2026-04-30"); !reflect.DeepEqual(got, want) {
		t.Fatalf("DailyUsage:\n got %+v\nwant %+v", got, want)
	}
	// from and to are inclusive.
	if got := dailyUsage(t, st, a.ID, "2026-03-31", "2026-03-31"); !reflect.DeepEqual(got, want[2:4]) {
		t.Fatalf("DailyUsage of 31 March: %+v, want %+v", got, want[2:4])
	}
	if got := dailyUsage(t, st, a.ID, "2026-03-16", "2026-03-30"); len(got) != 0 {
		t.Fatalf("DailyUsage of days without use: %+v, want none", got)
	}
	if got := dailyUsage(t, st, other.ID, "2026-01-01", "2026-12-31"); !reflect.DeepEqual(got, []account.DayUsage{{Day: "2026-04-01", KeyID: ko.ID, Queries: 9}}) {
		t.Fatalf("the other account's DailyUsage: %+v", got)
	}
	// The daily counters add up to the monthly ones.
	if n := usage(t, st, k1.ID, "2026-03"); n != 9 {
		t.Fatalf("March usage of k1 %d, want 9", n)
	}
	if n := usage(t, st, k2.ID, "2026-04"); n != 8 {
		t.Fatalf("April usage of k2 %d, want 8", n)
	}

	_, err := st.DailyUsage(ctx(t), a.ID, "2026-3-1", "2026-04-30")
	isErr(t, "DailyUsage with a malformed day", err, account.ErrInvalid)
	_, err = st.DailyUsage(ctx(t), a.ID, "2026-03-01", "")
	isErr(t, "DailyUsage with an empty day", err, account.ErrInvalid)
	_, err = st.DailyUsage(ctx(t), 999999, "2026-03-01", "2026-03-31")
	isErr(t, "DailyUsage of an unknown account", err, account.ErrNotFound)
}

// testDailyUsageGranted checks that the daily counter counts what was
// granted, not what was asked.
func testDailyUsageGranted(t *testing.T, st account.Store) {
	a := newAccount(t, st, 5, 3) // the credits run out first
	k := newKey(t, st, a.ID)
	if g := chargeAt(t, st, t0, req(k, 10, 1))[0]; g.Granted != 3 {
		t.Fatalf("granted %d, want 3", g.Granted)
	}
	chargeAt(t, st, t0, req(k, 10, 1)) // nothing left
	want := []account.DayUsage{{Day: account.Day(t0), KeyID: k.ID, Queries: 3}}
	if got := dailyUsage(t, st, a.ID, account.Day(t0), account.Day(t0)); !reflect.DeepEqual(got, want) {
		t.Fatalf("DailyUsage %+v, want %+v", got, want)
	}
}

// testDailyUsageConcurrent races goroutines charging through Meters (two,
// as two replicas would) on a few keys, on both sides of midnight with
// the Meters' clock, and checks that each day's counters are exact.
func testDailyUsageConcurrent(t *testing.T, st account.Store) {
	a := newAccount(t, st, 1_000_000, 1_000_000)
	keys := []account.NewKey{newKey(t, st, a.ID), newKey(t, st, a.ID), newKey(t, st, a.ID)}
	before := time.Date(2026, 3, 15, 23, 59, 59, 999999000, time.UTC)
	after := time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC)
	clock := NewClock(before)
	meters := []*account.Meter{
		newMeter(t, st, account.MeterOptions{MaxBatch: 8, Now: clock.Now}),
		newMeter(t, st, account.MeterOptions{MaxBatch: 8, Now: clock.Now}),
	}

	race := func(per int) map[string]int64 {
		const goroutines = 60
		granted := map[string]int64{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k, m := keys[g%len(keys)], meters[g%len(meters)]
				for range per + g%3 {
					o, err := m.Charge(t.Context(), k.Key)
					if err != nil || !o.Granted {
						t.Errorf("Charge: %+v, %v", o, err)
						return
					}
					mu.Lock()
					granted[k.ID]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return granted
	}
	day1 := race(4)
	clock.Set(after)
	day2 := race(3)
	if t.Failed() {
		return
	}
	var want []account.DayUsage
	for _, k := range keys {
		want = append(want,
			account.DayUsage{Day: "2026-03-15", KeyID: k.ID, Queries: day1[k.ID]},
			account.DayUsage{Day: "2026-03-16", KeyID: k.ID, Queries: day2[k.ID]})
	}
	want = sortedDays(want)
	if got := dailyUsage(t, st, a.ID, "2026-03-15", "2026-03-16"); !reflect.DeepEqual(got, want) {
		t.Fatalf("DailyUsage after concurrent charges:\n got %+v\nwant %+v", got, want)
	}
	for _, k := range keys {
		if n := usage(t, st, k.ID, period0); n != day1[k.ID]+day2[k.ID] {
			t.Fatalf("monthly usage of %s %d, want %d", k.ID, n, day1[k.ID]+day2[k.ID])
		}
		// The last charge was at after; the recorded use lags it by
		// less than LastUseStep.
		if got := getKey(t, st, k.ID); got.LastUsedAt == nil || got.LastUsedAt.After(after) || after.Sub(*got.LastUsedAt) >= account.LastUseStep {
			t.Fatalf("last use of %s: %s, want within %v before %v", k.ID, lastUsed(got), account.LastUseStep, after)
		}
	}
}

func testKeyUsages(t *testing.T, st account.Store) {
	a := newAccount(t, st, 1000, 1000)
	k1, k2, idle := newKey(t, st, a.ID), newKey(t, st, a.ID), newKey(t, st, a.ID)
	other := newAccount(t, st, 1000, 1000)
	ko := newKey(t, st, other.ID)
	chargeAt(t, st, t0, req(k1, 4, 1), req(k2, 2, 1), req(ko, 7, 1), req(idle, 0, 1))
	chargeAt(t, st, t0.AddDate(0, 1, 0), req(k1, 100, 1))

	got, err := st.KeyUsages(ctx(t), a.ID, period0)
	if want := map[string]int64{k1.ID: 4, k2.ID: 2}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("KeyUsages: %v, %v; want %v", got, err, want)
	}
	got, err = st.KeyUsages(ctx(t), a.ID, "2025-01")
	if err != nil || len(got) != 0 {
		t.Fatalf("KeyUsages of a period without use: %v, %v; want an empty map", got, err)
	}
	_, err = st.KeyUsages(ctx(t), 999999, period0)
	isErr(t, "KeyUsages of an unknown account", err, account.ErrNotFound)
}

func testLedgerPage(t *testing.T, st account.Store) {
	a := newAccount(t, st, 1000, 10) // entry 1: the initial grant
	other := newAccount(t, st, 1000, 10)
	for i := range 6 {
		if _, err := st.AddCredits(ctx(t), a.ID, int64(i+1), fmt.Sprint("grant ", i), t0); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddCredits(ctx(t), other.ID, 1, "other", t0); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.Ledger(ctx(t), a.ID, 0)
	if err != nil || len(all) != 7 {
		t.Fatalf("Ledger: %d entries, %v; want 7", len(all), err)
	}
	var walked []account.LedgerEntry
	before := int64(0)
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		page, err := st.LedgerPage(ctx(t), a.ID, before, 3)
		if err != nil {
			t.Fatalf("LedgerPage(before %d): %v", before, err)
		}
		if len(page) > 3 {
			t.Fatalf("page of %d entries, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		walked = append(walked, page...)
		before = page[len(page)-1].ID
	}
	if !reflect.DeepEqual(walked, all) {
		t.Fatalf("pages walked:\n%+v\nwant the whole ledger, newest first:\n%+v", walked, all)
	}
	// A cursor between pages' IDs starts below it.
	page, err := st.LedgerPage(ctx(t), a.ID, all[1].ID, 2)
	if err != nil || !reflect.DeepEqual(page, all[2:4]) {
		t.Fatalf("LedgerPage(before %d, 2): %+v, %v; want %+v", all[1].ID, page, err, all[2:4])
	}
	// A cursor beyond the newest (another account's ID, say) is the first page.
	page, err = st.LedgerPage(ctx(t), a.ID, all[0].ID+1000, 1)
	if err != nil || !reflect.DeepEqual(page, all[:1]) {
		t.Fatalf("LedgerPage(far cursor): %+v, %v", page, err)
	}
	page, err = st.LedgerPage(ctx(t), a.ID, all[len(all)-1].ID, 5)
	if err != nil || page == nil || len(page) != 0 {
		t.Fatalf("LedgerPage past the oldest: %+v, %v; want an empty list", page, err)
	}
	_, err = st.LedgerPage(ctx(t), 999999, 0, 5)
	isErr(t, "LedgerPage of an unknown account", err, account.ErrNotFound)
	_, err = st.LedgerPage(ctx(t), a.ID, 0, 0)
	isErr(t, "LedgerPage with limit 0", err, account.ErrInvalid)
	_, err = st.LedgerPage(ctx(t), a.ID, -1, 5)
	isErr(t, "LedgerPage with a negative cursor", err, account.ErrInvalid)
}

func createNamed(t *testing.T, st account.Store, name string) account.Account {
	t.Helper()
	a, err := st.CreateAccount(ctx(t), account.NewAccount{Name: name, Tier: account.Pro, At: t0})
	if err != nil {
		t.Fatalf("CreateAccount(%q): %v", name, err)
	}
	return a
}

type summaryView struct {
	ID         int64
	Name       string
	Period     string
	Used, Keys int64
}

func summaries(ss []account.AccountSummary) []summaryView {
	out := []summaryView{}
	for _, s := range ss {
		out = append(out, summaryView{s.ID, s.Name, s.Period, s.Used, s.Keys})
	}
	return out
}

func testSearchAccounts(t *testing.T, st account.Store) {
	acme := createNamed(t, st, "Acme Corp")
	labs := createNamed(t, st, "ACME labs")
	other := createNamed(t, st, "Globex")
	k1, k2, k3 := newKey(t, st, acme.ID), newKey(t, st, acme.ID), newKey(t, st, acme.ID)
	kl := newKey(t, st, labs.ID)
	chargeAt(t, st, t0, req(k1, 5, 0), req(k2, 7, 0), req(kl, 2, 0))
	chargeAt(t, st, t0.AddDate(0, -1, 0), req(k1, 100, 0)) // another period
	if _, err := st.RevokeKey(ctx(t), k3.ID, t0); err != nil {
		t.Fatal(err)
	}

	search := func(q string, limit int) []summaryView {
		t.Helper()
		ss, err := st.SearchAccounts(ctx(t), q, period0, limit)
		if err != nil {
			t.Fatalf("SearchAccounts(%q): %v", q, err)
		}
		for _, s := range ss {
			if s.Tier != account.Pro || s.MonthlyLimit != account.Limit(account.Pro, 0) || !s.CreatedAt.Equal(t0) {
				t.Fatalf("summary's account %+v: want the account's fields", s.Account)
			}
		}
		return summaries(ss)
	}
	vAcme := summaryView{acme.ID, "Acme Corp", period0, 12, 2}
	vLabs := summaryView{labs.ID, "ACME labs", period0, 2, 1}
	vOther := summaryView{other.ID, "Globex", period0, 0, 0}
	for _, tc := range []struct {
		q     string
		limit int
		want  []summaryView
	}{
		{"", 10, []summaryView{vAcme, vLabs, vOther}},
		{"", 2, []summaryView{vAcme, vLabs}},
		{"acme", 10, []summaryView{vAcme, vLabs}},
		{"  aCmE ", 10, []summaryView{vAcme, vLabs}},
		{"me co", 10, []summaryView{vAcme}},
		{"acme", 1, []summaryView{vAcme}},
		{strconv.FormatInt(other.ID, 10), 10, []summaryView{vOther}},
		{"nothing like it", 10, []summaryView{}},
		{"%", 10, []summaryView{}}, // no pattern syntax
		{"_", 10, []summaryView{}},
	} {
		if got := search(tc.q, tc.limit); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SearchAccounts(%q, limit %d):\n got %+v\nwant %+v", tc.q, tc.limit, got, tc.want)
		}
	}
	_, err := st.SearchAccounts(ctx(t), "", period0, 0)
	isErr(t, "SearchAccounts with limit 0", err, account.ErrInvalid)

	// An owner's email finds the owner's account, whatever its case,
	// and only the whole email does.
	if _, err := st.CreateOwner(ctx(t), other.ID, "ops@globex.example", t0); err != nil {
		t.Fatalf("CreateOwner: %v", err)
	}
	if _, err := st.CreateOwner(ctx(t), acme.ID, "owner@acme.example", t0); err != nil {
		t.Fatalf("CreateOwner: %v", err)
	}
	for _, tc := range []struct {
		q    string
		want []summaryView
	}{
		{"ops@globex.example", []summaryView{vOther}},
		{" OPS@Globex.Example ", []summaryView{vOther}},
		{"owner@acme.example", []summaryView{vAcme}},
		{"ops@globex", []summaryView{}},
		{"globex.example", []summaryView{}},
	} {
		if got := search(tc.q, 10); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SearchAccounts(%q):\n got %+v\nwant %+v", tc.q, got, tc.want)
		}
	}
}

func testTopConsumers(t *testing.T, st account.Store) {
	a := createNamed(t, st, "a")
	b := createNamed(t, st, "b")
	c := createNamed(t, st, "c")
	idle := createNamed(t, st, "idle")
	elsewhen := createNamed(t, st, "last month")
	ka1, ka2 := newKey(t, st, a.ID), newKey(t, st, a.ID)
	kb, kc := newKey(t, st, b.ID), newKey(t, st, c.ID)
	newKey(t, st, idle.ID)
	ke := newKey(t, st, elsewhen.ID)
	// b 9; a 3+2 = 5 over two keys; c 5: a before c on the tie (by ID).
	chargeAt(t, st, t0, req(kc, 5, 0), req(ka1, 3, 0), req(kb, 9, 0), req(ka2, 2, 0))
	chargeAt(t, st, t0.AddDate(0, -1, 0), req(ke, 50, 0), req(kc, 50, 0))

	top := func(period string, n int) []summaryView {
		t.Helper()
		ss, err := st.TopConsumers(ctx(t), period, n)
		if err != nil {
			t.Fatalf("TopConsumers(%s, %d): %v", period, n, err)
		}
		return summaries(ss)
	}
	vb := summaryView{b.ID, "b", period0, 9, 1}
	va := summaryView{a.ID, "a", period0, 5, 2}
	vc := summaryView{c.ID, "c", period0, 5, 1}
	if got, want := top(period0, 10), []summaryView{vb, va, vc}; !reflect.DeepEqual(got, want) {
		t.Fatalf("TopConsumers:\n got %+v\nwant %+v", got, want)
	}
	if got, want := top(period0, 2), []summaryView{vb, va}; !reflect.DeepEqual(got, want) {
		t.Fatalf("TopConsumers(2):\n got %+v\nwant %+v", got, want)
	}
	prev := account.Period(t0.AddDate(0, -1, 0))
	want := []summaryView{{c.ID, "c", prev, 50, 1}, {elsewhen.ID, "last month", prev, 50, 1}}
	if got := top(prev, 10); !reflect.DeepEqual(got, want) {
		t.Fatalf("TopConsumers of %s:\n got %+v\nwant %+v", prev, got, want)
	}
	if got := top("2020-01", 10); len(got) != 0 {
		t.Fatalf("TopConsumers of a period without use: %+v", got)
	}
	_, err := st.TopConsumers(ctx(t), period0, 0)
	isErr(t, "TopConsumers(0)", err, account.ErrInvalid)
}
