package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

func testChargeQuota(t *testing.T, st account.Store) {
	a := newAccount(t, st, 5, 100)
	k := newKey(t, st, a.ID)
	g := charge(t, st, period0, req(k, 3, 1))[0]
	want := account.Grant{KeyID: k.ID, AccountID: a.ID, Tier: account.Enterprise, Granted: 3, Deny: account.DenyNone, Used: 3, Limit: 5, Credits: 97}
	if g != want {
		t.Fatalf("first charge: %+v, want %+v", g, want)
	}
	g = charge(t, st, period0, req(k, 5, 1))[0]
	want.Granted, want.Deny, want.Used, want.Credits = 2, account.DenyQuota, 5, 95
	if g != want {
		t.Fatalf("charge over quota: %+v, want %+v", g, want)
	}
	g = charge(t, st, period0, req(k, 1, 1))[0]
	want.Granted = 0
	if g != want {
		t.Fatalf("charge with no quota left: %+v, want %+v", g, want)
	}
	if n := usage(t, st, k.ID, period0); n != 5 {
		t.Fatalf("usage %d, want 5", n)
	}
	if q := checkLedger(t, st, a.ID, 1); q[k.ID] != 5 {
		t.Fatalf("ledger charges %d queries, want 5", q[k.ID])
	}
	es, _ := st.Ledger(ctx(t), a.ID, 0)
	// The grant, and one usage entry: the two charged batches are one
	// key's at one cost in one minute; the refused one writes nothing.
	if len(es) != 2 {
		t.Fatalf("ledger has %d entries, want 2: %+v", len(es), es)
	}
	if e := es[0]; e.KeyID != k.ID || e.Queries != 5 || e.Delta != -5 || e.Balance != 95 || e.Reason != "usage" || !e.CreatedAt.Equal(t0) {
		t.Fatalf("usage entry %+v", e)
	}
}

func testChargeCredits(t *testing.T, st account.Store) {
	a := newAccount(t, st, 100, 10)
	k := newKey(t, st, a.ID)
	// Cost 3: 10 credits pay for 3 queries and leave 1.
	g := charge(t, st, period0, req(k, 5, 3))[0]
	if g.Granted != 3 || g.Deny != account.DenyCredits || g.Credits != 1 || g.Used != 3 {
		t.Fatalf("charge beyond the balance: %+v", g)
	}
	g = charge(t, st, period0, req(k, 1, 3))[0]
	if g.Granted != 0 || g.Deny != account.DenyCredits || g.Credits != 1 || g.Used != 3 {
		t.Fatalf("charge with 1 credit at cost 3: %+v", g)
	}
	// Cost 1 still fits.
	g = charge(t, st, period0, req(k, 1, 1))[0]
	if g.Granted != 1 || g.Deny != account.DenyNone || g.Credits != 0 {
		t.Fatalf("charge of the last credit: %+v", g)
	}
	if b := balance(t, st, a.ID); b != 0 {
		t.Fatalf("balance %d, want 0", b)
	}
	checkLedger(t, st, a.ID, 0) // mixed costs: the balance chain only
}

