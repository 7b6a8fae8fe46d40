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

// slowTimeout is the server's --read-header-timeout and --read-timeout
// where the test waits for the server to cut the slow clients off.
const slowTimeout = 2 * time.Second

// Slow clients (headers trickled a byte at a time, bodies declared and
// never finished) do not hold the server: while 500 of them are connected,
// queries and Get my IP are answered; the server cuts every slow
// connection off at its read timeouts, never before, without a success or
// a server error; and a body never finished is never charged.
//
// Nothing here depends on how fast the machine is. While the server holds
// the slow clients its timeouts are an hour, so none can be cut however
// long the normal requests take, and every one of those must be answered;
// where the server cuts them, what is checked is that it does, and never
// earlier than its timeout, however late.
func TestServeSlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the slow-client test keeps 500 connections open")
	}
	raiseFileLimit(t, 2*slowConns+256) // both ends of each connection are in this process
	fx := newServeFixture(t)
	query := fmt.Sprintf(`{"ip": %q}`, fx.v4)

	t.Run("held", func(t *testing.T) {
		s, key := startSlowTestServe(t, fx, time.Hour)
		slow := startSlowClients(t, s.public, key)
		// Every slow client has connected and sent its start before the
		// first normal request dials, and the server accepts connections
		// in order: each normal request is answered with all 500 held.
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		const rounds = 10
		var lat []time.Duration
		for i := range 2 * rounds {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+s.public+"/api/ip-query", strings.NewReader(query))
			req.Header.Set("Authorization", "Bearer "+key)
			if i%2 == 1 {
				req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.public+"/api/ip/myip", nil)
			}
			t0 := time.Now()
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("%s %s with %d slow clients connected: %v", req.Method, req.URL.Path, slowConns, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(t0))
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s with %d slow clients connected: %s", req.Method, req.URL.Path, slowConns, resp.Status)
			}
		}
		slices.Sort(lat)
		t.Logf("%d normal requests answered with %d slow clients connected; latency p50 %v max %v", len(lat), slowConns, pct(lat, 0.5), pct(lat, 1))
		if cut := slow.closed(); cut != 0 {
			t.Errorf("the server closed %d of the slow connections an hour before its timeouts", cut)
		}
		var u ipatlas.Usage
		if st := getJSON(t, c, "http://"+s.public+"/api/usage", key, &u); st != http.StatusOK || u.Used != rounds {
			t.Errorf("usage %d (%+v), want the %d normal queries only", st, u, rounds)
		}
	})

	t.Run("cut", func(t *testing.T) {
		s, key := startSlowTestServe(t, fx, slowTimeout)
		slow := startSlowClients(t, s.public, key)
		ends := slow.wait(t)
		answers := map[string]int{}
		var after []time.Duration
		for _, e := range ends {
			answers[e.kind+": "+e.status]++
			after = append(after, e.after)
			if e.after < slowTimeout {
				t.Errorf("a slow %s client was cut off %v after it dialled, before the server's timeout of %v", e.kind, e.after, slowTimeout)
			}
			// A slow client never gets a success, nor a server error.
			if strings.Contains(e.status, " 200 ") || strings.Contains(e.status, " 5") {
				t.Errorf("a slow %s client was answered %q", e.kind, e.status)
			}
		}
		slices.Sort(after)
		t.Logf("%d slow connections cut off by the server (timeouts %v), after p50 %v, max %v; answers: %v",
			len(after), slowTimeout, pct(after, 0.5), pct(after, 1), answers)
		// The slow bodies were keyed queries never finished: none was
		// charged.
		var u ipatlas.Usage
		if st := getJSON(t, http.DefaultClient, "http://"+s.public+"/api/usage", key, &u); st != http.StatusOK || u.Used != 0 {
			t.Errorf("usage %d (%+v) after only unfinished queries, want 0", st, u)
		}
	})
}

