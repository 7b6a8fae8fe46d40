package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"golang.org/x/time/rate"
)

// clock is a test clock that moves only when told: the limiters refill
// exactly as much as a test advances it, so no test depends on timing.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: testNow.Add(-time.Hour)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// limitedValue reads ipatlas_http_limited_total{limit=...}.
func limitedValue(t *testing.T, e *env, limit string) float64 {
	t.Helper()
	return gathered(t, e, "ipatlas_http_limited_total", map[string]string{"limit": limit})
}

// gathered sums the series of a metric that carry the given labels.
func gathered(t *testing.T, e *env, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metrics
				}
			}
			sum += metricValue(m)
		}
	}
	return sum
}

// checkLimited asserts a 429 RateLimitExceeded envelope with the exact
// text and Retry-After.
func checkLimited(t *testing.T, r resp, text, retry string, meta ipatlas.Meta) {
	t.Helper()
	checkFailure(t, r, ipatlas.CodeRateLimitExceeded, text, meta)
	if got := r.Header().Get("Retry-After"); got != retry {
		t.Errorf("Retry-After %q, want %q", got, retry)
	}
}

func TestKeyBurstLimit(t *testing.T) {
	clk := newClock()
	e := newEnv(t, func(c *Config) { c.KeyRate, c.KeyBurst, c.Now = 1, 3, clk.Now })
	acct, k := e.customer(t, account.Pro, 0, 100)
	_, other := e.customer(t, account.Pro, 0, 100)
	successes := int64(0)
	ok := func(key string) {
		t.Helper()
		if r := e.query(t, key, `{"ip":"8.8.8.8"}`); r.Code != http.StatusOK {
			t.Fatalf("status %d: %s", r.Code, r.Body)
		}
	}
	for range 3 {
		ok(k.Secret)
		successes++
	}
	over := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 100}
	// The credits in meta are the balance cached with the key (not read
	// again: that is what the limit saves); it is the balance at first use.
	r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
	checkLimited(t, r, "API rate limit exceeded: burst rate exceeded, retry in 1 s", "1", over)
	if r.Header().Get("RateLimit-Remaining") != "" {
		t.Errorf("quota headers on a burst refusal: %v", r.Header())
	}
	// In Chinese (Accept-Language: the body is not read).
	r = e.do(t, req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"8.8.8.8"}`,
		header: map[string]string{"Accept-Language": "zh-CN"}})
	checkLimited(t, r, "API请求频率超出限制：突发请求过多，请在 1 秒后重试", "1", over)
	// Refused before the body is read: a broken body is not reported.
	r = e.query(t, k.Secret, `{"ip":`)
	checkLimited(t, r, "API rate limit exceeded: burst rate exceeded, retry in 1 s", "1", over)
	// The usage endpoint takes the key too, and shares its bucket.
	r = e.do(t, req{method: "GET", path: "/api/usage", key: k.Secret})
	checkLimited(t, r, "API rate limit exceeded: burst rate exceeded, retry in 1 s", "1", over)

	// Another key has its own bucket.
	ok(other.Secret)

	// Someone who knows the key's ID but not its secret cannot spend its
	// bucket: only authenticated requests count.
	clk.Advance(time.Second) // one token back
	wrong := k.Secret[:len(k.Secret)-4] + "0000"
	if wrong == k.Secret {
		wrong = k.Secret[:len(k.Secret)-4] + "1111"
	}
	for range 10 {
		if r := e.query(t, wrong, `{"ip":"8.8.8.8"}`); r.Code != http.StatusUnauthorized {
			t.Fatalf("wrong secret: %d %s", r.Code, r.Body)
		}
	}
	ok(k.Secret)
	successes++
	if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != http.StatusTooManyRequests {
		t.Errorf("after the refilled token: %d", r.Code)
	}

	// Half a second refills half a token: still refused, retry in 1 s.
	clk.Advance(500 * time.Millisecond)
	checkLimited(t, e.query(t, k.Secret, `{"ip":"8.8.8.8"}`), "API rate limit exceeded: burst rate exceeded, retry in 1 s", "1", over)
	clk.Advance(500 * time.Millisecond)
	ok(k.Secret)
	successes++

	// Nothing refused was charged.
	checkLedger(t, e, acct.ID, 100, successes)
	if got := limitedValue(t, e, limitKeyBurst); got != 6 {
		t.Errorf("limited_total{key_burst} = %v, want 6", got)
	}
	// Refusals are counted under the route they were meant for.
	if got := gathered(t, e, "ipatlas_http_requests_total", map[string]string{"route": routeQuery, "code": "429"}); got != 5 {
		t.Errorf("requests_total{route=query,code=429} = %v, want 5", got)
	}
}

func TestKeyBurstRetryAfterRoundsUp(t *testing.T) {
	clk := newClock()
	e := newEnv(t, func(c *Config) { c.KeyRate, c.KeyBurst, c.Now = 0.1, 1, clk.Now })
	_, k := e.customer(t, account.Pro, 0, 100)
	if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
		t.Fatal(r.Code)
	}
	meta := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 100}
	checkLimited(t, e.query(t, k.Secret, `{"ip":"8.8.8.8"}`), "API rate limit exceeded: burst rate exceeded, retry in 10 s", "10", meta)
	clk.Advance(2500 * time.Millisecond)
	checkLimited(t, e.query(t, k.Secret, `{"ip":"8.8.8.8"}`), "API rate limit exceeded: burst rate exceeded, retry in 8 s", "8", meta)
}

// TestKeyBurstAndQuotaDiffer: the monthly quota's 429 keeps its own text
// and quota headers; the burst's names itself.
func TestKeyBurstAndQuotaDiffer(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.KeyRate, c.KeyBurst = 1, 2 })
	_, k := e.customer(t, account.Enterprise, 1, 100)
	if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
		t.Fatal(r.Code)
	}
	r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
	checkLimited(t, r, "API rate limit exceeded: the monthly quota of 1 query is used up; it resets at 2026-12-01 00:00 UTC", testResetSecs, ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 99})
	checkQuota(t, r, 1, 0)
	r = e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
	checkLimited(t, r, "API rate limit exceeded: burst rate exceeded, retry in 1 s", "1", ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 100})
}

// TestKeyBurstExactUnderConcurrency races many requests on one key with
// the clock stopped: exactly the burst gets through, and exactly those
// are charged.
func TestKeyBurstExactUnderConcurrency(t *testing.T) {
	const burst = 7
	e := newEnv(t, func(c *Config) { c.KeyRate, c.KeyBurst = 1, burst })
	acct, k := e.customer(t, account.Pro, 0, 1000)
	var ok, limited, other atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 40 {
		wg.Go(func() {
			<-start
			r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
			switch r.Code {
			case 200:
				ok.Add(1)
			case 429:
				limited.Add(1)
			default:
				other.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != burst || limited.Load() != 40-burst || other.Load() != 0 {
		t.Errorf("ok %d, limited %d, other %d; want %d, %d, 0", ok.Load(), limited.Load(), other.Load(), burst, 40-burst)
	}
	checkLedger(t, e, acct.ID, 1000, burst)
}

func TestAddressLimit(t *testing.T) {
	clk := newClock()
	e := newEnv(t, func(c *Config) {
		c.AddrRate, c.AddrBurst, c.Now = 1, 2, clk.Now
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
		c.IPv4Host, c.IPv6Host = "v4.example.com", "v6.example.com"
	})
	const peer = "203.0.113.7:5555"
	get := func(path, remote string) resp {
		t.Helper()
		return e.do(t, req{method: "GET", path: path, remote: remote})
	}
	want := func(r resp, status int) {
		t.Helper()
		if r.Code != status {
			t.Fatalf("%s %s: %d, want %d: %s", r.req.Method, r.req.URL.Path, r.Code, status, r.Body)
		}
	}
	want(get("/api/ip/myip", peer), 200)
	want(get("/api/ping", peer), 200)

	// The bucket is shared by the free endpoints, each answering in its
	// own format.
	anon := ipatlas.Meta{IsAPIRequest: true}
	r := get("/api/ip/myip", peer)
	checkLimited(t, r, "API rate limit exceeded: too many requests from this address, retry in 1 s", "1", anon)
	r = e.do(t, req{method: "GET", path: "/api/ping", remote: peer, header: map[string]string{"Accept-Language": "zh"}})
	checkLimited(t, r, "API请求频率超出限制：来自此地址的请求过多，请在 1 秒后重试", "1", anon)
	for _, tc := range []struct{ path, host string }{{"/ipv4", ""}, {"/ipv6", ""}, {"/", "v4.example.com"}} {
		for _, method := range []string{"GET", "HEAD"} {
			r := e.do(t, req{method: method, path: tc.path, remote: peer, host: tc.host})
			if r.Code != http.StatusTooManyRequests || r.Header().Get("Retry-After") != "1" ||
				r.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("%s %s: %d %v", method, tc.path, r.Code, r.Header())
			}
			if method == "GET" && r.Body.String() != "error: too many requests from this address; retry in 1 s\n" {
				t.Errorf("%s: body %q", tc.path, r.Body)
			}
		}
	}
	for _, h := range []string{"Cache-Control", "Access-Control-Allow-Origin"} {
		if got := get("/api/ip/myip", peer).Header().Get(h); got == "" {
			t.Errorf("no %s on a refusal", h)
		}
	}
	// GET / on the main host answers the address too (the web page's
	// plain-text face), so it shares the address's bucket.
	if r := get("/", peer); r.Code != http.StatusTooManyRequests {
		t.Errorf("GET / on the main host: %d, want 429", r.Code)
	}

	// Other addresses have their own buckets.
	want(get("/api/ip/myip", "203.0.113.8:1"), 200)
	// An IPv6 client is limited by its /64.
	want(get("/api/ip/myip", "[2001:db8:1:2::1]:1"), 200)
	want(get("/api/ip/myip", "[2001:db8:1:2:ffff::9]:1"), 200)
	want(get("/api/ip/myip", "[2001:db8:1:2:aaaa::1]:1"), 429)
	want(get("/api/ip/myip", "[2001:db8:1:3::1]:1"), 200)
	// An IPv4 client on a dual-stack socket is the IPv4 client.
	want(get("/api/ip/myip", "[::ffff:203.0.113.7]:1"), 429)

	// Behind a trusted proxy, the bucket is the forwarded client's, not
	// the proxy's.
	viaProxy := func(client string) resp {
		return e.do(t, req{method: "GET", path: "/api/ip/myip", remote: "10.0.0.1:80", header: map[string]string{"X-Forwarded-For": client}})
	}
	want(viaProxy("198.51.100.1"), 200)
	want(viaProxy("198.51.100.1"), 200)
	want(viaProxy("198.51.100.1"), 429)
	want(viaProxy("198.51.100.2"), 200)

	// Keyed routes are not limited by address.
	_, k := e.customer(t, account.Pro, 0, 10)
	if r := e.do(t, req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"10.0.0.1"}`, remote: peer}); r.env().Code != ipatlas.CodePrivateIP {
		t.Errorf("query from a limited address: %d %s", r.Code, r.Body)
	}

	// A second refills one token.
	clk.Advance(time.Second)
	want(get("/ipv4", peer), 200)
	want(get("/ipv4", peer), 429)

	if got := limitedValue(t, e, limitAddress); got < 10 {
		t.Errorf("limited_total{address} = %v", got)
	}
	if got := gathered(t, e, "ipatlas_http_requests_total", map[string]string{"route": "GET /ipv4", "code": "429"}); got != 3 {
		t.Errorf("requests_total{route=GET /ipv4,code=429} = %v, want 3", got)
	}
}

