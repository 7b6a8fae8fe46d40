package account

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is the result of metering one query (Charge) or n queries in
// one charge (ChargeN).
type Outcome struct {
	Granted bool // at least one query was charged
	// GrantedN is how many of the queries were charged: the first
	// GrantedN of them, in order. Deny says why the rest were not.
	GrantedN  int64
	Deny      Deny
	Limit     int64
	Used      int64
	Remaining int64
	Reset     time.Time // when the quota resets (start of next month, UTC)
	Credits   int64     // the balance after this charge
}

// ErrMeterClosed is returned by Charge after Close. It matches
// ErrUnavailable: to a client, a server shutting down is unavailable.
var ErrMeterClosed = fmt.Errorf("%w: meter closed", ErrUnavailable)

// Meter is the charging engine: it collects the charges of concurrent
// queries and commits them together (group commit) every few milliseconds,
// so a success is answered only after its charge is durable, and durability
// does not cost throughput.
//
// A caller appends its charge to the forming batch under a mutex and waits
// for its result; one goroutine, the committer, takes the batch and runs
// one Store.Charge for it. While the committer waits for a commit, the
// next batch fills, so batches grow with the load. A batch is taken when
// it is as large as the previous one, MaxDelay old, or MaxBatch long, and
// as soon as the committer is free. The first rule keeps latency low at
// both ends: a lone charge on an idle meter commits at once, and N callers
// that each wait for their charge form batches of N without waiting out
// MaxDelay.
//
// No goroutine runs per charge: a caller wakes the committer only when it
// is idle and the batch just started or became ready. A charge costs one
// lock and the wake-up of its caller. The first version handed each charge
// to a collector goroutine over a channel, one more goroutine switch per
// charge: BenchmarkMeterOverhead measured 1.1-1.6µs of CPU per charge
// then, 0.5-0.6µs now.
//
// The forming batch has no bound of its own: it holds at most one charge
// per caller waiting, and the server bounds its requests in flight. The
// committer takes at most MaxBatch of it at a time, oldest first.
type Meter struct {
	store    Store
	cost     int64
	maxDelay time.Duration
	maxBatch int
	timeout  time.Duration
	now      func() time.Time

	mu      sync.Mutex
	pending []*pendingCharge // the forming batch, in arrival order
	target  int              // the size of the previous batch
	idle    bool             // the committer is waiting for a kick
	closed  bool

	kick chan struct{} // buffered (1): wakes an idle committer
	done chan struct{} // closed when the committer has flushed and stopped

	nCharges, nBatches, nFailed atomic.Uint64
	commitNanos, queueNanos     atomic.Int64

	log      *slog.Logger
	logEvery time.Duration
	failing  atomic.Bool // from a failed batch until one commits; read by Ready
	fail     failState   // the committer's only
}

// failState is what the log says of charges failing.
type failState struct {
	since   time.Time // the first failure
	logged  time.Time // the last log line of it
	batches uint64    // failed batches since the last log line
}

// MeterStats counts what a Meter has done since it started, for metrics
// and tests.
type MeterStats struct {
	Charges uint64 // charges queued for a batch
	Batches uint64 // batches sent to the store, one Store.Charge each
	Failed  uint64 // batches whose Store.Charge failed
	// CommitTime is the wall time spent in Store.Charge, all batches
	// together. Over an interval, its growth divided by the batches' is
	// the mean commit time, and its growth divided by the interval is the
	// committer's busy share: near 1, every charge waits for the previous
	// batch's commit.
	CommitTime time.Duration
	// QueueTime is the time charges waited for their batch to be taken,
	// all charges together: divided by Charges, the mean wait. A charge's
	// whole time in the meter is its wait, its batch's commit, and the
	// wake-up of its caller.
	QueueTime time.Duration
}

// Stats reads the counters.
func (m *Meter) Stats() MeterStats {
	return MeterStats{Charges: m.nCharges.Load(), Batches: m.nBatches.Load(), Failed: m.nFailed.Load(),
		CommitTime: time.Duration(m.commitNanos.Load()), QueueTime: time.Duration(m.queueNanos.Load())}
}

// MeterOptions configures a Meter.
type MeterOptions struct {
	Cost     int64            // credits per query (default 1)
	MaxDelay time.Duration    // longest a charge waits for its batch (default 2ms)
	MaxBatch int              // most charges in one batch (default 1024)
	Now      func() time.Time // injectable clock
	// Timeout bounds one batch's Store.Charge (default 10s). It is not
	// tied to any caller's context: one caller giving up must not fail
	// the batch it shares with others.
	Timeout time.Duration
	// Logger gets the store's failures to charge: one error line when
	// charges start failing, one every LogEvery while they go on (with
	// the batches failed since), and one when a batch commits again. The
	// queries answered 503 meanwhile are not logged one by one. Nil logs
	// nothing.
	Logger   *slog.Logger
	LogEvery time.Duration // default DefaultFailureLogEvery
}

