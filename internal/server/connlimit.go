package server

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Connections per listener.
//
// Every open connection costs a goroutine and its buffers, about 16 KB
// idle, whether or not it ever sends a second request; a client that
// opens thousands and keeps them alive holds that memory for as long as
// it likes. LimitConns caps a listener's connections. Past the cap, a new
// connection is accepted by the kernel but not served yet: the idle
// keep-alive connection that has waited longest is closed to make room
// (its client reconnects when it next needs one, as after the idle
// timeout), and if none is idle the new connection waits until a request
// in progress ends and its connection goes idle or closes. Connections
// beyond that wait in the kernel's accept queue. Nothing is refused: a
// flood delays new clients rather than failing them, and memory stays
// bounded by the cap.

// DefaultMaxConns is the default cap of `ipatlas serve`'s listeners:
// about 70 MB of idle connections, and far more clients than one
// process answers at once (a metered query takes under a millisecond of
// CPU, Get my IP a few microseconds).
const DefaultMaxConns = 4096

// connWarnEvery spaces the warnings of a listener at its cap.
const connWarnEvery = time.Minute

// LimitConns caps the connections hs serves from ln at maxConns (0: no cap),
// as described above; listener names it in the metrics and the log
// ("public", "admin"). It sets hs.ConnState (keeping one already set) and
// returns the listener to pass on (to tls.NewListener, GuardFraming,
// hs.Serve). A connection wrapped later stays known by the one returned
// here, so far as each wrapper gives its inner connection (NetConn, as
// *tls.Conn and the framing guard's connections do).
func (s *Server) LimitConns(hs *http.Server, ln net.Listener, maxConns int, listener string) net.Listener {
	if maxConns <= 0 {
		return ln
	}
	l := &connLimiter{
		Listener: ln,
		name:     listener,
		max:      maxConns,
		srv:      s,
		slots:    make(chan struct{}, maxConns),
		conns:    map[*limitedConn]struct{}{},
		done:     make(chan struct{}),
		open:     s.metrics.conns.WithLabelValues(listener),
		waited:   s.metrics.connWaits.WithLabelValues(listener),
		closed:   s.metrics.connIdleClosed.WithLabelValues(listener),
	}
	prev := hs.ConnState
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		if prev != nil {
			prev(c, st)
		}
		if lc := innerLimited(c); lc != nil && lc.l == l {
			l.state(lc, st)
		}
	}
	return l
}

type connLimiter struct {
	net.Listener
	name  string
	max   int
	srv   *Server
	slots chan struct{} // one token per open connection

	mu    sync.Mutex
	conns map[*limitedConn]struct{} // the open ones, searched at the cap only

	// A request costs its connection two atomic stores (active, idle),
	// not a lock: which connection has been idle longest is found by
	// searching conns when a new one finds the listener at its cap.
	idleSeq atomic.Uint64 // orders the moments connections go idle
	waiting atomic.Bool   // Accept holds a connection for a slot: the next to go idle makes room

	done      chan struct{}
	closeOnce sync.Once
	warned    atomic.Int64 // UnixNano of the last warning

	open           prometheus.Gauge
	waited, closed prometheus.Counter
}

// limitedConn holds a slot until it is closed.
type limitedConn struct {
	net.Conn
	l       *connLimiter
	idle    atomic.Uint64 // when it went idle, in idleSeq's order; 0 while it is not
	release sync.Once
}

func (c *limitedConn) Close() error {
	c.release.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		<-c.l.slots
		c.l.open.Dec()
	})
	return c.Conn.Close()
}

// NetConn is the connection underneath, as tls.Conn names it.
func (c *limitedConn) NetConn() net.Conn { return c.Conn }

// innerLimited finds the limitedConn inside the wrappers of c.
func innerLimited(c net.Conn) *limitedConn {
	for range 8 { // a few wrappers at most; never a loop
		switch w := c.(type) {
		case *limitedConn:
			return w
		case interface{ NetConn() net.Conn }:
			c = w.NetConn()
		default:
			return nil
		}
	}
	return nil
}

func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	select {
	case l.slots <- struct{}{}:
		return l.admit(lc), nil
	default:
	}
	// At the cap: make room by closing the longest idle connection, or
	// have state close the next one to go idle. waiting is set before the
	// search, so a connection that goes idle after it sees it.
	l.waited.Inc()
	l.warn()
	l.waiting.Store(true)
	for {
		oldest, seq := l.oldestIdle()
		if oldest == nil || !l.waiting.CompareAndSwap(true, false) {
			break // state closes the next to go idle, or has closed one
		}
		if oldest.idle.CompareAndSwap(seq, 0) {
			l.closed.Inc()
			oldest.Close()
			break
		}
		l.waiting.Store(true) // it went active meanwhile: search again
	}
	select {
	case l.slots <- struct{}{}:
		l.waiting.Store(false) // a connection closed on its own
		return l.admit(lc), nil
	case <-l.done:
		c.Close()
		return nil, net.ErrClosed
	}
}

// admit records a connection that holds a slot.
func (l *connLimiter) admit(c *limitedConn) *limitedConn {
	l.mu.Lock()
	l.conns[c] = struct{}{}
	l.mu.Unlock()
	l.open.Inc()
	return c
}

// oldestIdle is the connection idle the longest and when it went idle,
// or nil.
func (l *connLimiter) oldestIdle() (*limitedConn, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var oldest *limitedConn
	var since uint64
	for c := range l.conns {
		if seq := c.idle.Load(); seq != 0 && (oldest == nil || seq < since) {
			oldest, since = c, seq
		}
	}
	return oldest, since
}

// state follows a connection's state: one that goes idle is marked so, or
// closed at once while a new connection waits for its slot.
func (l *connLimiter) state(c *limitedConn, st http.ConnState) {
	switch {
	case st != http.StateIdle:
		c.idle.Store(0)
	case l.waiting.CompareAndSwap(true, false): // one closed per one waiting
		l.closed.Inc()
		c.Close()
	default:
		c.idle.Store(l.idleSeq.Add(1))
	}
}

// warn logs, at most once per connWarnEvery, that the listener is at its
// cap.
func (l *connLimiter) warn() {
	now := time.Now().UnixNano()
	last := l.warned.Load()
	if now-last < int64(connWarnEvery) || !l.warned.CompareAndSwap(last, now) {
		return
	}
	l.srv.log.Warn("listener at its connection cap: new connections wait, idle keep-alive connections are closed to make room",
		"listener", l.name, "max_conns", l.max)
}

func (l *connLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}