// startSlowTestServe starts a server whose read timeouts are timeout,
// with the abuse limits off (so that what is tested is the effect of the
// slow clients alone) and a key whose quota no run of the test uses up.
func startSlowTestServe(t *testing.T, fx serveFixture, timeout time.Duration) (*serveRun, string) {
	t.Helper()
	const token = "slow-test-token-for-the-serve-tests"
	s := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "s.db"),
		"--read-header-timeout", timeout.String(), "--read-timeout", timeout.String(),
		"--key-rate", "0", "--addr-rate", "0", "--admin-token", token)...)
	newKey, _ := roomyKey(t, s.admin, token, "slow-test")
	return s, newKey
}

// slowEnd is how a slow connection ended: after how long from the dial,
// and the status line the server answered ("nothing" if none).
type slowEnd struct {
	kind   string // "header" or "body"
	after  time.Duration
	status string
}

// slowClients are slowConns connections that trickle a byte every 100 ms:
// half of them a header line that never ends, half a keyed query whose
// declared body never arrives whole.
type slowClients struct {
	ends chan slowEnd
	n    atomic.Int64 // connections the server has closed
}

// startSlowClients dials the slow clients and returns once each has sent
// its start; they are closed when the test ends.
func startSlowClients(t *testing.T, addr, key string) *slowClients {
	t.Helper()
	const trickle = 100 * time.Millisecond
	headerStart := "GET /api/ip/myip HTTP/1.1\r\nHost: slow\r\nX-Slow: "
	bodyStart := fmt.Sprintf("POST /api/ip-query HTTP/1.1\r\nHost: slow\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"ip\": ", key)
	// The trickle of a body stops well short of its declared length, so
	// that the body never arrives whole however long the test runs.
	const maxTrickle = 1000
	sc := &slowClients{ends: make(chan slowEnd, slowConns)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	// The readers wait for the server's close until shortly before the
	// test's own deadline, so that a connection never cut is reported
	// rather than left to the test binary's timeout.
	readDeadline := time.Now().Add(time.Hour)
	if d, ok := t.Deadline(); ok {
		readDeadline = d.Add(-30 * time.Second)
	}
	for i := range slowConns {
		kind, start := "header", headerStart
		if i%2 == 1 {
			kind, start = "body", bodyStart
		}
		t0 := time.Now() // before the dial: the server cannot start its clock earlier
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("slow client %d of %d: dial: %v", i+1, slowConns, err)
		}
		if _, err := io.WriteString(conn, start); err != nil {
			t.Fatalf("slow client %d of %d: %v", i+1, slowConns, err)
		}
		closed := make(chan struct{})
		wg.Go(func() {
			defer close(closed)
			conn.SetReadDeadline(readDeadline)
			b, err := io.ReadAll(conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				sc.ends <- slowEnd{kind, time.Since(t0), "still open at the test's deadline"}
				return
			}
			select {
			case <-stop: // closed by the test, not the server
				return
			default:
			}
			sc.n.Add(1)
			status := "nothing"
			if line, _, ok := strings.Cut(string(b), "\r\n"); ok {
				status = line
			}
			sc.ends <- slowEnd{kind, time.Since(t0), status}
		})
		wg.Go(func() {
			defer conn.Close()
			for sent := 0; kind == "header" || sent < maxTrickle; sent++ {
				select {
				case <-stop:
					return
				case <-closed:
					return
				case <-time.After(trickle):
				}
				if _, err := conn.Write([]byte{'a'}); err != nil {
					break // the server has closed it: the reader reports how
				}
			}
			select {
			case <-stop:
			case <-closed:
			}
		})
	}
	return sc
}

// closed is how many slow connections the server has closed so far.
func (sc *slowClients) closed() int64 { return sc.n.Load() }

// wait waits until the server has closed every slow connection and
// returns how each ended.
func (sc *slowClients) wait(t *testing.T) []slowEnd {
	t.Helper()
	out := make([]slowEnd, 0, slowConns)
	for range slowConns {
		e := <-sc.ends
		if strings.HasPrefix(e.status, "still open") {
			t.Fatalf("a slow %s client: %s, %v after it dialled", e.kind, e.status, e.after)
		}
		out = append(out, e)
	}
	return out
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
