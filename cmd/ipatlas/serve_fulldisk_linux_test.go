package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"golang.org/x/sys/unix"
)

// A store whose charges cannot be written, as on a full disk, through the
// real write path: the serving process's file size limit (RLIMIT_FSIZE,
// set from outside with prlimit) is below the charge journal's first
// allocation, so the journal's write fails with EFBIG where a full disk
// fails with ENOSPC, while the database, already written, still answers.
// Every metered query answers 503 ServiceUnavailable, /readyz says not
// ready and why, and the log says so once, not once per query. With the
// limit lifted, /readyz is ready again without a charge having to succeed
// first (a balancer sends none to a replica that is not ready), the next
// query is charged, and the recovery is logged.
func TestServeChargesCannotBeWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the test runs the binary")
	}
	fx := newServeFixture(t)
	dbPath := filepath.Join(t.TempDir(), "ipatlas.db")
	const token = "full-disk-test-token-for-the-serve-tests"
	srv := startChild(t, ipatlasBinary(t), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", fx.dir,
		"--store", "sqlite:"+dbPath, "--no-fetch", "--admin-token", token, "--key-rate", "0",
		"--tor-interval", "0", "--privacy-interval", "0", "--geofeed", "none")
	key, _ := roomyKey(t, srv.admin, token, "full-disk")

	// Nothing was charged yet: the journal is empty, its first record
	// allocates 4 MiB. The database and its WAL are far below the limit.
	const limit = 3 << 20
	for _, f := range []string{dbPath, dbPath + "-wal", dbPath + "-charges.journal"} {
		if fi, err := os.Stat(f); err == nil && fi.Size() > limit/3 {
			t.Fatalf("%s has %d bytes already; the limit of %d would stop more than the journal", f, fi.Size(), limit)
		}
	}
	pid := srv.cmd.Process.Pid
	setFsize := func(cur uint64) {
		t.Helper()
		var old unix.Rlimit
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
			t.Fatal(err)
		}
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: cur, Max: old.Max}, nil); err != nil {
			t.Fatal(err)
		}
	}
	setFsize(limit)

	client := &http.Client{Timeout: 30 * time.Second}
	base := "http://" + srv.public
	start := time.Now()
	const queries = 40
	for i := range queries {
		st, env := postQuery(t, client, base, key, fmt.Sprintf(`{"ip": %q}`, fx.v4))
		if st != http.StatusServiceUnavailable || env.Code != ipatlas.CodeServiceUnavailable {
			t.Fatalf("query %d with the journal unwritable: %d %+v", i, st, env)
		}
	}
	status, body, err := getStatus(client, "http://"+srv.admin+"/readyz")
	if err != nil || status != http.StatusServiceUnavailable || !strings.Contains(body, "charges cannot be written") || !strings.Contains(body, "file too large") {
		t.Errorf("/readyz with charges unwritable: %d %s %v", status, body, err)
	}
	if st, _, _ := getStatus(client, base+"/api/ping"); st != http.StatusOK {
		t.Errorf("ping with charges unwritable: %d", st)
	}
	// One line for the condition, and one more per minute it lasted.
	allowed := 1 + int(time.Since(start)/time.Minute)
	logs := srv.log.String()
	if n := strings.Count(logs, "level=ERROR"); n < 1 || n > allowed {
		t.Errorf("%d error lines for %d failed queries, want 1 (at most %d in %v):\n%s", n, queries, allowed, time.Since(start), logs)
	}
	if !strings.Contains(logs, "charges cannot be written") || !strings.Contains(logs, "file too large") {
		t.Errorf("the log does not say charges cannot be written, and why:\n%s", logs)
	}

	setFsize(unix.RLIM_INFINITY) // space freed
	if status, body, err := getStatus(client, "http://"+srv.admin+"/readyz"); err != nil || status != http.StatusOK {
		t.Errorf("/readyz once charges can be written: %d %s %v", status, body, err)
	}
	if st, env := postQuery(t, client, base, key, fmt.Sprintf(`{"ip": %q}`, fx.v4)); st != http.StatusOK || !env.Success {
		t.Fatalf("a query once charges can be written: %d %+v", st, env)
	}
	if u := usageOf(t, base, key); u.Used != 1 {
		t.Errorf("usage %d after 40 failed queries and one answered, want 1", u.Used)
	}
	srv.waitLog(t, "charges are written again")
}
