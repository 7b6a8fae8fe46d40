package server

import (
	"bufio"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// connClient is one raw keep-alive connection to a test listener.
type connClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialClient(t *testing.T, addr string) *connClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &connClient{c: c, r: bufio.NewReader(c)}
}

// send writes a keep-alive GET of path.
func (k *connClient) send(t *testing.T, path string) {
	t.Helper()
	if _, err := io.WriteString(k.c, "GET "+path+" HTTP/1.1\r\nHost: example.com\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
}

// answer reads one answer and its body; its status, or the error.
func (k *connClient) answer() (int, error) {
	k.c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hung test fails
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// listenerMetric is the value of the series of name labelled listener.
func listenerMetric(t *testing.T, reg *prometheus.Registry, name, listener string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "listener" && lp.GetValue() == listener {
					if g := m.GetGauge(); g != nil {
						return g.GetValue()
					}
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{listener=%q}", name, listener)
	return 0
}

// waitFor polls cond until it holds; a test that never sees it fails
// after a deadline far beyond any machine's pace.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

func (l *connLimiter) idleCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.conns {
		if c.idle.Load() != 0 {
			n++
		}
	}
	return n
}

// At its cap a listener serves a new connection by closing the idle
// keep-alive connection that has waited longest; the others keep their
// connections. Through the framing guard, as serve stacks them, with the
// real handler. The metrics count the wait and the close, and the log
// warns once.
func TestConnCapClosesIdle(t *testing.T) {
	e := newEnv(t)
	hs := &http.Server{Handler: e.pub, ErrorLog: log.New(io.Discard, "", 0)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := e.srv.LimitConns(hs, ln, 2, "public")
	go hs.Serve(GuardFraming(hs, l))
	t.Cleanup(func() { hs.Close() })
	addr := ln.Addr().String()

	a, b := dialClient(t, addr), dialClient(t, addr)
	for _, k := range []*connClient{a, b} {
		k.send(t, "/api/ping")
		if st, err := k.answer(); st != 200 {
			t.Fatalf("ping: %d %v", st, err)
		}
		// a goes idle first: it is the older of the two.
		waitFor(t, "the connection is idle", func() bool { return l.(*connLimiter).idleCount() == map[*connClient]int{a: 1, b: 2}[k] })
	}
	if got := listenerMetric(t, e.reg, "ipatlas_http_connections", "public"); got != 2 {
		t.Errorf("ipatlas_http_connections = %v, want 2", got)
	}

	c := dialClient(t, addr)
	c.send(t, "/api/ping")
	if st, err := c.answer(); st != 200 {
		t.Fatalf("a third connection at the cap of 2: %d %v", st, err)
	}
	if _, err := a.answer(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !isReset(err) {
		t.Errorf("the oldest idle connection: %v, want it closed", err)
	}
	b.send(t, "/api/ping")
	if st, err := b.answer(); st != 200 {
		t.Errorf("the younger idle connection: %d %v, want it kept", st, err)
	}
	for name, want := range map[string]float64{
		"ipatlas_http_connections":                      2,
		"ipatlas_http_connection_cap_waits_total":       1,
		"ipatlas_http_connection_cap_idle_closed_total": 1,
	} {
		if got := listenerMetric(t, e.reg, name, "public"); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n := strings.Count(e.logs.String(), "listener at its connection cap"); n != 1 {
		t.Errorf("%d warnings of the cap, want 1:\n%s", n, e.logs)
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// When every connection at the cap is busy, a new one is accepted by the
// kernel but not served until a request ends: then the connection that
// goes idle is closed and the new one served. Nothing is refused. Closing
// the server ends a wait.
func TestConnCapWaitsForBusy(t *testing.T) {
	e := newEnv(t)
	entered := make(chan string, 8)
	release := map[string]chan struct{}{}
	for _, p := range []string{"/a", "/b", "/c", "/d", "/e"} {
		release[p] = make(chan struct{})
	}
	hs := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- r.URL.Path
		<-release[r.URL.Path]
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := e.srv.LimitConns(hs, ln, 2, "public")
	served := make(chan error, 1)
	go func() { served <- hs.Serve(GuardFraming(hs, l)) }()
	t.Cleanup(func() {
		for p, ch := range release {
			if p != "/a" && p != "/c" {
				close(ch)
			}
		}
	})
	addr := ln.Addr().String()
	waits := func() float64 { return listenerMetric(t, e.reg, "ipatlas_http_connection_cap_waits_total", "public") }
	notServed := func() {
		t.Helper()
		select {
		case p := <-entered:
			t.Fatalf("%s was served past the cap of 2", p)
		default:
		}
	}

	a, b := dialClient(t, addr), dialClient(t, addr)
	a.send(t, "/a")
	if p := <-entered; p != "/a" {
		t.Fatal(p)
	}
	b.send(t, "/b")
	if p := <-entered; p != "/b" {
		t.Fatal(p)
	}
	c := dialClient(t, addr) // the kernel completes the handshake
	c.send(t, "/c")
	waitFor(t, "the third connection waits", func() bool { return waits() == 1 })
	notServed()

	// a's request ends: its connection, gone idle, makes room for c.
	close(release["/a"])
	if st, err := a.answer(); st != 200 {
		t.Fatalf("a: %d %v", st, err)
	}
	if p := <-entered; p != "/c" {
		t.Fatalf("after a's request ended, %s was served, want /c", p)
	}
	if _, err := a.answer(); err == nil {
		t.Error("a's idle connection was kept while c waited")
	}
	close(release["/c"])
	if st, err := c.answer(); st != 200 {
		t.Fatalf("c: %d %v", st, err)
	}

	// c is idle, b busy: d takes c's place at once.
	waitFor(t, "c's connection is idle", func() bool { return l.(*connLimiter).idleCount() == 1 })
	d := dialClient(t, addr)
	d.send(t, "/d")
	if p := <-entered; p != "/d" {
		t.Fatalf("%s, want /d", p)
	}
	if got := listenerMetric(t, e.reg, "ipatlas_http_connection_cap_idle_closed_total", "public"); got != 2 {
		t.Errorf("idle connections closed: %v, want 2", got)
	}

	// b and d busy: e waits, until the server closes.
	f := dialClient(t, addr)
	f.send(t, "/e")
	waitFor(t, "the fifth connection waits", func() bool { return waits() == 3 })
	notServed()
	hs.Close()
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after Close while a connection waited")
	}
	if _, err := f.answer(); err == nil {
		t.Error("the connection waiting at the close was answered")
	}
}

// BenchmarkConnLimitState is what the cap costs a request on a keep-alive
// connection: net/http reports it active, then idle, through the wrappers
// serve stacks (the framing guard over the limited connection).
func BenchmarkConnLimitState(b *testing.B) {
	s := mustNew(b, Config{}, Deps{Geo: newEnv(b).srv.deps.Geo})
	hs := &http.Server{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	l := s.LimitConns(hs, ln, 4, "public").(*connLimiter)
	c := &framedConn{Conn: &limitedConn{l: l}}
	b.ReportAllocs()
	for b.Loop() {
		hs.ConnState(c, http.StateActive)
		hs.ConnState(c, http.StateIdle)
	}
}
