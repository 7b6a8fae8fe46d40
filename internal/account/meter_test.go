package account_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
)

// recordingStore is the real store with a gate in front of Charge and a
// record of the batches it was sent.
type recordingStore struct {
	account.Store
	gate chan struct{}

	mu      sync.Mutex
	batches [][]account.ChargeRequest
}

func (r *recordingStore) Charge(ctx context.Context, period string, at time.Time, reqs []account.ChargeRequest) ([]account.Grant, error) {
	<-r.gate
	r.mu.Lock()
	r.batches = append(r.batches, append([]account.ChargeRequest(nil), reqs...))
	r.mu.Unlock()
	return r.Store.Charge(ctx, period, at, reqs)
}

// waitStats waits until the meter has taken charges and sent batches.
func waitStats(m *account.Meter, charges, batches uint64) {
	for s := m.Stats(); s.Charges < charges || s.Batches < batches; s = m.Stats() {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

type setup struct {
	st     *recordingStore
	m      *account.Meter
	k1, k2 account.NewKey
}

func newSetup(t *testing.T, limit, credits int64, opts account.MeterOptions) *setup {
	st := &recordingStore{Store: newStore(t), gate: make(chan struct{})}
	svc := &account.Service{Store: st, Now: storetest.NewClock(t0).Now}
	a, err := svc.CreateAccount(t.Context(), account.AccountParams{Name: "m", Tier: account.Enterprise, MonthlyLimit: limit, Credits: int64p(credits)})
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := svc.CreateKey(t.Context(), a.ID)
	k2, _ := svc.CreateKey(t.Context(), a.ID)
	if opts.Now == nil {
		opts.Now = storetest.NewClock(t0).Now
	}
	m := account.NewMeter(st, opts)
	t.Cleanup(func() {
		select {
		case <-st.gate:
		default:
			close(st.gate)
		}
		m.Close(context.Background())
	})
	return &setup{st: st, m: m, k1: k1, k2: k2}
}

type result struct {
	o   account.Outcome
	err error
}

// TestMeterMergesBatch holds one batch in the store while 2 keys x 10
// charges pile up: they must reach the store as ONE Charge call with one
// request per key, and the grants go out first come, first served.
func TestMeterMergesBatch(t *testing.T) {
	s := newSetup(t, 6, 1000, account.MeterOptions{})
	first := make(chan result, 1)
	go func() { o, err := s.m.Charge(t.Context(), s.k1.Key); first <- result{o, err} }()
	waitStats(s.m, 1, 1) // the first batch is at the gate

	res1 := make([]chan result, 10)
	res2 := make(chan result, 10)
	for i := range 10 {
		res1[i] = make(chan result, 1)
		go func() { o, err := s.m.Charge(t.Context(), s.k1.Key); res1[i] <- result{o, err} }()
		waitStats(s.m, uint64(2+2*i), 1) // one at a time: a known arrival order for key 1
		go func() { o, err := s.m.Charge(t.Context(), s.k2.Key); res2 <- result{o, err} }()
		waitStats(s.m, uint64(3+2*i), 1)
	}
	close(s.st.gate)
	if r := <-first; r.err != nil || !r.o.Granted || r.o.Used != 1 {
		t.Fatalf("first charge: %+v", r)
	}
	// Key 1 had 1 used and a limit of 6: its next 5 arrivals succeed, in
	// order, and the last 5 are refused for quota.
	for i, ch := range res1 {
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		if i < 5 && (!r.o.Granted || r.o.Used != int64(i+2) || r.o.Remaining != int64(6-(i+2))) {
			t.Fatalf("key 1 arrival %d: %+v, want granted with used %d", i, r.o, i+2)
		}
		if i >= 5 && (r.o.Granted || r.o.Deny != account.DenyQuota || r.o.Used != 6 || r.o.Remaining != 0) {
			t.Fatalf("key 1 arrival %d: %+v, want DenyQuota", i, r.o)
		}
	}
	granted2 := 0
	for range 10 {
		if r := <-res2; r.err == nil && r.o.Granted {
			granted2++
		}
	}
	if granted2 != 6 {
		t.Fatalf("key 2: %d granted, want 6", granted2)
	}

	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if len(s.st.batches) != 2 {
		t.Fatalf("%d store calls, want 2: %+v", len(s.st.batches), s.st.batches)
	}
	b := s.st.batches[1]
	if len(b) != 2 || b[0].KeyID != s.k1.ID || b[0].N != 10 || b[1].KeyID != s.k2.ID || b[1].N != 10 || b[0].Cost != 1 {
		t.Fatalf("second batch %+v, want one request of 10 per key, key 1 first", b)
	}
}

// TestMeterCommitTime: the time a batch spends in the store is counted,
// and only that.
func TestMeterCommitTime(t *testing.T) {
	s := newSetup(t, 100, 100, account.MeterOptions{})
	before := time.Now()
	done := make(chan result, 1)
	go func() { o, err := s.m.Charge(t.Context(), s.k1.Key); done <- result{o, err} }()
	waitStats(s.m, 1, 1) // the batch is at the gate
	if ct := s.m.Stats().CommitTime; ct != 0 {
		t.Fatalf("CommitTime %v before any commit ended", ct)
	}
	const held = 50 * time.Millisecond
	time.Sleep(held)
	close(s.st.gate)
	if r := <-done; r.err != nil || !r.o.Granted {
		t.Fatalf("charge: %+v", r)
	}
	ct := s.m.Stats().CommitTime
	if ct < held || ct > time.Since(before) {
		t.Fatalf("CommitTime %v, want between %v and %v", ct, held, time.Since(before))
	}
}

// TestMeterCancelledCharge drops a charge whose caller gave up before its
// batch was sent: it is not charged.
func TestMeterCancelledCharge(t *testing.T) {
	s := newSetup(t, 100, 100, account.MeterOptions{})
	first := make(chan error, 1)
	go func() { _, err := s.m.Charge(t.Context(), s.k1.Key); first <- err }()
	waitStats(s.m, 1, 1)

	ctx, cancel := context.WithCancel(t.Context())
	gone := make(chan error, 1)
	go func() { _, err := s.m.Charge(ctx, s.k1.Key); gone <- err }()
	waitStats(s.m, 2, 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled charge: %v", err)
	}
	close(s.st.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := s.m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.st.Usage(t.Context(), s.k1.ID, account.Period(t0)); n != 1 {
		t.Fatalf("usage %d, want 1: the abandoned charge was made", n)
	}

	done, cancel2 := context.WithCancel(t.Context())
	cancel2()
	m := account.NewMeter(s.st, account.MeterOptions{})
	defer m.Close(context.Background())
	if _, err := m.Charge(done, s.k1.Key); !errors.Is(err, context.Canceled) {
		t.Fatalf("charge with a done context: %v", err)
	}
}

// TestMeterCloseTimeout: Close gives up when its context ends before the
// flush, and the flush still completes afterwards.
func TestMeterCloseTimeout(t *testing.T) {
	s := newSetup(t, 100, 100, account.MeterOptions{})
	res := make(chan error, 1)
	go func() { _, err := s.m.Charge(t.Context(), s.k1.Key); res <- err }()
	waitStats(s.m, 1, 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.m.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with a done context while a batch is held: %v", err)
	}
	close(s.st.gate)
	if err := <-res; err != nil {
		t.Fatalf("the held charge: %v", err)
	}
	if err := s.m.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// TestMeterMaxBatch: with MaxBatch 4, 10 charges held behind a batch go
// to the store in batches of at most 4.
func TestMeterMaxBatch(t *testing.T) {
	s := newSetup(t, 100, 100, account.MeterOptions{MaxBatch: 4})
	var wg sync.WaitGroup
	for range 11 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if o, err := s.m.Charge(t.Context(), s.k1.Key); err != nil || !o.Granted {
				t.Errorf("charge: %+v, %v", o, err)
			}
		}()
	}
	waitStats(s.m, 1, 1)
	close(s.st.gate)
	wg.Wait()
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	total := int64(0)
	for _, b := range s.st.batches {
		if len(b) != 1 || b[0].N > 4 {
			t.Fatalf("batch %+v: more than MaxBatch charges", b)
		}
		total += b[0].N
	}
	if total != 11 {
		t.Fatalf("%d charges reached the store, want 11", total)
	}
}

// TestMeterCost: the cost setting is what a query takes from the balance.
func TestMeterCost(t *testing.T) {
	s := newSetup(t, 100, 10, account.MeterOptions{Cost: 4})
	close(s.st.gate)
	for i, want := range []struct {
		granted bool
		credits int64
	}{{true, 6}, {true, 2}, {false, 2}} {
		o, err := s.m.Charge(t.Context(), s.k1.Key)
		if err != nil || o.Granted != want.granted || o.Credits != want.credits {
			t.Fatalf("charge %d at cost 4: %+v, %v; want granted=%v, credits %d", i, o, err, want.granted, want.credits)
		}
		if !want.granted && o.Deny != account.DenyCredits {
			t.Fatalf("charge %d: deny %v, want DenyCredits", i, o.Deny)
		}
	}
	if s.m.Cost() != 4 {
		t.Fatalf("Cost() = %d", s.m.Cost())
	}
}

// TestMeterLoneChargeCommitsAtOnce: on an idle meter whose previous batch
// had one charge, a charge is a ready batch by itself. With MaxDelay an
// hour, only the committer being woken for it lets these finish.
func TestMeterLoneChargeCommitsAtOnce(t *testing.T) {
	s := newSetup(t, 100, 100, account.MeterOptions{MaxDelay: time.Hour})
	close(s.st.gate)
	for i := range 5 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		o, err := s.m.Charge(ctx, s.k1.Key)
		cancel()
		if err != nil || !o.Granted || o.Used != int64(i+1) {
			t.Fatalf("charge %d: %+v, %v", i, o, err)
		}
	}
	if st := s.m.Stats(); st.Batches != 5 {
		t.Fatalf("%d batches for 5 charges one after another, want 5", st.Batches)
	}
}

// TestMeterSmallBatchWaitsMaxDelay: after a batch of 5, a lone charge is
// smaller than the previous batch, so the committer waits up to MaxDelay
// for more before committing it, and then does commit it.
func TestMeterSmallBatchWaitsMaxDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	s := newSetup(t, 100, 100, account.MeterOptions{MaxDelay: delay})
	first := make(chan error, 1)
	go func() { _, err := s.m.Charge(t.Context(), s.k1.Key); first <- err }()
	waitStats(s.m, 1, 1) // held at the gate while 5 more pile up
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.m.Charge(t.Context(), s.k1.Key); err != nil {
				t.Error(err)
			}
		}()
	}
	waitStats(s.m, 6, 1)
	close(s.st.gate)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	o, err := s.m.Charge(t.Context(), s.k1.Key)
	if err != nil || !o.Granted || o.Used != 7 {
		t.Fatalf("lone charge: %+v, %v", o, err)
	}
	if waited := time.Since(start); waited < delay {
		t.Fatalf("a batch of 1 after one of 5 went after %v, before MaxDelay %v", waited, delay)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if n := len(s.st.batches); n != 3 {
		t.Fatalf("%d store calls, want 3 (1, then 5, then 1): %+v", n, s.st.batches)
	}
	if b := s.st.batches[1]; len(b) != 1 || b[0].N != 5 {
		t.Fatalf("second batch %+v, want the 5 waiting charges as one", b)
	}
}

