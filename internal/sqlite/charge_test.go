package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// Consecutive charges of one key at one cost make one ledger entry with
// their sums and the balance after the last; a charge of another key or
// at another cost between them starts a new entry, so every entry's
// balance is the one before it plus its delta.
func TestChargeLedgerMergesNeighbours(t *testing.T) {
	st := openTemp(t)
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, account.NewAccount{Name: "m", Tier: account.Enterprise, CustomLimit: 1000, InitialCredits: 1000})
	if err != nil {
		t.Fatal(err)
	}
	k1, k2 := account.GenerateKey(a.ID, time.Now()), account.GenerateKey(a.ID, time.Now())
	for _, k := range []account.NewKey{k1, k2} {
		if err := st.CreateKey(ctx, k.Key); err != nil {
			t.Fatal(err)
		}
	}
	req := func(k account.NewKey, n, cost int64) account.ChargeRequest {
		return account.ChargeRequest{KeyID: k.ID, Hash: k.Hash, N: n, Cost: cost}
	}
	now := time.Now()
	if _, err := st.Charge(ctx, account.Period(now), now, []account.ChargeRequest{
		req(k1, 1, 1), req(k1, 1, 1), req(k1, 2, 1), // one entry: 4 queries
		req(k2, 1, 1),                // another key
		req(k1, 1, 1),                // k1 again: a new entry
		req(k1, 1, 3), req(k1, 1, 3), // another cost: one entry of 2 at 3
	}); err != nil {
		t.Fatal(err)
	}
	es, err := st.Ledger(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		key               string
		delta, q, balance int64
	}
	want := []row{{k1.ID, -4, 4, 996}, {k2.ID, -1, 1, 995}, {k1.ID, -1, 1, 994}, {k1.ID, -6, 2, 988}}
	var got []row
	for i := len(es) - 1; i >= 0; i-- { // Ledger lists the newest first
		if e := es[i]; e.Reason == "usage" {
			got = append(got, row{e.KeyID, e.Delta, e.Queries, e.Balance})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("usage entries %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
