package rdns

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/rdns/rdnstest"
)

// The test zone: what a recursive resolver would answer for these
// addresses and names.
var testRecords = []string{
	// A crawler whose name resolves back to it.
	"1.66.249.66.in-addr.arpa. 300 IN PTR crawl-66-249-66-1.googlebot.com.",
	"crawl-66-249-66-1.googlebot.com. 300 IN A 66.249.66.1",
	// A name in capitals that claims to be a crawler and resolves elsewhere.
	"4.3.2.1.in-addr.arpa. 300 IN PTR Crawl-Fake.GoogleBot.COM.",
	"crawl-fake.googlebot.com. 300 IN A 5.6.7.8",
	// One of several addresses.
	"8.8.8.8.in-addr.arpa. 86400 IN PTR dns.google.",
	"dns.google. 900 IN A 8.8.4.4",
	"dns.google. 900 IN A 8.8.8.8",
	// IPv6: the name's AAAA record confirms it.
	"e.0.0.2.0.0.0.0.0.0.0.0.0.0.0.0.b.1.8.0.1.0.0.4.0.5.4.1.0.0.a.2.ip6.arpa. 300 IN PTR fra16s48-in-x0e.1e100.net.",
	"fra16s48-in-x0e.1e100.net. 300 IN AAAA 2a00:1450:4001:81b::200e",
	"fra16s48-in-x0e.1e100.net. 300 IN A 142.250.185.78",
	// A name that does not exist; a name whose lookup fails.
	"5.5.5.5.in-addr.arpa. 300 IN PTR ghost.example.net.",
	"6.6.6.6.in-addr.arpa. 300 IN PTR broken.example.org.",
	// A classless delegation: a CNAME into the customer's own zone.
	"142.69.2.81.in-addr.arpa. 300 IN CNAME 142.128/25.69.2.81.in-addr.arpa.",
	"142.128/25.69.2.81.in-addr.arpa. 120 IN PTR host.customer.example.",
	// TTLs out of bounds.
	"1.1.1.77.in-addr.arpa. 604800 IN PTR week.example.",
	"2.1.1.77.in-addr.arpa. 0 IN PTR zero.example.",
	// Hostile PTR data: control characters, an escaped dot, non-ASCII, a
	// space, markup; and, with one of them, a good name.
	"1.7.7.7.in-addr.arpa. 300 IN PTR bad\\007name.example.com.",
	"2.7.7.7.in-addr.arpa. 300 IN PTR evil<script>.example.",
	"3.7.7.7.in-addr.arpa. 300 IN PTR a\\.b.example.",
	"4.7.7.7.in-addr.arpa. 300 IN PTR caf\\195\\169.example.",
	"5.7.7.7.in-addr.arpa. 300 IN PTR has\\032space.example.",
	"6.7.7.7.in-addr.arpa. 300 IN PTR \\000.example.",
	"6.7.7.7.in-addr.arpa. 300 IN PTR ok.example.",
	"8.7.7.7.in-addr.arpa. 300 IN PTR quote\\\".example.",
	// Domain names for ip-api's domain queries.
	"example.com. 300 IN A 93.184.215.14",
	"example.com. 300 IN AAAA 2606:2800:21f:cb07:6820:80da:af6b:8b2c",
	"www.example.com. 300 IN CNAME example.com.",
	"v6only.example. 300 IN AAAA 2001:4860:4860::8888",
	"internal.example. 300 IN A 10.0.0.5",
	"mixed.example. 300 IN A 192.168.1.1",
	"mixed.example. 300 IN A 9.9.9.9",
	"xn--bcher-kva.example. 300 IN A 1.0.0.1",
}

// longestName is a legal name of the greatest length, 253 characters.
var longestName = strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)

func testZone(t *testing.T) *rdnstest.Zone {
	z := rdnstest.New(t, testRecords...)
	z.Add(t, "7.7.7.7.in-addr.arpa. 300 IN PTR "+longestName+".")
	z.SetRcode("10.9.9.9.in-addr.arpa.", dns.TypePTR, dns.RcodeServerFailure)
	z.SetRcode("broken.example.org.", dns.TypeA, dns.RcodeServerFailure)
	z.SetRcode("fail.example.", dns.TypeA, dns.RcodeServerFailure)
	z.SetRcode("refused.example.", dns.TypeA, dns.RcodeRefused)
	return z
}