// Defaults of MeterOptions.
const (
	DefaultMaxDelay      = 2 * time.Millisecond
	DefaultMaxBatch      = 1024
	DefaultChargeTimeout = 10 * time.Second
	// DefaultFailureLogEvery spaces the log lines of charges that keep
	// failing: a full disk or a lost database lasts minutes, and one
	// line a minute says so without burying the log.
	DefaultFailureLogEvery = time.Minute
)

type pendingCharge struct {
	ctx context.Context
	key Key
	n   int64             // queries to charge, at least 1
	at  time.Time         // when it joined the forming batch
	res chan chargeResult // buffered: the committer never waits for a caller
}

type chargeResult struct {
	out Outcome
	err error
}

// NewMeter starts a charging engine on store.
func NewMeter(store Store, opts MeterOptions) *Meter {
	m := &Meter{
		store:    store,
		cost:     opts.Cost,
		maxDelay: opts.MaxDelay,
		maxBatch: opts.MaxBatch,
		timeout:  opts.Timeout,
		now:      opts.Now,
		log:      opts.Logger,
		logEvery: opts.LogEvery,
		target:   1,
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	if m.cost <= 0 {
		m.cost = 1
	}
	if m.maxDelay <= 0 {
		m.maxDelay = DefaultMaxDelay
	}
	if m.maxBatch <= 0 {
		m.maxBatch = DefaultMaxBatch
	}
	if m.timeout <= 0 {
		m.timeout = DefaultChargeTimeout
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.logEvery <= 0 {
		m.logEvery = DefaultFailureLogEvery
	}
	go m.run()
	return m
}

// Cost is the credits one query costs.
func (m *Meter) Cost() int64 { return m.cost }

// Charge meters one query for key k, blocking until its batch commits.
// An error (store unreachable, ctx done) means nothing is known to be
// charged and the query must fail with ServiceUnavailable.
//
// k must come from Service.Authenticate: its Hash is the hash of the
// secret presented, and the store denies the charge (DenyKey) if that is
// no longer the key's hash or the key was revoked meanwhile.
func (m *Meter) Charge(ctx context.Context, k Key) (Outcome, error) {
	return m.charge(ctx, k, 1)
}

// ChargeN meters n queries for key k as one charge, as a batch request
// needs: it joins the same group commit as Charge, and the store grants
// as many of the n as the quota and then the balance allow, all or
// nothing per query, in one transaction. Outcome.GrantedN says how many;
// the first GrantedN queries of the caller's list are the granted ones.
// Errors are as for Charge; n < 1 is ErrInvalid.
func (m *Meter) ChargeN(ctx context.Context, k Key, n int64) (Outcome, error) {
	if n < 1 {
		return Outcome{}, Invalidf("charge of %d queries", n)
	}
	return m.charge(ctx, k, n)
}

// pendingPool recycles a charge's envelope and result channel: every
// metered query needs one. Only a charge whose result was received goes
// back; one abandoned by its caller may still get its result sent.
var pendingPool = sync.Pool{New: func() any { return &pendingCharge{res: make(chan chargeResult, 1)} }}

func (m *Meter) charge(ctx context.Context, k Key, n int64) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	p := pendingPool.Get().(*pendingCharge)
	p.ctx, p.key, p.n = ctx, k, n
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		*p = pendingCharge{res: p.res}
		pendingPool.Put(p)
		return Outcome{}, ErrMeterClosed
	}
	p.at = time.Now()
	m.pending = append(m.pending, p)
	wake := m.idle && (len(m.pending) == 1 || len(m.pending) == m.target || len(m.pending) == m.maxBatch)
	if wake {
		m.idle = false
	}
	m.mu.Unlock()
	m.nCharges.Add(1)
	if wake {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	select {
	case r := <-p.res:
		*p = pendingCharge{res: p.res}
		pendingPool.Put(p)
		return r.out, r.err
	case <-ctx.Done():
		// The batch may still commit this charge: it is in flight, and
		// its answer is lost like that of a request cut off mid-way.
		return Outcome{}, ctx.Err()
	}
}

// Close flushes pending charges and stops the engine. Charges that arrive
// after Close fail with ErrMeterClosed. If ctx ends first, Close returns
// its error and the flush goes on in the background.
func (m *Meter) Close(ctx context.Context) error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	m.mu.Unlock()
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("meter: flushing pending charges: %w", ctx.Err())
	}
}

