package rdns

import (
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// zone is a DNS server on 127.0.0.1 (UDP and TCP on one random port)
// answering from a table of records, as a recursive resolver would.
type zone struct {
	addr string

	mu      sync.Mutex
	records map[string][]dns.RR // by lower-case owner and type, "name./TYPE"
	rcodes  map[string]int      // an rcode other than the table's for "name./TYPE"
	soa     bool                // whether negative answers carry an SOA record
	queries map[string]int      // "name./TYPE" -> queries received
	// gate, when not nil, holds every answer until it is closed; each
	// held question is sent on held first.
	gate chan struct{}
	held chan string
	// truncate lists the questions answered over UDP with TC set and no
	// records, so that the client asks again over TCP.
	truncate map[string]bool
}

func qkey(name string, qtype uint16) string {
	return strings.ToLower(dns.Fqdn(name)) + "/" + dns.TypeToString[qtype]
}

// newZone starts a server with these records, in zone file syntax.
func newZone(t testing.TB, records ...string) *zone {
	t.Helper()
	z := &zone{records: map[string][]dns.RR{}, rcodes: map[string]int{}, queries: map[string]int{}, truncate: map[string]bool{}, soa: true}
	for _, s := range records {
		z.add(t, s)
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
	z.addr = pc.LocalAddr().String()
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

func (z *zone) add(t testing.TB, s string) {
	t.Helper()
	rr, err := dns.NewRR(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	k := qkey(rr.Header().Name, rr.Header().Rrtype)
	z.records[k] = append(z.records[k], rr)
}

func (z *zone) setRcode(name string, qtype uint16, rcode int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.rcodes[qkey(name, qtype)] = rcode
}

func (z *zone) count(name string, qtype uint16) int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.queries[qkey(name, qtype)]
}

func (z *zone) total() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	n := 0
	for _, c := range z.queries {
		n += c
	}
	return n
}

// hold makes the server hold its answers until release is called.
func (z *zone) hold() (held chan string, release func()) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.gate, z.held = make(chan struct{}), make(chan string, 100)
	gate := z.gate
	var once sync.Once
	return z.held, func() { once.Do(func() { close(gate) }) }
}

func (z *zone) handler(udp bool) dns.HandlerFunc {
	return func(w dns.ResponseWriter, q *dns.Msg) {
		qu := q.Question[0]
		k := qkey(qu.Name, qu.Qtype)
		z.mu.Lock()
		z.queries[k]++
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
		cname := z.records[qkey(qu.Name, dns.TypeCNAME)]
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
			m.Answer = append(m.Answer, z.records[qkey(target, qu.Qtype)]...)
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

// silentServer reads questions and never answers; it counts them.
func silentServer(t *testing.T) (addr string, questions *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	questions = new(atomic.Int64)
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			questions.Add(1)
		}
	}()
	return pc.LocalAddr().String(), questions
}

// rawServer answers every question with reply(question), bytes as they
// are: a server that sends what no well-behaved one would.
func rawServer(t *testing.T, reply func(q []byte) []byte) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(reply(buf[:n]), from)
		}
	}()
	return pc.LocalAddr().String()
}

// longPTRReply answers a question (a PTR one, in a query with only its
// question and an OPT record) with one PTR record whose name has five
// labels of 63 bytes: 321 octets, more than a name may have.
func longPTRReply(q []byte) []byte {
	// The header and the question: the question ends 4 bytes after the
	// first zero byte past the header.
	end := 12
	for q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5
	out := append([]byte(nil), q[:end]...)
	out[2] |= 0x80                              // QR
	out[3] = 0x80                               // RA, NOERROR
	binary.BigEndian.PutUint16(out[6:], 1)      // ANCOUNT
	binary.BigEndian.PutUint16(out[8:], 0)      // NSCOUNT
	binary.BigEndian.PutUint16(out[10:], 0)     // ARCOUNT
	out = append(out, 0xc0, 12)                 // the question's name
	out = append(out, 0, 12, 0, 1, 0, 0, 1, 44) // PTR IN, TTL 300
	var name []byte
	for range 5 {
		name = append(name, 63)
		name = append(name, strings.Repeat("a", 63)...)
	}
	name = append(name, 0)
	out = binary.BigEndian.AppendUint16(out, uint16(len(name)))
	return append(out, name...)
}

// clock is a settable time for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
