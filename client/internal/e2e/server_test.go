// Package e2e tests package client against the real server:
// internal/server's handler on in-process listeners (127.0.0.1 and ::1), a
// SQLite store in a temporary directory, the real account Service and
// Meter, and the geo engine over the geotest fixture. These tests live
// apart from package client so that a program importing the client does
// not inherit the server's dependencies through the client's tests (go mod
// tidy loads the tests of every package a module imports).
package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/ipatlas/ipatlas/internal/sqlite"
	"github.com/prometheus/client_golang/prometheus"
)

// serverNow is the real server's clock in these tests, so its answers
// (ping time, Retry-After, usage reset) are exact.
var serverNow = time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)

const serverVersion = "client-test"

// service is a real ipatlas server reachable over IPv4 and IPv6 loopback.
type service struct {
	url  string // http://127.0.0.1:port
	url6 string // http://[::1]:port, "" when the machine has no ::1
	svc  *account.Service
	// store is closed by the test that wants the server's 503.
	store *sqlite.Store
	hits  atomic.Int64 // requests that reached the handler
}

// startService starts a server; configure may change the server's Config.
func startService(tb testing.TB, configure ...func(*server.Config)) *service {
	tb.Helper()
	p := servertest.New(tb, func() time.Time { return serverNow })
	store, engine, svc, meter, now := p.Store, p.Geo, p.Accounts, p.Meter, p.Now
	cfg := server.Config{
		Version: serverVersion,
		Logger:  slog.New(slog.DiscardHandler),
		Now:     now,
	}
	for _, c := range configure {
		c(&cfg)
	}
	srv, err := server.New(cfg, server.Deps{Geo: engine, Accounts: svc, Meter: meter, Registry: prometheus.NewRegistry()})
	if err != nil {
		tb.Fatal(err)
	}
	s := &service{svc: svc, store: store}
	h := srv.Handler()
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h.ServeHTTP(w, r)
	})
	s.url = serveOn(tb, "tcp4", "127.0.0.1:0", counted)
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		ts := &httptest.Server{Listener: l, Config: &http.Server{Handler: counted}}
		ts.Start()
		tb.Cleanup(ts.Close)
		s.url6 = ts.URL
	}
	return s
}

func serveOn(tb testing.TB, network, addr string, h http.Handler) string {
	tb.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		tb.Fatal(err)
	}
	ts := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	ts.Start()
	tb.Cleanup(ts.Close)
	return ts.URL
}

// customer creates an account with one key and returns the key's secret.
func (s *service) customer(tb testing.TB, tier account.Tier, limit, credits int64) string {
	tb.Helper()
	ctx := context.Background()
	a, err := s.svc.CreateAccount(ctx, account.AccountParams{Name: "client-test", Tier: tier, MonthlyLimit: limit, Credits: &credits})
	if err != nil {
		tb.Fatal(err)
	}
	k, err := s.svc.CreateKey(ctx, a.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return k.Secret
}

func (s *service) need6(t *testing.T) {
	t.Helper()
	if s.url6 == "" {
		t.Skip("no ::1 on this machine; the IPv6 paths need an IPv6 loopback address")
	}
}

func TestServerLookupEveryPlace(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Pro, 0, 100)
	c := newClient(t, client.Config{URL: s.url, APIKey: key})
	credits := int64(100)
	for _, k := range geotest.Places {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			res, err := c.LookupDetail(context.Background(), k.IP, lang)
			if err != nil {
				t.Fatalf("%s %v: %v", k.Label, lang, err)
			}
			credits--
			if want := k.Want(lang); !reflect.DeepEqual(res.Record, want) {
				t.Errorf("%s %v:\n got %+v\nwant %+v", k.Label, lang, res.Record, want)
			}
			if res.Meta != (ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits}) {
				t.Errorf("%s: meta %+v, want %d credits left", k.Label, res.Meta, credits)
			}
			if res.Has("latitude") != k.HasLocation || (res.Record.Latitude != nil) != k.HasLocation {
				t.Errorf("%s: latitude present %v, pointer %v; the data has a location: %v", k.Label, res.Has("latitude"), res.Record.Latitude, k.HasLocation)
			}
			if res.RateLimit.Limit != account.ProMonthlyLimit || res.RateLimit.Remaining != account.ProMonthlyLimit-(100-credits) {
				t.Errorf("%s: rate limit %+v", k.Label, res.RateLimit)
			}
		}
	}
	// A public address the data does not cover: only the IP is known.
	res, err := c.LookupDetail(context.Background(), geotest.UncoveredIP, ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.IP != geotest.UncoveredIP || res.Record.Country != "" || res.Record.Latitude != nil || res.Has("latitude") {
		t.Errorf("uncovered: %+v", res.Record)
	}
	// A mapped address is looked up by the IPv4 inside and keeps its text.
	rec, _, err := c.Lookup(context.Background(), geotest.MappedIP, ipatlas.English)
	if err != nil || rec.IP != geotest.MappedIP || rec.City != geotest.MountainView.City {
		t.Errorf("mapped: %+v, %v", rec, err)
	}
}