// run is the committer: it takes ready batches and commits them, one at
// a time, until the meter is closed and nothing is pending.
func (m *Meter) run() {
	defer close(m.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var spare []*pendingCharge // an array for the next forming batch
	for {
		m.mu.Lock()
		m.idle = false
		n := len(m.pending)
		if n == 0 && m.closed {
			m.mu.Unlock()
			return
		}
		now := time.Now()
		var age time.Duration // of the oldest pending charge
		if n > 0 {
			age = now.Sub(m.pending[0].at)
		}
		if n > 0 && (m.closed || n >= m.target || n >= m.maxBatch || age >= m.maxDelay) {
			// Take at most maxBatch, the oldest first; the rest start
			// the next batch.
			all := m.pending
			take := min(n, m.maxBatch)
			m.pending = append(spare[:0], all[take:]...)
			m.target = take
			m.mu.Unlock()
			var waited time.Duration
			for _, p := range all[:take] {
				waited += now.Sub(p.at)
			}
			m.queueNanos.Add(int64(waited))
			m.flush(all[:take])
			clear(all)
			spare = all[:0]
			continue
		}
		m.idle = true
		m.mu.Unlock()
		if n > 0 {
			timer.Reset(m.maxDelay - age)
			select {
			case <-m.kick:
			case <-timer.C:
			}
			timer.Stop()
		} else {
			<-m.kick
		}
	}
}

// chargeGroup is the charges of one batch for one (key, hash): they
// become one ChargeRequest, and its grants go to them in arrival order.
type chargeGroup struct {
	req     ChargeRequest
	waiters []*pendingCharge
}

func (m *Meter) flush(batch []*pendingCharge) {
	now := m.now()
	index := make(map[string]int, 8)
	var groups []chargeGroup
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			// Its caller is gone: better not to charge what nobody sees.
			p.res <- chargeResult{err: err}
			continue
		}
		gk := p.key.ID + "\x00" + string(p.key.Hash)
		i, ok := index[gk]
		if !ok {
			i = len(groups)
			index[gk] = i
			groups = append(groups, chargeGroup{req: ChargeRequest{KeyID: p.key.ID, Hash: p.key.Hash, Cost: m.cost}})
		}
		groups[i].req.N += p.n
		groups[i].waiters = append(groups[i].waiters, p)
	}
	if len(groups) == 0 {
		return
	}
	reqs := make([]ChargeRequest, len(groups))
	for i := range groups {
		reqs[i] = groups[i].req
	}

	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	m.nBatches.Add(1)
	start := time.Now()
	grants, err := m.store.Charge(ctx, Period(now), now, reqs)
	m.commitNanos.Add(int64(time.Since(start)))
	cancel()
	if err == nil && len(grants) != len(reqs) {
		err = fmt.Errorf("store answered %d grants for %d requests", len(grants), len(reqs))
	}
	m.failed(err)
	if err != nil {
		m.nFailed.Add(1)
		err = unavailable("charge", err)
		for _, g := range groups {
			for _, p := range g.waiters {
				p.res <- chargeResult{err: err}
			}
		}
		return
	}

	reset := PeriodReset(now)
	for i, g := range groups {
		gr := grants[i]
		granted := min(max(gr.Granted, 0), g.req.N)
		usedBefore := gr.Used - granted
		var served int64 // queries granted to the earlier waiters
		for _, p := range g.waiters {
			o := Outcome{Limit: gr.Limit, Reset: reset}
			if mine := min(p.n, granted-served); mine > 0 {
				// Served in arrival order: each caller sees the counters
				// as if the granted charges ran one by one. A caller
				// granted only part of its queries is the last granted
				// one, and the reason for its rest is the group's.
				served += mine
				o.Granted, o.GrantedN = true, mine
				o.Used = usedBefore + served
				o.Credits = gr.Credits + (granted-served)*m.cost
				if mine < p.n {
					o.Deny = gr.Deny
					if o.Deny == DenyNone {
						o.Deny = DenyQuota
					}
				}
			} else {
				o.Deny = gr.Deny
				if o.Deny == DenyNone {
					o.Deny = DenyQuota // a store that under-grants without a reason
				}
				o.Used = gr.Used
				o.Credits = gr.Credits
			}
			o.Remaining = max(0, o.Limit-o.Used)
			p.res <- chargeResult{out: o}
		}
	}
}

// failed records a batch's outcome (err nil: committed) and logs the
// changes of state, and the failures at most once per logEvery.
func (m *Meter) failed(err error) {
	if err == nil && !m.failing.Load() {
		return // the usual case, without a lock
	}
	f := &m.fail
	now := time.Now()
	switch {
	case err == nil:
		m.log.Warn("charges are written again: metered queries are answered", "failing_for", now.Sub(f.since).Round(time.Millisecond),
			"failed_batches", f.batches)
		*f = failState{}
		m.failing.Store(false)
	case !m.failing.Load():
		*f = failState{since: now, logged: now}
		m.failing.Store(true)
		m.log.Error("charges cannot be written: metered queries answer 503 until they can", "err", err.Error())
	default:
		f.batches++
		if now.Sub(f.logged) >= m.logEvery {
			m.log.Error("charges still cannot be written: metered queries answer 503", "err", err.Error(),
				"since", f.since, "failed_batches", f.batches)
			f.logged, f.batches = now, 0
		}
	}
}

// Ready says whether charges can be written: nil unless the last batch
// failed and the store, asked again (ChargeChecker, else Ping), still
// fails. A replica out of its balancer gets no charges to try, so the
// store is asked rather than the last batch's outcome repeated.
func (m *Meter) Ready(ctx context.Context) error {
	if !m.failing.Load() {
		return nil
	}
	var err error
	if c, ok := m.store.(ChargeChecker); ok {
		err = c.CheckCharge(ctx)
	} else {
		err = m.store.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("charges cannot be written: %w", err)
	}
	return nil
}
