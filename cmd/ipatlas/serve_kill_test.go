//go:build unix

package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
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
	"github.com/ipatlas/ipatlas/internal/addrfile"
)

// ipatlasBinary returns a path that runs this command in a child process:
// a link named ipatlas to this very test binary, which TestMain turns into
// the program when it is called by that name. Building the binary instead
// took minutes on a busy machine, most of TestFetchKilled's time.
func ipatlasBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ipatlas")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// serveChild is `ipatlas serve` in a subprocess.
type serveChild struct {
	cmd    *exec.Cmd
	public string
	admin  string
	log    *syncBuffer
	exited chan struct{}
}

func startChild(t *testing.T, bin string, args ...string) *serveChild {
	t.Helper()
	c := &serveChild{log: &syncBuffer{}, exited: make(chan struct{})}
	addrFile := filepath.Join(t.TempDir(), "addrs.json")
	c.cmd = exec.Command(bin, append([]string{"serve", "--addr-file", addrFile}, args...)...)
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
	})
	for deadline := time.Now().Add(30 * time.Second); c.public == ""; {
		a, err := addrfile.Read(addrFile)
		switch {
		case err == nil:
			c.public, c.admin = a.Public, a.Admin
			continue
		case !errors.Is(err, fs.ErrNotExist):
			t.Fatal(err)
		}
		select {
		case <-c.exited:
			t.Fatalf("ipatlas serve exited: %v\n%s", c.cmd.ProcessState, c.log)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ipatlas serve did not report its addresses within 30s\n%s", c.log)
		}
	}
	waitOK(t, "http://"+c.admin+"/healthz")
	return c
}

func (c *serveChild) waitLog(t *testing.T, want string) {
	t.Helper()
	// The deadline guards against a hang only: a loaded machine under the
	// race detector can take many seconds to reload a dataset.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(c.log.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, c.log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// usageOf reads the key's counter and its account's balance from the
// server.
func usageOf(t *testing.T, base, key string) ipatlas.Usage {
	t.Helper()
	var u ipatlas.Usage
	if st := getJSON(t, &http.Client{Timeout: 10 * time.Second}, base+"/api/usage", key, &u); st != http.StatusOK {
		t.Fatalf("GET /api/usage: %d", st)
	}
	return u
}

// adminPost calls the admin API and decodes its answer.
func adminPost(t *testing.T, url, token string, body, v any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %s %s", url, resp.Status, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("POST %s: %q: %v", url, out, err)
	}
}

// A process killed with SIGKILL under load never loses the charge of an
// answer it sent: after a restart on the same store, the charges (usage
// counter and balance) are at least the successes the client saw and
// exceed them by at most the requests that were in flight at the kill.
// roomyKey makes, through the admin API at admin, an enterprise account
// named name with room for every query a test sends (a monthly limit and
// credits of 100 million), and returns a new key of it and the account's ID.
func roomyKey(t *testing.T, admin, token, name string) (key string, accountID int64) {
	t.Helper()
	var acct struct {
		ID int64 `json:"id"`
	}
	adminPost(t, "http://"+admin+"/admin/accounts", token,
		map[string]any{"name": name, "tier": "enterprise", "monthly_limit": 100_000_000, "credits": 100_000_000}, &acct)
	var newKey struct {
		Key string `json:"key"`
	}
	adminPost(t, fmt.Sprintf("http://%s/admin/accounts/%d/keys", admin, acct.ID), token, struct{}{}, &newKey)
	return newKey.Key, acct.ID
}