// TestMeterQueueTime: the time a charge waits for its batch to be taken
// is counted. The second charge waits behind the first batch's commit,
// which the store holds.
func TestMeterQueueTime(t *testing.T) {
	s := newSetup(t, 100, 100, account.MeterOptions{})
	before := time.Now()
	done := make(chan result, 2)
	go func() { o, err := s.m.Charge(t.Context(), s.k1.Key); done <- result{o, err} }()
	waitStats(s.m, 1, 1) // the first batch is at the gate
	go func() { o, err := s.m.Charge(t.Context(), s.k1.Key); done <- result{o, err} }()
	waitStats(s.m, 2, 1)
	const held = 50 * time.Millisecond
	time.Sleep(held)
	close(s.st.gate)
	for range 2 {
		if r := <-done; r.err != nil || !r.o.Granted {
			t.Fatalf("charge: %+v", r)
		}
	}
	qt := s.m.Stats().QueueTime
	if qt < held || qt > 2*time.Since(before) {
		t.Fatalf("QueueTime %v, want between %v and %v", qt, held, 2*time.Since(before))
	}
}

// faultyStore is the real store whose charges fail while fault is set,
// as a full disk fails them: reads and Ping still answer, and
// CheckCharge fails with the charges.
type faultyStore struct {
	account.Store
	mu    sync.Mutex
	fault error
}