// testChargeLedgerMerges holds every store to one ledger: neighbouring
// charges of one key at one cost in a batch are one entry with their sums
// and the balance after the last, as one charge of their sum would be; a
// charge of another key or at another cost between them starts a new
// entry, so every entry's balance is the one before it plus its delta. A
// later batch's first entry is added to the account's latest entry when
// that entry takes it (account.LedgerEntry.TakesUsage).
func testChargeLedgerMerges(t *testing.T, st account.Store) {
	a := newAccount(t, st, 1000, 1000)
	k1, k2 := newKey(t, st, a.ID), newKey(t, st, a.ID)
	charge(t, st, period0,
		req(k1, 1, 1), req(k1, 1, 1), req(k1, 2, 1), // one entry: 4 queries
		req(k2, 1, 1),                // another key
		req(k1, 1, 1),                // k1 again: a new entry
		req(k1, 1, 3), req(k1, 1, 3), // another cost: one entry of 2 at 3
	)
	type row struct {
		key               string
		delta, q, balance int64
	}
	want := []row{{k1.ID, -4, 4, 996}, {k2.ID, -1, 1, 995}, {k1.ID, -1, 1, 994}, {k1.ID, -6, 2, 988}}
	usageRows := func() []row {
		t.Helper()
		es, err := st.Ledger(ctx(t), a.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []row
		for i := len(es) - 1; i >= 0; i-- { // Ledger lists the newest first
			if e := es[i]; e.Reason == "usage" {
				got = append(got, row{e.KeyID, e.Delta, e.Queries, e.Balance})
			}
		}
		return got
	}
	check := func(what string) {
		t.Helper()
		if got := usageRows(); !slices.Equal(got, want) {
			t.Fatalf("%s: usage entries\n got %+v\nwant %+v", what, got, want)
		}
		checkLedger(t, st, a.ID, 0)
	}
	check("one batch")

	// Later batches in the same minute add to the account's latest entry
	// when it is the same key's at the same cost, and only then.
	chargeAt(t, st, t0.Add(time.Second), req(k1, 1, 3))
	want[3] = row{k1.ID, -9, 3, 985}
	check("the latest entry's key and cost, same minute")
	chargeAt(t, st, t0.Add(2*time.Second), req(k1, 1, 1), req(k1, 1, 3))
	want = append(want, row{k1.ID, -1, 1, 984}, row{k1.ID, -3, 1, 981})
	check("another cost first, same minute")
	chargeAt(t, st, t0.Add(3*time.Second), req(k2, 1, 3))
	want = append(want, row{k2.ID, -3, 1, 978})
	check("another key, same minute")
	next := t0.Truncate(account.UsageEntryStep).Add(account.UsageEntryStep)
	chargeAt(t, st, next, req(k2, 2, 3))
	want = append(want, row{k2.ID, -6, 2, 972})
	check("the next minute")
	if _, err := st.AddCredits(ctx(t), a.ID, 10, "top-up", next); err != nil {
		t.Fatal(err)
	}
	chargeAt(t, st, next, req(k2, 1, 3))
	want = append(want, row{k2.ID, -3, 1, 979})
	check("after a credit entry")
}

// testChargeAccountsInOneBatch is a batch of two accounts' keys: every
// write of the charge has two rows (a store may write one row and many
// rows differently), first as new ledger entries, then, in the same
// minute, added to them.
func testChargeAccountsInOneBatch(t *testing.T, st account.Store) {
	a, b := newAccount(t, st, 100, 50), newAccount(t, st, 100, 60)
	ka, kb := newKey(t, st, a.ID), newKey(t, st, b.ID)
	gs := chargeAt(t, st, t0, req(ka, 2, 1), req(kb, 3, 1))
	if gs[0].Granted != 2 || gs[0].Credits != 48 || gs[1].Granted != 3 || gs[1].Credits != 57 {
		t.Fatalf("first batch: %+v", gs)
	}
	gs = chargeAt(t, st, t0.Add(time.Second), req(ka, 1, 1), req(kb, 1, 1))
	if gs[0].Used != 3 || gs[0].Credits != 47 || gs[1].Used != 4 || gs[1].Credits != 56 {
		t.Fatalf("second batch: %+v", gs)
	}
	for _, c := range []struct {
		acct          account.Account
		key           account.NewKey
		queries, left int64
	}{{a, ka, 3, 47}, {b, kb, 4, 56}} {
		if n := usage(t, st, c.key.ID, period0); n != c.queries {
			t.Errorf("account %d: usage %d, want %d", c.acct.ID, n, c.queries)
		}
		if n := balance(t, st, c.acct.ID); n != c.left {
			t.Errorf("account %d: balance %d, want %d", c.acct.ID, n, c.left)
		}
		day := account.Day(t0)
		if got := dailyUsage(t, st, c.acct.ID, day, day); len(got) != 1 || got[0].Queries != c.queries {
			t.Errorf("account %d: daily usage %+v, want %d queries on %s", c.acct.ID, got, c.queries, day)
		}
		if got := getKey(t, st, c.key.ID); got.LastUsedAt == nil || !got.LastUsedAt.Equal(t0) {
			t.Errorf("account %d: key last used %v, want %v", c.acct.ID, got.LastUsedAt, t0)
		}
		es, err := st.Ledger(ctx(t), c.acct.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 2 || es[0].Reason != "usage" || es[0].KeyID != c.key.ID || es[0].Queries != c.queries ||
			es[0].Delta != -c.queries || es[0].Balance != c.left {
			t.Errorf("account %d: ledger %+v, want the grant and one usage entry of %d queries", c.acct.ID, es, c.queries)
		}
		checkLedger(t, st, c.acct.ID, 1)
	}
}

func testChargeQuotaBeforeCredits(t *testing.T, st account.Store) {
	// Both short: the quota runs out first, so the refusal is the quota's.
	a := newAccount(t, st, 2, 5)
	k := newKey(t, st, a.ID)
	if g := charge(t, st, period0, req(k, 4, 1))[0]; g.Granted != 2 || g.Deny != account.DenyQuota {
		t.Fatalf("quota 2, credits 5, N 4: %+v, want 2 granted, DenyQuota", g)
	}
	// The balance runs out first: the refusal is the balance's.
	b := newAccount(t, st, 5, 2)
	kb := newKey(t, st, b.ID)
	if g := charge(t, st, period0, req(kb, 4, 1))[0]; g.Granted != 2 || g.Deny != account.DenyCredits {
		t.Fatalf("quota 5, credits 2, N 4: %+v, want 2 granted, DenyCredits", g)
	}
	// Both end at the same query: quota first.
	c := newAccount(t, st, 3, 3)
	kc := newKey(t, st, c.ID)
	if g := charge(t, st, period0, req(kc, 4, 1))[0]; g.Granted != 3 || g.Deny != account.DenyQuota {
		t.Fatalf("quota 3, credits 3, N 4: %+v, want 3 granted, DenyQuota", g)
	}
}

func testChargeDeniesKeys(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 10)
	k := newKey(t, st, a.ID)
	revoked := newKey(t, st, a.ID)
	if _, err := st.RevokeKey(ctx(t), revoked.ID, t0); err != nil {
		t.Fatal(err)
	}
	rotated := newKey(t, st, a.ID)
	if _, err := st.RotateKey(ctx(t), rotated.ID, account.HashSecret("new")); err != nil {
		t.Fatal(err)
	}
	wrong := req(k, 1, 1)
	wrong.Hash = account.HashSecret("not the secret")
	unknown := account.ChargeRequest{KeyID: "nosuchkey123", Hash: k.Hash, N: 1, Cost: 1}

	gs := charge(t, st, period0, wrong, req(revoked, 1, 1), req(rotated, 1, 1), unknown, req(k, 1, 1))
	for i, g := range gs[:4] {
		if g.Granted != 0 || g.Deny != account.DenyKey {
			t.Fatalf("request %d: %+v, want DenyKey", i, g)
		}
	}
	if g := gs[4]; g.Granted != 1 || g.Credits != 9 {
		t.Fatalf("the good key in the same batch: %+v", g)
	}
	for _, id := range []string{revoked.ID, rotated.ID} {
		if n := usage(t, st, id, period0); n != 0 {
			t.Fatalf("denied key %s has usage %d", id, n)
		}
	}
	if b := balance(t, st, a.ID); b != 9 {
		t.Fatalf("balance %d, want 9", b)
	}
}

func testChargeSharedCredits(t *testing.T, st account.Store) {
	// Credits are the account's, quotas the keys'.
	a := newAccount(t, st, 4, 7)
	k1, k2 := newKey(t, st, a.ID), newKey(t, st, a.ID)
	gs := charge(t, st, period0, req(k1, 5, 1), req(k2, 5, 1))
	if g := gs[0]; g.Granted != 4 || g.Deny != account.DenyQuota || g.Credits != 3 {
		t.Fatalf("first key: %+v, want 4 granted (its quota), 3 credits left", g)
	}
	if g := gs[1]; g.Granted != 3 || g.Deny != account.DenyCredits || g.Credits != 0 || g.Used != 3 {
		t.Fatalf("second key: %+v, want the remaining 3 credits", g)
	}
	q := checkLedger(t, st, a.ID, 1)
	if q[k1.ID] != 4 || q[k2.ID] != 3 {
		t.Fatalf("ledger per key %v, want %s:4 %s:3", q, k1.ID, k2.ID)
	}
	es, _ := st.Ledger(ctx(t), a.ID, 0)
	if len(es) != 3 { // grant + one entry per charged key
		t.Fatalf("ledger has %d entries, want 3", len(es))
	}
}

func testChargePeriods(t *testing.T, st account.Store) {
	a := newAccount(t, st, 3, 100)
	k := newKey(t, st, a.ID)
	if g := charge(t, st, "2026-01", req(k, 5, 1))[0]; g.Granted != 3 {
		t.Fatalf("January: %+v", g)
	}
	// A new month starts from zero; the old one stays as it was.
	if g := charge(t, st, "2026-02", req(k, 2, 1))[0]; g.Granted != 2 || g.Used != 2 || g.Deny != account.DenyNone {
		t.Fatalf("February: %+v", g)
	}
	if n := usage(t, st, k.ID, "2026-01"); n != 3 {
		t.Fatalf("January usage %d, want 3", n)
	}
	if n := usage(t, st, k.ID, "2026-02"); n != 2 {
		t.Fatalf("February usage %d, want 2", n)
	}
	if n := usage(t, st, k.ID, "2026-03"); n != 0 {
		t.Fatalf("March usage %d, want 0", n)
	}
	if b := balance(t, st, a.ID); b != 95 {
		t.Fatalf("balance %d, want 95: credits do not reset", b)
	}
}

func testChargeEdgeCases(t *testing.T, st account.Store) {
	gs, err := st.Charge(ctx(t), period0, t0, nil)
	if err != nil || len(gs) != 0 {
		t.Fatalf("empty batch: %v, %v", gs, err)
	}
	a := newAccount(t, st, 5, 5)
	k := newKey(t, st, a.ID)
	if g := charge(t, st, period0, req(k, 0, 1))[0]; g.Granted != 0 || g.Deny != account.DenyNone || g.Credits != 5 {
		t.Fatalf("N=0: %+v", g)
	}
	if _, err := st.Charge(ctx(t), period0, t0, []account.ChargeRequest{req(k, -1, 1)}); err == nil {
		t.Fatal("a negative N was accepted")
	}
	if _, err := st.Charge(ctx(t), period0, t0, []account.ChargeRequest{req(k, 1, -1)}); err == nil {
		t.Fatal("a negative cost was accepted")
	}
	if n, b := usage(t, st, k.ID, period0), balance(t, st, a.ID); n != 0 || b != 5 {
		t.Fatalf("after refused charges: usage %d, balance %d; want 0, 5", n, b)
	}
	// A failed batch changes nothing: the valid request before the bad
	// one is rolled back with it.
	if _, err := st.Charge(ctx(t), period0, t0, []account.ChargeRequest{req(k, 2, 1), req(k, -1, 1)}); err == nil {
		t.Fatal("a batch with a negative N was accepted")
	}
	if n := usage(t, st, k.ID, period0); n != 0 {
		t.Fatalf("a refused batch left usage %d", n)
	}
}

// testChargeConcurrentCalls races Charge transactions against each other
// (no Meter): the store's own isolation must keep the totals exact.
func testChargeConcurrentCalls(t *testing.T, st account.Store) {
	const quota, credits = 100, 70
	a := newAccount(t, st, quota, credits)
	k1, k2 := newKey(t, st, a.ID), newKey(t, st, a.ID)
	var (
		mu      sync.Mutex
		granted = map[string]int64{}
		wg      sync.WaitGroup
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := k1
			if g%2 == 1 {
				k = k2
			}
			for i := range 12 {
				gs, err := st.Charge(t.Context(), period0, t0, []account.ChargeRequest{req(k, int64(1+i%3), 1)})
				if err != nil {
					t.Errorf("Charge: %v", err)
					return
				}
				mu.Lock()
				granted[k.ID] += gs[0].Granted
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// 8 goroutines ask for 8*12*2 = 192 queries; the balance allows 70.
	if total := granted[k1.ID] + granted[k2.ID]; total != credits {
		t.Fatalf("granted %d in total, want exactly %d", total, credits)
	}
	for _, k := range []account.NewKey{k1, k2} {
		if n := usage(t, st, k.ID, period0); n != granted[k.ID] {
			t.Fatalf("key %s: usage %d, granted %d", k.ID, n, granted[k.ID])
		}
	}
	if b := balance(t, st, a.ID); b != 0 {
		t.Fatalf("balance %d, want 0", b)
	}
	q := checkLedger(t, st, a.ID, 1)
	if q[k1.ID] != granted[k1.ID] || q[k2.ID] != granted[k2.ID] {
		t.Fatalf("ledger %v, granted %v", q, granted)
	}
}
