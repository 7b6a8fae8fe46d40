package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

var testProxies = newProxies([]netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("2001:db8:ffff::/48"),
	netip.MustParsePrefix("::ffff:192.168.0.0/112"), // means 192.168.0.0/16
})

func TestClientAddr(t *testing.T) {
	const proxy = "10.0.0.1:5555"
	for _, tc := range []struct {
		name    string
		remote  string
		trusted proxies
		header  string // ForwardedHeader setting
		xff     []string
		fwd     []string
		want    string // "" for no address
	}{
		// Nobody else's headers are believed.
		{name: "untrusted peer", remote: "198.51.100.50:1", trusted: testProxies, xff: []string{"1.2.3.4"}, want: "198.51.100.50"},
		{name: "no proxies configured", remote: proxy, xff: []string{"1.2.3.4"}, fwd: []string{"for=1.2.3.4"}, want: "10.0.0.1"},
		{name: "untrusted peer, Forwarded", remote: "198.51.100.50:1", trusted: testProxies, fwd: []string{"for=1.2.3.4"}, want: "198.51.100.50"},

		// X-Forwarded-For from a trusted proxy.
		{name: "xff one", remote: proxy, trusted: testProxies, xff: []string{"198.51.100.1"}, want: "198.51.100.1"},
		{name: "xff spoofed left part ignored", remote: proxy, trusted: testProxies, xff: []string{"1.1.1.1, 198.51.100.1"}, want: "198.51.100.1"},
		{name: "xff skips trusted hops", remote: proxy, trusted: testProxies, xff: []string{"1.1.1.1, 198.51.100.1, 10.0.0.5, 192.168.3.3"}, want: "198.51.100.1"},
		{name: "xff repeated lines are one list", remote: proxy, trusted: testProxies, xff: []string{"1.1.1.1, 198.51.100.1", "10.0.0.2"}, want: "198.51.100.1"},
		{name: "xff right-most line wins", remote: proxy, trusted: testProxies, xff: []string{"198.51.100.1", "198.51.100.2"}, want: "198.51.100.2"},
		{name: "xff all trusted: left-most", remote: proxy, trusted: testProxies, xff: []string{"10.0.0.9, 10.0.0.8"}, want: "10.0.0.9"},
		{name: "xff garbage at the right: the proxy", remote: proxy, trusted: testProxies, xff: []string{"198.51.100.1, garbage"}, want: "10.0.0.1"},
		{name: "xff garbage after trusted hop", remote: proxy, trusted: testProxies, xff: []string{"198.51.100.1, unknown, 10.0.0.5"}, want: "10.0.0.5"},
		{name: "xff empty entries", remote: proxy, trusted: testProxies, xff: []string{" 198.51.100.1 , , "}, want: "198.51.100.1"},
		{name: "xff empty header", remote: proxy, trusted: testProxies, xff: []string{""}, want: "10.0.0.1"},
		{name: "xff ipv4 with port", remote: proxy, trusted: testProxies, xff: []string{"198.51.100.1:4711"}, want: "198.51.100.1"},
		{name: "xff bracketed ipv6 with port", remote: proxy, trusted: testProxies, xff: []string{"[2001:db8::1]:80"}, want: "2001:db8::1"},
		{name: "xff bracketed ipv6", remote: proxy, trusted: testProxies, xff: []string{"[2001:db8::1]"}, want: "2001:db8::1"},
		{name: "xff ipv6", remote: proxy, trusted: testProxies, xff: []string{"2001:DB8::1"}, want: "2001:db8::1"},
		{name: "xff mapped is ipv4", remote: proxy, trusted: testProxies, xff: []string{"::ffff:198.51.100.1"}, want: "198.51.100.1"},
		{name: "xff zone dropped", remote: proxy, trusted: testProxies, xff: []string{"fe80::1%eth0"}, want: "fe80::1"},
		{name: "xff bad port", remote: proxy, trusted: testProxies, xff: []string{"198.51.100.1:http"}, want: "10.0.0.1"},
		{name: "xff unbracketed ipv6 port is an address", remote: proxy, trusted: testProxies, xff: []string{"2001:db8::1:80"}, want: "2001:db8::1:80"},
		{name: "trusted mapped peer", remote: "[::ffff:10.0.0.1]:5", trusted: testProxies, xff: []string{"198.51.100.1"}, want: "198.51.100.1"},
		{name: "trusted via mapped prefix", remote: "192.168.7.7:5", trusted: testProxies, xff: []string{"198.51.100.1"}, want: "198.51.100.1"},
		{name: "trusted ipv6 peer", remote: "[2001:db8:ffff::1]:5", trusted: testProxies, xff: []string{"2001:db8:1::1"}, want: "2001:db8:1::1"},

		// RFC 7239 Forwarded.
		{name: "fwd rfc example", remote: proxy, trusted: testProxies, fwd: []string{"for=192.0.2.60;proto=http;by=203.0.113.43"}, want: "192.0.2.60"},
		{name: "fwd quoted ipv6 with port", remote: proxy, trusted: testProxies, fwd: []string{`for="[2001:db8:cafe::17]:4711"`}, want: "2001:db8:cafe::17"},
		{name: "fwd quoted ipv6", remote: proxy, trusted: testProxies, fwd: []string{`for="[2001:db8:cafe::17]"`}, want: "2001:db8:cafe::17"},
		{name: "fwd list right-most", remote: proxy, trusted: testProxies, fwd: []string{"for=192.0.2.43, for=198.51.100.17"}, want: "198.51.100.17"},
		{name: "fwd skips trusted", remote: proxy, trusted: testProxies, fwd: []string{"for=192.0.2.43, for=10.1.1.1;proto=https"}, want: "192.0.2.43"},
		{name: "fwd lines", remote: proxy, trusted: testProxies, fwd: []string{"for=1.1.1.1", "for=192.0.2.43"}, want: "192.0.2.43"},
		{name: "fwd case and spaces", remote: proxy, trusted: testProxies, fwd: []string{"proto=https ; FOR = 192.0.2.44"}, want: "192.0.2.44"},
		{name: "fwd obfuscated", remote: proxy, trusted: testProxies, fwd: []string{`for="_gazonk"`}, want: "10.0.0.1"},
		{name: "fwd unknown", remote: proxy, trusted: testProxies, fwd: []string{"for=unknown"}, want: "10.0.0.1"},
		{name: "fwd quoted comma", remote: proxy, trusted: testProxies, fwd: []string{`for="198.51.100.1,198.51.100.2"`}, want: "10.0.0.1"},
		{name: "fwd escaped quote", remote: proxy, trusted: testProxies, fwd: []string{`for="198.51.100.\"1"`}, want: "10.0.0.1"},
		{name: "fwd unterminated", remote: proxy, trusted: testProxies, fwd: []string{`for="198.51.100.1`}, want: "10.0.0.1"},
		{name: "fwd element without for", remote: proxy, trusted: testProxies, fwd: []string{"for=198.51.100.1, proto=https;by=10.0.0.1"}, want: "10.0.0.1"},
		{name: "fwd ipv4 port quoted", remote: proxy, trusted: testProxies, fwd: []string{`for="198.51.100.1:8080"`}, want: "198.51.100.1"},

		// Which header.
		{name: "auto prefers xff", remote: proxy, trusted: testProxies, xff: []string{"198.51.100.1"}, fwd: []string{"for=203.0.113.99"}, want: "198.51.100.1"},
		{name: "auto falls back to forwarded", remote: proxy, trusted: testProxies, fwd: []string{"for=203.0.113.99"}, want: "203.0.113.99"},
		{name: "pinned forwarded ignores xff", remote: proxy, trusted: testProxies, header: HeaderForwarded, xff: []string{"198.51.100.1"}, fwd: []string{"for=203.0.113.99"}, want: "203.0.113.99"},
		{name: "pinned forwarded without it", remote: proxy, trusted: testProxies, header: HeaderForwarded, xff: []string{"198.51.100.1"}, want: "10.0.0.1"},
		{name: "pinned xff ignores forwarded", remote: proxy, trusted: testProxies, header: HeaderXForwardedFor, fwd: []string{"for=203.0.113.99"}, want: "10.0.0.1"},

		// Peers.
		{name: "mapped peer", remote: "[::ffff:198.51.100.50]:1", want: "198.51.100.50"},
		{name: "peer with zone", remote: "[fe80::1%lo]:1", want: "fe80::1"},
		{name: "peer without port", remote: "198.51.100.50", want: "198.51.100.50"},
		{name: "unix socket", remote: "@", want: ""},
		{name: "unix socket with proxies", remote: "@", trusted: testProxies, xff: []string{"198.51.100.1"}, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			for _, v := range tc.fwd {
				r.Header.Add("Forwarded", v)
			}
			got := clientAddr(r, tc.trusted, tc.header)
			if addrString(got) != tc.want {
				t.Errorf("got %q, want %q", addrString(got), tc.want)
			}
		})
	}
}

