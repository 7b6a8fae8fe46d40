//go:build unix

package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
)

// outageStoreTimeout is the replicas' --store-timeout in the outage test.
const outageStoreTimeout = time.Second

// answerBound is the longest a metered query may take to be answered in
// an outage of kind m, with --store-timeout d. It is a bound on hanging,
// not a measure of speed: when PostgreSQL is down, connections are
// refused and calls fail at once; in a partition every store call runs
// into d, and a query may meet it twice, once for the group commit in
// progress when it arrives and once for its own (and, for a key whose
// cache entry just expired, once more authenticating). Two seconds cover
// a loaded machine's scheduling.
func answerBound(m pgtest.Mode, d time.Duration) time.Duration {
	if m == pgtest.Blackhole {
		return 3*d + 2*time.Second
	}
	return d + 2*time.Second
}

// getStatus GETs url and reads the whole answer.
func getStatus(client *http.Client, url string) (int, string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Issue 5's proof of PostgreSQL restarted during load, at the process
// level: two `ipatlas serve` processes (--store-timeout 1s) reach
// PostgreSQL through a TCP proxy that cuts it away, as a restart (every
// connection closed, new ones refused) and then as a network partition
// (nothing answers). During each cut metered queries answer 503
// ServiceUnavailable envelopes within a bound derived from
// --store-timeout, Get my IP and ping keep answering 200, and /readyz
// answers 503; afterwards the same processes serve again and report
// ready. No charge is lost or doubled: the ledger holds every success
// the clients saw, plus at most the queries that failed (a commit whose
// answer the cut lost).
func TestServePostgresOutage(t *testing.T) {
	skipKillTestUnderRace(t)
	dsn := pgtest.DSN(t)
	if testing.Short() {
		t.Skip("-short: the outage test builds and runs the binary")
	}
	bin := ipatlasBinary(t)
	schema := pgtest.NewSchema(t)
	px := pgtest.NewProxy(t, dsn)
	cl := startCluster(t, bin, pgtest.WithSearchPath(t, px.DSN(t, dsn), schema), dsn, schema, 2,
		"--store-timeout", outageStoreTimeout.String())
	const credits = 100_000_000
	acctID, keyID, secret := cl.customer(t, credits)

	type tallyT struct {
		ok, unavailable int
		other           []string
		slowest         time.Duration
	}
	var (
		mu    sync.Mutex
		tally = make([]tallyT, len(cl.replicas))
		stop  = make(chan struct{})
		wg    sync.WaitGroup
		bound = answerBound(pgtest.Blackhole, outageStoreTimeout) // the larger: whichever cut is on
	)
	count := func(r int) (int, int) { mu.Lock(); defer mu.Unlock(); return tally[r].ok, tally[r].unavailable }
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	for w := range 8 {
		r := w % len(cl.replicas)
		base := "http://" + cl.replicas[r].public
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				status, env, err := queryOnce(client, base, secret, geotest.MountainView.IP)
				took := time.Since(start)
				mu.Lock()
				tl := &tally[r]
				tl.slowest = max(tl.slowest, took)
				switch {
				case err == nil && status == http.StatusOK && env.Success:
					tl.ok++
				case err == nil && status == http.StatusServiceUnavailable && env.Code == ipatlas.CodeServiceUnavailable && !env.Success:
					tl.unavailable++
				default:
					tl.other = append(tl.other, fmt.Sprintf("%d %q %v", status, env.Code, err))
				}
				mu.Unlock()
			}
		})
	}
	finish := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	defer finish()

	probe := &http.Client{Timeout: time.Minute}
	for _, mode := range []pgtest.Mode{pgtest.Down, pgtest.Blackhole} {
		for r := range cl.replicas {
			ok, _ := count(r)
			waitUntil(t, fmt.Sprintf("successes on replica %d before the %s", r, mode), func() bool {
				ok2, _ := count(r)
				return ok2 >= ok+50
			})
		}
		px.Cut(mode)
		for r := range cl.replicas {
			_, unavailable := count(r)
			waitUntil(t, fmt.Sprintf("503s on replica %d in the %s", r, mode), func() bool {
				_, u := count(r)
				return u >= unavailable+3
			})
		}
		for r, c := range cl.replicas {
			start := time.Now()
			status, env, err := queryOnce(probe, "http://"+c.public, secret, geotest.Nuremberg.IP)
			if took := time.Since(start); took > answerBound(mode, outageStoreTimeout) {
				t.Errorf("%s, replica %d: the query took %v, past the bound of %v for --store-timeout %v",
					mode, r, took, answerBound(mode, outageStoreTimeout), outageStoreTimeout)
			}
			if err != nil || status != http.StatusServiceUnavailable || env.Code != ipatlas.CodeServiceUnavailable {
				t.Fatalf("%s, replica %d: query answered %d %q (%v), want 503 ServiceUnavailable", mode, r, status, env.Code, err)
			}
			// Get my IP (auto, IPv4 only) and ping need no store.
			for _, path := range []string{"/api/ip/myip", "/ipv4", "/api/ping"} {
				status, body, err := getStatus(probe, "http://"+c.public+path)
				if err != nil || status != http.StatusOK {
					t.Fatalf("%s, replica %d: GET %s answered %d %q (%v), want 200", mode, r, path, status, body, err)
				}
				if path == "/ipv4" && strings.TrimSpace(body) != "127.0.0.1" {
					t.Fatalf("%s, replica %d: GET /ipv4 answered %q, want the caller's 127.0.0.1", mode, r, body)
				}
			}
			if status, body, err := getStatus(probe, "http://"+c.admin+"/readyz"); err != nil || status != http.StatusServiceUnavailable {
				t.Fatalf("%s, replica %d: /readyz answered %d %q (%v), want 503", mode, r, status, body, err)
			}
		}

		px.Restore()
		for r, c := range cl.replicas {
			ok, _ := count(r)
			waitUntil(t, fmt.Sprintf("successes on replica %d after the %s", r, mode), func() bool {
				ok2, _ := count(r)
				return ok2 >= ok+50
			})
			if status, body, err := getStatus(probe, "http://"+c.admin+"/readyz"); err != nil || status != http.StatusOK {
				t.Fatalf("after the %s, replica %d: /readyz answered %d %q (%v), want 200", mode, r, status, body, err)
			}
			select {
			case <-c.exited:
				t.Fatalf("replica %d exited in the %s:\n%s", r, mode, c.log)
			default:
			}
		}
	}
	finish()

	var ok, unavailable int64
	for r, tl := range tally {
		for _, o := range tl.other {
			t.Errorf("replica %d: unexpected answer %s", r, o)
		}
		if tl.slowest > bound {
			t.Errorf("replica %d: the slowest answer took %v, past the bound of %v for --store-timeout %v", r, tl.slowest, bound, outageStoreTimeout)
		}
		t.Logf("replica %d: %d successes, %d ServiceUnavailable, slowest answer %v", r, tl.ok, tl.unavailable, tl.slowest)
		ok += int64(tl.ok)
		unavailable += int64(tl.unavailable)
	}
	cl.checkBooks(t, acctID, keyID, credits, ok, unavailable)
}