func TestServeKillAndRestart(t *testing.T) {
	skipKillTestUnderRace(t)
	if testing.Short() {
		t.Skip("-short: the kill-and-restart test builds and runs the binary")
	}
	bin := ipatlasBinary(t)
	fx := newServeFixture(t)
	store := "sqlite:" + filepath.Join(t.TempDir(), "ipatlas.db")

	const token = "kill-test-token-for-the-serve-tests"
	// The per-key burst limit is off: 16 connections on one key would meet
	// it, and its 429s are not what this test is about.
	args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", fx.dir,
		"--store", store, "--no-fetch", "--admin-token", token, "--key-rate", "0"}
	srv := startChild(t, bin, args...)

	// An account with room for every query of the test, made through the
	// admin API of the running process.
	key, accountID := roomyKey(t, srv.admin, token, "kill-test")

	// SIGHUP reloads the dataset and the server keeps answering.
	srv.cmd.Process.Signal(syscall.SIGHUP)
	srv.waitLog(t, "dataset reloaded on SIGHUP")

	before := usageOf(t, "http://"+srv.public, key)
	bodies := []string{
		fmt.Sprintf(`{"ip": %q}`, fx.v4),
		fmt.Sprintf(`{"ip": %q, "lang": "zh"}`, fx.v6),
	}
	for i, killAfter := range []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		base := "http://" + srv.public
		var (
			succeeded atomic.Int64 // 200 with success: the client saw the answer
			lost      atomic.Int64 // sent, no answer: in flight at the kill
			other     sync.Map     // any other answer: a bug here
		)
		transport := &http.Transport{MaxIdleConnsPerHost: 16}
		client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
		var wg sync.WaitGroup
		for w := range 16 {
			wg.Go(func() {
				for n := 0; ; n++ {
					req, _ := http.NewRequest(http.MethodPost, base+"/api/ip-query", strings.NewReader(bodies[(w+n)%2]))
					req.Header.Set("Authorization", "Bearer "+key)
					resp, err := client.Do(req)
					if err != nil {
						lost.Add(1)
						return
					}
					var env ipatlas.Envelope
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						lost.Add(1) // the status came, the body did not: the client saw no answer
						return
					}
					if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &env) == nil && env.Success {
						succeeded.Add(1)
						continue
					}
					other.Store(resp.Status+" "+string(b), true)
				}
			})
		}
		for succeeded.Load() == 0 {
			select {
			case <-srv.exited:
				t.Fatalf("the server died before any success:\n%s", srv.log)
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(killAfter)
		srv.cmd.Process.Signal(syscall.SIGKILL)
		<-srv.exited
		wg.Wait()
		transport.CloseIdleConnections()
		other.Range(func(k, _ any) bool {
			t.Errorf("kill point %d: unexpected answer %s", i, k)
			return true
		})

		// The database opens cleanly after the kill, before anything else
		// touches it: SQLite's own check, then the CLI on the same file.
		checkSQLiteIntegrity(t, strings.TrimPrefix(store, "sqlite:"))
		if out, err := exec.Command(bin, "accounts", "list", "--json", "--store", store).CombinedOutput(); err != nil ||
			!strings.Contains(string(out), `"kill-test"`) {
			t.Fatalf("kill point %d: ipatlas accounts list after the kill: %v\n%s", i, err, out)
		}

		srv = startChild(t, bin, args...)
		after := usageOf(t, "http://"+srv.public, key)
		// The ledger adds up to the balance the restarted server reports.
		checkCredits(t, strings.TrimPrefix(store, "sqlite:"), accountID, after.Credits)
		s, l := succeeded.Load(), lost.Load()
		used, spent := after.Used-before.Used, before.Credits-after.Credits
		t.Logf("kill point %d (%v after the first success): %d answers seen, %d in flight; usage +%d, credits -%d",
			i, killAfter, s, l, used, spent)
		if used < s || used > s+l {
			t.Errorf("kill point %d: usage counter rose by %d, want between %d successes and %d (+%d in flight)", i, used, s, s+l, l)
		}
		if spent != used {
			t.Errorf("kill point %d: %d credits spent for %d queries counted at cost 1", i, spent, used)
		}
		before = after
	}

	// A graceful stop exits 0, and the balance on disk is the one served.
	srv.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-srv.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30s of SIGTERM")
	}
	if code := srv.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM\n%s", code, srv.log)
	}
	checkCredits(t, strings.TrimPrefix(store, "sqlite:"), accountID, before.Credits)
}

// checkSQLiteIntegrity opens an SQLite database as the next process after
// a crash would (recovering its write-ahead log) and runs SQLite's
// integrity and foreign-key checks.
func checkSQLiteIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res []string
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("PRAGMA integrity_check on %s: %v", path, err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		res = append(res, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(res) != 1 || res[0] != "ok" {
		t.Fatalf("PRAGMA integrity_check on %s: %q", path, res)
	}
	rows, err = db.Query("PRAGMA foreign_key_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatalf("PRAGMA foreign_key_check on %s found a violation", path)
	}
}