func TestNewProxies(t *testing.T) {
	got := newProxies([]netip.Prefix{
		netip.MustParsePrefix("10.1.2.3/8"),            // masked
		netip.MustParsePrefix("::ffff:172.16.0.0/108"), // 172.16.0.0/12
		netip.MustParsePrefix("::ffff:0:0/80"),         // wider than the mapped range: dropped
		{},                                             // invalid: dropped
		netip.MustParsePrefix("2001:db8::/32"),
	})
	want := proxies{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("2001:db8::/32"),
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("got %v, want %v", got, want)
		}
	}
}

// TestTrustedProxyThroughHandler checks that the forwarded client is the
// one every endpoint sees: Get my IP, the family checks, ping, the log.
func TestTrustedProxyThroughHandler(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	})
	const proxy = "10.0.0.1:3000"
	for _, tc := range []struct {
		name, path, remote, xff string
		status                  int
		contains                string
	}{
		{"myip forwarded v4", "/api/ip/myip", proxy, "1.1.1.1, 198.51.100.1", 200, `"IP":"198.51.100.1","IPVersion":"IPv4"`},
		{"myip forwarded v6", "/api/ip/myip", "[::1]:3000", "2001:db8::77", 200, `"IP":"2001:db8::77","IPVersion":"IPv6"`},
		{"myip forwarded mapped", "/api/ip/myip", proxy, "::ffff:198.51.100.1", 200, `"IP":"198.51.100.1","IPVersion":"IPv4"`},
		{"myip spoof from outside", "/api/ip/myip", "198.51.100.66:1", "203.0.113.1", 200, `"IP":"198.51.100.66"`},
		{"ipv6 forwarded", "/ipv6", proxy, "2001:db8::77", 200, "2001:db8::77\n"},
		{"ipv4 forwarded v6 client", "/ipv4", proxy, "2001:db8::77", 421, "arrived over IPv6"},
		{"ping", "/api/ping", proxy, "198.51.100.1", 200, `"ip":"198.51.100.1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, req{method: "GET", path: tc.path, remote: tc.remote, header: map[string]string{"X-Forwarded-For": tc.xff}})
			if r.Code != tc.status || !strings.Contains(r.Body.String(), tc.contains) {
				t.Errorf("%d %q, want %d containing %q", r.Code, r.Body, tc.status, tc.contains)
			}
		})
	}
	// The log line names the forwarded client, not the proxy.
	var found bool
	for _, line := range strings.Split(e.logs.String(), "\n") {
		var l struct{ Path, Client string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Path == "/api/ping" {
			found = l.Client == "198.51.100.1"
		}
	}
	if !found {
		t.Errorf("log line of /api/ping does not name the forwarded client:\n%s", e.logs)
	}
}

// FuzzClientAddr feeds arbitrary forwarding headers from a trusted proxy.
// The walk must never panic, never return an invalid address, and never
// invent one: the answer is the peer or an address one of the headers
// names.
func FuzzClientAddr(f *testing.F) {
	f.Add("198.51.100.1", "for=192.0.2.60;proto=http")
	f.Add("1.1.1.1, 198.51.100.1, 10.0.0.5", "")
	f.Add("", `for="[2001:db8:cafe::17]:4711", for=unknown`)
	f.Add("[2001:db8::1]:80,::ffff:1.2.3.4", `for="_hidden";by=10.0.0.1, FOR = 1.2.3.4`)
	f.Add(",,,", `for="unterminated`)
	f.Add("fe80::1%eth0", `for="a\"b,c";x=y`)
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:1234"
		r.Header = http.Header{}
		if xff != "" {
			r.Header["X-Forwarded-For"] = strings.Split(xff, "\n")
		}
		if fwd != "" {
			r.Header["Forwarded"] = strings.Split(fwd, "\n")
		}
		peer := netip.MustParseAddr("10.0.0.1")
		named := map[netip.Addr]bool{peer: true}
		for _, line := range r.Header["X-Forwarded-For"] {
			for _, item := range strings.Split(line, ",") {
				if a, ok := parseNodeAddr(item); ok {
					named[a] = true
				}
			}
		}
		fors := forwardedFor(r.Header["Forwarded"])
		for _, v := range fors {
			if a, ok := parseNodeAddr(v); ok {
				named[a] = true
			}
		}
		elements := 0
		for _, line := range r.Header["Forwarded"] {
			elements += strings.Count(line, ",") + 1
		}
		if len(fors) > elements {
			t.Errorf("forwardedFor found %d elements in %d comma-separated parts", len(fors), elements)
		}
		for _, h := range []string{HeaderAuto, HeaderXForwardedFor, HeaderForwarded} {
			got := clientAddr(r, testProxies, h)
			if !got.IsValid() || got.Zone() != "" || got.Is4In6() {
				t.Fatalf("%q: invalid or unnormalized answer %v", h, got)
			}
			if !named[got] {
				t.Fatalf("%q: answer %v is neither the peer nor in the headers", h, got)
			}
		}
	})
}