// countingStore counts key lookups of the real store, to show which
// requests reach it.
type countingStore struct {
	account.Store
	keys atomic.Int64
}

func (c *countingStore) Key(ctx context.Context, id string) (account.Key, error) {
	c.keys.Add(1)
	return c.Store.Key(ctx, id)
}

func TestInvalidKeyBackoff(t *testing.T) {
	clk := newClock()
	e := newEnv(t, func(c *Config) {
		c.AuthFailures, c.AuthMaxBackoff, c.AuthFailureWindow, c.Now = 3, 4*time.Second, time.Minute, clk.Now
	})
	counting := &countingStore{Store: e.store}
	e.svc.Store = counting
	acct, k := e.customer(t, account.Pro, 0, 100)
	_, fresh := e.customer(t, account.Pro, 0, 100) // never used before the block
	const attacker, customer = "198.51.100.66:1", "203.0.113.50:1"
	successes := int64(0)
	send := func(key, remote string) resp {
		t.Helper()
		return e.do(t, req{method: "POST", path: "/api/ip-query", key: key, body: `{"ip":"8.8.8.8"}`, remote: remote})
	}
	okFrom := func(key, remote string) {
		t.Helper()
		if r := send(key, remote); r.Code != 200 {
			t.Fatalf("valid key from %s: %d %s", remote, r.Code, r.Body)
		}
		successes++
	}
	anon := ipatlas.Meta{IsAPIRequest: true}
	rejected := func(key, remote string) {
		t.Helper()
		checkFailure(t, send(key, remote), ipatlas.CodeInvalidAPIKey, "Invalid or missing API key", anon)
	}
	blocked := func(key, remote, retry string) {
		t.Helper()
		checkLimited(t, send(key, remote), "API rate limit exceeded: too many invalid API keys from this address, retry in "+retry+" s", retry, anon)
	}

	okFrom(k.Secret, customer) // the customer's key has worked here before

	// Guesses: an unknown ID, the customer's ID with a wrong secret, garbage.
	guesses := []string{
		"ipa_AAAAAAAAAAAA_" + strings.Repeat("b", 43),
		k.Prefix + "_" + strings.Repeat("c", 43),
		"not-a-key",
	}
	for _, g := range guesses {
		rejected(g, attacker)
	}
	lookups := counting.keys.Load()
	for _, g := range guesses {
		blocked(g, attacker, "1")
	}
	for range 20 {
		blocked(fmt.Sprintf("ipa_BBBBBBBBBB%02d_%s", 0, strings.Repeat("d", 43)), attacker, "1")
	}
	if n := counting.keys.Load() - lookups; n != 0 {
		t.Errorf("blocked guesses reached the store %d times", n)
	}

	// A known key still works from the attacker's address (a NAT shared
	// with a customer), and everywhere else.
	okFrom(k.Secret, attacker)
	okFrom(k.Secret, customer)
	// A key this server has not seen authenticate waits like a guess: the
	// server cannot tell it from one without answering the guess.
	blocked(fresh.Secret, attacker, "1")
	// Other addresses are not slowed down.
	rejected(guesses[0], customer)
	okFrom(fresh.Secret, customer)
	// A request without a key guesses nothing: it is answered as usual.
	checkFailure(t, e.do(t, req{method: "POST", path: "/api/ip-query", body: `{"ip":"8.8.8.8"}`, remote: attacker}),
		ipatlas.CodeInvalidAPIKey, "Invalid or missing API key", anon)

	// Each further rejection doubles the wait, up to the cap.
	for _, wait := range []string{"2", "4", "4"} {
		clk.Advance(4 * time.Second) // past any wait so far
		rejected(guesses[1], attacker)
		blocked(guesses[1], attacker, wait)
	}
	clk.Advance(3 * time.Second)
	blocked(guesses[1], attacker, "1")

	// After a quiet window the address starts afresh.
	clk.Advance(2 * time.Minute)
	for range 3 {
		rejected(guesses[0], attacker)
	}
	blocked(guesses[0], attacker, "1")

	// The usage endpoint takes keys too: guesses there count and wait.
	if r := e.do(t, req{method: "GET", path: "/api/usage", key: guesses[0], remote: attacker}); r.Code != http.StatusTooManyRequests {
		t.Errorf("usage guess while blocked: %d", r.Code)
	}

	checkLedger(t, e, acct.ID, 100, 3)
	if successes != 4 {
		t.Fatalf("successes %d", successes)
	}
	if n := strings.Count(e.logs.String(), "client slowed down after invalid API keys"); n != 2 {
		t.Errorf("%d warnings about the attacker, want 2 (one per block)", n)
	}
	if !strings.Contains(e.logs.String(), `"client":"198.51.100.66"`) {
		t.Errorf("the warning does not name the client")
	}
}

