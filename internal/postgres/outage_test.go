package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
)

// t0 is the tests' clock: mid-month, so no test crosses a period.
var t0 = time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)

// outageTimeout is the stores' Options.Timeout in the fault tests: what
// bounds a call while the database does not answer.
const outageTimeout = time.Second

// customer creates an enterprise account with a key, directly in st.
func customer(t testing.TB, st account.Store, limit, credits int64) (account.Account, account.NewKey) {
	t.Helper()
	svc := &account.Service{Store: st, Now: func() time.Time { return t0 }}
	a, err := svc.CreateAccount(context.Background(), account.AccountParams{
		Name: "customer", Tier: account.Enterprise, MonthlyLimit: limit, Credits: &credits,
	})
	if err != nil {
		t.Fatal(err)
	}
	k, err := svc.CreateKey(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	return a, k
}

// tally is what the callers of Meter.Charge saw.
type tally struct {
	mu      sync.Mutex
	used    []int64 // Outcome.Used of each granted charge
	denied  map[account.Deny]int
	failed  int // errors: nothing known to be charged
	granted atomic.Int64
	errs    atomic.Int64
}

func newTally() *tally { return &tally{denied: map[account.Deny]int{}} }

func (tl *tally) record(o account.Outcome, err error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	switch {
	case err != nil:
		tl.failed++
		tl.errs.Add(1)
	case o.Granted:
		tl.used = append(tl.used, o.Used)
		tl.granted.Add(1)
	default:
		tl.denied[o.Deny]++
	}
}

// load charges k through m from n goroutines until stop is closed.
func load(m *account.Meter, k account.Key, n int, tl *tally, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tl.record(m.Charge(context.Background(), k))
			}
		}()
	}
	return &wg
}

// waitFor polls cond until it holds, failing the test after a generous
// while (a give-up, not a measured threshold).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for range 3000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("gave up waiting for %s", what)
}

// TestOutage cuts the database away from a store under load, in both
// ways it goes away: PostgreSQL stopping (connections closed, new ones
// refused) and a network partition (nothing answers at all). During the
// outage every call fails with ErrUnavailable, within the store's timeout
// (for the partition, the error is that timeout's deadline); afterwards
// the same Store serves again, and the counters and ledger account for
// every charge the callers saw: none lost, none doubled.
func TestOutage(t *testing.T) {
	t.Parallel() // mostly waiting for timeouts
	for _, tc := range []struct {
		name string
		mode pgtest.Mode
	}{{"down", pgtest.Down}, {"partition", pgtest.Blackhole}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testOutage(t, tc.mode)
		})
	}
}

