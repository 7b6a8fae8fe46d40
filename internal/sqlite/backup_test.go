//go:build unix

package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// ledgerState is what a store says of one account and key: the balance,
// the key's usage this period, and the ledger's sums.
type ledgerState struct {
	credits, used     int64
	sumDelta, queries int64
	lastBalance       int64
}

func readLedgerState(t *testing.T, st *Store, keyID string, accountID int64, period string) ledgerState {
	t.Helper()
	var s ledgerState
	s.used, s.credits = usedAndCredits(t, st, keyID, accountID, period)
	es, err := st.Ledger(t.Context(), accountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		s.sumDelta += e.Delta
		s.queries += e.Queries
	}
	if len(es) > 0 {
		s.lastBalance = es[0].Balance // newest first
	}
	return s
}

// exact fails unless the state is one ledger: the balance is the sum of
// the entries (the first, the initial credits, included) and the newest
// entry's balance, and the usage is the ledger's queries, each at cost 1.
func (s ledgerState) exact(t *testing.T, what string, initial int64) {
	t.Helper()
	if s.credits != s.sumDelta || s.credits != s.lastBalance || s.used != s.queries || s.credits != initial-s.used {
		t.Fatalf("%s is not exact: balance %d, ledger sum %d, newest entry's balance %d, usage %d, ledger queries %d",
			what, s.credits, s.sumDelta, s.lastBalance, s.used, s.queries)
	}
}