func newResolver(t *testing.T, cfg Config) *Resolver {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var ctx = context.Background()

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestHostname(t *testing.T) {
	z := testZone(t)
	r := newResolver(t, Config{Server: z.Addr, Now: newClock().now})
	for _, tc := range []struct {
		addr               string
		want               Result
		wantWithoutConfirm Status
	}{
		{"66.249.66.1", Result{Name: "crawl-66-249-66-1.googlebot.com", Checked: true, Confirmed: true, Status: Found}, Found},
		// Lower case, no final dot; the claim is checked and fails.
		{"1.2.3.4", Result{Name: "crawl-fake.googlebot.com", Checked: true, Status: Found}, Found},
		{"8.8.8.8", Result{Name: "dns.google", Checked: true, Confirmed: true, Status: Found}, Found},
		{"2a00:1450:4001:81b::200e", Result{Name: "fra16s48-in-x0e.1e100.net", Checked: true, Confirmed: true, Status: Found}, Found},
		// An IPv4-mapped address is its IPv4 address.
		{"::ffff:66.249.66.1", Result{Name: "crawl-66-249-66-1.googlebot.com", Checked: true, Confirmed: true, Status: Found}, Found},
		// The name does not exist: checked, and not confirmed.
		{"5.5.5.5", Result{Name: "ghost.example.net", Checked: true, Status: Found}, Found},
		// The forward lookup fails: confirmation unknown.
		{"6.6.6.6", Result{Name: "broken.example.org", Status: Found}, Found},
		{"81.2.69.142", Result{Name: "host.customer.example", Checked: true, Status: Found}, Found},
		{"7.7.7.7", Result{Name: longestName, Checked: true, Status: Found}, Found},
		// No PTR record (NXDOMAIN), and SERVFAIL.
		{"9.9.9.9", Result{Status: NoName}, NoName},
		{"9.9.9.10", Result{Status: Failed}, Failed},
		// Hostile names never reach the answer; a good one beside them does.
		{"7.7.7.1", Result{Status: NoName}, NoName},
		{"7.7.7.2", Result{Status: NoName}, NoName},
		{"7.7.7.3", Result{Status: NoName}, NoName},
		{"7.7.7.4", Result{Status: NoName}, NoName},
		{"7.7.7.5", Result{Status: NoName}, NoName},
		{"7.7.7.6", Result{Name: "ok.example", Checked: true, Status: Found}, Found},
		{"7.7.7.8", Result{Status: NoName}, NoName},
		// Not globally reachable: never asked.
		{"10.1.2.3", Result{Status: NotPublic}, NotPublic},
		{"127.0.0.1", Result{Status: NotPublic}, NotPublic},
		{"192.0.2.1", Result{Status: NotPublic}, NotPublic},
		{"fe80::1%eth0", Result{Status: NotPublic}, NotPublic},
		{"::ffff:192.168.0.1", Result{Status: NotPublic}, NotPublic},
	} {
		a := addr(tc.addr)
		if got := r.Hostname(ctx, a, false); got != (Result{Name: tc.want.Name, Status: tc.wantWithoutConfirm}) {
			t.Errorf("%s without confirming: %+v", tc.addr, got)
		}
		if got := r.Hostname(ctx, a, true); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.addr, got, tc.want)
		}
	}
	for _, q := range []string{"1.0.168.192.in-addr.arpa.", "1.0.0.10.in-addr.arpa.", "3.2.1.10.in-addr.arpa.", "1.0.0.127.in-addr.arpa."} {
		if n := z.Count(q, dns.TypePTR); n != 0 {
			t.Errorf("%s asked %d times", q, n)
		}
	}
}

// Fill puts the result in a record: the confirmation only when known.
func TestResultFill(t *testing.T) {
	for _, tc := range []struct {
		res  Result
		conf string
	}{
		{Result{Name: "a.example", Checked: true, Confirmed: true, Status: Found}, "true"},
		{Result{Name: "a.example", Checked: true, Status: Found}, "false"},
		{Result{Name: "a.example", Status: Found}, ""},
		{Result{Status: TimedOut}, ""},
	} {
		rec := ipatlas.Record{Hostname: "stale", HostnameConfirmed: new(true)}
		tc.res.Fill(&rec)
		if rec.Hostname != tc.res.Name || rec.Text("hostname_confirmed") != tc.conf {
			t.Errorf("%+v: %q %q", tc.res, rec.Hostname, rec.Text("hostname_confirmed"))
		}
	}
	var r *Resolver
	if res := r.Hostname(ctx, addr("8.8.8.8"), true); res != (Result{Status: Off}) {
		t.Errorf("nil resolver: %+v", res)
	}
}

