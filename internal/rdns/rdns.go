// Package rdns owns the service's DNS lookups: the host name of an IP
// address (its PTR record), whether that name resolves back to the address
// (forward-confirmed reverse DNS, "is this really Googlebot"), and the
// addresses of a domain name, for ip-api's domain queries.
//
// Every lookup is bounded, because it sits on a request's path:
//
//   - Time. A call returns within Config.Timeout (and never after its
//     context is done), whatever the resolver does; a lookup that has no
//     answer by then gives an empty name, never a slow error.
//   - Repetition. Answers are cached for their TTL (bounded), negative
//     answers for the zone's negative TTL (bounded), failures briefly, in an
//     LRU of Config.CacheEntries; concurrent callers asking the same
//     question share one query.
//   - Load. At most Config.MaxLookups queries wait on the resolver at once;
//     past that a call answers at once with Status Busy instead of queueing
//     behind a slow resolver.
//
// # Calling it from a request
//
// Ask only when the request asked for the field (a PTR round trip must not
// slow every answer), with the request's context:
//
//	if fields.Has("hostname") || fields.Has("hostname_confirmed") { // never for the default selection
//		res := deps.Resolver.Hostname(r.Context(), addr, fields.Has("hostname_confirmed"))
//		res.Fill(&rec)
//	}
//
// Hostname never fails: every outcome is a Result whose Name may be "".
// A nil *Resolver is valid and answers every Hostname with Status Off, so a
// server configured without hostnames needs no branch. Who may ask, how
// often, and what an answer costs are the caller's to decide before
// calling (the server's metered query): nothing here knows of keys.
//
// For ip-api's domain queries, Resolve returns the name's first globally
// reachable address; its errors say which answer to give: ErrInvalidName
// and ErrNotFound are the client's mistake ("invalid query"), ErrNotPublic
// a name that only points into reserved space, ErrUnavailable the
// resolver's failure (with ErrTimeout or ErrServerFailure beside it).
package rdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/miekg/dns"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sync/singleflight"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// Defaults of Config's zero values.
const (
	// DefaultTimeout bounds one call, every query in it. A recursive
	// resolver answers a cached PTR in milliseconds and a cold one through
	// the arpa delegations in a few hundred; past a second the answer is
	// rarely coming, and the resolver keeps resolving and caches it for
	// the next request.
	DefaultTimeout = time.Second
	// DefaultCacheEntries bounds the cache: PTR answers and address
	// answers together, about 360 bytes each with the LRU's own, so about
	// 6 MB when full; nothing until host names are asked for.
	DefaultCacheEntries = 1 << 14
	// DefaultMaxLookups caps the queries waiting on the resolver at once
	// (each holds a socket and a goroutine).
	DefaultMaxLookups = 64
)

// How long answers are kept. A record's TTL is its zone's to choose, but a
// TTL of days would pin a changed PTR record long after the change, and a
// TTL of zero would send every request to the resolver.
const (
	MinTTL = 5 * time.Second // floor of every cached answer
	MaxTTL = time.Hour       // ceiling of a positive answer
	// MaxNegativeTTL is the ceiling of a "no such name" or "no such
	// record" answer, whose TTL is the zone's SOA minimum: a PTR record
	// added to a server should show within minutes.
	MaxNegativeTTL = 5 * time.Minute
	// NoSOATTL is how long a negative answer without an SOA record (which
	// carries the negative TTL) is kept.
	NoSOATTL = 30 * time.Second
	// FailureTTL is how long a failure (SERVFAIL, REFUSED, no answer in
	// time) is kept, so that an address whose reverse zone is lame costs
	// one slow lookup every FailureTTL rather than one per request.
	FailureTTL = 10 * time.Second
)

// Config configures a Resolver.
type Config struct {
	// Server is the recursive resolver to ask, "HOST:PORT" (or "HOST", port
	// 53); a host name is resolved once, by New, with the system's
	// resolver. "" uses the nameservers of ResolvConf.
	Server string
	// ResolvConf is the system's resolver configuration, read once by New
	// when Server is ""; "" is /etc/resolv.conf. Without nameservers there,
	// the resolver on the local host (127.0.0.1:53, [::1]:53) is asked.
	ResolvConf string
	// Timeout bounds one Hostname or Resolve call; 0 is DefaultTimeout.
	Timeout time.Duration
	// CacheEntries bounds the cache; 0 is DefaultCacheEntries and a
	// negative value turns the cache off.
	CacheEntries int
	// MaxLookups caps the queries waiting on the resolver at once; 0 is
	// DefaultMaxLookups.
	MaxLookups int
	// Now is the clock of the cache's expiry; nil is time.Now.
	Now func() time.Time
}

