package rdns

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/idna"
)

// key is one question: the PTR record of addr, or the qtype records (A or
// AAAA) of name (lower case, no final dot). An address keys its PTR
// question directly, so that a cached hit builds no arpa name.
type key struct {
	addr  netip.Addr
	name  string
	qtype uint16
}

// qname is the question's name in the DNS, with its final dot.
func (k key) qname() string {
	if k.addr.IsValid() {
		q, _ := dns.ReverseAddr(k.addr.String()) // fails only for an invalid address
		return q
	}
	return k.name + "."
}

func (k key) qtype16() uint16 {
	if k.addr.IsValid() {
		return dns.TypePTR
	}
	return k.qtype
}

// entry is the answer to a question. It is never changed once made.
type entry struct {
	status  Status
	name    string       // PTR: the first usable name, in sorted order
	addrs   []netip.Addr // A, AAAA: in the answer's order
	expires time.Time
}

// Answers that are not worth keeping, shared.
var (
	busyEntry     = &entry{status: Busy}
	timedOutEntry = &entry{status: TimedOut}
)

func (r *Resolver) cached(k key) *entry {
	if r.cache == nil {
		return nil
	}
	e, ok := r.cache.Get(k)
	if !ok || !r.now().Before(e.expires) {
		// An expired entry stays until the new answer replaces it or the
		// LRU drops it.
		return nil
	}
	return e
}

// lookup asks the question, sharing the query with any caller asking the
// same one, and waits for the answer until ctx is done. The query runs on
// its own timeout, not ctx: a caller that gives up does not waste it for
// the others, and its answer is cached.
func (r *Resolver) lookup(ctx context.Context, k key) *entry {
	if ctx.Err() != nil {
		return timedOutEntry
	}
	flight := k.qname() + "/" + strconv.Itoa(int(k.qtype16()))
	ch := r.flights.DoChan(flight, func() (any, error) { return r.fetch(k), nil })
	select {
	case res := <-ch:
		return res.Val.(*entry)
	case <-ctx.Done():
		return timedOutEntry
	}
}

// fetch queries the resolver and caches the answer.
func (r *Resolver) fetch(k key) *entry {
	// A flight that started just after another finished finds its answer.
	if e := r.cached(k); e != nil {
		return e
	}
	if !r.slots.TryAcquire(1) {
		return busyEntry
	}
	defer r.slots.Release(1)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	m, err := r.exchange(ctx, k.qname(), k.qtype16())
	e := r.read(k, m, err)
	if r.cache != nil {
		r.cache.Add(k, e)
	}
	return e
}

// attempts is how many times a question is sent: once to each server, and
// twice at least, so that one lost datagram does not lose the answer.
func (r *Resolver) attempts() int { return min(max(2, len(r.servers)), 4) }

// exchange sends the question to the servers in turn until one answers it,
// sharing the time left between the attempts to come. A server's failure
// (SERVFAIL, REFUSED) moves on to the next server, if there is another; a
// truncated answer is asked again over TCP.
func (r *Resolver) exchange(ctx context.Context, qname string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(qname, qtype)
	q.SetEdns0(1232, false) // the DNS flag day 2020 size, unfragmented on any path
	n := r.attempts()
	var last *dns.Msg
	var lastErr error = context.DeadlineExceeded
	for i := range n {
		deadline, _ := ctx.Deadline()
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		actx, cancel := context.WithTimeout(ctx, left/time.Duration(n-i))
		server := r.servers[i%len(r.servers)]
		m, _, err := r.udp.ExchangeContext(actx, q, server)
		if err == nil && m.Truncated {
			m, _, err = r.tcp.ExchangeContext(actx, q, server)
		}
		cancel()
		if err == nil && !answers(m, qname, qtype) {
			err = errors.New("rdns: an answer to another question")
		}
		if err != nil {
			lastErr = err
			continue
		}
		switch m.Rcode {
		case dns.RcodeServerFailure, dns.RcodeRefused, dns.RcodeNotImplemented:
			last, lastErr = m, nil
			if next := r.servers[(i+1)%len(r.servers)]; next != server {
				continue
			}
		}
		return m, nil
	}
	if last != nil {
		return last, nil
	}
	return nil, lastErr
}

// answers reports whether m is an answer to the question.
func answers(m *dns.Msg, qname string, qtype uint16) bool {
	return m.Response && len(m.Question) == 1 && m.Question[0].Qtype == qtype &&
		m.Question[0].Qclass == dns.ClassINET && strings.EqualFold(m.Question[0].Name, qname)
}

