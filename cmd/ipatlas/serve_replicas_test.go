//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
)

// pgCluster is `ipatlas serve` replicas in subprocesses on one PostgreSQL
// schema, each with its own data dir and ports, and a direct store on the
// same schema for the test's own reading of the books.
type pgCluster struct {
	replicas []*serveChild
	direct   *postgres.Store
	token    string
}

const clusterToken = "replicas-test-token-for-the-serve-tests"

// startCluster starts n replicas of bin on store (a postgres:// DSN whose
// search_path names schema); directDSN reaches the same database without
// any proxy in between. The per-key and per-address request rates are
// turned off: the tests drive one key from one address far faster than
// an abuse limit allows.
func startCluster(t *testing.T, bin, store, directDSN, schema string, n int, extra ...string) *pgCluster {
	t.Helper()
	// Through the environment, which the children inherit: startChild
	// takes no environment of its own.
	t.Setenv("IPATLAS_KEY_RATE", "0")
	t.Setenv("IPATLAS_ADDR_RATE", "0")
	c := &pgCluster{token: clusterToken}
	for range n {
		// One at a time: the first creates the schema and the "default"
		// account, the others find them.
		fx := newServeFixture(t)
		args := append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", fx.dir,
			"--store", store, "--no-fetch", "--admin-token", c.token}, extra...)
		c.replicas = append(c.replicas, startChild(t, bin, args...))
	}
	direct, err := postgres.Open(context.Background(), directDSN, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("opening the replicas' schema directly: %v", err)
	}
	t.Cleanup(func() { direct.Close() })
	c.direct = direct
	return c
}

// customer creates, through replica 0's admin API, an enterprise account
// with room for every query of a test, and a key.
func (c *pgCluster) customer(t *testing.T, credits int64) (accountID int64, keyID, secret string) {
	t.Helper()
	var acct struct {
		ID int64 `json:"id"`
	}
	adminPost(t, "http://"+c.replicas[0].admin+"/admin/accounts", c.token,
		map[string]any{"name": "replicas-test", "tier": "enterprise", "monthly_limit": credits, "credits": credits}, &acct)
	var k struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	adminPost(t, fmt.Sprintf("http://%s/admin/accounts/%d/keys", c.replicas[0].admin, acct.ID), c.token, struct{}{}, &k)
	if k.ID == "" || k.Key == "" {
		t.Fatalf("the admin API made a key without an ID or secret: %+v", k)
	}
	return acct.ID, k.ID, k.Key
}