// Answers are kept for their TTL, bounded: one query until it runs out.
func TestCacheTTL(t *testing.T) {
	z := testZone(t)
	c := newClock()
	r := newResolver(t, Config{Server: z.Addr, Now: c.now})
	for _, tc := range []struct {
		q    string
		a    netip.Addr
		ttl  time.Duration
		want Status
	}{
		{"1.66.249.66.in-addr.arpa.", addr("66.249.66.1"), 300 * time.Second, Found},
		{"1.1.1.77.in-addr.arpa.", addr("77.1.1.1"), MaxTTL, Found},                  // a week, capped
		{"2.1.1.77.in-addr.arpa.", addr("77.1.1.2"), MinTTL, Found},                  // 0, raised
		{"142.69.2.81.in-addr.arpa.", addr("81.2.69.142"), 120 * time.Second, Found}, // the chain's least
		// Negative: the SOA's minimum (60 s, below its TTL).
		{"9.9.9.9.in-addr.arpa.", addr("9.9.9.9"), 60 * time.Second, NoName},
		// A usable record of none usable: as long as the records live.
		{"1.7.7.7.in-addr.arpa.", addr("7.7.7.1"), 300 * time.Second, NoName},
		{"10.9.9.9.in-addr.arpa.", addr("9.9.9.10"), FailureTTL, Failed},
	} {
		t.Run(tc.q, func(t *testing.T) {
			for range 3 {
				if res := r.Hostname(ctx, tc.a, false); res.Status != tc.want {
					t.Fatalf("%+v", res)
				}
			}
			if n := z.Count(tc.q, dns.TypePTR); n != 1 {
				t.Fatalf("%d queries, want 1", n)
			}
			c.advance(tc.ttl - time.Second)
			r.Hostname(ctx, tc.a, false)
			if n := z.Count(tc.q, dns.TypePTR); n != 1 {
				t.Fatalf("%d queries a second before the TTL, want 1", n)
			}
			c.advance(time.Second)
			r.Hostname(ctx, tc.a, false)
			if n := z.Count(tc.q, dns.TypePTR); n != 2 {
				t.Fatalf("%d queries at the TTL, want 2", n)
			}
		})
	}
}

// Negative answers without an SOA record are kept NoSOATTL; the SOA's
// minimum is capped at MaxNegativeTTL.
func TestNegativeTTL(t *testing.T) {
	for _, tc := range []struct {
		soa  string
		want time.Duration
	}{
		{"", NoSOATTL},
		{". 86400 IN SOA a. b. 1 2 3 4 86400", MaxNegativeTTL},
		{". 0 IN SOA a. b. 1 2 3 4 900", MinTTL},
		{". 900 IN SOA a. b. 1 2 3 4 120", 120 * time.Second},
	} {
		m := new(dns.Msg)
		if tc.soa != "" {
			rr, err := dns.NewRR(tc.soa)
			if err != nil {
				t.Fatal(err)
			}
			m.Ns = append(m.Ns, rr)
		}
		if got := negativeTTL(m); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.soa, got, tc.want)
		}
	}
	// Through the server: no SOA, a NODATA answer (the name exists, it
	// has no AAAA record).
	z := testZone(t)
	z.SetSOA(false)
	c := newClock()
	r := newResolver(t, Config{Server: z.Addr, Now: c.now})
	if _, err := r.Resolve(ctx, "internal.example"); !errors.Is(err, ErrNotPublic) {
		t.Fatal(err)
	}
	c.advance(NoSOATTL - time.Second)
	r.Resolve(ctx, "internal.example")
	if n := z.Count("internal.example.", dns.TypeAAAA); n != 1 {
		t.Errorf("%d AAAA queries within the negative TTL", n)
	}
	c.advance(time.Second)
	r.Resolve(ctx, "internal.example")
	if n := z.Count("internal.example.", dns.TypeAAAA); n != 2 {
		t.Errorf("%d AAAA queries after the negative TTL", n)
	}
}

