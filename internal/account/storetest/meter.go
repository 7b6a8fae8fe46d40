package storetest

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

func newMeter(t *testing.T, st account.Store, opts account.MeterOptions) *account.Meter {
	m := account.NewMeter(st, opts)
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// testMeterExact races hundreds of goroutines on one key through the
// Meter: exactly min(quota, credits/cost) charges succeed, each success
// sees its own place in line, and the counter, the balance and the ledger
// agree.
func testMeterExact(t *testing.T, st account.Store, quota, credits, cost int64) {
	a := newAccount(t, st, quota, credits)
	k := newKey(t, st, a.ID)
	// A small MaxBatch makes many batches, so the races are between
	// batches as well as within them.
	m := newMeter(t, st, account.MeterOptions{Cost: cost, MaxBatch: 16, Now: NewClock(t0).Now})

	const goroutines, each = 300, 2
	var (
		mu       sync.Mutex
		outcomes []account.Outcome
		wg       sync.WaitGroup
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				o, err := m.Charge(t.Context(), k.Key)
				if err != nil {
					t.Errorf("Charge: %v", err)
					return
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	want := min(quota, credits/cost)
	wantDeny := account.DenyQuota
	if credits/cost < quota {
		wantDeny = account.DenyCredits
	}
	var used []int64
	for _, o := range outcomes {
		if !o.Reset.Equal(account.PeriodReset(t0)) || o.Limit != quota || o.Remaining != quota-o.Used {
			t.Fatalf("outcome %+v: want limit %d, remaining = limit - used, reset %v", o, quota, account.PeriodReset(t0))
		}
		if !o.Granted {
			if o.Deny != wantDeny {
				t.Fatalf("denied outcome %+v, want deny %v", o, wantDeny)
			}
			continue
		}
		// One key: the balance after the n-th charge is credits - n*cost.
		if o.Credits != credits-o.Used*cost {
			t.Fatalf("granted outcome %+v: credits %d, want %d", o, o.Credits, credits-o.Used*cost)
		}
		used = append(used, o.Used)
	}
	if int64(len(used)) != want {
		t.Fatalf("%d of %d charges succeeded, want exactly %d", len(used), goroutines*each, want)
	}
	slices.Sort(used)
	for i, u := range used {
		if u != int64(i+1) {
			t.Fatalf("the successes saw usage %v, want each of 1..%d once", used, want)
		}
	}
	if n := usage(t, st, k.ID, period0); n != want {
		t.Fatalf("usage counter %d, want %d", n, want)
	}
	if b := balance(t, st, a.ID); b != credits-want*cost {
		t.Fatalf("balance %d, want %d", b, credits-want*cost)
	}
	if q := checkLedger(t, st, a.ID, cost); q[k.ID] != want {
		t.Fatalf("the ledger charges %d queries, want %d", q[k.ID], want)
	}
	if s := m.Stats(); s.Charges != goroutines*each || s.Failed != 0 {
		t.Fatalf("meter stats %+v", s)
	}
}

// testMeterMonthBoundary moves the injected clock across months: the
// quota resets at midnight UTC on the first, whatever the clock's zone.
func testMeterMonthBoundary(t *testing.T, st account.Store) {
	a := newAccount(t, st, 3, 100)
	k := newKey(t, st, a.ID)
	// 23:59:59 UTC on 31 January is already 1 February in UTC+8: the
	// period must still be January's.
	clock := NewClock(time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC).In(time.FixedZone("UTC+8", 8*3600)))
	m := newMeter(t, st, account.MeterOptions{Now: clock.Now})
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

	for i := int64(1); i <= 3; i++ {
		o, err := m.Charge(t.Context(), k.Key)
		if err != nil || !o.Granted || o.Used != i || o.Remaining != 3-i || !o.Reset.Equal(feb) {
			t.Fatalf("January charge %d: %+v, %v", i, o, err)
		}
	}
	o, err := m.Charge(t.Context(), k.Key)
	if err != nil || o.Granted || o.Deny != account.DenyQuota || o.Remaining != 0 || !o.Reset.Equal(feb) {
		t.Fatalf("January charge over quota: %+v, %v; want DenyQuota until %v", o, err, feb)
	}

	clock.Set(feb)
	o, err = m.Charge(t.Context(), k.Key)
	mar := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if err != nil || !o.Granted || o.Used != 1 || o.Remaining != 2 || !o.Reset.Equal(mar) {
		t.Fatalf("first February charge: %+v, %v; want usage reset", o, err)
	}
	if n := usage(t, st, k.ID, "2026-01"); n != 3 {
		t.Fatalf("January usage %d, want 3", n)
	}
	if n := usage(t, st, k.ID, "2026-02"); n != 1 {
		t.Fatalf("February usage %d, want 1", n)
	}

	// And across a year.
	clock.Set(time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC))
	if o, _ := m.Charge(t.Context(), k.Key); !o.Granted || !o.Reset.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("December charge: %+v", o)
	}
	clock.Set(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if o, _ := m.Charge(t.Context(), k.Key); !o.Granted || o.Used != 1 {
		t.Fatalf("January 2027 charge: %+v", o)
	}
	if n := usage(t, st, k.ID, "2026-12"); n != 1 {
		t.Fatalf("December usage %d, want 1", n)
	}
}

// testMeterRevokeRotate checks that a key changed by another process (a
// second Service, as the CLI would be) stops being charged at once, even
// while this process's Service still has it cached.
func testMeterRevokeRotate(t *testing.T, st account.Store) {
	clock := NewClock(t0)
	server := &account.Service{Store: st, Now: clock.Now, KeyCacheTTL: time.Hour}
	cli := &account.Service{Store: st, Now: clock.Now}
	a, err := cli.CreateAccount(t.Context(), account.AccountParams{Name: "acme", Tier: account.Pro})
	if err != nil {
		t.Fatal(err)
	}
	nk, err := cli.CreateKey(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	m := newMeter(t, st, account.MeterOptions{Now: clock.Now})

	k, _, err := server.Authenticate(t.Context(), nk.Secret)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if o, err := m.Charge(t.Context(), k); err != nil || !o.Granted || o.Used != 1 {
		t.Fatalf("first charge: %+v, %v", o, err)
	}

	rk, err := cli.RotateKey(t.Context(), nk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rk.ID != nk.ID || rk.Secret == nk.Secret || !bytes.Equal(rk.Hash, account.HashSecret(rk.Secret)) {
		t.Fatalf("RotateKey = %+v", rk.Key)
	}
	// The server may still accept the old secret from its cache; the
	// charge is what must refuse it.
	if old, _, err := server.Authenticate(t.Context(), nk.Secret); err == nil {
		k = old
	}
	if o, err := m.Charge(t.Context(), k); err != nil || o.Granted || o.Deny != account.DenyKey {
		t.Fatalf("charge with the rotated-out secret: %+v, %v; want DenyKey", o, err)
	}
	k2, _, err := server.Authenticate(t.Context(), rk.Secret)
	if err != nil {
		t.Fatalf("Authenticate with the new secret: %v", err)
	}
	if o, err := m.Charge(t.Context(), k2); err != nil || !o.Granted || o.Used != 2 {
		t.Fatalf("charge with the new secret: %+v, %v; want usage kept (2)", o, err)
	}

	if _, err := cli.RevokeKey(t.Context(), nk.ID); err != nil {
		t.Fatal(err)
	}
	if o, err := m.Charge(t.Context(), k2); err != nil || o.Granted || o.Deny != account.DenyKey {
		t.Fatalf("charge with a revoked key: %+v, %v; want DenyKey", o, err)
	}
	if n := usage(t, st, nk.ID, period0); n != 2 {
		t.Fatalf("usage %d, want 2", n)
	}
}

// gatedStore holds every Charge until the gate opens, so a test can keep
// a batch in the committer while more charges pile up behind it.
type gatedStore struct {
	account.Store
	gate chan struct{}
}

func (g gatedStore) Charge(ctx context.Context, period string, at time.Time, reqs []account.ChargeRequest) ([]account.Grant, error) {
	<-g.gate
	return g.Store.Charge(ctx, period, at, reqs)
}

// testMeterCloseFlushes closes a Meter with one batch in the committer
// and more charges waiting behind it: Close must commit them all.
func testMeterCloseFlushes(t *testing.T, st account.Store) {
	a := newAccount(t, st, 100, 100)
	k := newKey(t, st, a.ID)
	gated := gatedStore{Store: st, gate: make(chan struct{})}
	m := account.NewMeter(gated, account.MeterOptions{MaxDelay: time.Hour, Now: NewClock(t0).Now})
	const n = 20
	results := make(chan error, n)
	for range n {
		go func() {
			o, err := m.Charge(t.Context(), k.Key)
			if err == nil && !o.Granted {
				err = errors.New("denied")
			}
			results <- err
		}()
	}
	// Wait until the first batch is held at the gate and every other
	// charge waits in the forming batch.
	for s := m.Stats(); s.Charges < n || s.Batches < 1; s = m.Stats() {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close(t.Context()) }()
	close(gated.gate)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range n {
		if err := <-results; err != nil {
			t.Fatalf("a charge pending at Close: %v", err)
		}
	}
	if got := usage(t, st, k.ID, period0); got != n {
		t.Fatalf("usage %d after Close, want %d", got, n)
	}
	if _, err := m.Charge(t.Context(), k.Key); !errors.Is(err, account.ErrMeterClosed) || !errors.Is(err, account.ErrUnavailable) {
		t.Fatalf("Charge after Close: %v, want ErrMeterClosed (an ErrUnavailable)", err)
	}
	if err := m.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// testMeterStoreDown checks that every waiter of a failed batch gets an
// error, and nobody a success.
func testMeterStoreDown(t *testing.T, st account.Store) {
	a := newAccount(t, st, 100, 100)
	k := newKey(t, st, a.ID)
	m := newMeter(t, st, account.MeterOptions{Now: NewClock(t0).Now})
	if o, err := m.Charge(t.Context(), k.Key); err != nil || !o.Granted {
		t.Fatalf("charge before the failure: %+v, %v", o, err)
	}
	st.Close()
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := m.Charge(t.Context(), k.Key)
			if !errors.Is(err, account.ErrUnavailable) {
				t.Errorf("charge on a closed store: %+v, %v; want ErrUnavailable", o, err)
			}
			if o.Granted {
				t.Errorf("charge on a closed store granted: %+v", o)
			}
		}()
	}
	wg.Wait()
	if s := m.Stats(); s.Failed == 0 {
		t.Fatalf("stats %+v: no failed batch counted", s)
	}
}

func testServiceAuthenticate(t *testing.T, st account.Store) {
	svc := &account.Service{Store: st, Now: NewClock(t0).Now}
	a, err := svc.CreateAccount(t.Context(), account.AccountParams{Name: "acme", Tier: account.Free})
	if err != nil {
		t.Fatal(err)
	}
	nk, err := svc.CreateKey(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // from the store, then from the cache
		k, acct, err := svc.Authenticate(t.Context(), nk.Secret)
		if err != nil || k.ID != nk.ID || !bytes.Equal(k.Hash, nk.Hash) || acct.ID != a.ID ||
			acct.MonthlyLimit != account.FreeMonthlyLimit || acct.Credits != account.FreeMonthlyLimit {
			t.Fatalf("Authenticate = %+v, %+v, %v", k, acct, err)
		}
	}
	other := account.GenerateKey(a.ID, t0)        // well-formed, never stored
	flipped := nk.Secret[:len(nk.Secret)-1] + "a" // the right shape, one character off
	if flipped == nk.Secret {
		flipped = nk.Secret[:len(nk.Secret)-1] + "b"
	}
	for _, bad := range []string{"", "ipa_", "Bearer " + nk.Secret, nk.Secret + " ", nk.Secret[:len(nk.Secret)-1], flipped, other.Secret} {
		if _, _, err := svc.Authenticate(t.Context(), bad); err != account.ErrBadKey {
			t.Fatalf("Authenticate(a bad secret) = %v, want ErrBadKey", err)
		}
	}
	if _, err := svc.RevokeKey(t.Context(), nk.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Authenticate(t.Context(), nk.Secret); err != account.ErrBadKey {
		t.Fatalf("Authenticate(revoked) = %v, want ErrBadKey", err)
	}

	live, err := svc.CreateKey(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, _, err = svc.Authenticate(t.Context(), live.Secret)
	if !errors.Is(err, account.ErrUnavailable) || errors.Is(err, account.ErrBadKey) {
		t.Fatalf("Authenticate on a closed store = %v, want ErrUnavailable", err)
	}
}