// read makes the answer to k from the resolver's message, with its expiry.
func (r *Resolver) read(k key, m *dns.Msg, err error) *entry {
	now := r.now()
	fail := func(s Status) *entry { return &entry{status: s, expires: now.Add(FailureTTL)} }
	if err != nil {
		if isTimeout(err) {
			return fail(TimedOut)
		}
		return fail(Failed)
	}
	switch m.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return &entry{status: NoName, expires: now.Add(negativeTTL(m))}
	default:
		return fail(Failed)
	}
	qtype := k.qtype16()
	// The records of the question's name, through any CNAME chain (a
	// classless reverse delegation answers a PTR question with a CNAME to
	// its own zone, a CDN answers an A question with one).
	owner := k.qname()
	ttl := uint32(MaxTTL / time.Second)
	var rrs []dns.RR
	for range 8 {
		var next string
		for _, rr := range m.Answer {
			h := rr.Header()
			if h.Class != dns.ClassINET || !strings.EqualFold(h.Name, owner) {
				continue
			}
			switch {
			case h.Rrtype == qtype:
				rrs = append(rrs, rr)
				ttl = min(ttl, h.Ttl)
			case h.Rrtype == dns.TypeCNAME && next == "":
				next = rr.(*dns.CNAME).Target
				ttl = min(ttl, h.Ttl)
			}
		}
		if len(rrs) > 0 || next == "" {
			break
		}
		owner = next
	}
	e := &entry{status: Found, expires: now.Add(clampTTL(ttl, MinTTL, MaxTTL))}
	for _, rr := range rrs {
		switch rr := rr.(type) {
		case *dns.PTR:
			if name, ok := hostName(rr.Ptr); ok && (e.name == "" || name < e.name) {
				e.name = name
			}
		case *dns.A:
			if a, ok := netip.AddrFromSlice(rr.A.To4()); ok {
				e.addrs = append(e.addrs, a)
			}
		case *dns.AAAA:
			if a, ok := netip.AddrFromSlice(rr.AAAA.To16()); ok && !a.Is4In6() {
				e.addrs = append(e.addrs, a)
			}
		}
	}
	if e.name == "" && len(e.addrs) == 0 {
		// No record of the type (NODATA), or none that is usable: a
		// negative answer, kept as the zone says when it said nothing,
		// else as long as the unusable records live.
		if len(rrs) == 0 {
			e.expires = now.Add(negativeTTL(m))
		}
		e.status = NoName
	}
	e.addrs = slices.Clip(e.addrs)
	return e
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// negativeTTL is how long a negative answer is kept: the SOA record's TTL,
// or its MINIMUM field if lower, as the zone asks.
func negativeTTL(m *dns.Msg) time.Duration {
	for _, rr := range m.Ns {
		if soa, ok := rr.(*dns.SOA); ok {
			return clampTTL(min(soa.Hdr.Ttl, soa.Minttl), MinTTL, MaxNegativeTTL)
		}
	}
	return NoSOATTL
}

func clampTTL(ttl uint32, lo, hi time.Duration) time.Duration {
	return min(max(time.Duration(ttl)*time.Second, lo), hi)
}

// maxNameLen is the longest host name, without its final dot: 255 octets
// on the wire hold 253 characters of text.
const maxNameLen = 253

// hostName reads a name from a record (miekg/dns's text form, in which
// any byte outside printable ASCII, and a dot inside a label, is escaped)
// as a host name: lower case, no final dot, labels of 1 to 63 letters,
// digits, '-' or '_'. Anything else is not a usable host name and ok is
// false, so no escape, control character or odd byte reaches an answer.
func hostName(s string) (string, bool) {
	s = strings.TrimSuffix(s, ".")
	if len(s) == 0 || len(s) > maxNameLen {
		return "", false
	}
	label := 0
	lower := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if label == 0 {
				return "", false
			}
			label = 0
			continue
		case 'A' <= c && c <= 'Z':
			lower = false
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return "", false
		}
		if label++; label > 63 {
			return "", false
		}
	}
	if label == 0 {
		return "", false
	}
	if !lower {
		s = strings.ToLower(s)
	}
	return s, true
}

// queryName reads a domain name a client asked about: ASCII as hostName
// takes it, or an internationalised name, which is asked in its punycode
// form.
func queryName(s string) (string, bool) {
	if len(s) > 4*maxNameLen {
		return "", false
	}
	if n, ok := hostName(s); ok {
		return n, true
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			a, err := idna.Lookup.ToASCII(strings.TrimSuffix(s, "."))
			if err != nil {
				return "", false
			}
			return hostName(a)
		}
	}
	return "", false
}