// A server that never answers: an empty name, in bounded time, kept
// FailureTTL so the next calls do not wait again.
func TestTimeout(t *testing.T) {
	srv, questions := silentServer(t)
	c := newClock()
	r := newResolver(t, Config{Server: srv, Timeout: 200 * time.Millisecond, Now: c.now})
	if res := r.Hostname(ctx, addr("66.249.66.1"), true); res != (Result{Status: TimedOut}) {
		t.Fatalf("%+v", res)
	}
	// The lookup may still be waiting on its second attempt: wait for it
	// to be cached.
	waitCached(t, r, key{addr: addr("66.249.66.1")})
	n := questions.Load()
	if n == 0 {
		t.Error("no question asked")
	}
	if res := r.Hostname(ctx, addr("66.249.66.1"), false); res.Status != TimedOut || questions.Load() != n {
		t.Errorf("within FailureTTL: %+v, %d questions", res, questions.Load())
	}
	c.advance(FailureTTL)
	r.Hostname(ctx, addr("66.249.66.1"), false)
	if questions.Load() == n {
		t.Error("not asked again after FailureTTL")
	}
	_, err := r.Resolve(ctx, "example.com")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrTimeout) || errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve: %v", err)
	}
}

func waitCached(t *testing.T, r *Resolver, k key) {
	t.Helper()
	for r.cached(k) == nil {
		time.Sleep(time.Millisecond)
	}
}

// The caller's context bounds the call; the lookup goes on and its
// answer serves the next call.
func TestCallerGivesUp(t *testing.T) {
	z := testZone(t)
	r := newResolver(t, Config{Server: z.Addr, Timeout: time.Minute, Now: newClock().now})
	held, release := z.Hold()
	defer release()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan Result)
	go func() { done <- r.Hostname(cctx, addr("66.249.66.1"), false) }()
	<-held
	cancel()
	if res := <-done; res.Status != TimedOut || res.Name != "" {
		t.Errorf("after the caller's cancel: %+v", res)
	}
	release()
	waitCached(t, r, key{addr: addr("66.249.66.1")})
	if res := r.Hostname(ctx, addr("66.249.66.1"), false); res.Name != "crawl-66-249-66-1.googlebot.com" {
		t.Errorf("next call: %+v", res)
	}
	if n := z.Count("1.66.249.66.in-addr.arpa.", dns.TypePTR); n != 1 {
		t.Errorf("%d queries, want 1", n)
	}
	// A call whose context is already done asks nothing.
	if res := r.Hostname(cctx, addr("8.8.8.8"), false); res.Status != TimedOut || z.Count("8.8.8.8.in-addr.arpa.", dns.TypePTR) != 0 {
		t.Errorf("done context: %+v", res)
	}
}

// Over MaxLookups, a call answers Busy at once, asks nothing and caches
// nothing.
func TestMaxLookups(t *testing.T) {
	z := testZone(t)
	r := newResolver(t, Config{Server: z.Addr, Timeout: time.Minute, MaxLookups: 1, Now: newClock().now})
	held, release := z.Hold()
	defer release()
	done := make(chan Result)
	go func() { done <- r.Hostname(ctx, addr("66.249.66.1"), false) }()
	<-held
	if res := r.Hostname(ctx, addr("8.8.8.8"), true); res != (Result{Status: Busy}) {
		t.Errorf("over the cap: %+v", res)
	}
	if _, err := r.Resolve(ctx, "example.com"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrBusy) {
		t.Errorf("Resolve over the cap: %v", err)
	}
	if n := z.Total(); n != 1 {
		t.Errorf("%d queries, want the one held", n)
	}
	release()
	if res := <-done; res.Status != Found {
		t.Errorf("the held lookup: %+v", res)
	}
	if res := r.Hostname(ctx, addr("8.8.8.8"), false); res.Name != "dns.google" {
		t.Errorf("after the cap: %+v", res)
	}
}