// TestInvalidKeyBackoffIPv6 groups IPv6 guessers by /64.
func TestInvalidKeyBackoffIPv6(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.AuthFailures = 2
		c.AuthFailureWindow, c.AuthMaxBackoff = DefaultAuthFailureWindow, DefaultAuthMaxBackoff
	})
	guess := "ipa_AAAAAAAAAAAA_" + strings.Repeat("b", 43)
	for i, remote := range []string{"[2001:db8:5:6::1]:1", "[2001:db8:5:6::2]:1", "[2001:db8:5:6:7::3]:1"} {
		r := e.do(t, req{method: "POST", path: "/api/ip-query", key: guess, body: `{"ip":"8.8.8.8"}`, remote: remote})
		want := http.StatusUnauthorized
		if i == 2 {
			want = http.StatusTooManyRequests
		}
		if r.Code != want {
			t.Errorf("guess %d from %s: %d, want %d", i, remote, r.Code, want)
		}
	}
	r := e.do(t, req{method: "POST", path: "/api/ip-query", key: guess, body: `{"ip":"8.8.8.8"}`, remote: "[2001:db8:5:7::1]:1"})
	if r.Code != http.StatusUnauthorized {
		t.Errorf("another /64: %d", r.Code)
	}
}

// TestLimitsOffByDefault: a Config without limits limits nothing (the
// serve command sets the defaults).
func TestLimitsOffByDefault(t *testing.T) {
	e := newEnv(t)
	if e.srv.limits != nil {
		t.Fatalf("limits on in a zero Config")
	}
	for range 300 {
		if r := e.do(t, req{method: "GET", path: "/api/ip/myip"}); r.Code != 200 {
			t.Fatal(r.Code)
		}
	}
	for range 50 {
		if r := e.query(t, "ipa_AAAAAAAAAAAA_"+strings.Repeat("b", 43), `{"ip":"8.8.8.8"}`); r.Code != 401 {
			t.Fatal(r.Code)
		}
	}
}

