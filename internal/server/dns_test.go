package server

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/rdns"
	"github.com/ipatlas/ipatlas/internal/rdns/rdnstest"
)

// dnsEnv is a server whose resolver asks a local DNS server, which counts
// the questions it gets. The resolver's cache is off, so that every
// lookup the server makes is a question counted there.
func dnsEnv(t *testing.T, configure ...func(*Config)) (*env, *rdnstest.Zone) {
	t.Helper()
	z := rdnstest.New(t,
		"8.8.8.8.in-addr.arpa. 300 IN PTR dns.google.",
		"dns.google. 300 IN A 8.8.8.8",
		"internal.example. 300 IN A 10.0.0.1",
		"beijing.example. 300 IN A "+geotest.Beijing.IP)
	res, err := rdns.New(rdns.Config{Server: z.Addr, Timeout: 2 * time.Second, CacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, configure...)
	e.srv.deps.Resolver = res
	return e, z
}

// jsonList is a JSON array of the n strings f(i).
func jsonList(n int, f func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = strconv.Quote(f(i))
	}
	return "[" + strings.Join(items, ",") + "]"
}

// distinctAddr is the i-th of 250 distinct addresses in the fixture's
// 8.8.8.0/24, none with a PTR record but 8.8.8.8.
func distinctAddr(i int) string { return "8.8.8." + strconv.Itoa(1+i%250) }

// dnsRequests are requests of every shape whose answer asks the resolver,
// and the most questions each may cause (domain and host name lookups of
// at most two questions each).
func dnsRequests() []struct {
	r   req
	max int
} {
	hosts := jsonList(100, func(i int) string { return distinctAddr(i) + "/hostname" })
	addrs := jsonList(100, distinctAddr)
	return []struct {
		r   req
		max int
	}{
		{req{method: "GET", path: "/ip-api/json/beijing.example"}, 2},
		{req{method: "GET", path: "/ip-api/json/beijing.example?fields=city,reverse"}, 4},
		{req{method: "GET", path: "/ip-api/json/8.8.8.8?fields=reverse,query"}, 2},
		{req{method: "POST", path: "/ip-api/batch?fields=reverse,query", body: addrs}, 200},
		{req{method: "GET", path: "/api/lookup/8.8.8.8?fields=hostname,hostname_confirmed"}, 2},
		{req{method: "GET", path: "/api/lookup/8.8.8.8/hostname"}, 2},
		{req{method: "POST", path: "/api/ip-query", body: `{"ip":"8.8.8.8","fields":["hostname"]}`}, 2},
		{req{method: "POST", path: "/api/ip-query/batch", body: `{"ips":` + addrs + `,"fields":["hostname_confirmed"]}`}, 200},
		{req{method: "GET", path: "/ipinfo/8.8.8.8"}, 2},
		{req{method: "GET", path: "/ipinfo/8.8.8.8/hostname"}, 2},
		{req{method: "GET", path: "/ipinfo/lookup/8.8.8.8"}, 2},
		{req{method: "POST", path: "/ipinfo/batch", body: hosts}, 200},
		{req{method: "GET", path: "/echoip/json?ip=8.8.8.8"}, 2},
	}
}

// A key that cannot pay causes no DNS question: no credits (402) and a
// spent month (429) are refused before any name is looked up, in every
// shape, single or batch.
func TestDNSOnlyForCallersWhoPay(t *testing.T) {
	e, z := dnsEnv(t)
	_, broke := e.customer(t, account.Pro, 0, 0)
	_, spent := e.customer(t, account.Enterprise, 1, 100)
	if r := e.do(t, req{method: "GET", path: "/api/lookup/8.8.8.8", key: spent.Secret}); r.Code != 200 {
		t.Fatalf("spending the month: %d %s", r.Code, r.Body)
	}
	for _, k := range []struct {
		name, secret, id string
		status           int
	}{
		{"no credits", broke.Secret, broke.ID, http.StatusPaymentRequired},
		{"month spent", spent.Secret, spent.ID, http.StatusTooManyRequests},
	} {
		before := used(t, e, k.id)
		for _, tc := range dnsRequests() {
			q := tc.r
			q.key = k.secret
			if r := e.do(t, q); r.Code != k.status {
				t.Errorf("%s: %s %s: %d %s, want %d", k.name, q.method, q.path, r.Code, r.Body, k.status)
			}
		}
		if got := used(t, e, k.id); got != before {
			t.Errorf("%s: used %d, want %d", k.name, got, before)
		}
	}
	if n := z.Total(); n != 0 {
		t.Errorf("keys that cannot pay caused %d DNS questions, want 0: %v", n, z.Questions())
	}
}