func openPlain(t *testing.T, path string) *Store {
	t.Helper()
	st, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A backup taken while a server holds charges in its journal only (its
// applier idle for an hour) has them: the tables of the live store lack
// them, the copy's tables have each once, and its ledger is exact. The
// copy is one file, and a second backup to the same name is refused.
func TestBackupAppliesTheJournal(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	srv, err := Open(ctx, path, Options{Journal: true, ApplyEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	at := time.Now()
	period := account.Period(at)
	for i := range 7 {
		g, err := srv.Charge(ctx, period, at.Add(time.Duration(i)*time.Second), []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 3, Cost: 1}})
		if err != nil || g[0].Granted != 3 {
			t.Fatalf("charge %d: %+v, %v", i, g, err)
		}
	}
	// Another process reads the tables: the charges are in the journal only.
	if used, credits := usedAndCredits(t, openPlain(t, path), nk.ID, a.ID, period); used != 0 || credits != 1000 {
		t.Fatalf("the live tables already have the charges (used %d, credits %d): the test would prove nothing", used, credits)
	}

	dest := filepath.Join(t.TempDir(), "backup.db")
	info, err := Backup(ctx, path, dest)
	if err != nil {
		t.Fatal(err)
	}
	if info.JournalCharges != 7 || info.AppliedSeq != 7 || info.Attempts != 1 || info.SchemaVersion < 3 || info.Bytes == 0 {
		t.Errorf("backup info %+v: want 7 journal records applied, up to sequence number 7, in one try", info)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal", "-charges.journal"} {
		if _, err := os.Stat(dest + suffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s beside the backup: %v", suffix, err)
		}
	}
	if st, err := os.Stat(dest); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the backup's mode: %v, %v; want 0600 (it holds key hashes)", st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dest))
	if len(entries) != 1 {
		t.Errorf("the backup's directory holds %d files, want the backup alone", len(entries))
	}
	got := readLedgerState(t, openPlain(t, dest), nk.ID, a.ID, period)
	got.exact(t, "the backup", 1000)
	if got.used != 21 {
		t.Fatalf("the backup has %d queries used, want 21", got.used)
	}
	if _, err := Backup(ctx, path, dest); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a second backup to %s: %v, want a refusal", dest, err)
	}
}

// When the server applies its journal between the backup's snapshot and
// its reading of the journal, the records the snapshot lacks may be gone
// from the journal: the backup sees applied_seq move and tries again, and
// the copy has every charge once.
func TestBackupRetriesWhenTheJournalMoves(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	srv, err := Open(ctx, path, Options{Journal: true, ApplyEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	at := time.Now()
	period := account.Period(at)
	for range 5 {
		if _, err := srv.Charge(ctx, period, at, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 2, Cost: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	backupHook = func(attempt int) {
		if attempt == 1 {
			if err := srv.jm.catchUp(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { backupHook = nil }()
	dest := filepath.Join(t.TempDir(), "backup.db")
	info, err := Backup(ctx, path, dest)
	if err != nil {
		t.Fatal(err)
	}
	if info.Attempts != 2 || info.JournalCharges != 0 || info.AppliedSeq != 5 {
		t.Errorf("backup info %+v: want a second try, whose snapshot holds the 5 records", info)
	}
	got := readLedgerState(t, openPlain(t, dest), nk.ID, a.ID, period)
	got.exact(t, "the backup", 1000)
	if got.used != 10 {
		t.Fatalf("the backup has %d queries used, want 10", got.used)
	}
}

// Under load: charges go on, through the journal and its applier (every
// 50 ms, twenty times the server's pace, so that it often runs during a
// backup), while backups are taken. Each backup has every charge granted
// before it started, none granted after it returned, and an exact ledger.
func TestBackupUnderLoad(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "load.db")
	const initial = 1_000_000
	setup := openPlain(t, path)
	a, err := setup.CreateAccount(ctx, account.NewAccount{Name: "load", Tier: account.Enterprise, CustomLimit: initial, InitialCredits: initial})
	if err != nil {
		t.Fatal(err)
	}
	nk := account.GenerateKey(a.ID, time.Now())
	if err := setup.CreateKey(ctx, nk.Key); err != nil {
		t.Fatal(err)
	}
	setup.Close()
	srv, err := Open(ctx, path, Options{Journal: true, ApplyEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	at := time.Now()
	period := account.Period(at)
	var granted atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				g, err := srv.Charge(ctx, period, at, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}})
				if err != nil {
					t.Error(err)
					return
				}
				if g[0].Granted != 1 {
					t.Errorf("charge refused: %+v", g[0])
					return
				}
				granted.Add(g[0].Granted)
			}
		}()
	}
	dir := t.TempDir()
	for i := range 5 {
		before := granted.Load()
		dest := filepath.Join(dir, "backup-"+string(rune('a'+i))+".db")
		info, err := Backup(ctx, path, dest)
		if err != nil {
			t.Fatal(err)
		}
		after := granted.Load()
		got := readLedgerState(t, openPlain(t, dest), nk.ID, a.ID, period)
		got.exact(t, dest, initial)
		// A charge counted after Backup returned may have been granted
		// before: the bound is the grants counted by then plus the four
		// in flight.
		if got.used < before || got.used > after+4 {
			t.Fatalf("backup %d holds %d charges; %d were granted before it started and %d by its end", i, got.used, before, after)
		}
		t.Logf("backup %d: %d charges (%d before, %d after), %d from the journal, %d tries", i, got.used, before, after, info.JournalCharges, info.Attempts)
	}
	close(stop)
	wg.Wait()
}

// Restore refuses while a server holds the store, keeps the store it
// replaces (database, WAL and journal) under new names, and a server
// started on the restored store carries on from the backup's ledger.
func TestRestore(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	srv, err := Open(ctx, path, Options{Journal: true, ApplyEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	period := account.Period(at)
	charge := func(st *Store, n int64) {
		t.Helper()
		if g, err := st.Charge(ctx, period, at, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: n, Cost: 1}}); err != nil || g[0].Granted != n {
			t.Fatalf("charge %d: %+v, %v", n, g, err)
		}
	}
	charge(srv, 10)
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := Backup(ctx, path, backup); err != nil {
		t.Fatal(err)
	}
	charge(srv, 100) // after the backup: gone once it is restored

	if _, err := Restore(ctx, backup, path, at); !errors.Is(err, ErrStoreLocked) || !strings.Contains(err.Error(), "stop the server first") {
		t.Fatalf("restore under a running server: %v, want ErrStoreLocked", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := Restore(ctx, backup, path, at)
	if err != nil {
		t.Fatal(err)
	}
	aside := path + ".replaced-" + at.UTC().Format("20060102T150405Z")
	if len(info.Replaced) == 0 || !strings.HasPrefix(info.Replaced[len(info.Replaced)-1], aside) {
		t.Errorf("replaced %v, want the old files under %s*", info.Replaced, aside)
	}
	if _, err := os.Stat(journalPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old charge journal is still in place: %v", err)
	}
	old := readLedgerState(t, openPlain(t, aside), nk.ID, a.ID, period)
	if old.used != 110 {
		t.Errorf("the replaced store, kept, has %d queries used, want 110", old.used)
	}

	srv, err = Open(ctx, path, Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := readLedgerState(t, srv, nk.ID, a.ID, period); s.used != 10 {
		t.Fatalf("the restored store has %d queries used, want the backup's 10", s.used)
	}
	charge(srv, 1)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLedgerState(t, openPlain(t, path), nk.ID, a.ID, period)
	got.exact(t, "the restored store after a charge", 1000)
	if got.used != 11 {
		t.Fatalf("the restored store has %d queries used after one more, want 11", got.used)
	}

	// Not a store, and a store from a newer program, are refused before
	// anything is touched.
	junk := filepath.Join(t.TempDir(), "junk.db")
	os.WriteFile(junk, []byte("not a database"), 0o600)
	if _, err := Restore(ctx, junk, path, at.Add(time.Hour)); err == nil {
		t.Error("restoring a file that is not a database succeeded")
	}
	newer := filepath.Join(t.TempDir(), "newer.db")
	if _, err := Backup(ctx, path, newer); err != nil {
		t.Fatal(err)
	}
	st := openPlain(t, newer)
	if _, err := st.w.ExecContext(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, 1)"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := Restore(ctx, newer, path, at.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "newer than this program's") {
		t.Errorf("restoring a newer schema: %v", err)
	}
	if got := readLedgerState(t, openPlain(t, path), nk.ID, a.ID, period); got.used != 11 {
		t.Errorf("a refused restore changed the store: %d queries used, want 11", got.used)
	}
}

// A store named by a symlink is restored where the link points: the link
// stays, and the files kept are named from the real path, as the -wal
// and the journal are.
func TestRestoreThroughASymlink(t *testing.T) {
	ctx := t.Context()
	path, a, nk := journalFixture(t, Options{})
	backup := filepath.Join(t.TempDir(), "backup.db")
	if _, err := Backup(ctx, path, backup); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	period := account.Period(at)
	st := openPlain(t, path)
	if _, err := st.Charge(ctx, period, at, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 5, Cost: 1}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, backup, link, at); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is gone: %v %v", fi, err)
	}
	if _, err := os.Stat(path + ".replaced-" + at.UTC().Format("20060102T150405Z")); err != nil {
		t.Fatalf("the replaced store is not kept beside the real path: %v", err)
	}
	if got := readLedgerState(t, openPlain(t, link), nk.ID, a.ID, period); got.used != 0 {
		t.Fatalf("the store through the link has %d queries used, want the backup's 0", got.used)
	}
}
