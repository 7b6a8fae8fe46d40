package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

func openTemp(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ipatlas.db"), sqlite.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) account.Store { return openTemp(t) })
}

// The serving process's store, charging through the journal, meets the
// same contract: what it reads back includes every charge it answered.
func TestStoreJournal(t *testing.T) {
	storetest.Run(t, func(t *testing.T) account.Store {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "ipatlas.db"), sqlite.Options{Journal: true})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

func TestMigrate(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sub", "m.db")

	// Refusing a missing database must not create it.
	if _, err := sqlite.Open(ctx, path, sqlite.Options{RequireMigrated: true}); !errors.Is(err, sqlite.ErrNotMigrated) {
		t.Fatalf("Open(missing, RequireMigrated) = %v, want ErrNotMigrated", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused Open left a file behind: %v", err)
	}

	// An SQLite file made by something else has no schema of ours.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE unrelated (x)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := sqlite.Open(ctx, path, sqlite.Options{RequireMigrated: true}); !errors.Is(err, sqlite.ErrNotMigrated) {
		t.Fatalf("Open(unmigrated, RequireMigrated) = %v, want ErrNotMigrated", err)
	}

	from, to, err := sqlite.Migrate(ctx, path)
	if err != nil || from != 0 || to < 1 {
		t.Fatalf("Migrate = %d, %d, %v; want 0 -> latest", from, to, err)
	}
	from2, to2, err := sqlite.Migrate(ctx, path)
	if err != nil || from2 != to || to2 != to {
		t.Fatalf("second Migrate = %d, %d, %v; want %d -> %d", from2, to2, err, to, to)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{RequireMigrated: true})
	if err != nil {
		t.Fatalf("Open(migrated, RequireMigrated) = %v", err)
	}
	defer st.Close()
	if _, err := st.CreateAccount(ctx, account.NewAccount{Name: "a", Tier: account.Free}); err != nil {
		t.Fatal(err)
	}
}

func TestNewFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Fatalf("a new database has mode %v; it holds key hashes and must be private to its owner", perm)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.db")
	if _, _, err := sqlite.Migrate(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, 1)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, opts := range []sqlite.Options{{}, {RequireMigrated: true}} {
		_, err := sqlite.Open(t.Context(), path, opts)
		if err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("Open(%+v) of a database from a newer ipatlas = %v, want a refusal", opts, err)
		}
	}
}