// checkBooks reads the store directly: the key's counter, the account's
// ledger and its balance must agree with each other, and the queries
// charged must be at least the successes clients saw and exceed them by
// at most the requests that may have been charged without an answer.
func (c *pgCluster) checkBooks(t *testing.T, accountID int64, keyID string, credits, seen, unanswered int64) {
	t.Helper()
	ctx := context.Background()
	var used int64
	// The counter is per month: a test running across midnight UTC on
	// the first charges two periods.
	now := time.Now()
	for p := range map[string]bool{account.Period(now.Add(-time.Hour)): true, account.Period(now): true} {
		n, err := c.direct.Usage(ctx, keyID, p)
		if err != nil {
			t.Fatalf("usage: %v", err)
		}
		used += n
	}
	if used < seen || used > seen+unanswered {
		t.Errorf("usage counter %d; clients saw %d successes, and %d requests went unanswered", used, seen, unanswered)
	}
	es, err := c.direct.Ledger(ctx, accountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var queries, bal int64
	for i := len(es) - 1; i >= 0; i-- { // oldest first
		e := es[i]
		if e.Balance != bal+e.Delta {
			t.Fatalf("ledger entry %d: balance %d, want %d%+d", e.ID, e.Balance, bal, e.Delta)
		}
		bal = e.Balance
		if e.Reason == "usage" {
			if e.KeyID != keyID || e.Delta != -e.Queries {
				t.Fatalf("usage entry %+v, want %s charged 1 credit a query", e, keyID)
			}
			queries += e.Queries
		}
	}
	a, err := c.direct.Account(ctx, accountID)
	if err != nil {
		t.Fatal(err)
	}
	if queries != used || a.Credits != bal || a.Credits != credits-used {
		t.Errorf("the ledger charges %d queries and ends at %d; counter %d, balance %d of %d", queries, bal, used, a.Credits, credits)
	}
	t.Logf("books: %d queries charged; clients saw %d successes, %d unanswered", used, seen, unanswered)
}

// queryOnce sends one location query and reads the whole answer. err is
// a transport failure: the client saw no answer.
func queryOnce(client *http.Client, base, secret, ip string) (status int, env ipatlas.Envelope, err error) {
	req, err := http.NewRequest(http.MethodPost, base+"/api/ip-query", strings.NewReader(`{"ip":"`+ip+`"}`))
	if err != nil {
		return 0, env, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := client.Do(req)
	if err != nil {
		return 0, env, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, env, err
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return resp.StatusCode, env, fmt.Errorf("%s: not an envelope: %q", resp.Status, b)
	}
	return resp.StatusCode, env, nil
}

// waitUntil polls cond until it holds, failing the test after a generous
// while (a give-up, not a measured threshold).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Issue 5's proof of a replica killed with SIGKILL during load: three
// `ipatlas serve` processes on one PostgreSQL schema share the load of one
// key; one is killed mid-load. The other two keep answering every query
// with a success, and afterwards the ledger holds at least every success
// the clients saw and at most those plus the requests that were in flight
// on the killed replica.
func TestServeReplicaKilled(t *testing.T) {
	skipKillTestUnderRace(t)
	dsn := pgtest.DSN(t)
	if testing.Short() {
		t.Skip("-short: the replica test builds and runs the binary")
	}
	bin := ipatlasBinary(t)
	schema := pgtest.NewSchema(t)
	cl := startCluster(t, bin, pgtest.WithSearchPath(t, dsn, schema), dsn, schema, 3)
	const credits = 100_000_000
	acctID, keyID, secret := cl.customer(t, credits)

	const perReplica, victim = 6, 1
	var (
		killed    atomic.Bool // set once the victim is dead
		succeeded [3]atomic.Int64
		inFlight  atomic.Int64 // sent to the victim before it died, no answer
		refused   atomic.Int64 // sent to the victim after it died: never reached it
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		mu        sync.Mutex
		unexpect  []string
	)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: perReplica}}
	defer client.CloseIdleConnections()
	ips := []string{geotest.MountainView.IP, geotest.Nuremberg.IP}
	for w := range 3 * perReplica {
		r := w % 3
		base := "http://" + cl.replicas[r].public
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				before := killed.Load()
				status, env, err := queryOnce(client, base, secret, ips[(w+n)%2])
				switch {
				case err != nil && r == victim && before:
					refused.Add(1)
					return
				case err != nil && r == victim:
					inFlight.Add(1)
					return
				case err == nil && status == http.StatusOK && env.Success:
					succeeded[r].Add(1)
					continue
				}
				mu.Lock()
				unexpect = append(unexpect, fmt.Sprintf("replica %d: %d %s %v", r, status, env.Code, err))
				mu.Unlock()
				return
			}
		})
	}
	total := func() int64 { return succeeded[0].Load() + succeeded[1].Load() + succeeded[2].Load() }
	waitUntil(t, "successes on every replica before the kill", func() bool {
		return succeeded[0].Load() >= 50 && succeeded[1].Load() >= 50 && succeeded[2].Load() >= 50
	})

	cl.replicas[victim].cmd.Process.Signal(syscall.SIGKILL)
	<-cl.replicas[victim].exited
	killed.Store(true)
	atKill := [3]int64{succeeded[0].Load(), succeeded[1].Load(), succeeded[2].Load()}

	// The survivors keep serving, all of them successfully.
	waitUntil(t, "successes on the surviving replicas after the kill", func() bool {
		return succeeded[0].Load() >= atKill[0]+200 && succeeded[2].Load() >= atKill[2]+200
	})
	close(stop)
	wg.Wait()
	for _, u := range unexpect {
		t.Errorf("unexpected answer: %s", u)
	}
	if t.Failed() {
		return
	}
	t.Logf("successes per replica %d/%d/%d (%d at the kill), %d in flight on the killed replica, %d refused after",
		succeeded[0].Load(), succeeded[1].Load(), succeeded[2].Load(), atKill, inFlight.Load(), refused.Load())

	// The survivors agree on the counter with the books, and with each
	// other: one store behind them.
	for _, r := range []int{0, 2} {
		u := usageOf(t, "http://"+cl.replicas[r].public, secret)
		if u.Used < total() || u.Used > total()+inFlight.Load() {
			t.Errorf("replica %d reports usage %d; clients saw %d successes, %d in flight", r, u.Used, total(), inFlight.Load())
		}
	}
	cl.checkBooks(t, acctID, keyID, credits, total(), inFlight.Load())
}