func TestServerLocalValidationMakesNoRequest(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Free, 0, 10)
	c := newClient(t, client.Config{URL: s.url, APIKey: key})
	for _, ip := range []string{"not-an-ip", "1.2.3", "127.0.0.1", "10.0.0.1", "::1", "fe80::1", "2001:db8::1", "224.0.0.1"} {
		_, _, err := c.Lookup(context.Background(), ip, ipatlas.English)
		if !errors.Is(err, ipatlas.ErrInvalidIP) && !errors.Is(err, ipatlas.ErrPrivateIP) {
			t.Errorf("%s: %v", ip, err)
		}
	}
	if n := s.hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
	u, err := c.Usage(context.Background())
	if err != nil || u.Used != 0 || u.Credits != 10 {
		t.Fatalf("usage after local failures: %+v, %v; want nothing charged", u, err)
	}
}

func TestServerErrors(t *testing.T) {
	s := startService(t)
	ip := geotest.MountainView.IP
	ctx := context.Background()
	reset := account.PeriodReset(serverNow).Sub(serverNow)

	t.Run("InvalidAPIKey", func(t *testing.T) {
		for _, key := range []string{"", "ipa_nope_nope", "Bearer x"} {
			c := newClient(t, client.Config{URL: s.url, APIKey: key})
			_, _, err := c.Lookup(ctx, ip, ipatlas.Chinese)
			var e *ipatlas.Error
			if !errors.Is(err, ipatlas.ErrInvalidAPIKey) || !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Meta == nil || e.Meta.IsLoggedIn {
				t.Errorf("key %q: %#v", key, err)
			}
			if e != nil && e.Message == ipatlas.CodeInvalidAPIKey.Text(ipatlas.English) {
				t.Errorf("key %q: the message is English for lang zh: %q", key, e.Message)
			}
			if _, err := c.Usage(ctx); !errors.Is(err, ipatlas.ErrInvalidAPIKey) {
				t.Errorf("usage with key %q: %v", key, err)
			}
		}
	})
	t.Run("RateLimitExceeded", func(t *testing.T) {
		key := s.customer(t, account.Enterprise, 1, 100)
		c := newClient(t, client.Config{URL: s.url, APIKey: key, Retry: client.RetryPolicy{RateLimited: true}})
		if _, _, err := c.Lookup(ctx, ip, ipatlas.English); err != nil {
			t.Fatal(err)
		}
		_, _, err := c.Lookup(ctx, geotest.Beijing.IP, ipatlas.English)
		var e *ipatlas.Error
		if !errors.Is(err, ipatlas.ErrRateLimitExceeded) || !errors.As(err, &e) || e.Status != http.StatusTooManyRequests {
			t.Fatalf("err = %v", err)
		}
		// Retry-After says "next month": far beyond MaxWait, so the client
		// returned at once instead of waiting.
		if e.RetryAfter != reset || e.Meta == nil || e.Meta.CurrentCredits != 99 {
			t.Errorf("RetryAfter %v (want %v), meta %+v", e.RetryAfter, reset, e.Meta)
		}
		// The cached first answer still works.
		if r, err := c.LookupDetail(ctx, ip, ipatlas.English); err != nil || !r.Cached {
			t.Errorf("cached answer after the quota ran out: %+v, %v", r, err)
		}
	})
	t.Run("InsufficientCredits", func(t *testing.T) {
		key := s.customer(t, account.Free, 0, 0)
		c := newClient(t, client.Config{URL: s.url, APIKey: key})
		_, _, err := c.Lookup(ctx, ip, ipatlas.English)
		var e *ipatlas.Error
		if !errors.Is(err, ipatlas.ErrInsufficientCredits) || !errors.As(err, &e) || e.Status != http.StatusPaymentRequired || e.Meta == nil || e.Meta.CurrentCredits != 0 {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("ServiceUnavailable", func(t *testing.T) {
		s := startService(t)
		key := s.customer(t, account.Free, 0, 10)
		c := newClient(t, client.Config{URL: s.url, APIKey: key})
		s.store.Close()
		_, _, err := c.Lookup(ctx, ip, ipatlas.English)
		var e *ipatlas.Error
		if !errors.Is(err, ipatlas.ErrServiceUnavailable) || !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestServerCacheAndSingleFlightCharge(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Free, 0, 100)
	clk := &clock{t: time.Now()}
	c := newClient(t, client.Config{URL: s.url, APIKey: key, Now: clk.Now})
	ctx := context.Background()
	// Concurrent lookups of one address share one request or hit the cache
	// it filled: either way one charge. That they share the flight is
	// TestSingleFlight's (package client) to prove.
	const n = 12
	var wg sync.WaitGroup
	recs := make([]ipatlas.Record, n)
	for i := range n {
		wg.Go(func() {
			r, _, err := c.Lookup(ctx, geotest.Nuremberg.IP, ipatlas.Chinese)
			if err != nil {
				t.Error(err)
			}
			recs[i] = r
		})
	}
	wg.Wait()
	for _, r := range recs {
		if !reflect.DeepEqual(r, geotest.Nuremberg.Want(ipatlas.Chinese)) {
			t.Fatalf("record %+v", r)
		}
	}
	used := func() int64 {
		u, err := c.Usage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return u.Used
	}
	if got := used(); got != 1 {
		t.Fatalf("%d concurrent lookups were charged %d times, want 1", n, got)
	}
	clk.Add(client.DefaultCacheTTL - time.Nanosecond)
	if r, err := c.LookupDetail(ctx, geotest.Nuremberg.IP, ipatlas.Chinese); err != nil || !r.Cached || r.Meta.CurrentCredits != 99 {
		t.Fatalf("inside the TTL: %+v, %v", r, err)
	}
	if got := used(); got != 1 {
		t.Fatalf("a cache hit was charged: used %d", got)
	}
	clk.Add(time.Nanosecond)
	if r, err := c.LookupDetail(ctx, geotest.Nuremberg.IP, ipatlas.Chinese); err != nil || r.Cached || r.Meta.CurrentCredits != 98 {
		t.Fatalf("at the TTL: %+v, %v; want a fresh, charged answer", r, err)
	}
	if got := used(); got != 2 {
		t.Fatalf("used %d, want 2", got)
	}
}

func TestServerErrorsAreNotCached(t *testing.T) {
	s := startService(t)
	ctx := context.Background()
	a, err := s.svc.CreateAccount(ctx, account.AccountParams{Name: "x", Tier: account.Free, Credits: new(int64)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.svc.CreateKey(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, client.Config{URL: s.url, APIKey: k.Secret})
	if _, _, err := c.Lookup(ctx, geotest.Singapore.IP, ipatlas.English); !errors.Is(err, ipatlas.ErrInsufficientCredits) {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.svc.AddCredits(ctx, a.ID, 5, "test top-up"); err != nil {
		t.Fatal(err)
	}
	rec, meta, err := c.Lookup(ctx, geotest.Singapore.IP, ipatlas.English)
	if err != nil || rec.City != geotest.Singapore.City || meta.CurrentCredits != 4 {
		t.Fatalf("after the top-up: %+v %+v %v", rec, meta, err)
	}
}

func TestServerMyIP(t *testing.T) {
	s := startService(t)
	c := newClient(t, client.Config{URL: s.url})
	ctx := context.Background()
	m, err := c.MyIP(ctx)
	if err != nil || m.IP != "127.0.0.1" || m.IPVersion != ipatlas.IPv4 || m.Code != ipatlas.MyIPCodeSuccess {
		t.Fatalf("MyIP over IPv4 = %+v, %v", m, err)
	}
	a, err := c.MyIPv4(ctx)
	if err != nil || a != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("MyIPv4 = %v, %v", a, err)
	}
	// Nothing listens on ::1 at the IPv4 port.
	if _, err := c.MyIPv6(ctx); !errors.Is(err, client.ErrFamilyUnavailable) {
		t.Fatalf("MyIPv6 on an IPv4-only name: %v", err)
	}
	both, err := c.MyIPs(ctx)
	if err != nil || both.IPv4 != a || both.IPv6.IsValid() || !errors.Is(both.IPv6Err, client.ErrFamilyUnavailable) {
		t.Fatalf("MyIPs = %+v, %v", both, err)
	}

	s.need6(t)
	c6 := newClient(t, client.Config{URL: s.url, IPv6URL: s.url6 + "/ipv6", TestURL: s.url6})
	m, err = c6.MyIP(ctx)
	if err != nil || m.IP != "::1" || m.IPVersion != ipatlas.IPv6 {
		t.Fatalf("MyIP over IPv6 = %+v, %v", m, err)
	}
	both, err = c6.MyIPs(ctx)
	if err != nil || both.IPv4 != a || both.IPv6 != netip.IPv6Loopback() || both.IPv4Err != nil || both.IPv6Err != nil {
		t.Fatalf("MyIPs = %+v, %v", both, err)
	}
	if n := s.hits.Load(); n == 0 {
		t.Fatal("no request reached the server")
	}
}

// hostsDialer resolves the test's host names to the server's listeners,
// as DNS with A and AAAA records would: "tcp4" gets the IPv4 listener,
// "tcp6" the IPv6 one.
func hostsDialer(v4, v6 string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if host == "v4.test" || host == "v6.test" || host == "api.test" {
			if network == "tcp6" {
				return d.DialContext(ctx, network, v6)
			}
			return d.DialContext(ctx, network, v4)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// TestServerSeparateHosts deploys Get my IP as the spec does: hosts that
// answer GET / (here v4.test and v6.test, both with A and AAAA records).
// The client must ask each over its own family.
func TestServerSeparateHosts(t *testing.T) {
	s := startService(t, func(c *server.Config) { c.IPv4Host, c.IPv6Host = "v4.test", "v6.test" })
	s.need6(t)
	hc := &http.Client{Transport: &http.Transport{DialContext: hostsDialer(s.url[len("http://"):], s.url6[len("http://"):])}}
	port := s.url[len("http://127.0.0.1:"):]
	c := newClient(t, client.Config{
		URL: "http://api.test:" + port, IPv4URL: "http://v4.test:" + port, IPv6URL: "http://v6.test:" + port,
		HTTPClient: hc,
	})
	ctx := context.Background()
	both, err := c.MyIPs(ctx)
	if err != nil || both.IPv4 != netip.MustParseAddr("127.0.0.1") || both.IPv6 != netip.IPv6Loopback() {
		t.Fatalf("MyIPs via separate hosts = %+v, %v", both, err)
	}

	// A transport the client cannot pin reaches v6.test over IPv4 (this
	// "DNS" prefers A): the server refuses with 421 and the client reports
	// IPv6 as unavailable.
	unpinned := newClient(t, client.Config{IPv6URL: "http://v6.test:" + port, HTTPClient: &http.Client{Transport: roundTripper{hc.Transport}}})
	_, err = unpinned.MyIPv6(ctx)
	var fe *client.FamilyError
	if !errors.As(err, &fe) || fe.Family != ipatlas.IPv6 || fe.Err != nil {
		t.Fatalf("IPv6 asked over IPv4: %v", err)
	}
}

func TestServerPingAndUsage(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Enterprise, 50, 20)
	c := newClient(t, client.Config{URL: s.url, APIKey: key})
	ctx := context.Background()
	p, err := c.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !p.ServerTime.Equal(serverNow) || p.IP != "127.0.0.1" || p.Version != serverVersion || p.RTT <= 0 {
		t.Fatalf("Ping = %+v", p)
	}
	for _, k := range geotest.Places[:3] {
		if _, _, err := c.Lookup(ctx, k.IP, ipatlas.English); err != nil {
			t.Fatal(err)
		}
	}
	u, err := c.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := ipatlas.Usage{Tier: "enterprise", Period: account.Period(serverNow), Used: 3, Limit: 50, Remaining: 47, Reset: account.PeriodReset(serverNow), Credits: 17}
	got := u
	got.AccountID, got.KeyID, got.QueryCost = 0, "", 0
	if got.Reset.Equal(want.Reset) {
		got.Reset = want.Reset
	}
	if got != want || u.KeyID == "" || u.AccountID == 0 {
		t.Fatalf("Usage = %+v\nwant %+v", u, want)
	}
}

// The shared server of the examples, started on first use and stopped by
// TestMain.
var (
	exampleOnce    sync.Once
	exampleSvc     *service
	exampleCleanup []func()
	exampleDir     string
)

// exampleTB is the little of testing.TB that startService and the fixture
// helpers use (Helper, Fatal, Fatalf, TempDir, Cleanup), for a server that
// outlives any one test; the embedded nil TB panics on anything else.
type exampleTB struct{ testing.TB }

func (exampleTB) Helper()                      {}
func (exampleTB) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (exampleTB) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (exampleTB) Cleanup(f func())             { exampleCleanup = append(exampleCleanup, f) }
func (e exampleTB) TempDir() string {
	d, err := os.MkdirTemp(exampleDir, "")
	if err != nil {
		panic(err)
	}
	return d
}

// exampleServer returns the URL of an ipatlas server for the examples.
func exampleServer() string {
	exampleOnce.Do(func() {
		d, err := os.MkdirTemp("", "ipatlas-examples-")
		if err != nil {
			panic(err)
		}
		exampleDir = d
		exampleCleanup = append(exampleCleanup, func() { os.RemoveAll(d) })
		exampleSvc = startService(exampleTB{})
	})
	return exampleSvc.url
}

// exampleKey creates an API key on the example server whose account has
// this many credits.
func exampleKey(credits int64) string {
	exampleServer()
	return exampleSvc.customer(exampleTB{}, account.Free, 0, credits)
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTripper is a transport that is not an *http.Transport, so the
// client cannot pin the dialled family: the server's view decides.
type roundTripper struct{ http.RoundTripper }

// clock is a settable clock for Config.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(exampleCleanup) - 1; i >= 0; i-- {
		exampleCleanup[i]()
	}
	os.Exit(code)
}
