//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
)

// slowConns is how many slow clients hold the server at once.
const slowConns = 500

// slowTimeout is the server's --read-header-timeout and --read-timeout in
// the slow-client test.
const slowTimeout = 2 * time.Second

// Slow clients (headers trickled a byte at a time, bodies declared and
// never finished) do not hold the server: while 500 of them are connected,
// normal queries and Get my IP keep being answered, and the server cuts
// every slow connection off at its read timeouts.
func TestServeSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the slow-client test keeps 500 connections open for several seconds")
	}
	raiseFileLimit(t, 4*slowConns+256) // both ends of each connection are in this process

	fx := newServeFixture(t)
	storePath := filepath.Join(t.TempDir(), "s.db")
	// The abuse limits are off so that what is measured is the effect of
	// the slow clients alone.
	const token = "slow-test-token-for-the-serve-tests"
	s := startServe(t, nil, serveArgs(fx.dir, storePath,
		"--read-header-timeout", slowTimeout.String(), "--read-timeout", slowTimeout.String(),
		"--key-rate", "0", "--addr-rate", "0", "--admin-token", token)...)
	// A quota no run of the test can use up.
	var acct struct {
		ID int64 `json:"id"`
	}
	adminPost(t, "http://"+s.admin+"/admin/accounts", token,
		map[string]any{"name": "slow-test", "tier": "enterprise", "monthly_limit": 100_000_000, "credits": 100_000_000}, &acct)
	var newKey struct {
		Key string `json:"key"`
	}
	adminPost(t, fmt.Sprintf("http://%s/admin/accounts/%d/keys", s.admin, acct.ID), token, struct{}{}, &newKey)
	key := newKey.Key
	query := fmt.Sprintf(`{"ip": %q}`, fx.v4)

	// Each slow client dials, sends a little, then trickles a byte every
	// trickle until the server closes the connection; then it dials
	// again, until stop. Half never finish their headers; half send a
	// whole keyed query's headers and a body they never finish.
	const trickle = 100 * time.Millisecond
	var (
		open      atomic.Int64 // slow connections currently open
		connected atomic.Int64 // slow clients that have connected at least once
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		mu        sync.Mutex
		cutAfter  []time.Duration // from dial to the server's close
		answers   = map[string]int{}
		notClosed []string
	)
	headerStart := "GET /api/ip/myip HTTP/1.1\r\nHost: slow\r\nX-Slow: "
	bodyStart := fmt.Sprintf("POST /api/ip-query HTTP/1.1\r\nHost: slow\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"ip\": ", key)
	slow := func(id int) {
		kind, start := "header", headerStart
		if id%2 == 1 {
			kind, start = "body", bodyStart
		}
		// Spread over one timeout, so that the server's cuts (and the
		// reconnections) are spread too and about slowConns stay open.
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(id) * slowTimeout / slowConns):
		}
		for first := true; ; first = false {
			select {
			case <-stop:
				return
			default:
			}
			conn, err := net.Dial("tcp", s.public)
			if err != nil {
				mu.Lock()
				notClosed = append(notClosed, fmt.Sprintf("%s client %d: dial: %v", kind, id, err))
				mu.Unlock()
				return
			}
			t0 := time.Now()
			open.Add(1)
			if first {
				connected.Add(1)
			}
			// A reader sees the server's close (EOF or reset) and
			// whatever it answered first.
			closed := make(chan string, 1)
			go func() {
				conn.SetReadDeadline(time.Now().Add(slowTimeout + 30*time.Second))
				b, err := io.ReadAll(conn)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					closed <- "still open 30s past the server's timeout"
					return
				}
				status := "nothing"
				if line, _, ok := strings.Cut(string(b), "\r\n"); ok {
					status = line
				}
				closed <- status
			}()
			_, err = io.WriteString(conn, start)
			var status string
		writing:
			for err == nil {
				select {
				case status = <-closed:
					break writing
				case <-time.After(trickle):
					_, err = conn.Write([]byte{'a'})
				}
			}
			if status == "" {
				status = <-closed // a write failed: the server has closed it
			}
			d := time.Since(t0)
			conn.Close()
			open.Add(-1)
			mu.Lock()
			answers[kind+": "+status]++
			if strings.HasPrefix(status, "still open") {
				notClosed = append(notClosed, fmt.Sprintf("%s client %d: %s", kind, id, status))
			} else {
				cutAfter = append(cutAfter, d)
			}
			mu.Unlock()
		}
	}
	for i := range slowConns {
		wg.Go(func() { slow(i) })
	}
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	})

	// Wait until every slow client has connected.
	for deadline := time.Now().Add(60 * time.Second); connected.Load() < slowConns; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d slow clients connected within 60s", connected.Load(), slowConns)
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Normal traffic meanwhile: queries and Get my IP over fresh
	// connections, for a few rounds of the slow clients' timeouts.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var ok, failed, okHeld int // okHeld: answered while 90% of the slow connections were open
	var minOpen int64 = slowConns
	var lat []time.Duration
	for end := time.Now().Add(3 * slowTimeout); time.Now().Before(end); {
		before := open.Load()
		minOpen = min(minOpen, before)
		t0 := time.Now()
		req, _ := http.NewRequest(http.MethodPost, "http://"+s.public+"/api/ip-query", strings.NewReader(query))
		req.Header.Set("Authorization", "Bearer "+key)
		if (ok+failed)%2 == 1 {
			req, _ = http.NewRequest(http.MethodGet, "http://"+s.public+"/api/ip/myip", nil)
		}
		resp, err := c.Do(req)
		if err != nil {
			failed++
			t.Errorf("a normal request during the slow phase: %v", err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed++
			t.Errorf("a normal request during the slow phase: %s", resp.Status)
			continue
		}
		ok++
		lat = append(lat, time.Since(t0))
		if min(before, open.Load()) >= slowConns*9/10 {
			okHeld++
		}
	}
	close(stop)
	wg.Wait()

	slices.Sort(lat)
	slices.Sort(cutAfter)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d slow clients (at least %d connections open at every normal request); %d normal requests answered (%d with at least 90%% of the slow connections open), %d failed; their latency p50 %v p99 %v max %v",
		slowConns, minOpen, ok, okHeld, failed, pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1))
	t.Logf("%d slow connections cut off by the server (timeouts %v), after p50 %v, max %v; answers: %v",
		len(cutAfter), slowTimeout, pct(cutAfter, 0.5), pct(cutAfter, 1), answers)
	if okHeld < 20 {
		t.Errorf("only %d normal requests answered with %d slow connections open, in %v", okHeld, slowConns*9/10, 3*slowTimeout)
	}
	for _, n := range notClosed {
		t.Error(n)
	}
	if len(cutAfter) < slowConns {
		t.Errorf("%d slow connections were cut off, want at least %d", len(cutAfter), slowConns)
	}
	// A slow client never gets a success, nor a server error.
	for a := range answers {
		if strings.Contains(a, " 200 ") || strings.Contains(a, " 5") {
			t.Errorf("a slow client was answered %q", a)
		}
	}
	// The slow bodies were keyed queries never finished: none was charged.
	var u ipatlas.Usage
	if st := getJSON(t, c, "http://"+s.public+"/api/usage", key, &u); st != http.StatusOK || u.Used != int64((ok+1)/2) {
		t.Errorf("usage %d (%+v), want the %d normal queries only", st, u, (ok+1)/2)
	}
}

// pct is the p-th percentile of sorted durations.
func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[max(0, min(len(d)-1, int(float64(len(d))*p+0.5)-1))].Round(100 * time.Microsecond)
}

// raiseFileLimit makes sure this process may open n files, raising its
// soft limit (never above the hard one); it skips the test when the hard
// limit is too low.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("reading RLIMIT_NOFILE: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d is below the %d files this test needs: CI must allow them (ulimit -Hn)", lim.Max, n)
	}
	old := lim
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("raising RLIMIT_NOFILE to %d: %v", n, err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}
