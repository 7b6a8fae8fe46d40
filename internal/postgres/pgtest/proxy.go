package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP forwarder on 127.0.0.1 between the code under test and
// the test PostgreSQL, so a test can take the database away without
// stopping the server other tests (and other people) use.
//
// Two kinds of outage:
//   - Down, as when PostgreSQL stops or restarts: every connection is
//     closed at once and new ones are closed as they arrive.
//   - Blackhole, as a network partition: connections stay open but
//     nothing gets through (their server side is closed, so PostgreSQL
//     rolls back what they had open), and new ones are accepted and held.
//     Only the client's own timeout gets it out.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  Mode
	pairs map[*proxyPair]struct{}
	held  []net.Conn
	wg    sync.WaitGroup
}

// Mode is the state of a Proxy.
type Mode int

const (
	Forwarding Mode = iota // the database is reachable
	Down                   // as if PostgreSQL were stopped or restarting
	Blackhole              // as if the network were partitioned
)

func (m Mode) String() string {
	switch m {
	case Forwarding:
		return "forwarding"
	case Down:
		return "restart"
	case Blackhole:
		return "partition"
	}
	return "unknown mode"
}

type proxyPair struct {
	client, upstream net.Conn
	held             bool // the client side is kept open by a blackhole
}

// NewProxy forwards a local port to the host of dsn (a postgres:// URL;
// the test is skipped otherwise); it is closed when the test ends.
func NewProxy(t testing.TB, dsn string) *Proxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Skipf("%s is not a postgres:// URL with a host (%v): the fault tests put a proxy in front of it", EnvDSN, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host, pairs: map[*proxyPair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// DSN is dsn with its host replaced by the proxy's.
func (p *Proxy) DSN(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

func (p *Proxy) serve(c net.Conn) {
	if !p.admit(c) {
		return
	}
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	pr := &proxyPair{client: c, upstream: u}
	p.mu.Lock()
	if p.mode != Forwarding { // cut while dialing
		p.mu.Unlock()
		u.Close()
		p.admit(c)
		return
	}
	p.pairs[pr] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { io.Copy(c, u); done <- struct{}{} }()
	<-done
	p.mu.Lock()
	delete(p.pairs, pr)
	held := pr.held
	p.mu.Unlock()
	u.Close()
	if !held {
		c.Close()
	}
	<-done
}

// admit reports whether a new connection may be forwarded; in an outage it
// closes or holds it instead.
func (p *Proxy) admit(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case Down:
		c.Close()
		return false
	case Blackhole:
		p.held = append(p.held, c)
		return false
	}
	return true
}

// Cut starts an outage of kind m (Down or Blackhole).
func (p *Proxy) Cut(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	for pr := range p.pairs {
		if m == Blackhole {
			pr.held = true
			p.held = append(p.held, pr.client)
		} else {
			pr.client.Close()
		}
		pr.upstream.Close()
	}
}

// Restore ends the outage: held connections are closed (as a healed
// partition would find them reset) and new ones are forwarded again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = Forwarding
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Cut(Down)
	p.mu.Lock()
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
	p.mu.Unlock()
	p.wg.Wait()
}
