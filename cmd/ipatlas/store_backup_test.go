package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// storeLedger reads an account's balance, the usage of a key (in the
// months since the test began: the server stamps charges with its clock)
// and the ledger's sums from a SQLite store, as a second process.
func storeLedger(t *testing.T, path string, accountID int64, keyID string, since time.Time) (credits, used, sum, queries int64) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := st.Account(context.Background(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range slices.Compact([]string{account.Period(since), account.Period(time.Now())}) {
		n, err := st.Usage(context.Background(), keyID, p)
		if err != nil {
			t.Fatal(err)
		}
		used += n
	}
	es, err := st.Ledger(context.Background(), accountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		sum += e.Delta
		queries += e.Queries
	}
	return a.Credits, used, sum, queries
}

// A backup taken with the documented command while a server answers
// metered queries as fast as four clients can ask holds every query
// answered before it started, and an exact ledger: the balance is the
// ledger's sum, the key's usage its queries. Restoring it is refused
// while the server runs; once the server is stopped, the restore puts the
// backup in place and a server started on it charges on from the backup's
// balance.
func TestStoreBackupUnderLoadAndRestore(t *testing.T) {
	began := time.Now()
	fix := newServeFixture(t)
	path := filepath.Join(t.TempDir(), "ipatlas.db")
	store := "sqlite:" + path
	e := newCLIEnv(t)
	const initial = 1_000_000
	r := runCLI(t, e, "", "accounts", "create", "--name", "load", "--tier", "enterprise", "--monthly-limit", strconv.Itoa(initial), "--credits", strconv.Itoa(initial), "--store", store, "--json")
	var acct account.Account
	if err := json.Unmarshal([]byte(r.stdout), &acct); r.code != 0 || err != nil {
		t.Fatalf("accounts create: exit %d, %v, %s", r.code, err, r.stderr)
	}
	r = runCLI(t, e, "", "keys", "create", "--account", strconv.FormatInt(acct.ID, 10), "--store", store, "--json")
	var nk account.NewKey
	if err := json.Unmarshal([]byte(r.stdout), &nk); r.code != 0 || err != nil {
		t.Fatalf("keys create: exit %d, %v, %s", r.code, err, r.stderr)
	}

	limitsOff := map[string]string{"IPATLAS_KEY_RATE": "0", "IPATLAS_ADDR_RATE": "0"}
	s := startServe(t, limitsOff, serveArgs(fix.dir, path)...)
	base := "http://" + s.public
	var answered atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, env := postQuery(t, c, base, nk.Secret, `{"ip":"`+fix.v4+`"}`)
				if status != http.StatusOK || !env.Success {
					t.Errorf("query under load: %d %+v", status, env)
					return
				}
				answered.Add(1)
			}
		}()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	for answered.Load() < 50 { // the load is under way
		time.Sleep(10 * time.Millisecond)
	}

	backup := filepath.Join(t.TempDir(), "backup.db")
	before := answered.Load()
	start := time.Now()
	r = runCLI(t, e, "", "store", "backup", backup, "--store", store, "--json")
	took := time.Since(start)
	after := answered.Load()
	var info struct {
		Backup  string `json:"backup"`
		Applied int    `json:"journal_records_applied"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &info); r.code != 0 || err != nil || info.Backup != backup {
		t.Fatalf("store backup: exit %d, %v, stdout %q, stderr %q", r.code, err, r.stdout, r.stderr)
	}
	credits, used, sum, queries := storeLedger(t, backup, acct.ID, nk.ID, began)
	t.Logf("backup under load in %v: %d queries (%d answered before it, %d by its end), %d journal records applied", took.Round(time.Millisecond), used, before, after, info.Applied)
	if used < before || used > after+4 {
		t.Fatalf("the backup holds %d queries; %d were answered before it started, %d by its end (and at most 4 in flight)", used, before, after)
	}
	if credits != sum || used != queries || credits != initial-used {
		t.Fatalf("the backup's ledger is not exact: balance %d, ledger sum %d, usage %d, ledger queries %d", credits, sum, used, queries)
	}

	for answered.Load() < after+50 { // the live store moves past the backup
		time.Sleep(10 * time.Millisecond)
	}
	r = runCLI(t, e, "", "store", "restore", backup, "--store", store)
	if r.code != 1 || !strings.Contains(r.stderr, "stop the server first") {
		t.Fatalf("store restore beside a running server: exit %d, stderr %q; want exit 1, stop the server first", r.code, r.stderr)
	}
	close(stop)
	wg.Wait()
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if _, liveUsed, _, _ := storeLedger(t, path, acct.ID, nk.ID, began); liveUsed != answered.Load() {
		t.Fatalf("the live store has %d queries, the clients got %d answers", liveUsed, answered.Load())
	}

	r = runCLI(t, e, "", "store", "restore", backup, "--store", store)
	if r.code != 0 || !strings.Contains(r.stdout, "Kept the replaced "+path+".replaced-") {
		t.Fatalf("store restore: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	s = startServe(t, limitsOff, serveArgs(fix.dir, path)...)
	status, env := postQuery(t, http.DefaultClient, "http://"+s.public, nk.Secret, `{"ip":"`+fix.v4+`"}`)
	if status != http.StatusOK || env.Meta.CurrentCredits != credits-1 {
		t.Fatalf("a query on the restored store: %d, credits %d; want 200, %d", status, env.Meta.CurrentCredits, credits-1)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	c2, used2, sum2, queries2 := storeLedger(t, path, acct.ID, nk.ID, began)
	if used2 != used+1 || c2 != sum2 || used2 != queries2 || c2 != initial-used2 {
		t.Fatalf("the restored store after one query: balance %d, ledger sum %d, usage %d (want %d), ledger queries %d", c2, sum2, used2, used+1, queries2)
	}
}

// A PostgreSQL store is not this command's to back up; a backup's name
// that exists is refused.
func TestStoreBackupRefusals(t *testing.T) {
	e := newCLIEnv(t)
	r := runCLI(t, e, "", "store", "backup", filepath.Join(t.TempDir(), "b.db"), "--store", "postgres://u@127.0.0.1:1/db")
	if r.code != exitUsage || !strings.Contains(r.stderr, "pg_dump") {
		t.Errorf("postgres: exit %d, stderr %q", r.code, r.stderr)
	}
	path := filepath.Join(t.TempDir(), "ipatlas.db")
	if r := runCLI(t, e, "", "db", "migrate", "--store", "sqlite:"+path); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := runCLI(t, e, "", "store", "backup", path, "--store", "sqlite:"+path); r.code != 1 || !strings.Contains(r.stderr, "exists; name a new file") {
		t.Errorf("backup onto the store itself: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, e, "", "store", "backup"); r.code != exitUsage || !strings.Contains(r.stderr, "missing FILE") {
		t.Errorf("no FILE: exit %d, stderr %q", r.code, r.stderr)
	}
}
