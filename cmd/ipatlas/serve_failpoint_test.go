//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
)

// failpointBinary is this test binary run as ipatlas with the failpoint
// named by IPATLAS_FAILPOINT=NAME:N armed (TestMain arms it): a server
// that kills itself (SIGKILL) at that point of the charge path. Only a
// test binary arms failpoints.
func failpointBinary(t *testing.T) string {
	t.Helper()
	return ipatlasBinary(t)
}

// The serving process is killed at each point of the journal's path: after
// a batch's record is written and before it is synced, after the sync and
// before the answers, inside a catch-up transaction, after a catch-up
// commits and before the journal is trimmed, and then, on the restart,
// inside the replay. The restarted server's counters and balance hold
// every success the clients saw, and at most the queries in flight more;
// the ledger adds up to the balance.
func TestServeKillAtFailpoints(t *testing.T) {
	skipKillTestUnderRace(t)
	if testing.Short() {
		t.Skip("-short: runs the server in child processes, killing each several times")
	}
	bin := failpointBinary(t)
	fx := newServeFixture(t)
	for _, point := range []string{"journal-before-sync:300", "journal-before-answer:300", "catchup-before-commit:1", "catchup-after-commit:1"} {
		name, _, _ := strings.Cut(point, ":")
		t.Run(name, func(t *testing.T) {
			dbPath := filepath.Join(t.TempDir(), "ipatlas.db")
			store := "sqlite:" + dbPath
			const token = "kill-test-token-for-the-serve-tests"
			args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", fx.dir,
				"--store", store, "--no-fetch", "--admin-token", token, "--key-rate", "0"}

			t.Setenv("IPATLAS_FAILPOINT", point)
			srv := startChild(t, bin, args...)
			newKey, accountID := roomyKey(t, srv.admin, token, "kill-test")
			before := usageOf(t, "http://"+srv.public, newKey)

			succeeded, lost := loadUntilKilled(t, srv, newKey, fx)
			if !strings.Contains(srv.log.String(), "failpoint "+name+": SIGKILL") {
				t.Fatalf("the server did not die at %s:\n%s", name, srv.log)
			}
			checkSQLiteIntegrity(t, dbPath)

			// The restart replays the journal; a first restart killed
			// inside the replay must leave it to the next one.
			// (A journal whose first frame's length is zero holds no
			// record; killed after a catch-up's commit, its records may
			// all be applied, and its own restart is the test.)
			head := make([]byte, 4)
			if f, err := os.Open(dbPath + "-charges.journal"); err == nil {
				f.Read(head)
				f.Close()
			}
			switch {
			case name == "catchup-after-commit":
			case string(head) != "\x00\x00\x00\x00":
				os.Setenv("IPATLAS_FAILPOINT", "replay-before-commit:1")
				replayKilled(t, bin, args...)
				checkSQLiteIntegrity(t, dbPath)
			default:
				t.Errorf("killed at %s, the journal holds no record: nothing to replay", name)
			}
			os.Unsetenv("IPATLAS_FAILPOINT")
			srv = startChild(t, bin, args...)
			after := usageOf(t, "http://"+srv.public, newKey)
			checkCredits(t, dbPath, accountID, after.Credits)
			used, spent := after.Used-before.Used, before.Credits-after.Credits
			t.Logf("%s: %d answers seen, %d in flight; usage +%d, credits -%d", name, succeeded, lost, used, spent)
			if used < succeeded || used > succeeded+lost {
				t.Errorf("usage counter rose by %d, want between %d successes and %d (+%d in flight)", used, succeeded, succeeded+lost, lost)
			}
			if spent != used {
				t.Errorf("%d credits spent for %d queries counted at cost 1", spent, used)
			}
		})
	}
}

// loadUntilKilled sends metered queries on 16 connections until the
// server dies, and counts the successes the clients saw and the requests
// that got no answer.
func loadUntilKilled(t *testing.T, srv *serveChild, key string, fx serveFixture) (succeeded, lost int64) {
	t.Helper()
	base := "http://" + srv.public
	bodies := []string{fmt.Sprintf(`{"ip": %q}`, fx.v4), fmt.Sprintf(`{"ip": %q, "lang": "zh"}`, fx.v6)}
	var ok, gone atomic.Int64
	var other sync.Map
	transport := &http.Transport{MaxIdleConnsPerHost: 16}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for n := 0; ; n++ {
				req, _ := http.NewRequest(http.MethodPost, base+"/api/ip-query", strings.NewReader(bodies[(w+n)%2]))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					gone.Add(1)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					gone.Add(1)
					return
				}
				var env ipatlas.Envelope
				if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &env) == nil && env.Success {
					ok.Add(1)
					continue
				}
				other.Store(resp.Status+" "+string(b), true)
			}
		})
	}
	select {
	case <-srv.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server was not killed at its failpoint within 2 minutes:\n%s", srv.log)
	}
	wg.Wait()
	other.Range(func(k, _ any) bool {
		t.Errorf("unexpected answer %s", k)
		return true
	})
	if ws, isWait := srv.cmd.ProcessState.Sys().(syscall.WaitStatus); !isWait || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the server ended with %v, not SIGKILL:\n%s", srv.cmd.ProcessState, srv.log)
	}
	return ok.Load(), gone.Load()
}

// replayKilled runs serve, which must die inside its replay.
func replayKilled(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "failpoint replay-before-commit: SIGKILL") {
		t.Fatalf("serve was not killed inside the replay: %v\n%s", cmd.ProcessState, out)
	}
}
