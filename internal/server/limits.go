package server

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/ipatlas/ipatlas"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// The abuse limits of the public handler, on top of the monthly quota:
//
//   - a token bucket per API key (Config.KeyRate), checked once the key has
//     authenticated and before the handler runs, so a refused request is
//     never charged and its body is never read;
//   - a token bucket per API key of DNS lookups (Config.KeyDNSRate), taken
//     by the metered query once the caller is known to be able to pay and
//     before anything is looked up (query.go's lookups);
//   - a token bucket per client address (Config.AddrRate) on the free
//     endpoints;
//   - a backoff per client address for rejected keys (Config.AuthFailures).
//
// Every table is a bounded LRU: memory stays fixed whatever the number of
// clients, at the price that a client evicted by many others starts afresh.
// An attacker who controls many addresses (an IPv6 /48 holds 65,536 /64s)
// is bounded by the table, not by the per-address limit; what protects the
// keys then is their 256 bits, and the store's capacity.

// limits is the state of the limits that are on; a nil table is a limit
// that is off.
type limits struct {
	keys      *table[string, *rate.Limiter] // by key ID
	keyRate   rate.Limit
	keyBurst  int
	dns       *table[string, *rate.Limiter] // by key ID
	dnsRate   rate.Limit
	dnsBurst  int
	addrs     *table[netip.Addr, *rate.Limiter] // by client group
	addrRate  rate.Limit
	addrBurst int

	failing    *table[netip.Addr, *failures] // by client group
	good       *table[[sha256.Size]byte, struct{}]
	maxFails   int
	window     time.Duration
	maxBackoff time.Duration

	refused *prometheus.CounterVec // by limit
}

// The label values of ipatlas_http_limited_total.
const (
	limitKeyBurst    = "key_burst"
	limitKeyDNS      = "key_dns"
	limitAddress     = "address"
	limitInvalidKeys = "invalid_keys"
)

// authBackoffBase is the first wait of an address past AuthFailures; each
// further rejected key doubles it.
const authBackoffBase = time.Second

func (s *Server) newLimits() (*limits, error) {
	c := s.cfg
	size := c.LimitTableSize
	l := &limits{}
	on := false
	if c.KeyRate > 0 {
		l.keys, l.keyRate, l.keyBurst = newTable[string, *rate.Limiter](size), rate.Limit(c.KeyRate), c.KeyBurst
		on = true
	}
	if c.KeyDNSRate > 0 {
		l.dns, l.dnsRate, l.dnsBurst = newTable[string, *rate.Limiter](size), rate.Limit(c.KeyDNSRate), c.KeyDNSBurst
		on = true
	}
	if c.AddrRate > 0 {
		l.addrs, l.addrRate, l.addrBurst = newTable[netip.Addr, *rate.Limiter](size), rate.Limit(c.AddrRate), c.AddrBurst
		on = true
	}
	if c.AuthFailures > 0 {
		l.failing = newTable[netip.Addr, *failures](size)
		l.good = newTable[[sha256.Size]byte, struct{}](size)
		l.maxFails = c.AuthFailures
		l.window, l.maxBackoff = c.AuthFailureWindow, c.AuthMaxBackoff
		on = true
	}
	if !on {
		return nil, nil
	}
	var errs []error
	l.refused = register(s.deps.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "ipatlas", Subsystem: "http", Name: "limited_total",
		Help: "Requests refused with 429 by an abuse limit: key_burst, key_dns (DNS lookups), address (free endpoints) or invalid_keys (key guessing).",
	}, []string{"limit"}), &errs)
	if len(errs) > 0 {
		return nil, fmt.Errorf("server: registering metrics: %w", errors.Join(errs...))
	}
	for _, v := range []string{limitKeyBurst, limitKeyDNS, limitAddress, limitInvalidKeys} {
		l.refused.WithLabelValues(v)
	}
	return l, nil
}