func testOutage(t *testing.T, mode pgtest.Mode) {
	dsn := pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	direct := open(t, dsn, schema, postgres.Options{}) // setup and checks, around the proxy
	px := pgtest.NewProxy(t, dsn)
	st := open(t, px.DSN(t, dsn), schema, postgres.Options{Timeout: outageTimeout, MaxConns: 4})
	const credits = 1_000_000
	a, k := customer(t, direct, credits, credits)
	m := account.NewMeter(st, account.MeterOptions{Now: storetest.NewClock(t0).Now})
	t.Cleanup(func() { m.Close(context.Background()) })
	ctx := t.Context()

	// Under load: cut, check, restore, until charges succeed again.
	tl := newTally()
	stop := make(chan struct{})
	wg := load(m, k.Key, 8, tl, stop)
	waitFor(t, "charges before the outage", func() bool { return tl.granted.Load() >= 100 })
	px.Cut(mode)
	errsAtCut := tl.errs.Load()
	waitFor(t, "charges failing in the outage", func() bool { return tl.errs.Load() >= errsAtCut+5 })

	err := st.Ping(ctx)
	if !errors.Is(err, account.ErrUnavailable) {
		t.Fatalf("Ping in the outage: %v, want ErrUnavailable", err)
	}
	if mode == pgtest.Blackhole && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ping in a partition: %v, want the store's deadline to have ended it", err)
	}
	if _, err := m.Charge(ctx, k.Key); !errors.Is(err, account.ErrUnavailable) {
		t.Fatalf("Charge in the outage: %v, want ErrUnavailable", err)
	}
	if _, err := st.Account(ctx, a.ID); !errors.Is(err, account.ErrUnavailable) {
		t.Fatalf("Account in the outage: %v, want ErrUnavailable", err)
	}
	if err := direct.Ping(ctx); err != nil {
		t.Fatalf("the database itself is down: %v", err)
	}

	px.Restore()
	grantedAtRestore := tl.granted.Load()
	waitFor(t, "charges after the outage", func() bool { return tl.granted.Load() >= grantedAtRestore+100 })
	close(stop)
	wg.Wait()
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping after the outage: %v", err)
	}

	// Quiet: an outage with nothing in flight loses and adds nothing.
	before := usage(t, direct, k.ID)
	for range 5 {
		if o, err := m.Charge(ctx, k.Key); err != nil || !o.Granted {
			t.Fatalf("charge before a quiet outage: %+v, %v", o, err)
		}
	}
	px.Cut(mode)
	for range 2 {
		if o, err := m.Charge(ctx, k.Key); !errors.Is(err, account.ErrUnavailable) || o.Granted {
			t.Fatalf("charge in a quiet outage: %+v, %v", o, err)
		}
	}
	px.Restore()
	// The first call after the outage already succeeds: dead pooled
	// connections are retried, not reported.
	for range 5 {
		if o, err := m.Charge(ctx, k.Key); err != nil || !o.Granted {
			t.Fatalf("charge after a quiet outage: %+v, %v", o, err)
		}
	}
	if got := usage(t, direct, k.ID); got != before+10 {
		t.Fatalf("usage %d after a quiet outage, want exactly %d", got, before+10)
	}

	// The books. Every success the callers saw is in the counter, with
	// its own place in line; the counter may exceed them only by charges
	// whose callers got an error (a commit cut off before its answer).
	seen := int64(len(tl.used)) + 10
	used := usage(t, direct, k.ID)
	slices.Sort(tl.used)
	if len(slices.Compact(slices.Clone(tl.used))) != len(tl.used) {
		t.Fatalf("two successes saw the same usage: a charge counted twice")
	}
	if used < seen || used-seen > int64(tl.failed) {
		t.Fatalf("usage %d; the callers saw %d successes and %d failures", used, seen, tl.failed)
	}
	if q := ledgerQueries(t, direct, a.ID, 1); q[k.ID] != used {
		t.Fatalf("the ledger charges %d queries, the counter %d", q[k.ID], used)
	}
	if b := balance(t, direct, a.ID); b != credits-used {
		t.Fatalf("balance %d, want %d", b, credits-used)
	}
	t.Logf("%d charges granted, %d failed in the outage, %d charged without an answer",
		seen, tl.failed, used-seen)
}

func usage(t testing.TB, st account.Store, keyID string) int64 {
	t.Helper()
	u, err := st.Usage(context.Background(), keyID, account.Period(t0))
	if err != nil {
		t.Fatalf("Usage: %v", err)
	}
	return u
}

func balance(t testing.TB, st account.Store, id int64) int64 {
	t.Helper()
	a, err := st.Account(context.Background(), id)
	if err != nil {
		t.Fatalf("Account: %v", err)
	}
	return a.Credits
}

// ledgerQueries checks that the ledger chains (each balance is the
// previous plus its delta, the last is the account's balance, usage
// entries cost queries*cost) and returns the queries it charges per key.
func ledgerQueries(t testing.TB, st account.Store, accountID, cost int64) map[string]int64 {
	t.Helper()
	es, err := st.Ledger(context.Background(), accountID, 0)
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	q := map[string]int64{}
	var bal int64
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		if e.Balance != bal+e.Delta {
			t.Fatalf("ledger entry %d: balance %d, want %d%+d", e.ID, e.Balance, bal, e.Delta)
		}
		bal = e.Balance
		if e.Reason == "usage" {
			if e.Queries <= 0 || e.Delta != -e.Queries*cost {
				t.Fatalf("usage entry %+v", e)
			}
			q[e.KeyID] += e.Queries
		}
	}
	if b := balance(t, st, accountID); b != bal {
		t.Fatalf("balance %d, the ledger ends at %d", b, bal)
	}
	return q
}