// Concurrent calls for one address share one query.
func TestSharedLookup(t *testing.T) {
	z := testZone(t)
	r := newResolver(t, Config{Server: z.Addr, Timeout: time.Minute, Now: newClock().now})
	held, release := z.Hold()
	var wg sync.WaitGroup
	results := make([]Result, 50)
	for i := range results {
		wg.Go(func() { results[i] = r.Hostname(ctx, addr("66.249.66.1"), true) })
	}
	<-held // the PTR question
	release()
	wg.Wait()
	for _, res := range results {
		if !res.Confirmed {
			t.Fatalf("%+v", res)
		}
	}
	if p, a := z.Count("1.66.249.66.in-addr.arpa.", dns.TypePTR), z.Count("crawl-66-249-66-1.googlebot.com.", dns.TypeA); p != 1 || a != 1 {
		t.Errorf("%d PTR and %d A queries, want 1 and 1", p, a)
	}
}

// A SERVFAIL moves on to the next server; so does one that never
// answers; a truncated answer is asked again over TCP.
func TestServers(t *testing.T) {
	good := testZone(t)
	bad := testZone(t)
	bad.SetRcode("1.66.249.66.in-addr.arpa.", dns.TypePTR, dns.RcodeServerFailure)
	silent, _ := silentServer(t)
	for _, servers := range [][]string{{bad.Addr, good.Addr}, {silent, good.Addr}} {
		r := newResolver(t, Config{Timeout: 4 * time.Second, Now: newClock().now})
		r.servers = servers
		if res := r.Hostname(ctx, addr("66.249.66.1"), false); res.Name != "crawl-66-249-66-1.googlebot.com" {
			t.Errorf("%v: %+v", servers, res)
		}
	}
	good.Truncate("8.8.8.8.in-addr.arpa.", dns.TypePTR)
	r := newResolver(t, Config{Server: good.Addr, Now: newClock().now})
	if res := r.Hostname(ctx, addr("8.8.8.8"), false); res.Name != "dns.google" {
		t.Errorf("truncated: %+v", res)
	}
	if n := good.Count("8.8.8.8.in-addr.arpa.", dns.TypePTR); n != 2 {
		t.Errorf("truncated: %d queries, want 2 (UDP, TCP)", n)
	}
}

// Broken answers are failures: a name longer than the DNS allows, and an
// answer to another question.
func TestBrokenAnswers(t *testing.T) {
	long := rawServer(t, longPTRReply)
	other := rawServer(t, func(q []byte) []byte {
		out := longPTRReply(q)
		out[13] ^= 1 // the first character of the question's name
		return out
	})
	for _, srv := range []string{long, other} {
		r := newResolver(t, Config{Server: srv, Now: newClock().now})
		if res := r.Hostname(ctx, addr("66.249.66.1"), false); res != (Result{Status: Failed}) {
			t.Errorf("%+v", res)
		}
	}
}

func TestResolve(t *testing.T) {
	z := testZone(t)
	r := newResolver(t, Config{Server: z.Addr, Now: newClock().now})
	for _, tc := range []struct {
		name string
		want string
		err  []error
	}{
		{"example.com", "93.184.215.14", nil},
		{"Example.COM.", "93.184.215.14", nil},
		{"www.example.com", "93.184.215.14", nil},
		{"v6only.example", "2001:4860:4860::8888", nil},
		{"mixed.example", "9.9.9.9", nil},
		{"bücher.example", "1.0.0.1", nil},
		{"xn--bcher-kva.example", "1.0.0.1", nil},
		{"8.8.8.8", "8.8.8.8", nil},
		{"2001:db8::1", "2001:db8::1", nil},
		{"internal.example", "", []error{ErrNotPublic}},
		{"nx.example", "", []error{ErrNotFound}},
		{"fail.example", "", []error{ErrUnavailable, ErrServerFailure}},
		{"refused.example", "", []error{ErrUnavailable, ErrServerFailure}},
		{"", "", []error{ErrInvalidName}},
		{".", "", []error{ErrInvalidName}},
		{"exa mple.com", "", []error{ErrInvalidName}},
		{"a..b", "", []error{ErrInvalidName}},
		{"a\x00b.example", "", []error{ErrInvalidName}},
		{"<script>.example", "", []error{ErrInvalidName}},
		{longestName + ".e", "", []error{ErrInvalidName}},
		{strings.Repeat("a", 64) + ".example", "", []error{ErrInvalidName}},
		{strings.Repeat("é", 5000), "", []error{ErrInvalidName}},
	} {
		got, err := r.Resolve(ctx, tc.name)
		if tc.err == nil {
			if err != nil || got != addr(tc.want) {
				t.Errorf("%.40q: %v %v, want %s", tc.name, got, err, tc.want)
			}
			continue
		}
		if got.IsValid() {
			t.Errorf("%.40q: %v", tc.name, got)
		}
		for _, e := range tc.err {
			if !errors.Is(err, e) {
				t.Errorf("%.40q: %v, want %v", tc.name, err, e)
			}
		}
		if len(err.Error()) > 200 {
			t.Errorf("%.40q: an error of %d bytes", tc.name, len(err.Error()))
		}
	}
	// An invalid name is never asked.
	if n := z.Count("exa mple.com.", dns.TypeA); n != 0 {
		t.Error("an invalid name was asked")
	}
	var nilR *Resolver
	if _, err := nilR.Resolve(ctx, "example.com"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrOff) {
		t.Errorf("nil resolver: %v", err)
	}
}