// TestTwoStoresOneFile is the server and the CLI on one file: a Meter on
// one Store, single charges and credit changes through another, all at
// once. Nothing may fail with "database is locked", and the totals must
// agree.
func TestTwoStoresOneFile(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "shared.db")
	server, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	cli, err := sqlite.Open(ctx, path, sqlite.Options{RequireMigrated: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	const initial, topUps = 400, 20
	a, err := cli.CreateAccount(ctx, account.NewAccount{Name: "shared", Tier: account.Enterprise, CustomLimit: 1 << 30, InitialCredits: initial})
	if err != nil {
		t.Fatal(err)
	}
	nk := account.GenerateKey(a.ID, time.Now())
	if err := cli.CreateKey(ctx, nk.Key); err != nil {
		t.Fatal(err)
	}
	m := account.NewMeter(server, account.MeterOptions{})
	defer m.Close(ctx)

	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				o, err := m.Charge(ctx, nk.Key)
				if err != nil {
					t.Errorf("meter charge: %v", err)
					return
				}
				if o.Granted {
					granted.Add(1)
				}
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				gs, err := cli.Charge(ctx, account.Period(time.Now()), time.Now(),
					[]account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}})
				if err != nil {
					t.Errorf("direct charge: %v", err)
					return
				}
				granted.Add(gs[0].Granted)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range topUps {
			if _, err := cli.AddCredits(ctx, a.ID, 1, "top-up", time.Now()); err != nil {
				t.Errorf("AddCredits: %v", err)
				return
			}
		}
	}()
	wg.Wait()
	if t.Failed() {
		return
	}

	n := granted.Load()
	used, err := cli.Usage(ctx, nk.ID, account.Period(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	acct, err := cli.Account(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if used != n || acct.Credits != initial+topUps-n || acct.Credits < 0 {
		t.Fatalf("granted %d, usage %d, balance %d; want usage = granted and balance = %d - granted",
			n, used, acct.Credits, initial+topUps)
	}
	es, err := cli.Ledger(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var charged, bal int64
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Balance != bal+es[i].Delta {
			t.Fatalf("ledger chain broken at entry %d", es[i].ID)
		}
		bal = es[i].Balance
		charged += es[i].Queries
	}
	if charged != n || bal != acct.Credits {
		t.Fatalf("ledger: %d queries, ends at %d; want %d, %d", charged, bal, n, acct.Credits)
	}
}

// TestKillDuringCharges kills (SIGKILL) a process that is charging through
// a Meter and reports each success as soon as Charge returns it: every
// success the parent saw must be in the database, and at most the charges
// in flight at the kill may be there without having been reported.
//
// It runs on both charge paths: one transaction per batch, and the charge
// journal, which the reopening replays.
func TestKillDuringCharges(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL semantics; runs on Linux and macOS")
	}
	for _, journal := range []bool{false, true} {
		t.Run(fmt.Sprintf("journal=%v", journal), func(t *testing.T) { killDuringCharges(t, journal) })
	}
}

func killDuringCharges(t *testing.T, journal bool) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "kill.db")
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	svc := &account.Service{Store: st}
	a, err := svc.CreateAccount(ctx, account.AccountParams{Name: "k", Tier: account.Enterprise, MonthlyLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	initial := a.Credits
	nk, err := svc.CreateKey(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestChargerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childPathEnv+"="+path, childKeyEnv+"="+nk.Secret, fmt.Sprintf("%s=%v", childJournalEnv, journal))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })

	const killAfter = 300
	seen := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() != "ok" {
			continue
		}
		seen++
		if seen == killAfter {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd.Wait()
	if seen < killAfter {
		t.Fatalf("the child reported only %d successes before it ended", seen)
	}

	st, err = sqlite.Open(ctx, path, sqlite.Options{RequireMigrated: true, Journal: journal})
	if err != nil {
		t.Fatalf("reopening after the kill: %v", err)
	}
	defer st.Close()
	used, err := st.Usage(ctx, nk.ID, account.Period(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	acct, err := st.Account(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if used < int64(seen) {
		t.Fatalf("the child reported %d successes but the database holds %d: a reported charge was lost", seen, used)
	}
	if used > int64(seen)+childCallers {
		t.Fatalf("the database holds %d charges, the child reported %d: more than the %d in flight", used, seen, childCallers)
	}
	if acct.Credits != initial-used {
		t.Fatalf("balance %d, want %d - %d", acct.Credits, initial, used)
	}
	es, err := st.Ledger(ctx, a.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var charged int64
	for _, e := range es {
		charged += e.Queries
	}
	if charged != used {
		t.Fatalf("the ledger charges %d queries, the counter holds %d", charged, used)
	}
	t.Logf("reported %d, committed %d", seen, used)
}

const (
	childPathEnv    = "IPATLAS_SQLITE_TEST_CHILD_DB"
	childKeyEnv     = "IPATLAS_SQLITE_TEST_CHILD_KEY"
	childJournalEnv = "IPATLAS_SQLITE_TEST_CHILD_JOURNAL"
	childCallers    = 16
)

// TestChargerChild is the process TestKillDuringCharges kills; on its own
// it does nothing.
func TestChargerChild(t *testing.T) {
	path := os.Getenv(childPathEnv)
	if path == "" {
		t.Skip("helper process of TestKillDuringCharges, which starts it")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{RequireMigrated: true, Journal: os.Getenv(childJournalEnv) == "true"})
	if err != nil {
		t.Fatal(err)
	}
	svc := &account.Service{Store: st}
	k, _, err := svc.Authenticate(ctx, os.Getenv(childKeyEnv))
	if err != nil {
		t.Fatal(err)
	}
	m := account.NewMeter(st, account.MeterOptions{})
	var wg sync.WaitGroup
	for range childCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				o, err := m.Charge(ctx, k)
				if err != nil || !o.Granted {
					t.Errorf("charge: %+v, %v", o, err)
					return
				}
				os.Stdout.Write([]byte("ok\n")) // one write each: a whole line or nothing
			}
		}()
	}
	wg.Wait()
}

func BenchmarkMeter(b *testing.B) {
	for _, keys := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=64/keys=%d", keys), func(b *testing.B) {
			storetest.BenchmarkMeter(b, openTemp(b), 64, keys)
		})
	}
}

// benchStore is a store with one key whose quota and balance no benchmark
// exhausts.
func benchStore(b *testing.B) (*sqlite.Store, account.NewKey) {
	return sqlite.BenchStore(b, sqlite.Options{})
}

// BenchmarkChargeUnbatched is what the Meter saves: one transaction, so
// one fsync, per charge, 64 callers.
func BenchmarkChargeUnbatched(b *testing.B) {
	st, nk := benchStore(b)
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				now := time.Now()
				if _, err := st.Charge(ctx, account.Period(now), now, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
}
