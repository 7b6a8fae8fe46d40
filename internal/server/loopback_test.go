package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
	"github.com/ipatlas/ipatlas/internal/servertest"
)

// Tests on real sockets where the client's address is the point: IPv6
// clients over ::1, a chain of two real proxies, and a store that goes
// away under a listening server. The handler tests set RemoteAddr by hand;
// these show that what the socket says gets the same treatment.

// listenOn serves h (through GuardFraming, as serve does) on network addr
// and returns its base URL, or skips when the machine has no such
// loopback.
func listenOn(t *testing.T, h http.Handler, network, addr string) string {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s %s (%v): this test needs the machine's IPv4 and IPv6 loopback (ip -6 addr should list ::1)", network, addr, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(GuardFraming(hs, ln))
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

// fromAddr is a client whose connections leave from local (an address of
// the loopback), each request on a new connection.
func fromAddr(t *testing.T, local string) *http.Client {
	t.Helper()
	d := &net.Dialer{Timeout: 10 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
		probe, err := d.Dial("tcp", mustListen(t))
		if err != nil {
			t.Skipf("cannot connect from %s (%v): this test needs the whole 127.0.0.0/8 on the loopback, as Linux has", local, err)
		}
		probe.Close()
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// mustListen is a listener on 127.0.0.1 that accepts and drops, for
// probing.
func mustListen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func get(t *testing.T, c *http.Client, url string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.Header
}

func myIPOf(t *testing.T, body string) ipatlas.MyIPResponse {
	t.Helper()
	var my ipatlas.MyIPResponse
	if err := json.Unmarshal([]byte(body), &my); err != nil {
		t.Fatalf("myip answered %q: %v", body, err)
	}
	return my
}

// An IPv6 client over ::1 is limited per address, whatever connection it
// comes on; clients a trusted proxy on ::1 names are limited by their /64.
// (The /ipv4 refusal of an IPv6 client over ::1 with 421 is in
// TestPlainTextOverRealSockets.)
func TestIPv6ClientsOverLoopback(t *testing.T) {
	limits := func(c *Config) { c.AddrRate, c.AddrBurst = 1, 2 } // the test clock stands still: no refill

	t.Run("direct", func(t *testing.T) {
		e := newEnv(t, limits)
		base := listenOn(t, e.pub, "tcp6", "[::1]:0")
		c := fromAddr(t, "")
		st, body, _ := get(t, c, base+"/api/ip/myip", nil)
		if my := myIPOf(t, body); st != 200 || my.IP != "::1" || my.IPVersion != ipatlas.IPv6 {
			t.Fatalf("myip over ::1: %d %+v", st, my)
		}
		if st, body, _ := get(t, c, base+"/ipv6", nil); st != 200 || body != "::1\n" {
			t.Fatalf("/ipv6 over ::1: %d %q", st, body)
		}
		// A third request, on a third connection (another port): the
		// bucket is the address's.
		st, body, h := get(t, c, base+"/api/ping", nil)
		if st != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, `"code":"RateLimitExceeded"`) {
			t.Errorf("third request from ::1: %d %v %s, want 429 with Retry-After", st, h, body)
		}
	})

	t.Run("behind a proxy on ::1", func(t *testing.T) {
		e := newEnv(t, limits, func(c *Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("::1/128")}
		})
		base := listenOn(t, e.pub, "tcp6", "[::1]:0")
		c := fromAddr(t, "")
		for _, step := range []struct {
			client string
			status int
		}{
			{"2001:db8:1:2::1", 200},
			{"2001:db8:1:2:ffff::9", 200},    // the same /64
			{"2001:db8:1:2:aaaa::1", 429},    // the same /64, over its burst
			{"2001:db8:1:3::1", 200},         // the next /64
			{"[2001:db8:1:2::77]:4711", 429}, // bracketed, with a port
			{"198.51.100.1", 200},
		} {
			st, body, _ := get(t, c, base+"/api/ip/myip", map[string]string{"X-Forwarded-For": "203.0.113.9, " + step.client})
			if st != step.status {
				t.Errorf("client %s via ::1: %d %s, want %d", step.client, st, body, step.status)
			}
			if st == 200 {
				if my := myIPOf(t, body); my.IP != step.client {
					t.Errorf("client %s via ::1: myip %q", step.client, my.IP)
				}
			}
		}
		// The proxy's own address has its own bucket, untouched.
		if st, body, _ := get(t, c, base+"/ipv6", nil); st != 200 || body != "::1\n" {
			t.Errorf("the proxy itself: %d %q", st, body)
		}
	})
}

// A client on 127.0.0.5 reaches the server through two real proxies: the
// first calls the second over IPv6 (from ::1), the second calls the server
// from 127.0.0.2; each appends the address it was called from to
// X-Forwarded-For and Forwarded. The walk from the right skips
// the trusted proxies and stops at the first address it does not trust:
// the client's, whatever the client wrote in the headers itself.
func TestForwardingThroughTwoProxies(t *testing.T) {
	const client, otherClient, secondHop = "127.0.0.5", "127.0.0.6", "127.0.0.2"
	both := []netip.Prefix{netip.MustParsePrefix("::1/128"), netip.MustParsePrefix(secondHop + "/32")}
	servers := map[string]string{} // name -> base URL
	for _, s := range []struct {
		name    string
		trusted []netip.Prefix
		header  string
	}{
		{"xff", both, HeaderXForwardedFor},
		{"forwarded", both, HeaderForwarded},
		{"auto", both, HeaderAuto},
		{"last hop only", both[1:], HeaderXForwardedFor},
	} {
		e := newEnv(t, func(c *Config) {
			c.TrustedProxies, c.ForwardedHeader = s.trusted, s.header
			c.AddrRate, c.AddrBurst = 1, 1
		})
		// The second proxy listens on ::1 and calls the server from
		// 127.0.0.2; the first listens on 127.0.0.1 and calls the second
		// over IPv6, from ::1.
		srvURL := listenOn(t, e.pub, "tcp4", "127.0.0.1:0")
		second := listenOn(t, proxyTo(t, srvURL, secondHop), "tcp6", "[::1]:0")
		servers[s.name] = listenOn(t, proxyTo(t, second, "::1"), "tcp4", "127.0.0.1:0")
	}
	spoof := map[string]string{"X-Forwarded-For": "203.0.113.66", "Forwarded": "for=203.0.113.66"}

	for name, want := range map[string]string{"xff": client, "forwarded": client, "auto": client, "last hop only": "::1"} {
		t.Run(name, func(t *testing.T) {
			st, body, _ := get(t, fromAddr(t, client), servers[name]+"/api/ip/myip", spoof)
			if my := myIPOf(t, body); st != 200 || my.IP != want {
				t.Errorf("myip through two proxies: %d %q, want %s", st, my.IP, want)
			}
			// The per-address limit holds the walked-to address, not the
			// proxy that called the server.
			if st, _, _ := get(t, fromAddr(t, client), servers[name]+"/api/ip/myip", spoof); st != 429 {
				t.Errorf("second request from %s: %d, want 429", want, st)
			}
			st, _, _ = get(t, fromAddr(t, otherClient), servers[name]+"/api/ip/myip", nil)
			if wantSt := map[bool]int{true: 429, false: 200}[want == "::1"]; st != wantSt {
				t.Errorf("another client behind the same proxies: %d, want %d", st, wantSt)
			}
		})
	}
}

// proxyTo is a reverse proxy to target whose outgoing connections leave
// from local and which appends the caller's address to Forwarded, as
// httputil.ReverseProxy does to X-Forwarded-For.
func proxyTo(t *testing.T, target, local string) http.Handler {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	direct := p.Director
	p.Director = func(r *http.Request) {
		direct(r)
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if strings.Contains(host, ":") {
			host = `"[` + host + `]"`
		}
		r.Header["Forwarded"] = []string{strings.Join(append(r.Header["Forwarded"], "for="+host), ", ")}
	}
	d := &net.Dialer{Timeout: 10 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	p.Transport = &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
	return p
}

// When the store goes away under a listening server, metered requests get
// 503 ServiceUnavailable, and none of them is charged, then or after the
// store is back: the ledger, the quota and the balance hold only the
// successes the client saw.
func TestStoreOutageChargesNothing(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	ctx := context.Background()
	direct, err := postgres.Open(ctx, dsn, postgres.Options{Migrate: true, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Close() })
	books := &account.Service{Store: direct}
	px := pgtest.NewProxy(t, dsn)
	st, err := postgres.Open(ctx, px.DSN(t, dsn), postgres.Options{Schema: schema, Timeout: 2 * time.Second, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	const credits = 10
	c := int64(credits)
	acct, err := books.CreateAccount(ctx, account.AccountParams{Name: "outage", Tier: account.Pro, Credits: &c})
	if err != nil {
		t.Fatal(err)
	}
	k, err := books.CreateKey(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	unseen, err := books.CreateKey(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}

	svc := &account.Service{Store: st}
	meter := account.NewMeter(st, account.MeterOptions{MaxDelay: time.Millisecond})
	srv := mustNew(t, Config{Logger: slog.New(slog.DiscardHandler)}, Deps{Geo: servertest.New(t, nil).Geo, Accounts: svc, Meter: meter})
	base := listenOn(t, srv.Handler(), "tcp4", "127.0.0.1:0")
	hc := fromAddr(t, "")
	post := func(path, key, body string) (int, ipatlas.ErrorCode, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var env struct{ Code ipatlas.ErrorCode }
		json.Unmarshal(b, &env)
		return res.StatusCode, env.Code, string(b)
	}
	query := `{"ip":"` + geotest.MountainView.IP + `"}`
	batch := `{"ips":["` + geotest.MountainView.IP + `","` + geotest.Beijing.IP + `"]}`

	if st, _, body := post("/api/ip-query", k.Secret, query); st != 200 {
		t.Fatalf("before the outage: %d %s", st, body)
	}
	px.Cut(pgtest.Down)
	for _, tc := range []struct{ name, path, key, body string }{
		{"query, key authenticated before", "/api/ip-query", k.Secret, query},
		{"batch", "/api/ip-query/batch", k.Secret, batch},
		{"query, key never seen", "/api/ip-query", unseen.Secret, query},
	} {
		st, code, body := post(tc.path, tc.key, tc.body)
		if st != http.StatusServiceUnavailable || code != ipatlas.CodeServiceUnavailable {
			t.Errorf("%s in the outage: %d %s, want 503 ServiceUnavailable", tc.name, st, body)
		}
	}
	if st, _, _ := get(t, hc, base+"/api/ip/myip", nil); st != 200 {
		t.Errorf("myip in the outage: %d", st)
	}
	px.Restore()
	if st, _, body := post("/api/ip-query", k.Secret, query); st != 200 {
		t.Fatalf("after the outage: %d %s", st, body)
	}
	// Whatever the meter still held is flushed now.
	if err := meter.Close(ctx); err != nil {
		t.Fatal(err)
	}

	u, err := books.Usage(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Used != 2 || u.Credits != credits-2 {
		t.Errorf("after 2 successes and 3 refusals: used %d, credits %d; want 2 and %d", u.Used, u.Credits, credits-2)
	}
	if u, err := books.Usage(ctx, unseen.ID); err != nil || u.Used != 0 {
		t.Errorf("the unseen key: used %d (%v), want 0", u.Used, err)
	}
	ledger, err := books.Ledger(ctx, acct.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var charged, queries int64
	for _, l := range ledger {
		if l.Delta < 0 {
			charged -= l.Delta
			queries += l.Queries
		}
	}
	if charged != 2 || queries != 2 {
		t.Errorf("ledger: %d credits charged for %d queries, want 2 for 2:\n%+v", charged, queries, ledger)
	}
}