// TestDefaultLimitsLetBasicUseThrough runs the defaults against what a
// person or a script does with Get my IP: a burst of page loads and a
// poll every second, for a simulated hour.
func TestDefaultLimitsLetBasicUseThrough(t *testing.T) {
	clk := newClock()
	e := newEnv(t, func(c *Config) {
		c.Now = clk.Now
		c.KeyRate, c.KeyBurst = DefaultKeyRate, DefaultKeyBurst
		c.AddrRate, c.AddrBurst = DefaultAddrRate, DefaultAddrBurst
		c.AuthFailures = DefaultAuthFailures
		c.AuthFailureWindow, c.AuthMaxBackoff = DefaultAuthFailureWindow, DefaultAuthMaxBackoff
	})
	// A page that fetches three endpoints, reloaded ten times at once.
	for range 10 {
		for _, p := range []string{"/api/ip/myip", "/ipv4", "/api/ping"} {
			if r := e.do(t, req{method: "GET", path: p}); r.Code != 200 {
				t.Fatalf("%s: %d", p, r.Code)
			}
		}
	}
	clk.Advance(10 * time.Second)
	for range 600 {
		if r := e.do(t, req{method: "GET", path: "/api/ip/myip"}); r.Code != 200 {
			t.Fatalf("poll: %d", r.Code)
		}
		clk.Advance(time.Second)
	}
	// A key used by a script: 100 queries at once.
	_, k := e.customer(t, account.Enterprise, 1e6, 1e6)
	for i := range DefaultKeyBurst {
		if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
			t.Fatalf("query %d: %d", i, r.Code)
		}
	}
	// A mistyped key a few times is not a guesser.
	for range DefaultAuthFailures - 1 {
		if r := e.query(t, k.Secret+"x", `{"ip":"8.8.8.8"}`); r.Code != 401 {
			t.Fatal(r.Code)
		}
	}
}

