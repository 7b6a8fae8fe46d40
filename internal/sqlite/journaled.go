//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/failpoint"
)

// journaled is the charge path of the serving process (Options.Journal):
// grants are decided from state held in memory, each batch is one record
// appended to the charge journal and synced before it is answered, and a
// background applier brings the tables up to date from the journal.
//
// The state of a key or account is loaded on first use as the tables'
// values minus the journal records not yet in them, read in one statement
// with the applied sequence number so that the two agree. It is dropped,
// and loaded again on next use, when this process changes an account or
// key (at once) and when another process commits to the database (seen by
// polling PRAGMA data_version on the writer connection, which counts only
// other connections' commits, every PollEvery).
type journaled struct {
	s     *Store
	j     *journalFile
	every time.Duration
	log   *slog.Logger
	load  *sql.Stmt // on the read pool

	mu       sync.Mutex // the state below; held by a whole charge
	keys     map[string]*memKey
	accounts map[int64]int64 // credits
	pending  []jRecord       // synced, not yet applied, in sequence order
	nextSeq  uint64

	applyMu sync.Mutex // one applier at a time
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

type memKey struct {
	account.ChargedKey
	period string
	used   int64
}

// Journal settings.
const (
	DefaultApplyEvery  = time.Second
	DefaultPollEvery   = 250 * time.Millisecond
	applyAtRecords     = 4096    // pending records that start a catch-up early
	replayChunk        = 4096    // records per replay transaction
	journalRewriteSize = 8 << 20 // a journal this long is rewritten to its pending records
)

const sqlJournalLoad = `
	SELECT k.account_id, k.hash, k.revoked_at IS NOT NULL, a.tier, a.custom_limit, a.credits,
	       COALESCE((SELECT used FROM key_usage WHERE key_id = k.id AND period = ?2), 0),
	       (SELECT applied_seq FROM charge_journal WHERE id = 1)
	FROM api_keys k JOIN accounts a ON a.id = k.account_id
	WHERE k.id = ?1`

// startJournal takes the store's writer lock, replays the journal into
// the tables and starts the applier and the poller.
func (s *Store) startJournal(ctx context.Context, opts Options) error {
	j, recs, err := openJournalFile(s.path)
	if err != nil {
		return err
	}
	jm := &journaled{s: s, j: j, every: opts.ApplyEvery, log: opts.Logger,
		keys: map[string]*memKey{}, accounts: map[int64]int64{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if jm.every <= 0 {
		jm.every = DefaultApplyEvery
	}
	if jm.log == nil {
		jm.log = slog.New(slog.DiscardHandler)
	}
	fail := func(err error) error {
		j.close()
		return err
	}
	var applied uint64
	if err := s.w.QueryRowContext(ctx, "SELECT applied_seq FROM charge_journal WHERE id = 1").Scan(&applied); err != nil {
		return fail(fmt.Errorf("sqlite: journal: %w", err))
	}
	last := applied
	if len(recs) > 0 {
		last = max(last, recs[len(recs)-1].seq)
	}
	todo := recs[:0:0]
	for _, r := range recs {
		if r.seq > applied {
			todo = append(todo, r)
		}
	}
	for chunk := range slices.Chunk(todo, replayChunk) {
		if err := s.applyRecords(ctx, chunk, "replay-before-commit"); err != nil {
			return fail(fmt.Errorf("sqlite: journal replay: %w", err))
		}
	}
	if len(todo) > 0 {
		jm.log.Info("charge journal replayed", "records", len(todo), "last_seq", last)
	}
	if err := j.rewrite(nil); err != nil {
		return fail(fmt.Errorf("sqlite: journal: %w", err))
	}
	jm.nextSeq = last + 1
	if jm.load, err = s.r.PrepareContext(ctx, sqlJournalLoad); err != nil {
		return fail(fmt.Errorf("sqlite: journal: %w", err))
	}
	poll := opts.PollEvery
	if poll <= 0 {
		poll = DefaultPollEvery
	}
	// The first reading of the data version is taken before any state is
	// loaded: another process's change after it is seen at the next poll.
	var version int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
		jm.load.Close()
		return fail(fmt.Errorf("sqlite: journal: %w", err))
	}
	s.jm = jm
	go jm.run(poll, version)
	return nil
}

// run is the applier and the poller. A failure to apply (the tables
// cannot be written: a full disk) is logged when it starts, then once per
// account.DefaultFailureLogEvery while it lasts, and when it ends: the
// records wait in the journal meanwhile, tried again every tick.
func (jm *journaled) run(poll time.Duration, version int64) {
	defer close(jm.done)
	apply := time.NewTicker(jm.every)
	defer apply.Stop()
	check := time.NewTicker(poll)
	defer check.Stop()
	var failingSince, logged time.Time
	tries := 0 // failed since the last line
	for {
		select {
		case <-jm.stop:
			return
		case <-apply.C:
		case <-jm.kick:
		case <-check.C:
			var v int64
			if err := jm.s.w.QueryRow("PRAGMA data_version").Scan(&v); err != nil {
				jm.log.Warn("charge journal: reading the data version", "err", err.Error())
				continue
			}
			if v != version {
				jm.invalidate()
			}
			version = v
			continue
		}
		err := jm.catchUp(context.Background())
		now := time.Now()
		switch {
		case err == nil && !failingSince.IsZero():
			jm.log.Warn("charge journal: applied to the tables again", "failing_for", now.Sub(failingSince).Round(time.Millisecond))
			failingSince, tries = time.Time{}, 0
		case err == nil:
		case failingSince.IsZero():
			failingSince, logged = now, now
			jm.log.Error("charge journal: applying to the tables; the charges wait in the journal", "err", err.Error())
		default:
			tries++
			if now.Sub(logged) >= account.DefaultFailureLogEvery {
				jm.log.Error("charge journal: still not applied to the tables; the charges wait in the journal", "err", err.Error(),
					"since", failingSince, "failed_tries", tries)
				logged, tries = now, 0
			}
		}
	}
}

// invalidate drops the state held in memory: it is loaded again on use.
func (jm *journaled) invalidate() {
	jm.mu.Lock()
	clear(jm.keys)
	clear(jm.accounts)
	jm.mu.Unlock()
}

// catchUp applies the pending records to the tables.
func (jm *journaled) catchUp(ctx context.Context) error {
	jm.applyMu.Lock()
	defer jm.applyMu.Unlock()
	jm.mu.Lock()
	recs := slices.Clone(jm.pending)
	jm.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	if err := jm.s.applyRecords(ctx, recs, "catchup-before-commit"); err != nil {
		return err
	}
	failpoint.Hit("catchup-after-commit")
	jm.mu.Lock()
	defer jm.mu.Unlock()
	jm.pending = slices.Delete(jm.pending, 0, len(recs))
	return jm.trim()
}

// trim shortens the journal file once its records are applied; jm.mu is held.
func (jm *journaled) trim() error {
	if len(jm.pending) == 0 || jm.j.size > journalRewriteSize {
		// Empty, the journal starts over in place; long, it is rewritten
		// to its pending records.
		if err := jm.j.rewrite(jm.pending); err != nil {
			return fmt.Errorf("sqlite: journal: %w", err)
		}
	}
	return nil
}

// settle brings the tables up to date before a read, so that this
// process's reads of usage and balances include every charge answered.
func (jm *journaled) settle(ctx context.Context) error {
	if jm == nil {
		return nil
	}
	return jm.catchUp(ctx)
}

// exclusive runs a change of accounts or keys with the tables up to date
// and no charge in progress, then drops the state held in memory: a debit
// is checked against the balance with every answered charge in it.
func (jm *journaled) exclusive(ctx context.Context, fn func() error) error {
	if jm == nil {
		return fn()
	}
	jm.applyMu.Lock()
	defer jm.applyMu.Unlock()
	jm.mu.Lock()
	defer jm.mu.Unlock()
	if len(jm.pending) > 0 {
		if err := jm.s.applyRecords(ctx, jm.pending, "catchup-before-commit"); err != nil {
			return err
		}
		jm.pending = jm.pending[:0]
		if err := jm.trim(); err != nil {
			return err
		}
	}
	err := fn()
	clear(jm.keys)
	clear(jm.accounts)
	return err
}

func (jm *journaled) close(ctx context.Context) error {
	close(jm.stop)
	<-jm.done
	err := jm.catchUp(ctx)
	jm.load.Close()
	return errors.Join(err, jm.j.close())
}

// loadKey reads a key and, unless held, its account's balance, as the
// tables have them minus the pending records; jm.mu is held.
func (jm *journaled) loadKey(ctx context.Context, id, period string) (*memKey, error) {
	var (
		k       memKey
		tier    string
		custom  int64
		credits int64
		applied uint64
	)
	err := jm.load.QueryRowContext(ctx, id, period).Scan(&k.AccountID, &k.Hash, &k.Revoked, &tier, &custom, &credits, &k.used, &applied)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: charge: %w", err)
	}
	k.Tier, k.period = account.Tier(tier), period
	k.Limit = account.Limit(k.Tier, custom)
	_, held := jm.accounts[k.AccountID]
	for _, r := range jm.pending {
		if r.seq <= applied {
			continue
		}
		samePeriod := r.period == period
		for _, g := range r.grants {
			if g.keyID == id && samePeriod {
				k.used += g.n
			}
			if !held && g.accountID == k.AccountID {
				credits -= g.n * g.cost
			}
		}
	}
	if !held {
		jm.accounts[k.AccountID] = credits
	}
	jm.keys[id] = &k
	return &k, nil
}

// charge decides a batch from the state in memory, appends its record to
// the journal and syncs it, then applies it to the state.
func (jm *journaled) charge(ctx context.Context, period string, at time.Time, reqs []account.ChargeRequest) ([]account.Grant, error) {
	grants := make([]account.Grant, len(reqs))
	jm.mu.Lock()
	defer jm.mu.Unlock()
	var spent map[int64]int64 // credits this batch spends, per account
	var added map[string]int64
	rec := jRecord{seq: jm.nextSeq, period: period, at: at}
	for i, r := range reqs {
		k := jm.keys[r.KeyID]
		if k == nil || k.period != period {
			var err error
			if k, err = jm.loadKey(ctx, r.KeyID, period); err != nil {
				return nil, err
			}
		}
		if k == nil {
			grants[i] = account.Decide(r, nil, 0, 0)
			continue
		}
		g := account.Decide(r, &k.ChargedKey, k.used+added[r.KeyID], jm.accounts[k.AccountID]-spent[k.AccountID])
		if n := g.Granted; n > 0 {
			if spent == nil {
				spent, added = map[int64]int64{}, map[string]int64{}
			}
			spent[k.AccountID] += n * r.Cost
			added[r.KeyID] += n
			if l := len(rec.grants); l > 0 && rec.grants[l-1].keyID == r.KeyID && rec.grants[l-1].cost == r.Cost {
				rec.grants[l-1].n += n
			} else {
				rec.grants = append(rec.grants, jGrant{keyID: r.KeyID, accountID: k.AccountID, n: n, cost: r.Cost})
			}
		}
		grants[i] = g
	}
	if len(rec.grants) == 0 {
		return grants, nil
	}
	if err := jm.j.append(rec); err != nil {
		return nil, err
	}
	failpoint.Hit("journal-before-answer")
	jm.nextSeq++
	for id, n := range added {
		jm.keys[id].used += n
	}
	for id, c := range spent {
		jm.accounts[id] -= c
	}
	jm.pending = append(jm.pending, rec)
	if len(jm.pending) >= applyAtRecords {
		select {
		case jm.kick <- struct{}{}:
		default:
		}
	}
	return grants, nil
}

// check says whether the journal takes its next record.
func (jm *journaled) check() error {
	jm.mu.Lock()
	defer jm.mu.Unlock()
	return jm.j.check()
}

// newEntry is a usage ledger entry the applier writes: a new one, or
// what it adds to the account's latest entry in the table (dbID).
type newEntry struct {
	dbID           int64
	accountID      int64
	keyID          string
	delta, queries int64
	balance        int64
	at             time.Time
}

// applyRecords writes recs (in sequence order) to the tables in one
// transaction that also records the last one's sequence number; records
// at or below the applied sequence number are skipped, so applying twice
// is harmless. The tables end as if each record had been charged in a
// transaction of its own: the same counters, the same ledger entries
// (neighbouring charges of a key at one cost merged, a record's first
// entry of an account added to the account's latest when it takes it),
// the same last uses.
func (s *Store) applyRecords(ctx context.Context, recs []jRecord, point string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var applied uint64
		if err := tx.QueryRowContext(ctx, "SELECT applied_seq FROM charge_journal WHERE id = 1").Scan(&applied); err != nil {
			return fmt.Errorf("sqlite: journal: %w", err)
		}
		for len(recs) > 0 && recs[0].seq <= applied {
			recs = recs[1:]
		}
		if len(recs) == 0 {
			return nil
		}
		var ids []string
		seen := map[string]bool{}
		spent := map[int64]int64{}
		for _, r := range recs {
			for _, g := range r.grants {
				if !seen[g.keyID] {
					seen[g.keyID] = true
					ids = append(ids, g.keyID)
				}
				spent[g.accountID] += g.n * g.cost
			}
		}
		last := recs[len(recs)-1]
		idsJSON, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		keys, balances, tails, err := readCharge(ctx, tx.StmtContext(ctx, s.charge.read), string(idsJSON), last.period)
		if err != nil {
			return err
		}
		for acct, c := range spent {
			if bal, ok := balances[acct]; ok && bal < c {
				// Only a deduction made by another process between a
				// grant and its catch-up can do this: the balance stops
				// at zero rather than the charge being lost.
				s.jmLog().Warn("charge journal: a balance would go below zero; it stops at zero", "account_id", acct, "balance", bal, "charged", c)
				balances[acct] = c
			}
		}

		type pk struct{ key, when string }
		monthly := map[pk]int64{}
		daily := map[pk]int64{}
		lastUsed := map[string]bool{}    // keys whose last use moves
		var entries []*newEntry          // new ones, in order
		var dbTails []*newEntry          // additions to the tables' latest entries
		tailRef := map[int64]*newEntry{} // each account's latest entry
		for acct, t := range tails {
			if t.ID != 0 {
				e := &newEntry{dbID: t.ID, accountID: acct}
				tailRef[acct] = e
				dbTails = append(dbTails, e)
			}
		}
		for _, r := range recs {
			day := account.Day(r.at)
			staleBefore := fmtTime(r.at.Add(-account.LastUseStep))
			first := map[int64]bool{}
			for _, g := range r.grants {
				k := keys[g.keyID]
				if k == nil {
					return fmt.Errorf("sqlite: journal: record %d charges key %s, which the database lacks", r.seq, g.keyID)
				}
				monthly[pk{g.keyID, r.period}] += g.n
				daily[pk{g.keyID, day}] += g.n
				if k.lastUsed == "" || k.lastUsed <= staleBefore {
					k.lastUsed = fmtTime(r.at)
					lastUsed[g.keyID] = true
				}
				acct := k.AccountID
				t := tails[acct]
				e := tailRef[acct]
				if first[acct] || !t.TakesUsage(g.keyID, g.cost, r.at) {
					e = &newEntry{accountID: acct, keyID: g.keyID, at: r.at}
					entries = append(entries, e)
					tailRef[acct] = e
					t = account.LedgerEntry{ID: -1, Reason: account.ReasonUsage, KeyID: g.keyID, CreatedAt: r.at}
				}
				first[acct] = true
				t.Delta -= g.n * g.cost
				t.Queries += g.n
				tails[acct] = t
				balances[acct] -= g.n * g.cost
				e.delta -= g.n * g.cost
				e.queries += g.n
				e.balance = balances[acct]
			}
		}
		var merges, inserts [][]any
		for _, e := range dbTails {
			if e.queries > 0 {
				merges = append(merges, []any{e.dbID, e.delta, e.balance, e.queries})
			}
		}
		for _, e := range entries {
			inserts = append(inserts, []any{e.accountID, e.delta, e.balance, e.keyID, e.queries, fmtTime(e.at)})
		}
		var credits [][]any
		for acct := range spent {
			credits = append(credits, []any{acct, balances[acct]})
		}
		byWhen := func(m map[pk]int64) map[string][][]any {
			out := map[string][][]any{}
			for k, n := range m {
				out[k.when] = append(out[k.when], []any{k.key, n})
			}
			return out
		}
		stale := map[string][][]any{}
		for id := range lastUsed {
			at := keys[id].lastUsed
			stale[at] = append(stale[at], []any{id})
		}
		for period, rows := range byWhen(monthly) {
			if err := execRows(ctx, tx, "usage", s.charge.usage, rows, period); err != nil {
				return err
			}
		}
		for day, rows := range byWhen(daily) {
			if err := execRows(ctx, tx, "daily usage", s.charge.daily, rows, day); err != nil {
				return err
			}
		}
		for at, rows := range stale {
			if err := execRows(ctx, tx, "last use", s.charge.lastUsed, rows, at); err != nil {
				return err
			}
		}
		if err := execRows(ctx, tx, "ledger", s.charge.ledgerMerge, merges); err != nil {
			return err
		}
		for _, row := range inserts {
			if _, err := tx.StmtContext(ctx, s.charge.ledger1).ExecContext(ctx, row...); err != nil {
				return fmt.Errorf("sqlite: journal: ledger: %w", err)
			}
		}
		if err := execRows(ctx, tx, "credits", s.charge.credits, credits); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE charge_journal SET applied_seq = ? WHERE id = 1", last.seq); err != nil {
			return fmt.Errorf("sqlite: journal: %w", err)
		}
		failpoint.Hit(point)
		return nil
	})
}

func (s *Store) jmLog() *slog.Logger {
	if s.jm != nil {
		return s.jm.log
	}
	return slog.New(slog.DiscardHandler)
}

// execRows runs a list statement on rows given as one JSON array, with
// args after it; no rows skips it.
func execRows(ctx context.Context, tx *sql.Tx, what string, stmt *sql.Stmt, rows [][]any, args ...any) error {
	if len(rows) == 0 {
		return nil
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, append([]any{string(list)}, args...)...); err != nil {
		return fmt.Errorf("sqlite: journal: %s: %w", what, err)
	}
	return nil
}
