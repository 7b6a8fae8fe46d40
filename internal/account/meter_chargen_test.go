package account_test

import (
	"errors"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
)

// TestMeterChargeN walks n-query charges through the quota and then the
// balance: each grants what is left, in one ledger entry, and reports the
// reason for the rest.
func TestMeterChargeN(t *testing.T) {
	t.Run("quota", func(t *testing.T) {
		s := newSetup(t, 6, 1000, account.MeterOptions{})
		close(s.st.gate)
		for i, want := range []struct {
			n, granted, used, credits int64
			deny                      account.Deny
		}{
			{4, 4, 4, 996, account.DenyNone},
			{5, 2, 6, 994, account.DenyQuota}, // 2 left of 6
			{3, 0, 6, 994, account.DenyQuota},
		} {
			o, err := s.m.ChargeN(t.Context(), s.k1.Key, want.n)
			if err != nil {
				t.Fatal(err)
			}
			if o.GrantedN != want.granted || o.Granted != (want.granted > 0) || o.Used != want.used ||
				o.Remaining != 6-want.used || o.Credits != want.credits || o.Deny != want.deny || o.Limit != 6 {
				t.Fatalf("charge %d of %d: %+v; want %d granted, used %d, credits %d, deny %v",
					i, want.n, o, want.granted, want.used, want.credits, want.deny)
			}
		}
		if n, _ := s.st.Usage(t.Context(), s.k1.ID, account.Period(t0)); n != 6 {
			t.Fatalf("usage %d, want 6", n)
		}
		// One key at one cost within a minute: one usage entry.
		checkUsageEntries(t, s, []int64{6})
	})

	t.Run("credits", func(t *testing.T) {
		s := newSetup(t, 100, 3, account.MeterOptions{Cost: 1})
		close(s.st.gate)
		o, err := s.m.ChargeN(t.Context(), s.k1.Key, 5)
		if err != nil {
			t.Fatal(err)
		}
		// The quota would allow all 5; the balance allows 3.
		if o.GrantedN != 3 || o.Deny != account.DenyCredits || o.Credits != 0 || o.Used != 3 || o.Remaining != 97 {
			t.Fatalf("5 queries on 3 credits: %+v", o)
		}
		checkUsageEntries(t, s, []int64{3})
	})

	t.Run("cost", func(t *testing.T) {
		s := newSetup(t, 100, 10, account.MeterOptions{Cost: 3})
		close(s.st.gate)
		o, err := s.m.ChargeN(t.Context(), s.k1.Key, 4)
		if err != nil || o.GrantedN != 3 || o.Credits != 1 || o.Deny != account.DenyCredits {
			t.Fatalf("4 queries at cost 3 on 10 credits: %+v, %v", o, err)
		}
	})

	t.Run("n < 1", func(t *testing.T) {
		s := newSetup(t, 100, 10, account.MeterOptions{})
		close(s.st.gate)
		for _, n := range []int64{0, -1} {
			if _, err := s.m.ChargeN(t.Context(), s.k1.Key, n); !errors.Is(err, account.ErrInvalid) {
				t.Fatalf("ChargeN(%d): %v, want ErrInvalid", n, err)
			}
		}
		if st := s.m.Stats(); st.Charges != 0 {
			t.Fatalf("%d charges taken for invalid counts", st.Charges)
		}
	})
}

// TestMeterChargeNShareGroup holds a batch at the store while a 3-query
// charge, a single charge and a 4-query charge of one key queue behind it:
// they reach the store as one request of 8, and the 5 queries the quota
// still allows go to them in arrival order (3, 1, then 1 of 4).
func TestMeterChargeNShareGroup(t *testing.T) {
	s := newSetup(t, 6, 100, account.MeterOptions{})
	first := make(chan result, 1)
	go func() { o, err := s.m.Charge(t.Context(), s.k1.Key); first <- result{o, err} }()
	waitStats(s.m, 1, 1) // the first batch is at the gate

	ns := []int64{3, 1, 4}
	res := make([]chan result, len(ns))
	for i, n := range ns {
		res[i] = make(chan result, 1)
		go func() {
			var o account.Outcome
			var err error
			if n == 1 {
				o, err = s.m.Charge(t.Context(), s.k1.Key)
			} else {
				o, err = s.m.ChargeN(t.Context(), s.k1.Key, n)
			}
			res[i] <- result{o, err}
		}()
		waitStats(s.m, uint64(2+i), 1) // a known arrival order
	}
	close(s.st.gate)
	if r := <-first; r.err != nil || r.o.GrantedN != 1 || r.o.Used != 1 || r.o.Credits != 99 {
		t.Fatalf("first charge: %+v", r)
	}
	for i, want := range []struct {
		granted, used, credits int64
		deny                   account.Deny
	}{
		{3, 4, 96, account.DenyNone},
		{1, 5, 95, account.DenyNone},
		{1, 6, 94, account.DenyQuota},
	} {
		r := <-res[i]
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.o.GrantedN != want.granted || r.o.Used != want.used || r.o.Credits != want.credits || r.o.Deny != want.deny || r.o.Remaining != 6-want.used {
			t.Fatalf("arrival %d (%d queries): %+v; want %d granted, used %d, credits %d, deny %v",
				i, ns[i], r.o, want.granted, want.used, want.credits, want.deny)
		}
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if len(s.st.batches) != 2 || len(s.st.batches[1]) != 1 || s.st.batches[1][0].N != 8 {
		t.Fatalf("store calls %+v, want the second to be one request of 8", s.st.batches)
	}
}

// checkUsageEntries asserts the account's usage ledger entries, oldest
// first: one per charge, for the queries it granted.
func checkUsageEntries(t *testing.T, s *setup, want []int64) {
	t.Helper()
	k, err := s.st.Key(t.Context(), s.k1.ID)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := s.st.Ledger(t.Context(), k.AccountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Reason == "usage" {
			got = append(got, e.Queries)
			if e.Delta != -e.Queries*s.m.Cost() {
				t.Errorf("entry %+v: delta is not queries x cost", e)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("usage entries %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("usage entries %v, want %v", got, want)
		}
	}
}