func (f *faultyStore) set(err error) {
	f.mu.Lock()
	f.fault = err
	f.mu.Unlock()
}

func (f *faultyStore) CheckCharge(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fault
}

func (f *faultyStore) Charge(ctx context.Context, period string, at time.Time, reqs []account.ChargeRequest) ([]account.Grant, error) {
	if err := f.CheckCharge(ctx); err != nil {
		return nil, err
	}
	return f.Store.Charge(ctx, period, at, reqs)
}

// While charges cannot be written, every charge fails as unavailable, the
// meter logs it once (and again once per LogEvery), and Ready says so,
// asking the store again each time; once the store takes charges, Ready
// is nil, the next charge commits and the recovery is logged.
func TestMeterFailingStore(t *testing.T) {
	for _, tt := range []struct {
		name     string
		every    time.Duration
		failures int // log lines while the store fails 30 batches
	}{
		{"an hour apart", time.Hour, 1},
		{"every time", time.Nanosecond, 30},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &faultyStore{Store: newStore(t)}
			svc := &account.Service{Store: st, Now: storetest.NewClock(t0).Now}
			a, err := svc.CreateAccount(t.Context(), account.AccountParams{Name: "m", Tier: account.Enterprise, MonthlyLimit: 1000, Credits: int64p(1000)})
			if err != nil {
				t.Fatal(err)
			}
			k, _ := svc.CreateKey(t.Context(), a.ID)
			var logs syncBuf
			m := account.NewMeter(st, account.MeterOptions{Now: storetest.NewClock(t0).Now, LogEvery: tt.every,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			t.Cleanup(func() { m.Close(context.Background()) })

			if err := m.Ready(t.Context()); err != nil {
				t.Fatalf("Ready before any failure: %v", err)
			}
			disk := errors.New("write charges.journal: no space left on device")
			st.set(disk)
			for range 30 { // one after another: 30 batches
				if _, err := m.Charge(t.Context(), k.Key); !errors.Is(err, account.ErrUnavailable) || !errors.Is(err, disk) {
					t.Fatalf("a charge on a full disk: %v", err)
				}
			}
			if err := m.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "charges cannot be written") || !errors.Is(err, disk) {
				t.Errorf("Ready on a full disk: %v", err)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != tt.failures {
				t.Errorf("%d error lines for 30 failed batches, want %d:\n%s", n, tt.failures, logs.String())
			}
			if !strings.Contains(logs.String(), "no space left on device") {
				t.Errorf("the log does not say why:\n%s", logs.String())
			}

			st.set(nil) // space freed
			if err := m.Ready(t.Context()); err != nil {
				t.Errorf("Ready once the store takes charges again: %v", err)
			}
			if o, err := m.Charge(t.Context(), k.Key); err != nil || !o.Granted || o.Used != 1 {
				t.Fatalf("a charge after the disk was freed: %+v, %v", o, err)
			}
			if !strings.Contains(logs.String(), "charges are written again") {
				t.Errorf("the recovery is not logged:\n%s", logs.String())
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != tt.failures {
				t.Errorf("%d error lines after the recovery, want %d", n, tt.failures)
			}
		})
	}
}

// syncBuf is a log the meter's goroutine writes while the test reads.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
