//go:build unix

package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

func journalFixture(t *testing.T, opts Options) (path string, a account.Account, nk account.NewKey) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "j.db")
	st, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err = st.CreateAccount(t.Context(), account.NewAccount{Name: "j", Tier: account.Enterprise, CustomLimit: 1000, InitialCredits: 1000})
	if err != nil {
		t.Fatal(err)
	}
	nk = account.GenerateKey(a.ID, time.Now())
	if err := st.CreateKey(t.Context(), nk.Key); err != nil {
		t.Fatal(err)
	}
	return path, a, nk
}

func usedAndCredits(t *testing.T, st *Store, keyID string, accountID int64, period string) (int64, int64) {
	t.Helper()
	used, err := st.Usage(t.Context(), keyID, period)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Account(t.Context(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	return used, a.Credits
}

// Replay applies the records beyond the applied sequence number exactly
// once and drops a torn tail: a journal holding an applied record, two
// unapplied ones and half of a fourth ends with the three charges.
func TestJournalReplay(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	at := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	period := account.Period(at)
	rec := func(seq uint64, n int64) jRecord {
		return jRecord{seq: seq, period: period, at: at.Add(time.Duration(seq) * time.Second),
			grants: []jGrant{{keyID: nk.ID, accountID: a.ID, n: n, cost: 1}}}
	}
	recs := []jRecord{rec(1, 1), rec(2, 10), rec(3, 100)}

	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.applyRecords(ctx, recs[:1], ""); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var data []byte
	for _, r := range recs {
		data = appendRecord(data, r)
	}
	torn := appendRecord(nil, rec(4, 1000))
	data = append(data, torn[:len(torn)-3]...)
	if err := os.WriteFile(journalPath(path), data, 0o600); err != nil {
		t.Fatal(err)
	}

	for round := range 2 { // the second open finds nothing to replay
		st, err := Open(ctx, path, Options{Journal: true})
		if err != nil {
			t.Fatal(err)
		}
		used, credits := usedAndCredits(t, st, nk.ID, a.ID, period)
		if used != 111 || credits != 1000-111 {
			t.Fatalf("round %d: used %d, credits %d after replay; want 111, %d", round, used, credits, 1000-111)
		}
		es, err := st.Ledger(ctx, a.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		var q int64
		for _, e := range es {
			q += e.Queries
		}
		if q != 111 {
			t.Fatalf("round %d: the ledger charges %d queries, want 111: %+v", round, q, es)
		}
		// The next charge takes the next sequence number: it is neither
		// skipped as applied nor mixed up with the replayed ones.
		if round == 1 {
			g, err := st.Charge(ctx, period, at.Add(time.Hour), []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 5, Cost: 1}})
			if err != nil || g[0].Granted != 5 || g[0].Used != 116 || g[0].Credits != 1000-116 {
				t.Fatalf("charge after replay: %+v, %v", g, err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if used, credits := usedAndCredits(t, st, nk.ID, a.ID, period); used != 116 || credits != 1000-116 {
		t.Fatalf("after a clean close: used %d, credits %d; want 116, %d", used, credits, 1000-116)
	}
	data, err = os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if recs, _ := decodeJournal(data); len(recs) != 0 {
		t.Fatalf("the journal after a clean close holds %d records, want none", len(recs))
	}
}

// A server started under a symlink to the database writes the journal the
// real name's server replays, and a journal left beside a symlink's name
// (as journals were named before) is moved beside the real name and
// replayed.
func TestJournalByAnyName(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if journalPath(link) != journalPath(path) {
		t.Fatalf("the link's journal is %s, the file's %s", journalPath(link), journalPath(path))
	}
	at := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	period := account.Period(at)
	records := func(from uint64, ns ...int64) []byte {
		var data []byte
		for i, n := range ns {
			seq := from + uint64(i)
			data = appendRecord(data, jRecord{seq: seq, period: period, at: at.Add(time.Duration(seq) * time.Second),
				grants: []jGrant{{keyID: nk.ID, accountID: a.ID, n: n, cost: 1}}})
		}
		return data
	}
	check := func(name string, want int64) {
		t.Helper()
		st, err := Open(ctx, name, Options{Journal: true})
		if err != nil {
			t.Fatal(err)
		}
		used, credits := usedAndCredits(t, st, nk.ID, a.ID, period)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if used != want || credits != 1000-want {
			t.Fatalf("opened as %s: used %d, credits %d; want %d, %d", name, used, credits, want, 1000-want)
		}
	}

	// Left by a server killed under the link's name, named the old way.
	if err := os.WriteFile(link+"-charges.journal", records(1, 1, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	check(link, 11)
	if _, err := os.Lstat(link + "-charges.journal"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal beside the link's name is still there: %v", err)
	}
	// Left by a server killed under the link's name, found by the real one.
	if err := os.WriteFile(journalPath(link), records(3, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	check(path, 111)
}

// One process at a time charges through a store's journal; the others
// (the CLI) share the file, and their top-ups and revocations reach the
// charging process's decisions.
func TestJournalOneWriterAndOtherProcesses(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	srv, err := Open(ctx, path, Options{Journal: true, PollEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if second, err := Open(ctx, path, Options{Journal: true}); !errors.Is(err, ErrStoreLocked) {
		if second != nil {
			second.Close()
		}
		t.Fatalf("a second journal on one store: %v, want ErrStoreLocked", err)
	}
	cli, err := Open(ctx, path, Options{RequireMigrated: true})
	if err != nil {
		t.Fatalf("the CLI beside the server: %v", err)
	}
	defer cli.Close()

	now := time.Now()
	period := account.Period(now)
	charge := func(n int64) account.Grant {
		t.Helper()
		g, err := srv.Charge(ctx, period, time.Now(), []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: n, Cost: 1}})
		if err != nil {
			t.Fatal(err)
		}
		return g[0]
	}
	if g := charge(990); g.Granted != 990 || g.Credits != 10 {
		t.Fatalf("first charge: %+v", g)
	}
	// The CLI's top-up lands in the table, which has not caught up with
	// the charge: the server's balance is the table's minus its journal.
	if _, err := cli.AddCredits(ctx, a.ID, 500, "topup", time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the top-up to reach the server", func() bool {
		g := charge(1)
		return g.Granted == 1 && g.Credits > 10
	})
	g := charge(0 + 1)
	if g.Credits+g.Used != 1500 {
		t.Fatalf("after the top-up: used %d, credits %d; want them to add up to 1500", g.Used, g.Credits)
	}
	if _, err := cli.RevokeKey(ctx, nk.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revocation to reach the server", func() bool { return charge(1).Deny == account.DenyKey })
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	used, credits := usedAndCredits(t, cli, nk.ID, a.ID, period)
	if used+credits != 1500 {
		t.Fatalf("tables after close: used %d, credits %d; want them to add up to 1500", used, credits)
	}
}

// waitFor polls cond: the bound under test is the server's poll interval,
// and the deadline only stops a test that would never pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Once every record is applied the journal is written from its start
// again, over the old records: reading it finds only the new ones.
func TestJournalRestartsInPlace(t *testing.T) {
	ctx := t.Context()
	path, _, nk := journalFixture(t, Options{})
	st, err := Open(ctx, path, Options{Journal: true, ApplyEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	charge := func() {
		now := time.Now()
		if _, err := st.Charge(ctx, account.Period(now), now, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		charge()
	}
	if _, err := st.Usage(ctx, nk.ID, account.Period(time.Now())); err != nil { // applies the journal
		t.Fatal(err)
	}
	charge()
	data, err := os.ReadFile(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := decodeJournal(data)
	if len(recs) != 1 || recs[0].seq != 4 {
		t.Fatalf("the journal holds %+v, want the fourth record alone", recs)
	}
	if len(data) < journalChunk {
		t.Fatalf("the journal is %d bytes, want its space allocated ahead (%d)", len(data), journalChunk)
	}
}

// A catch-up whose records add to the table's latest ledger entry and
// then, a minute on, start a new one writes both: the ledger (the grant
// and two usage entries) charges every query the counter holds.
func TestJournalLedgerAcrossMinutes(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	st, err := Open(ctx, path, Options{Journal: true, ApplyEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Now().Truncate(time.Minute)
	period := account.Period(t0)
	charge := func(at time.Time, n int64) {
		t.Helper()
		if _, err := st.Charge(ctx, period, at, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: n, Cost: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	charge(t0, 1)
	if err := st.jm.catchUp(ctx); err != nil { // the table's latest entry: t0's minute
		t.Fatal(err)
	}
	charge(t0.Add(time.Second), 10)    // added to it
	charge(t0.Add(time.Minute), 100)   // a new entry
	charge(t0.Add(time.Minute+1), 200) // added to the new one
	used, credits := usedAndCredits(t, st, nk.ID, a.ID, period)
	es, err := st.Ledger(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var q, sum int64
	for _, e := range es {
		q += e.Queries
		sum += e.Delta
	}
	if used != 311 || q != 311 || credits != 1000-311 || sum != credits || es[0].Balance != credits || len(es) != 3 {
		t.Fatalf("counter %d, ledger %d queries summing to %d, balance %d: %+v", used, q, sum, credits, es)
	}
}

// CheckCharge makes the writes of the journal's next record without
// disturbing it: room allocated ahead (a chunk, once less than checkRoom
// is left), zeros where the next record goes. Records written around the
// checks are all read back, in order, at the next open.
func TestJournalCheckCharge(t *testing.T) {
	path, _, _ := journalFixture(t, Options{})
	j, recs, err := openJournalFile(path)
	if err != nil || len(recs) != 0 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	if err := j.check(); err != nil {
		t.Fatal(err)
	}
	if j.alloc != journalChunk || j.size != 0 {
		t.Fatalf("after a check of an empty journal: %d bytes allocated, %d used; want %d, 0", j.alloc, j.size, journalChunk)
	}
	at := time.Now()
	rec := func(seq uint64) jRecord {
		return jRecord{seq: seq, period: account.Period(at), at: at, grants: []jGrant{{keyID: "k", accountID: 1, n: 1, cost: 1}}}
	}
	var seq uint64
	for range 3 {
		seq++
		if err := j.append(rec(seq)); err != nil {
			t.Fatal(err)
		}
		if err := j.check(); err != nil {
			t.Fatal(err)
		}
	}
	j.close()
	j, recs, err = openJournalFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.close()
	if len(recs) != 3 || recs[0].seq != 1 || recs[2].seq != 3 {
		t.Fatalf("read back %d records (%+v); want the 3 written between checks", len(recs), recs)
	}
	// Near the end of the allocation (as if the records had filled it),
	// a check allocates the next chunk, as the next append would.
	j.size, j.alloc = journalChunk-checkRoom/2, journalChunk
	if err := j.check(); err != nil || j.alloc != 2*journalChunk {
		t.Fatalf("a check with %d bytes left: %v, %d allocated; want %d", j.alloc-j.size, err, j.alloc, 2*journalChunk)
	}
	if fi, err := os.Stat(journalPath(path)); err != nil || fi.Size() != 2*journalChunk {
		t.Errorf("the journal file: %v, %v; want %d bytes", fi, err, 2*journalChunk)
	}
}
