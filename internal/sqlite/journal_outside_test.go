//go:build unix

package sqlite

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// ledgerChain checks that an account's ledger, newest first, chains: each
// entry's balance is the next older one's plus its delta, down to the
// first grant, and the newest balance is the account's.
func ledgerChain(t *testing.T, st *Store, accountID int64) []account.LedgerEntry {
	t.Helper()
	es, err := st.Ledger(t.Context(), accountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Account(t.Context(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 || es[0].Balance != a.Credits {
		t.Fatalf("the newest entry's balance is not the account's %d: %+v", a.Credits, es)
	}
	for i := 0; i+1 < len(es); i++ {
		if es[i].Balance != es[i+1].Balance+es[i].Delta {
			t.Fatalf("entry %d (%+d, balance %d) does not follow entry %d (balance %d): %+v", i, es[i].Delta, es[i].Balance, i+1, es[i+1].Balance, es)
		}
	}
	return es
}

// A top-up made by another process (the CLI) beside a running server
// waits for the server to apply the charges it answered before the top-up:
// the balance it reports includes them, and the ledger lists them below
// the top-up, each balance following the one before.
func TestOutsideWaitsForTheServer(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	// The server's applier never runs by itself here: the test lets it
	// run once the CLI is waiting.
	srv, err := Open(ctx, path, Options{Journal: true, ApplyEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	at := time.Now()
	if g, err := srv.Charge(ctx, account.Period(at), at, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}}); err != nil || g[0].Granted != 1 {
		t.Fatalf("charge: %+v, %v", g, err)
	}
	cli, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	waiting := make(chan struct{})
	awaitHook = func() { close(waiting) }
	defer func() { awaitHook = nil }()
	type added struct {
		e   account.LedgerEntry
		err error
	}
	done := make(chan added, 1)
	go func() {
		e, err := cli.AddCredits(ctx, a.ID, 5000, "topup", time.Now())
		done <- added{e, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("the top-up did not wait for the server's journal: %+v, %v", r.e, r.err)
	}
	// The server applies its journal (as its applier does every second).
	if _, err := srv.Account(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := int64(1000 - 1 + 5000); r.e.Balance != want {
		t.Errorf("the top-up reports the balance %d, want %d: the charge answered before it is missing", r.e.Balance, want)
	}
	es := ledgerChain(t, cli, a.ID)
	if len(es) != 3 || es[0].Delta != 5000 || es[1].Delta != -1 || es[1].Reason != account.ReasonUsage {
		t.Errorf("the ledger, newest first: %+v; want the top-up above the charge", es)
	}
}

// Beside a server whose applier does not write (a full disk, here one
// that is never due), a top-up gives up after BusyTimeout and changes
// nothing; a read goes on with the tables as they are.
func TestOutsideServerBehind(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	srv, err := Open(ctx, path, Options{Journal: true, ApplyEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	at := time.Now()
	if _, err := srv.Charge(ctx, account.Period(at), at, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}}); err != nil {
		t.Fatal(err)
	}
	cli, err := Open(ctx, path, Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.AddCredits(ctx, a.ID, 5000, "topup", time.Now()); !errors.Is(err, ErrJournalBehind) {
		t.Fatalf("a top-up beside a server that does not apply: %v, want ErrJournalBehind", err)
	}
	got, err := cli.Account(ctx, a.ID)
	if err != nil || got.Credits != 1000 {
		t.Fatalf("read beside it: %d credits, %v; want the tables' 1000, unchanged", got.Credits, err)
	}
}

// With no server running, what a killed one left in its journal is
// applied by the first process that reads or changes the balances, once:
// the next server finds nothing more to apply.
func TestOutsideAppliesWhatAKilledServerLeft(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	at := time.Now().UTC()
	period := account.Period(at)
	var data []byte
	for seq, n := range []int64{1, 10} {
		data = appendRecord(data, jRecord{seq: uint64(seq + 1), period: period, at: at.Add(time.Duration(seq) * time.Second),
			grants: []jGrant{{keyID: nk.ID, accountID: a.ID, n: n, cost: 1}}})
	}
	// Followed by zeros, as the journal is allocated ahead.
	data = append(data, make([]byte, 4096)...)
	if err := os.WriteFile(journalPath(path), data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A lock file left by the killed server, unlocked.
	if err := os.WriteFile(lockPath(path), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cli, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := cli.AddCredits(ctx, a.ID, 100, "topup", time.Now())
	if err != nil || e.Balance != 1000-11+100 {
		t.Fatalf("top-up after a killed server: %+v, %v; want the balance %d", e, err, 1000-11+100)
	}
	es := ledgerChain(t, cli, a.ID)
	if es[0].Delta != 100 || es[1].Queries != 11 {
		t.Errorf("the ledger, newest first: %+v; want the top-up above the journal's charges", es)
	}
	cli.Close()
	srv, err := Open(ctx, path, Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if used, credits := usedAndCredits(t, srv, nk.ID, a.ID, period); used != 11 || credits != 1000-11+100 {
		t.Errorf("the next server: used %d, credits %d; want 11, %d (nothing applied twice)", used, credits, 1000-11+100)
	}
}

// readJournal, reading the file a frame at a time, finds what
// decodeJournal finds in the whole of it, torn tails and old rounds
// included.
func TestReadJournalAsDecode(t *testing.T) {
	at := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	rec := func(seq uint64) []byte {
		return appendRecord(nil, jRecord{seq: seq, period: account.Period(at), at: at, grants: []jGrant{{keyID: "k", accountID: 1, n: int64(seq), cost: 1}}})
	}
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	r3 := rec(3)
	for name, data := range map[string][]byte{
		"empty":                 nil,
		"zeros":                 make([]byte, 1024),
		"two and zeros":         cat(rec(1), rec(2), make([]byte, 100)),
		"torn third":            cat(rec(1), rec(2), r3[:len(r3)-2]),
		"new round over an old": cat(rec(7), rec(2), rec(3)),
		"bad checksum":          cat(rec(1), append(r3[:4:4], 0, 0, 0, 0), r3[8:]),
		"exactly one":           rec(5),
	} {
		p := t.TempDir() + "/j"
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readJournal(p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := decodeJournal(data)
		if len(got) != len(want) {
			t.Errorf("%s: %d records, decodeJournal %d", name, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i].seq != want[i].seq || got[i].grants[0].n != want[i].grants[0].n {
				t.Errorf("%s: record %d is %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}
	if recs, err := readJournal(t.TempDir() + "/none"); err != nil || recs != nil {
		t.Errorf("a missing journal: %v, %v", recs, err)
	}
}