// A HEAD request asks the resolver nothing, and costs nothing.
func TestDNSNoneForHEAD(t *testing.T) {
	e, z := dnsEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1000)
	for range 2 {
		for _, tc := range dnsRequests() {
			if tc.r.method != "GET" {
				continue
			}
			if r := e.do(t, req{method: "HEAD", path: tc.r.path, key: k.Secret}); r.Code != 200 {
				t.Errorf("HEAD %s: %d", tc.r.path, r.Code)
			}
		}
	}
	// The caller's own address, free, under the per-address limit: its
	// PTR question for a GET, none for a HEAD.
	self := req{method: "HEAD", path: "/echoip/json", remote: hostPort("8.8.8.8")}
	if r := e.do(t, self); r.Code != 200 {
		t.Errorf("HEAD /echoip/json: %d", r.Code)
	}
	if n := z.Total(); n != 0 {
		t.Errorf("HEAD requests caused %d DNS questions, want 0: %v", n, z.Questions())
	}
	self.method = "GET"
	if r := e.do(t, self); r.Code != 200 || !strings.Contains(r.Body.String(), "dns.google") || z.Total() != 1 {
		t.Errorf("GET /echoip/json: %d %s, %d DNS questions, want the name from 1", r.Code, r.Body, z.Total())
	}
	if n := used(t, e, k.ID); n != 0 {
		t.Errorf("HEAD requests used %d queries, want 0", n)
	}
}

// No request asks more questions than its bound, and a batch asks none
// for what its caller cannot pay: one credit is one lookup, however many
// items ask for a host name. An ipinfo batch with more host name items
// than one request may look up is refused whole, before anything.
func TestDNSBoundedPerRequest(t *testing.T) {
	e, z := dnsEnv(t)
	_, rich := e.customer(t, account.Enterprise, 1_000_000, 1_000_000)
	for _, tc := range dnsRequests() {
		q := tc.r
		q.key = rich.Secret
		before := z.Total()
		if r := e.do(t, q); r.Code != 200 {
			t.Errorf("%s %s: %d %s", q.method, q.path, r.Code, r.Body)
		}
		if n := z.Total() - before; n > tc.max || n == 0 {
			t.Errorf("%s %s: %d DNS questions, want 1 to %d", q.method, q.path, n, tc.max)
		}
	}

	for _, tc := range []struct {
		name string
		r    req
	}{
		{"ipinfo /hostname items", req{method: "POST", path: "/ipinfo/batch", body: jsonList(100, func(i int) string { return distinctAddr(i) + "/hostname" })}},
		{"ip-api reverse", req{method: "POST", path: "/ip-api/batch?fields=reverse", body: jsonList(100, distinctAddr)}},
		{"native hostname", req{method: "POST", path: "/api/ip-query/batch", body: `{"ips":` + jsonList(100, distinctAddr) + `,"fields":["hostname"]}`}},
	} {
		_, one := e.customer(t, account.Pro, 0, 1)
		before := z.Total()
		tc.r.key = one.Secret
		if r := e.do(t, tc.r); r.Code != 200 {
			t.Errorf("%s with 1 credit: %d %s", tc.name, r.Code, r.Body)
		}
		if n := z.Total() - before; n != 1 {
			t.Errorf("%s with 1 credit: %d DNS questions, want 1", tc.name, n)
		}
		if n := used(t, e, one.ID); n != 1 {
			t.Errorf("%s with 1 credit: used %d, want 1", tc.name, n)
		}
	}

	before := z.Total()
	for _, n := range []int{101, 700} {
		body := jsonList(n, func(i int) string { return distinctAddr(i) + "/hostname" })
		r := e.do(t, req{method: "POST", path: "/ipinfo/batch", body: body, key: rich.Secret})
		if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), "TooManyItems") {
			t.Errorf("ipinfo batch of %d /hostname items: %d %s, want 422 TooManyItems", n, r.Code, r.Body)
		}
	}
	if n := z.Total() - before; n != 0 {
		t.Errorf("refused batches caused %d DNS questions", n)
	}

	// A repeat of a host name in a batch is asked once and charged once.
	_, k := e.customer(t, account.Pro, 0, 100)
	before = z.Total()
	r := e.do(t, req{method: "POST", path: "/ipinfo/batch", key: k.Secret, body: `["8.8.8.8/hostname","8.8.8.8/hostname","8.8.8.8"]`})
	if r.Code != 200 || !strings.Contains(r.Body.String(), `"8.8.8.8/hostname":"dns.google"`) {
		t.Errorf("repeats: %d %s", r.Code, r.Body)
	}
	if n := z.Total() - before; n != 1 {
		t.Errorf("repeats: %d DNS questions, want 1", n)
	}
	if n := used(t, e, k.ID); n != 1 {
		t.Errorf("repeats: used %d, want 1", n)
	}
}