func TestTwoAuthorizationHeaders(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Pro, 0, 10)
	for _, second := range []string{"Bearer " + k.Secret, "Bearer nope", "Basic eDp5"} {
		r := newRequest(req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"8.8.8.8"}`})
		r.Header.Add("Authorization", second)
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		checkDoc(t, publicSpec(t), r, w)
		checkFailure(t, resp{w, r}, ipatlas.CodeInvalidAPIKey, "Invalid or missing API key: send exactly one Authorization header", ipatlas.Meta{IsAPIRequest: true})
		if w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("no WWW-Authenticate")
		}
	}
	// The free endpoints ignore Authorization altogether.
	r := newRequest(req{method: "GET", path: "/api/ip/myip"})
	r.Header["Authorization"] = []string{"a", "b"}
	w := httptest.NewRecorder()
	e.pub.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("myip with two Authorization headers: %d", w.Code)
	}
	checkLedger(t, e, acct.ID, 10, 0)
}

func TestLimitTablesAreBounded(t *testing.T) {
	tb := newTable[netip.Addr, int](100)
	for i := range 10000 {
		tb.getOrAdd(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), func() int { return i })
	}
	if n := tb.len(); n > 16*7 || n < 16 {
		t.Errorf("table of 100 holds %d entries", n)
	}
	// The most recent entries are kept, and getOrAdd keeps the first value.
	last := netip.AddrFrom4([4]byte{10, 0, 39, 15}) // i = 9999
	if v, ok := tb.peek(last); !ok || v != 9999 {
		t.Errorf("latest entry: %v %v", v, ok)
	}
	if v := tb.getOrAdd(last, func() int { return -1 }); v != 9999 {
		t.Errorf("getOrAdd replaced a value: %d", v)
	}

	// Through the server: many addresses, a fixed table.
	e := newEnv(t, func(c *Config) { c.AddrRate, c.AddrBurst, c.LimitTableSize = 1, 1, 64 })
	for i := range 500 {
		e.pub.ServeHTTP(httptest.NewRecorder(), newRequest(req{method: "GET", path: "/api/ping", remote: fmt.Sprintf("[2001:db8:%x::1]:1", i)}))
	}
	if n := e.srv.limits.addrs.len(); n > 64+16 {
		t.Errorf("address table of 64 holds %d entries", n)
	}
	// An evicted client starts afresh: a bounded table forgets, it never
	// refuses a client it has forgotten.
	if r := e.do(t, req{method: "GET", path: "/api/ping", remote: "[2001:db8:0::1]:1"}); r.Code != 200 {
		t.Errorf("an evicted client: %d", r.Code)
	}
}

func TestClientGroup(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":               "203.0.113.7",
		"2001:db8:1:2:3:4:5:6":      "2001:db8:1:2::",
		"2001:db8:1:2::":            "2001:db8:1:2::",
		"2001:db8:1:2:ffff:ffff::1": "2001:db8:1:2::",
	} {
		if got := clientGroup(netip.MustParseAddr(in)).String(); got != want {
			t.Errorf("clientGroup(%s) = %s, want %s", in, got, want)
		}
	}
}

// BenchmarkMyIPLimited is BenchmarkMyIP with the address limit on (with a
// rate that never refuses): the cost of the limiter on the hottest free
// endpoint.
func BenchmarkMyIPLimited(b *testing.B) {
	e := newEnv(b, func(c *Config) {
		c.Logger = slog.New(slog.DiscardHandler)
		c.AddrRate, c.AddrBurst = 1e12, 1e9
	})
	r, _ := benchRequest("GET", "/api/ip/myip", "")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkLimiterTable is the table lookup and token take of one request,
// over 10,000 clients from all cores.
func BenchmarkLimiterTable(b *testing.B) {
	tb := newTable[netip.Addr, *rate.Limiter](DefaultLimitTableSize)
	addrs := make([]netip.Addr, 10000)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			lim := tb.getOrAdd(addrs[i%len(addrs)], func() *rate.Limiter { return rate.NewLimiter(1e12, 1e9) })
			take(lim, time.Now())
			i++
		}
	})
}

// BenchmarkGuardKeyed is the router's authentication alone on a request
// with a valid key, every limit on: the (cached) authentication, the
// key's bucket and the known-keys table. The handler then gets the
// caller without a second authentication.
func BenchmarkGuardKeyed(b *testing.B) {
	e := newEnv(b, func(c *Config) {
		c.Logger = slog.New(slog.DiscardHandler)
		c.Now = time.Now
		c.KeyRate, c.KeyBurst, c.AuthFailures = 1e12, 1e9, DefaultAuthFailures
		c.AuthFailureWindow, c.AuthMaxBackoff = DefaultAuthFailureWindow, DefaultAuthMaxBackoff
	})
	_, k := e.customer(b, account.Pro, 0, 10)
	r, _ := benchRequest("POST", "/api/ip-query", k.Secret)
	x := &exchange{ResponseWriter: httptest.NewRecorder(), client: netip.MustParseAddr("203.0.113.7")}
	if cr, err := e.srv.authenticate(x, r, requestKey); err != nil || cr.c == nil {
		b.Fatal("refused", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.srv.authenticate(x, r, requestKey); err != nil {
			b.Fatal("refused", err)
		}
	}
}

// TestLimitsWithStoreDown: when the store cannot answer, the router's limits let
// the handler say so (503), client mistakes stay 400, and a key that could
// not be checked is not a rejected key: the address is never slowed down
// for the store's fault.
func TestLimitsWithStoreDown(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.KeyRate, c.KeyBurst, c.AddrRate, c.AddrBurst, c.AuthFailures = 1, 1, 1, 1, 2
		c.AuthFailureWindow, c.AuthMaxBackoff = DefaultAuthFailureWindow, DefaultAuthMaxBackoff
	})
	_, uncached := e.customer(t, account.Pro, 0, 10)
	e.meter.Close(t.Context())
	e.store.Close()
	for range 5 {
		checkFailure(t, e.query(t, uncached.Secret, `{"ip":"8.8.8.8"}`), ipatlas.CodeServiceUnavailable,
			"Service temporarily unavailable", ipatlas.Meta{IsAPIRequest: true})
	}
	if r := e.query(t, uncached.Secret, `{"ip":`); r.Code != 400 {
		t.Errorf("bad body with the store down: %d", r.Code)
	}
	if r := e.do(t, req{method: "GET", path: "/api/ip/myip"}); r.Code != 200 {
		t.Errorf("myip with the store down: %d", r.Code)
	}
}
