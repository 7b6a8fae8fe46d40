// Package rdnstest is a DNS server for tests: it answers from a table of
// records as a recursive resolver would, and counts the questions it is
// asked, so that a test can say how much DNS work a request caused.
package rdnstest

import (
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Zone is a DNS server on 127.0.0.1 (UDP and TCP on one random port)
// answering from a table of records. A name with records of no type
// asked for is NODATA, any other name NXDOMAIN, both with an SOA record
// unless SetSOA(false).
type Zone struct {
	// Addr is the server's "127.0.0.1:PORT", for rdns.Config.Server.
	Addr string

	mu      sync.Mutex
	records map[string][]dns.RR // by Key
	rcodes  map[string]int      // an rcode other than the table's, by Key
	soa     bool
	queries map[string]int // questions received, by Key
	silent  map[string]bool
	// gate, when not nil, holds every answer until it is closed; each
	// held question is sent on held first.
	gate chan struct{}
	held chan string
	// truncate lists the questions answered over UDP with TC set and no
	// records, so that the client asks again over TCP.
	truncate map[string]bool
}

// Key is how the zone names a question: the lower-case name with its
// final dot, "/" and the type, "8.8.8.8.in-addr.arpa./PTR".
func Key(name string, qtype uint16) string {
	return strings.ToLower(dns.Fqdn(name)) + "/" + dns.TypeToString[qtype]
}

// New starts a server with these records, in zone file syntax; it stops
// when the test ends.
func New(t testing.TB, records ...string) *Zone {
	t.Helper()
	z := &Zone{records: map[string][]dns.RR{}, rcodes: map[string]int{}, queries: map[string]int{},
		truncate: map[string]bool{}, silent: map[string]bool{}, soa: true}
	for _, s := range records {
		z.Add(t, s)
	}
	var pc net.PacketConn
	var ln net.Listener
	for range 20 { // the UDP port may be taken on TCP
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		pc = nil
	}
	if pc == nil {
		t.Fatal("no port free on both UDP and TCP")
	}
	z.Addr = pc.LocalAddr().String()
	for _, srv := range []*dns.Server{
		{PacketConn: pc, Handler: z.handler(true)},
		{Listener: ln, Handler: z.handler(false)},
	} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go srv.ActivateAndServe()
		<-started
		t.Cleanup(func() { srv.Shutdown() })
	}
	return z
}

// Add adds a record, in zone file syntax.
func (z *Zone) Add(t testing.TB, s string) {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	k := Key(rr.Header().Name, rr.Header().Rrtype)
	z.records[k] = append(z.records[k], rr)
}

// SetRcode makes the question answer rcode (SERVFAIL, REFUSED...).
func (z *Zone) SetRcode(name string, qtype uint16, rcode int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.rcodes[Key(name, qtype)] = rcode
}

// SetSOA says whether negative answers carry an SOA record.
func (z *Zone) SetSOA(on bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.soa = on
}

// Truncate makes the question's UDP answers truncated (TC, no records),
// so that a client asks again over TCP.
func (z *Zone) Truncate(name string, qtype uint16) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.truncate[Key(name, qtype)] = true
}

// Silence makes the server count and never answer every question about
// name, of any type.
func (z *Zone) Silence(name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.silent[strings.ToLower(dns.Fqdn(name))] = true
}

// Count is how many times the question was received (over UDP and TCP).
func (z *Zone) Count(name string, qtype uint16) int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.queries[Key(name, qtype)]
}

// Total is how many questions the server has received.
func (z *Zone) Total() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	n := 0
	for _, c := range z.queries {
		n += c
	}
	return n
}

// Questions is the count of each question received, by Key.
func (z *Zone) Questions() map[string]int {
	z.mu.Lock()
	defer z.mu.Unlock()
	out := make(map[string]int, len(z.queries))
	for k, n := range z.queries {
		out[k] = n
	}
	return out
}

// Hold makes the server hold its answers until release is called; each
// question held is sent on held first.
func (z *Zone) Hold() (held chan string, release func()) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.gate, z.held = make(chan struct{}), make(chan string, 100)
	gate := z.gate
	var once sync.Once
	return z.held, func() { once.Do(func() { close(gate) }) }
}

func (z *Zone) handler(udp bool) dns.HandlerFunc {
	return func(w dns.ResponseWriter, q *dns.Msg) {
		qu := q.Question[0]
		k := Key(qu.Name, qu.Qtype)
		z.mu.Lock()
		z.queries[k]++
		if z.silent[strings.ToLower(qu.Name)] {
			z.mu.Unlock()
			return
		}
		gate, held := z.gate, z.held
		rcode, hasRcode := z.rcodes[k]
		rrs := z.records[k]
		// A name has records of some type, or is the owner of a CNAME.
		exists := len(rrs) > 0
		for kk := range z.records {
			if strings.HasPrefix(kk, strings.ToLower(qu.Name)+"/") {
				exists = true
			}
		}
		cname := z.records[Key(qu.Name, dns.TypeCNAME)]
		soa := z.soa
		truncate := udp && z.truncate[k]
		z.mu.Unlock()
		if gate != nil {
			held <- k
			<-gate
		}
		m := new(dns.Msg)
		m.SetReply(q)
		m.RecursionAvailable = true
		switch {
		case hasRcode:
			m.Rcode = rcode
		case truncate:
			m.Truncated = true
		case len(rrs) > 0:
			m.Answer = rrs
		case len(cname) > 0:
			// Follow the chain, as a recursive resolver does.
			m.Answer = append(m.Answer, cname...)
			target := cname[0].(*dns.CNAME).Target
			z.mu.Lock()
			m.Answer = append(m.Answer, z.records[Key(target, qu.Qtype)]...)
			z.mu.Unlock()
		default:
			if !exists {
				m.Rcode = dns.RcodeNameError
			}
			if soa {
				s, _ := dns.NewRR(". 3600 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 60")
				m.Ns = []dns.RR{s}
			}
		}
		w.WriteMsg(m)
	}
}