// Resolver looks up host names and addresses. It is safe for concurrent
// use; the nil *Resolver answers every Hostname with Status Off.
type Resolver struct {
	servers []string // "HOST:PORT", asked in turn
	timeout time.Duration
	now     func() time.Time
	cache   *lru.Cache[key, *entry] // nil: off
	flights singleflight.Group
	slots   *semaphore.Weighted
	udp     *dns.Client
	tcp     *dns.Client
}

// New returns a Resolver. It fails on a Server it cannot use or a negative
// Timeout or MaxLookups.
func New(cfg Config) (*Resolver, error) {
	if cfg.Timeout < 0 {
		return nil, errors.New("rdns: negative timeout")
	}
	if cfg.MaxLookups < 0 {
		return nil, errors.New("rdns: negative MaxLookups")
	}
	r := &Resolver{
		timeout: cmp0(cfg.Timeout, DefaultTimeout),
		now:     cfg.Now,
		slots:   semaphore.NewWeighted(int64(cmp0(cfg.MaxLookups, DefaultMaxLookups))),
		udp:     &dns.Client{Net: "udp"},
		tcp:     &dns.Client{Net: "tcp"},
	}
	if r.now == nil {
		r.now = time.Now
	}
	if n := cmp0(cfg.CacheEntries, DefaultCacheEntries); n > 0 {
		r.cache, _ = lru.New[key, *entry](n) // fails only for n <= 0
	}
	var err error
	if cfg.Server != "" {
		r.servers, err = serverAddr(cfg.Server)
	} else {
		r.servers = systemServers(cfg.ResolvConf)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func cmp0[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// serverAddr reads a Server setting: HOST:PORT, [IPv6]:PORT, or a bare
// host (port 53). A host name is resolved now, to its first address.
func serverAddr(s string) ([]string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = s, "53"
		if a, perr := netip.ParseAddr(s); perr == nil {
			host = a.String()
		} else if _, ok := dns.IsDomainName(s); !ok || s == "" {
			return nil, fmt.Errorf("rdns: resolver %q: want HOST:PORT", s)
		}
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return nil, fmt.Errorf("rdns: resolver %q: port %q is not a number from 1 to 65535", s, port)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return nil, fmt.Errorf("rdns: resolver %q: cannot resolve %q: %v", s, host, err)
		}
		host = addrs[0].Unmap().String()
	}
	return []string{net.JoinHostPort(host, port)}, nil
}

// systemServers are the nameservers of a resolv.conf file.
func systemServers(path string) []string {
	if path == "" {
		path = "/etc/resolv.conf"
	}
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil || len(cc.Servers) == 0 {
		return []string{"127.0.0.1:53", "[::1]:53"}
	}
	out := make([]string, 0, len(cc.Servers))
	for _, s := range cc.Servers {
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	return out
}

// Servers returns the resolvers asked, "HOST:PORT", in order.
func (r *Resolver) Servers() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.servers)
}

// Timeout is the bound of one call.
func (r *Resolver) Timeout() time.Duration {
	if r == nil {
		return 0
	}
	return r.timeout
}

// Status is how a host name lookup went.
type Status uint8

// The outcomes of a lookup. Only Found has a name.
const (
	Off       Status = iota // no resolver is configured (a nil *Resolver)
	Found                   // the address has a PTR record with a usable name
	NoName                  // no PTR record, or none whose name is a usable host name
	Failed                  // the resolver failed (SERVFAIL, REFUSED, a broken answer)
	TimedOut                // no answer within the timeout, or the caller's context ended first
	Busy                    // MaxLookups queries were already waiting: not asked
	NotPublic               // the address is not globally reachable: not asked
)

var statusNames = [...]string{"off", "found", "no_name", "failed", "timed_out", "busy", "not_public"}

// String is the status as a metric label would have it: "found", "no_name", ...
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Result is the host name of an address.
type Result struct {
	// Name is the PTR name, lower case, without the final dot; "" unless
	// Status is Found. It is a host name of letters, digits, '-' and '_'
	// labels, at most 253 bytes: a PTR record holding anything else
	// (control characters, spaces, escapes, non-ASCII) counts as none.
	Name string
	// Checked is whether the forward lookup of Name answered (it was asked
	// for and the resolver said yes or no in time); Confirmed is whether
	// Name's A records (AAAA for an IPv6 address) hold the address. A name
	// that does not resolve is checked and not confirmed.
	Checked, Confirmed bool
	Status             Status
}

// Fill sets rec's host name fields from res: Hostname to the name, and
// HostnameConfirmed to whether it is confirmed, or nil when that is
// unknown (no name, or no forward answer).
func (res Result) Fill(rec *ipatlas.Record) {
	rec.Hostname = res.Name
	rec.HostnameConfirmed = nil
	if res.Name != "" && res.Checked {
		c := res.Confirmed
		rec.HostnameConfirmed = &c
	}
}