func TestHostNameSyntax(t *testing.T) {
	for in, want := range map[string]string{
		"Dns.Google.":           "dns.google",
		"dns.google":            "dns.google",
		"_dmarc.example":        "_dmarc.example",
		"localhost.":            "localhost",
		longestName + ".":       longestName,
		".":                     "",
		"":                      "",
		"a..b":                  "",
		".a":                    "",
		"a.b..":                 "",
		"a\\.b":                 "",
		"a\\000b":               "",
		"a b":                   "",
		"a*b":                   "",
		"ä.example":             "",
		longestName + "x":       "",
		strings.Repeat("a", 64): "",
	} {
		got, ok := hostName(in)
		if got != want || ok != (want != "") {
			t.Errorf("hostName(%.30q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestNewServers(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("search example.com\nnameserver 192.0.2.53\nnameserver 2001:db8::53\noptions ndots:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{ResolvConf: conf}, []string{"192.0.2.53:53", "[2001:db8::53]:53"}},
		{Config{ResolvConf: filepath.Join(dir, "missing")}, []string{"127.0.0.1:53", "[::1]:53"}},
		{Config{Server: "127.0.0.1:5353"}, []string{"127.0.0.1:5353"}},
		{Config{Server: "[::1]:53"}, []string{"[::1]:53"}},
		{Config{Server: "9.9.9.9"}, []string{"9.9.9.9:53"}},
		{Config{Server: "2620:fe::fe"}, []string{"[2620:fe::fe]:53"}},
	} {
		r, err := New(tc.cfg)
		if err != nil {
			t.Errorf("%+v: %v", tc.cfg, err)
			continue
		}
		if got := r.Servers(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.cfg, got, tc.want)
		}
	}
	// A host name is resolved once, here from /etc/hosts.
	if r, err := New(Config{Server: "localhost:53"}); err != nil || !slices.Contains([]string{"127.0.0.1:53", "[::1]:53"}, r.Servers()[0]) {
		t.Errorf("localhost:53: %v %v", r.Servers(), err)
	}
	for _, bad := range []Config{
		{Server: "1.2.3.4:0"}, {Server: "1.2.3.4:65536"}, {Server: "1.2.3.4:dns"}, {Server: "a b:53"},
		{Timeout: -1}, {MaxLookups: -1},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// A cached answer: the cost of the host name of a repeat visitor.
func BenchmarkHostnameCached(b *testing.B) {
	z := rdnstest.New(b, testRecords...)
	r, err := New(Config{Server: z.Addr})
	if err != nil {
		b.Fatal(err)
	}
	a := addr("66.249.66.1")
	for _, confirm := range []bool{false, true} {
		name := "name"
		if confirm {
			name = "confirmed"
		}
		b.Run(name, func(b *testing.B) {
			if res := r.Hostname(ctx, a, confirm); res.Status != Found {
				b.Fatal(res)
			}
			b.ReportAllocs()
			for b.Loop() {
				r.Hostname(ctx, a, confirm)
			}
		})
	}
}

// An uncached lookup through a DNS server on loopback: the floor of a
// miss, a UDP round trip and miekg/dns's packing on both sides.
func BenchmarkHostnameUncached(b *testing.B) {
	z := rdnstest.New(b, testRecords...)
	r, err := New(Config{Server: z.Addr, CacheEntries: -1})
	if err != nil {
		b.Fatal(err)
	}
	a := addr("66.249.66.1")
	b.ReportAllocs()
	for b.Loop() {
		if res := r.Hostname(ctx, a, false); res.Status != Found {
			b.Fatal(res)
		}
	}
}