// A key's DNS lookups are bounded per second: past its bucket a request
// that would ask the resolver is refused (429, Retry-After, not charged)
// before asking. The test's clock stands still, so the bucket never
// refills.
func TestDNSBoundedPerKey(t *testing.T) {
	e, z := dnsEnv(t, func(c *Config) { c.KeyDNSRate, c.KeyDNSBurst = 1, 5 })
	_, k := e.customer(t, account.Pro, 0, 1000)
	for i := range 5 {
		r := e.do(t, req{method: "GET", path: "/api/lookup/" + distinctAddr(i) + "/hostname", key: k.Secret})
		if r.Code != 200 {
			t.Fatalf("lookup %d: %d %s", i, r.Code, r.Body)
		}
	}
	if n := z.Total(); n != 5 {
		t.Fatalf("5 lookups asked %d questions", n)
	}
	for _, q := range []req{
		{method: "GET", path: "/api/lookup/8.8.8.8/hostname"},
		{method: "GET", path: "/ip-api/json/beijing.example"},
		{method: "POST", path: "/ipinfo/batch", body: `["8.8.8.8/hostname"]`},
	} {
		q.key = k.Secret
		r := e.do(t, q)
		if r.Code != http.StatusTooManyRequests || r.Header().Get("Retry-After") == "" || !strings.Contains(r.Body.String(), "DNS") {
			t.Errorf("%s %s past the key's DNS bucket: %d %s", q.method, q.path, r.Code, r.Body)
		}
	}
	// What asks no name is answered as before.
	if r := e.do(t, req{method: "GET", path: "/api/lookup/8.8.8.8/city", key: k.Secret}); r.Code != 200 {
		t.Errorf("a lookup without a name: %d %s", r.Code, r.Body)
	}
	if n := z.Total(); n != 5 {
		t.Errorf("%d DNS questions, want the bucket's 5", n)
	}
	if n := used(t, e, k.ID); n != 5+1 {
		t.Errorf("used %d, want 6", n)
	}
	if got := limitedValue(t, e, limitKeyDNS); got != 3 {
		t.Errorf("limited_total{key_dns} = %v, want 3", got)
	}
}

// A lookup the resolver answered is charged, also when it found no name;
// one it did not answer in time is not.
func TestDNSChargedWhenAnswered(t *testing.T) {
	e, z := dnsEnv(t)
	z.Silence("1.1.1.1.in-addr.arpa.")
	e.srv.deps.Resolver, _ = rdns.New(rdns.Config{Server: z.Addr, Timeout: 300 * time.Millisecond, CacheEntries: -1})
	_, k := e.customer(t, account.Pro, 0, 100)
	for _, tc := range []struct {
		path, want string
		charged    bool
	}{
		{"/api/lookup/8.8.4.4/hostname", "\n", true},
		{"/ipinfo/8.8.4.4/hostname", "\n", true},
		{"/ip-api/json/8.8.4.4?fields=reverse", `{"reverse":""}`, true},
		{"/ip-api/json/nowhere.example", `"message":"invalid query"`, true},
		{"/api/lookup/1.1.1.1/hostname", "\n", false},
	} {
		before := used(t, e, k.ID)
		r := e.do(t, req{method: "GET", path: tc.path, key: k.Secret})
		if r.Code != 200 || !strings.Contains(r.Body.String(), tc.want) {
			t.Errorf("%s: %d %q, want %q", tc.path, r.Code, r.Body, tc.want)
		}
		want := before
		if tc.charged {
			want++
		}
		if got := used(t, e, k.ID); got != want {
			t.Errorf("%s: used %d, want %d", tc.path, got, want)
		}
	}
}

// A domain query answers a name that does not exist and one with only
// private addresses alike: status, body (but for the name), headers of
// the quota and charge, so that no answer tells which internal names the
// resolver knows.
func TestIPAPIDomainsWithoutPublicAddressesAnswerAlike(t *testing.T) {
	e, _ := dnsEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	answer := func(name string) (int, string, int64) {
		before := used(t, e, k.ID)
		r := e.do(t, req{method: "GET", path: "/ip-api/json/" + name, key: k.Secret})
		return r.Code, strings.ReplaceAll(r.Body.String(), name, "NAME"), used(t, e, k.ID) - before
	}
	c1, b1, u1 := answer("nowhere.example")
	c2, b2, u2 := answer("internal.example")
	if c1 != c2 || b1 != b2 || u1 != u2 {
		t.Errorf("no such name: %d %s charged %d; only a private address: %d %s charged %d", c1, b1, u1, c2, b2, u2)
	}
	if strings.Contains(b2, "10.0.0.1") {
		t.Errorf("the private address is shown: %s", b2)
	}
}