// Hostname returns addr's host name, and with confirm whether the name
// resolves back to addr. It never fails and returns within the Resolver's
// timeout, or when ctx is done if that is sooner; a lookup the caller gave
// up on goes on in the background (bounded by the timeout) and caches its
// answer for the next call.
//
// An IPv4-mapped, IPv4-compatible or NAT64 address is looked up as its
// IPv4 address, as the location is. An address that is not globally
// reachable (private, loopback, documentation, ...) is never asked about:
// the resolver's answer would be the server's own network's names.
func (r *Resolver) Hostname(ctx context.Context, addr netip.Addr, confirm bool) Result {
	if r == nil {
		return Result{Status: Off}
	}
	addr = netaddr.Embedded(addr.WithZone("")).Unmap()
	if _, special := netaddr.Classify(addr); special {
		return Result{Status: NotPublic}
	}
	var cancel context.CancelFunc
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	// The timeout's context is made only on a miss: a cached answer costs
	// no timer.
	get := func(k key) *entry {
		if e := r.cached(k); e != nil {
			return e
		}
		if cancel == nil {
			ctx, cancel = context.WithTimeout(ctx, r.timeout)
		}
		return r.lookup(ctx, k)
	}
	ptr := get(key{addr: addr})
	res := Result{Status: ptr.status}
	if ptr.status != Found {
		return res
	}
	res.Name = ptr.name
	if !confirm {
		return res
	}
	qtype := dns.TypeA
	if addr.Is6() {
		qtype = dns.TypeAAAA
	}
	fwd := get(key{name: ptr.name, qtype: qtype})
	switch fwd.status {
	case Found:
		res.Checked, res.Confirmed = true, slices.Contains(fwd.addrs, addr)
	case NoName:
		res.Checked = true
	}
	return res
}

// Errors of Resolve. ErrUnavailable comes with ErrTimeout or
// ErrServerFailure (test with errors.Is) when the cause is one of them.
var (
	ErrInvalidName   = errors.New("not a valid domain name")
	ErrNotFound      = errors.New("the domain name does not exist or has no address")
	ErrNotPublic     = errors.New("the domain name has only addresses that are not globally reachable")
	ErrUnavailable   = errors.New("the DNS resolver did not answer")
	ErrTimeout       = errors.New("no answer in time")
	ErrServerFailure = errors.New("the resolver failed (SERVFAIL or REFUSED)")
	ErrBusy          = errors.New("too many lookups at once")
	ErrOff           = errors.New("no resolver is configured")
)

// Resolve returns the first address of a domain name ("example.com",
// "example.com.", an internationalised name in Unicode or punycode): its
// first A record that is globally reachable, else its first such AAAA
// record. An IP address in text form is returned as it is.
//
// A name whose only addresses are not globally reachable is ErrNotPublic,
// and the address is not returned: it is the resolver's network's
// business. The error is ErrInvalidName, ErrNotFound, ErrNotPublic or
// ErrUnavailable (see the package's doc), and its text names the domain;
// Resolve returns within the Resolver's timeout, or when ctx is done.
func (r *Resolver) Resolve(ctx context.Context, name string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(name); err == nil {
		return a, nil
	}
	if r == nil {
		return netip.Addr{}, fmt.Errorf("resolving %s: %w: %w", quoteName(name), ErrUnavailable, ErrOff)
	}
	q, ok := queryName(name)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%s: %w", quoteName(name), ErrInvalidName)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	notPublic := false
	var fail Status
	for _, qtype := range [...]uint16{dns.TypeA, dns.TypeAAAA} {
		k := key{name: q, qtype: qtype}
		e := r.cached(k)
		if e == nil {
			e = r.lookup(ctx, k)
		}
		switch e.status {
		case Found:
			for _, a := range e.addrs {
				if _, special := netaddr.Classify(a); !special {
					return a, nil
				}
			}
			notPublic = true
		case NoName:
		default:
			// The resolver failed on the A question: the AAAA one would
			// most likely fail the same way, in what is left of the time.
			fail = e.status
		}
		if fail != 0 {
			break
		}
	}
	switch {
	case notPublic:
		return netip.Addr{}, fmt.Errorf("%s: %w", q, ErrNotPublic)
	case fail == TimedOut:
		return netip.Addr{}, fmt.Errorf("resolving %s: %w: %w", q, ErrUnavailable, ErrTimeout)
	case fail == Busy:
		return netip.Addr{}, fmt.Errorf("resolving %s: %w: %w", q, ErrUnavailable, ErrBusy)
	case fail != 0:
		return netip.Addr{}, fmt.Errorf("resolving %s: %w: %w", q, ErrUnavailable, ErrServerFailure)
	}
	return netip.Addr{}, fmt.Errorf("%s: %w", q, ErrNotFound)
}

// quoteName quotes a name for an error text, cut to 64 bytes.
func quoteName(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