// clientGroup is what a client is limited by: its IPv4 address, or the /64
// of its IPv6 address (one subscriber usually gets a whole /64, so
// limiting single IPv6 addresses would limit nothing).
func clientGroup(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// take spends a token of lim at now; when there is none it spends nothing
// and returns how long until there is one.
func take(lim *rate.Limiter, now time.Time) time.Duration { return takeN(lim, now, 1) }

// takeN spends n tokens of lim at now (n at most its burst); when there
// are not that many it spends nothing and returns how long until there
// are.
func takeN(lim *rate.Limiter, now time.Time, n int) time.Duration {
	if lim.AllowN(now, n) {
		return 0
	}
	// Refused: the time the missing tokens take to refill.
	missing := float64(n) - lim.TokensAt(now)
	return max(time.Nanosecond, time.Duration(missing/float64(lim.Limit())*float64(time.Second)))
}

// retrySeconds is a wait as Retry-After says it: whole seconds, rounded up,
// at least 1.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

// failures is one address's record of rejected keys.
type failures struct {
	mu    sync.Mutex
	n     int       // rejected keys since the record was last reset
	last  time.Time // the latest rejection
	until time.Time // the address waits until then
}

// wait is how long the address must still wait; 0 when it may try.
func (f *failures) wait(now time.Time, window time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(now, window)
	if now.Before(f.until) {
		return f.until.Sub(now)
	}
	return 0
}

func (f *failures) expire(now time.Time, window time.Duration) {
	if f.n > 0 && now.Sub(f.last) > window && !now.Before(f.until) {
		f.n, f.until = 0, time.Time{}
	}
}

// fail records a rejected key; it reports whether the address has just
// started to wait (to log that once, not at every rejection).
func (f *failures) fail(now time.Time, l *limits) (started bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expire(now, l.window)
	f.n++
	f.last = now
	if over := f.n - l.maxFails; over >= 0 {
		backoff := l.maxBackoff
		if over < 30 {
			backoff = min(l.maxBackoff, authBackoffBase<<over)
		}
		f.until = now.Add(backoff)
		return over == 0
	}
	return false
}

// limitClass is the abuse limit of a route (routes.go).
type limitClass uint8

const (
	unlimited     limitClass = iota // no limit of the router's (a handler may keep its own; a keyed route has its key's, auth.go)
	byAddress                       // a free endpoint answering JSON: the per-address bucket
	byAddressText                   // a free endpoint answering plain text: the same bucket
)

// limitAddress spends a token of the client's bucket of free requests. A
// refusal is in the endpoint's own format: plain text (never an address,
// so that a client taking the body as its address cannot be misled) or
// the JSON envelope.
func (s *Server) limitAddress(w *exchange, r *http.Request, plain bool) error {
	l := s.limits
	if l == nil || l.addrs == nil || !w.client.IsValid() {
		return nil // no limit, or no address: the handler reports that
	}
	lim := l.addrs.getOrAdd(clientGroup(w.client), func() *rate.Limiter { return rate.NewLimiter(l.addrRate, l.addrBurst) })
	d := take(lim, s.now())
	if d == 0 {
		return nil
	}
	l.refused.WithLabelValues(limitAddress).Inc()
	freeHeaders(w)
	secs := retrySeconds(d)
	if !plain {
		return limited(w, r, apiMeta, secs,
			"too many requests from this address, retry in %d s", "来自此地址的请求过多，请在 %d 秒后重试")
	}
	w.Header()["Retry-After"] = []string{strconv.FormatInt(secs, 10)}
	return textFail(http.StatusTooManyRequests, ipatlas.CodeRateLimitExceeded,
		"error: too many requests from this address; retry in "+strconv.FormatInt(secs, 10)+" s\n")
}

// known reports whether a key (the whole secret) has authenticated on this
// server recently. The table holds SHA-256 hashes, which is what the
// store holds too; a lookup by hash reveals nothing about other keys.
func (l *limits) known(token string) bool {
	if len(token) > 256 {
		return false // no key is that long; don't hash a megabyte header
	}
	_, ok := l.good.peek(sha256.Sum256([]byte(token)))
	return ok
}

// limited is 429 RateLimitExceeded with Retry-After and a detail naming
// the limit (en and zh are formats with one %d, the seconds).
func limited(w *exchange, r *http.Request, meta ipatlas.Meta, secs int64, en, zh string) error {
	format := en
	if w.langOf(r) == ipatlas.Chinese {
		format = zh
	}
	w.Header()["Retry-After"] = []string{strconv.FormatInt(secs, 10)}
	return &failure{code: ipatlas.CodeRateLimitExceeded, en: sprintfInt(format, secs), meta: meta}
}

// sprintfInt formats one %d without fmt's reflection.
func sprintfInt(format string, n int64) string {
	for i := 0; i+1 < len(format); i++ {
		if format[i] == '%' && format[i+1] == 'd' {
			return format[:i] + strconv.FormatInt(n, 10) + format[i+2:]
		}
	}
	return format
}

// table is a bounded map with least-recently-used eviction, split into
// shards so that concurrent requests rarely wait for one lock.
type table[K comparable, V any] struct {
	seed   maphash.Seed
	shards [tableShards]*lru.Cache[K, V]
}

const tableShards = 16

func newTable[K comparable, V any](size int) *table[K, V] {
	t := &table[K, V]{seed: maphash.MakeSeed()}
	per := max(1, (size+tableShards-1)/tableShards)
	for i := range t.shards {
		c, err := lru.New[K, V](per)
		if err != nil {
			panic(err) // unreachable: per >= 1
		}
		t.shards[i] = c
	}
	return t
}

func (t *table[K, V]) shard(k K) *lru.Cache[K, V] {
	return t.shards[maphash.Comparable(t.seed, k)%tableShards]
}

// getOrAdd returns k's value, adding fresh() when k has none.
func (t *table[K, V]) getOrAdd(k K, fresh func() V) V {
	c := t.shard(k)
	if v, ok := c.Get(k); ok {
		return v
	}
	v := fresh()
	// Another request may have added one meanwhile: use that.
	if prev, found, _ := c.PeekOrAdd(k, v); found {
		return prev
	}
	return v
}

func (t *table[K, V]) peek(k K) (V, bool) { return t.shard(k).Peek(k) }

func (t *table[K, V]) add(k K, v V) { t.shard(k).Add(k, v) }

func (t *table[K, V]) len() int {
	n := 0
	for _, c := range t.shards {
		n += c.Len()
	}
	return n
}
