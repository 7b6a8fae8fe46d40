package netaddr

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/ipatlas/ipatlas"
)

func TestParseRejects(t *testing.T) {
	tests := []struct {
		in     string
		reason reason
	}{
		{"", reasonEmpty},
		{" \t\r\n ", reasonEmpty},
		{"fe80::1%eth0", reasonZone},
		{"1.2.3.4%1", reasonZone},
		{"010.1.1.1", reasonLeadingZero},
		{"1.2.3.01", reasonLeadingZero},
		{"1.00.3.4", reasonLeadingZero},
		{"::ffff:010.1.1.1", reasonLeadingZero},
		{"64:ff9b::1.2.3.00", reasonLeadingZero},
		{"1.2.3.4:80", reasonPort},
		{"[::1]:80", reasonPort},
		{"[2001:db8::1]:443", reasonPort},
		{"[::1]", reasonBrackets},
		{"[1.2.3.4]", reasonBrackets},
		{"::1]", reasonBrackets},
		{"1.2.3.0/24", reasonCIDR},
		{"2001:db8::/32", reasonCIDR},
		{"1.2.3.4.5", reasonOctets},
		{"1.2.3", reasonOctets},
		{"::ffff:1.2.3", reasonOctets},
		{"1..2.3", reasonEmptyOctet},
		{"1.2.3.", reasonEmptyOctet},
		{"256.1.1.1", reasonRange},
		{"1.2.3.1000", reasonRange},
		{"::ffff:1.2.3.256", reasonRange},
		{"a.b.c.d", reasonDecimal},
		{"0x7f.0.0.1", unexpected('x')},
		{"1", reasonNotIP},
		{"16843009", reasonNotIP},
		{"abc", reasonNotIP},
		{"1.2.3.4 5", unexpected(' ')},
		{"１.２.３.４", unexpected('１')},
		{"\u00a01.2.3.4", unexpected('\u00a0')},
		{"1.2.3.4\x00", reasonNUL},
		{"\x00", reasonNUL},
		{"\xff1.2.3.4", reasonUTF8},
		{strings.Repeat("1", maxLen+1), reasonTooLong},
		{strings.Repeat("0:", 40) + "1", reasonTooLong},
		{"2001:db8:::1", reasonDoubleColon},
		{"1::2::3", reasonDoubleColon},
		{"2001:db8::12345", reasonGroup},
		{"1:2:3:4:5:6:7:8:9", reasonIPv6},
		{"1:2:3:4:5:6:7", reasonIPv6},
		{"1.2.3.4::", reasonOctets},
		{"g::1", unexpected('g')},
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error %q", tt.in, a, tt.reason)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error %T, want *ParseError", tt.in, err)
			continue
		}
		if pe.Reason != tt.reason.en || pe.ReasonZh != tt.reason.zh {
			t.Errorf("Parse(%q) reason %q %q, want %q", tt.in, pe.Reason, pe.ReasonZh, tt.reason)
		}
		// A Chinese answer names the rule in Chinese, never in English.
		if !hasHan(pe.ReasonIn(ipatlas.Chinese)) || pe.ReasonIn(ipatlas.English) != pe.Reason {
			t.Errorf("Parse(%q) reasons by language: %q, %q", tt.in, pe.ReasonIn(ipatlas.English), pe.ReasonIn(ipatlas.Chinese))
		}
		if a.IsValid() {
			t.Errorf("Parse(%q) returned valid %v with an error", tt.in, a)
		}
		if !strings.Contains(err.Error(), tt.reason.en) || !strings.HasPrefix(err.Error(), "invalid IP address ") {
			t.Errorf("Parse(%q).Error() = %q, want the reason in it", tt.in, err)
		}
	}
}

func TestParseErrorIsBoundedAndPrintable(t *testing.T) {
	_, err := Parse(strings.Repeat("\x01", 10_000))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want *ParseError", err)
	}
	if len(pe.Input) > maxLen+3 {
		t.Errorf("Input is %d bytes, want it cut to %d", len(pe.Input), maxLen)
	}
	if strings.ContainsRune(err.Error(), '\x01') {
		t.Errorf("Error() carries a raw control character: %q", err)
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"8.8.8.8", "8.8.8.8"},
		{" 8.8.8.8 ", "8.8.8.8"},
		{"\t1.1.1.1\r\n", "1.1.1.1"},
		{"\n\n2606:4700:4700::1111\t", "2606:4700:4700::1111"},
		{strings.Repeat(" ", 100) + "1.2.3.4" + strings.Repeat("\n", 100), "1.2.3.4"},
		{"0.0.0.0", "0.0.0.0"},
		{"255.255.255.255", "255.255.255.255"},
		{"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
		{"2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"},
		{"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},
		{"FE80::ABCD", "fe80::abcd"},
		{"::", "::"},
		{"::1", "::1"},
		{"0:0:0:0:0:0:0:1", "::1"},
		{"::ffff:1.2.3.4", "::ffff:1.2.3.4"},
		{"::FFFF:1.2.3.4", "::ffff:1.2.3.4"},
		{"0:0:0:0:0:ffff:0102:0304", "::ffff:1.2.3.4"},
		{"::1.2.3.4", "::102:304"},
		{"64:ff9b::1.2.3.4", "64:ff9b::102:304"},
		{"1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"},
		{"1::", "1::"},
		{"1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"},
		{"::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"},
		{"1:0:0:2:0:0:0:3", "1:0:0:2::3"},
		{"0001:02:003::", "1:2:3::"},
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got := a.String(); got != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if a, _ := Parse("1.2.3.4"); !a.Is4() {
		t.Errorf("Parse(1.2.3.4) is not a 4-byte address: %v", a)
	}
	if a, _ := Parse("::ffff:1.2.3.4"); !a.Is4In6() {
		t.Errorf("Parse(::ffff:1.2.3.4) should stay IPv4-mapped IPv6: %v", a)
	}
}

// Every octet value in every position is accepted, and every leading-zero
// spelling of it is refused.
func TestParseEveryOctet(t *testing.T) {
	for pos := range 4 {
		for v := range 256 {
			q := [4]byte{192, 0, 2, 1}
			q[pos] = byte(v)
			parts := make([]string, 4)
			for i, o := range q {
				parts[i] = strconv.Itoa(int(o))
			}
			s := strings.Join(parts, ".")
			a, err := Parse(s)
			if err != nil || a != netip.AddrFrom4(q) {
				t.Fatalf("Parse(%q) = %v, %v", s, a, err)
			}
			parts[pos] = "0" + parts[pos]
			s = strings.Join(parts, ".")
			if _, err := Parse(s); err == nil || err.(*ParseError).Reason != reasonLeadingZero.en {
				t.Fatalf("Parse(%q) error %v, want leading zeros", s, err)
			}
		}
	}
}

// Parse must agree with netip.ParseAddr on everything netip accepts without
// a zone, whatever the spelling, so that no valid address is refused.
func TestParseAgreesWithNetip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20_000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		// Sparse addresses exercise "::" compression.
		for i := range b {
			if r.IntN(3) == 0 {
				b[i] = 0
			}
		}
		a := netip.AddrFrom16(b)
		for _, s := range []string{a.String(), a.StringExpanded(), strings.ToUpper(a.String()), netip.AddrFrom4([4]byte(b[:4])).String()} {
			want, err := netip.ParseAddr(s)
			if err != nil {
				t.Fatalf("netip.ParseAddr(%q): %v", s, err)
			}
			got, err := Parse(s)
			if err != nil || got != want {
				t.Fatalf("Parse(%q) = %v, %v; want %v", s, got, err, want)
			}
		}
	}
}

func TestEmbedded(t *testing.T) {
	tests := []struct {
		in   netip.Addr
		want netip.Addr
	}{
		{mustAddr("1.2.3.4"), mustAddr("1.2.3.4")},
		{mustAddr("::ffff:1.2.3.4"), mustAddr("1.2.3.4")},
		{mustAddr("::ffff:0.0.0.0"), mustAddr("0.0.0.0")},
		{mustAddr("::1.2.3.4"), mustAddr("1.2.3.4")},
		{mustAddr("::2"), mustAddr("0.0.0.2")},
		{mustAddr("64:ff9b::1.2.3.4"), mustAddr("1.2.3.4")},
		{mustAddr("64:ff9b::"), mustAddr("0.0.0.0")},
		{mustAddr("::"), mustAddr("::")},
		{mustAddr("::1"), mustAddr("::1")},
		{mustAddr("64:ff9b:1::1.2.3.4"), mustAddr("64:ff9b:1::1.2.3.4")},
		{mustAddr("64:ff9b:0:0:1::1.2.3.4"), mustAddr("64:ff9b:0:0:1::1.2.3.4")},
		{mustAddr("::1:0:0:1"), mustAddr("::1:0:0:1")},
		{mustAddr("2002:102:304::1"), mustAddr("2002:102:304::1")},
		{mustAddr("2001:0:4136:e378:8000:63bf:3fff:fdd2"), mustAddr("2001:0:4136:e378:8000:63bf:3fff:fdd2")},
		{mustAddr("2001:db8::1"), mustAddr("2001:db8::1")},
		{netip.MustParseAddr("::ffff:1.2.3.4%eth0"), mustAddr("1.2.3.4")},
		{netip.MustParseAddr("fe80::1%eth0"), netip.MustParseAddr("fe80::1%eth0")},
		{netip.Addr{}, netip.Addr{}},
	}
	for _, tt := range tests {
		if got := Embedded(tt.in); got != tt.want {
			t.Errorf("Embedded(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFamily(t *testing.T) {
	tests := []struct {
		in   netip.Addr
		want string
	}{
		{mustAddr("1.2.3.4"), "IPv4"},
		{mustAddr("::ffff:1.2.3.4"), "IPv4"},
		{mustAddr("::1.2.3.4"), "IPv6"},
		{mustAddr("64:ff9b::1.2.3.4"), "IPv6"},
		{mustAddr("2001:db8::1"), "IPv6"},
		{mustAddr("::1"), "IPv6"},
		{netip.Addr{}, ""},
	}
	for _, tt := range tests {
		if got := Family(tt.in); got != tt.want {
			t.Errorf("Family(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// classCases names, for each address, the block that must hold it. The
// expected prefixes are written out here, independently of the table.
var classCases = []struct {
	in, name, prefix string
}{
	{"0.1.2.3", "this network", "0.0.0.0/8"},
	{"0.255.255.255", "this network", "0.0.0.0/8"},
	{"::ffff:0.1.2.3", "this network", "0.0.0.0/8"},
	{"0.0.0.0", "unspecified", "0.0.0.0/32"},
	{"::", "unspecified", "::/128"},
	{"10.1.2.3", "private-use", "10.0.0.0/8"},
	{"172.16.0.1", "private-use", "172.16.0.0/12"},
	{"172.31.255.255", "private-use", "172.16.0.0/12"},
	{"192.168.1.1", "private-use", "192.168.0.0/16"},
	{"::ffff:10.0.0.1", "private-use", "10.0.0.0/8"},
	{"::ffff:192.168.1.1", "private-use", "192.168.0.0/16"},
	{"64:ff9b::10.0.0.1", "private-use", "10.0.0.0/8"},
	{"64:ff9b::c0a8:101", "private-use", "192.168.0.0/16"},
	{"::10.0.0.1", "private-use", "10.0.0.0/8"},
	{"2002:c0a8:101::1", "private-use", "192.168.0.0/16"},
	{"100.64.0.1", "shared address space (CGNAT)", "100.64.0.0/10"},
	{"100.127.255.255", "shared address space (CGNAT)", "100.64.0.0/10"},
	{"64:ff9b::6440:1", "shared address space (CGNAT)", "100.64.0.0/10"},
	{"127.0.0.1", "loopback", "127.0.0.0/8"},
	{"127.255.255.254", "loopback", "127.0.0.0/8"},
	{"::1", "loopback", "::1/128"},
	{"::ffff:127.0.0.1", "loopback", "127.0.0.0/8"},
	{"64:ff9b::7f00:1", "loopback", "127.0.0.0/8"},
	{"2002:7f00:1::", "loopback", "127.0.0.0/8"},
	{"169.254.1.1", "link-local", "169.254.0.0/16"},
	{"fe80::1", "link-local", "fe80::/10"},
	{"febf:ffff::1", "link-local", "fe80::/10"},
	{"192.0.0.100", "IETF protocol assignments", "192.0.0.0/24"},
	{"192.0.0.11", "IETF protocol assignments", "192.0.0.0/24"},
	{"2001:100::1", "IETF protocol assignments", "2001::/23"},
	{"2001:1::4", "IETF protocol assignments", "2001::/23"},
	{"2001:4:113::1", "IETF protocol assignments", "2001::/23"},
	{"2001:1ff:ffff::1", "IETF protocol assignments", "2001::/23"},
	{"192.0.0.1", "IPv4 service continuity prefix", "192.0.0.0/29"},
	{"::ffff:192.0.0.7", "IPv4 service continuity prefix", "192.0.0.0/29"},
	{"192.0.0.8", "IPv4 dummy address", "192.0.0.8/32"},
	{"64:ff9b::192.0.0.8", "IPv4 dummy address", "192.0.0.8/32"},
	{"192.0.0.170", "NAT64/DNS64 discovery", "192.0.0.170/31"},
	{"192.0.0.171", "NAT64/DNS64 discovery", "192.0.0.170/31"},
	{"::ffff:192.0.0.171", "NAT64/DNS64 discovery", "192.0.0.170/31"},
	{"192.0.2.1", "documentation", "192.0.2.0/24"},
	{"198.51.100.1", "documentation", "198.51.100.0/24"},
	{"203.0.113.255", "documentation", "203.0.113.0/24"},
	{"2001:db8::1", "documentation", "2001:db8::/32"},
	{"3fff::1", "documentation", "3fff::/20"},
	{"3fff:fff:ffff::1", "documentation", "3fff::/20"},
	{"::ffff:203.0.113.7", "documentation", "203.0.113.0/24"},
	{"198.18.0.1", "benchmarking", "198.18.0.0/15"},
	{"198.19.255.255", "benchmarking", "198.18.0.0/15"},
	{"2001:2::1", "benchmarking", "2001:2::/48"},
	{"224.0.0.1", "multicast", "224.0.0.0/4"},
	{"239.255.255.255", "multicast", "224.0.0.0/4"},
	{"ff02::1", "multicast", "ff00::/8"},
	{"ff0e::1", "multicast", "ff00::/8"},
	{"240.0.0.1", "reserved", "240.0.0.0/4"},
	{"255.255.255.254", "reserved", "240.0.0.0/4"},
	{"::ffff:250.1.2.3", "reserved", "240.0.0.0/4"},
	{"::1:0:0:0", "reserved", "::/8"},
	{"64:ff9b:0:0:1::", "reserved", "::/8"},
	{"100:0:0:2::1", "reserved", "100::/8"},
	{"200::1", "reserved", "200::/7"},
	{"400::1", "reserved", "400::/6"},
	{"800::1", "reserved", "800::/5"},
	{"1fff:ffff::1", "reserved", "1000::/4"},
	{"4000::1", "reserved", "4000::/3"},
	{"6000::1", "reserved", "6000::/3"},
	{"8000::1", "reserved", "8000::/3"},
	{"a000::1", "reserved", "a000::/3"},
	{"c000::1", "reserved", "c000::/3"},
	{"e000::1", "reserved", "e000::/4"},
	{"f000::1", "reserved", "f000::/5"},
	{"f800::1", "reserved", "f800::/6"},
	{"fe00::1", "reserved", "fe00::/9"},
	{"255.255.255.255", "limited broadcast", "255.255.255.255/32"},
	{"::ffff:255.255.255.255", "limited broadcast", "255.255.255.255/32"},
	{"64:ff9b:1::a00:1", "local-use IPv4/IPv6 translation", "64:ff9b:1::/48"},
	{"64:ff9b:1:ffff::1", "local-use IPv4/IPv6 translation", "64:ff9b:1::/48"},
	{"100::1", "discard-only", "100::/64"},
	{"100::ffff:ffff:ffff:ffff", "discard-only", "100::/64"},
	{"100:0:0:1::1", "dummy IPv6 prefix", "100:0:0:1::/64"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo", "2001::/32"},
	{"2001:10::1", "deprecated ORCHID", "2001:10::/28"},
	{"2001:1f:ffff::1", "deprecated ORCHID", "2001:10::/28"},
	{"5f00::1", "segment routing (SRv6) SIDs", "5f00::/16"},
	{"fc00::1", "unique local", "fc00::/7"},
	{"fd12:3456::1", "unique local", "fc00::/7"},
	{"fec0::1", "site-local (deprecated)", "fec0::/10"},
}

// publicCases must not be classified: well-known public resolvers, the
// registries' globally reachable exceptions, block boundaries, and public
// addresses in every wrapping.
var publicCases = []string{
	"8.8.8.8", "1.1.1.1", "114.114.114.114", "223.5.5.5",
	"2001:4860:4860::8888", "2606:4700:4700::1111", "2400:3200::1", "240e::1",
	"::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "64:ff9b::101:101", "::8.8.8.8",
	"2002:808:808::1", // 6to4 of 8.8.8.8
	// Globally reachable exceptions inside non-reachable blocks.
	"192.0.0.9", "192.0.0.10", "::ffff:192.0.0.9", "64:ff9b::192.0.0.10",
	"2001:1::1", "2001:1::2", "2001:1::3",
	"2001:3::1", "2001:3:ffff::1", "2001:4:112::1", "2001:4:112:ffff::1",
	"2001:20::1", "2001:2f:ffff::1", "2001:30::1", "2001:3f:ffff::1",
	// Registry blocks that are globally reachable or "N/A" outside others.
	"192.31.196.1", "192.52.193.1", "192.88.99.1", "192.88.99.2", "2620:4f:8000::1",
	// Boundaries.
	"1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
	"126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0",
	"172.15.255.255", "172.32.0.0", "192.0.1.0", "192.0.3.0", "192.167.255.255",
	"192.169.0.0", "198.17.255.255", "198.20.0.0", "198.51.99.255", "198.51.101.0",
	"203.0.112.255", "203.0.114.0", "223.255.255.255",
	"2000::1", "2001:200::1", "2001:db7:ffff::1", "2001:db9::1", "2003::1",
	"3ffe::1", "3fff:1000::1", "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
}

func TestClassify(t *testing.T) {
	for _, tt := range classCases {
		a := mustAddr(tt.in)
		b, ok := Classify(a)
		if !ok {
			t.Errorf("Classify(%s) = public, want %s %s", tt.in, tt.name, tt.prefix)
			continue
		}
		if b.Name != tt.name || b.Prefix.String() != tt.prefix {
			t.Errorf("Classify(%s) = %q %s, want %q %s", tt.in, b.Name, b.Prefix, tt.name, tt.prefix)
		}
		if b.NameZh == "" || b.RFC == "" {
			t.Errorf("Classify(%s) = %+v: missing Chinese name or RFC", tt.in, b)
		}
	}
	for _, s := range publicCases {
		if b, ok := Classify(mustAddr(s)); ok {
			t.Errorf("Classify(%s) = %q %s, want public", s, b.Name, b.Prefix)
		}
	}
	if b, ok := Classify(netip.Addr{}); !ok || b.Name != "invalid" {
		t.Errorf("Classify(zero Addr) = %+v, %v; want invalid", b, ok)
	}
	// A zone does not change what an address is.
	if b, ok := Classify(netip.MustParseAddr("fe80::1%eth0")); !ok || b.Name != "link-local" {
		t.Errorf("Classify(fe80::1%%eth0) = %+v, %v; want link-local", b, ok)
	}
}

// The hand-written cases must reach every row of the table, and give every
// class an IPv6-text example (native or wrapped IPv4) and, when the class
// exists in IPv4, a native IPv4 example.
func TestClassCasesCoverTable(t *testing.T) {
	covered := map[string]bool{}
	v4names, v6names, v4rows := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range classCases {
		covered[c.prefix] = true
		if strings.Contains(c.in, ":") {
			v6names[c.name] = true
		} else {
			v4names[c.name] = true
		}
	}
	for _, s := range publicCases {
		a := mustAddr(s)
		for _, r := range table {
			if r.reachable && r.Prefix.Contains(a) {
				covered[r.Prefix.String()] = true
			}
		}
	}
	for _, r := range table {
		if !covered[r.Prefix.String()] {
			t.Errorf("no test case inside %s (%s)", r.Prefix, r.Name)
		}
		if !r.reachable && r.Prefix.Addr().Is4() {
			v4rows[r.Name] = true
		}
	}
	for _, r := range table {
		if r.reachable {
			continue
		}
		if !v6names[r.Name] {
			t.Errorf("class %q has no IPv6 example", r.Name)
		}
		if v4rows[r.Name] && !v4names[r.Name] {
			t.Errorf("class %q has no IPv4 example", r.Name)
		}
	}
}

func TestTableNames(t *testing.T) {
	rfc := regexp.MustCompile(`^RFC [1-9][0-9]*$`)
	seen := map[netip.Prefix]bool{}
	for _, r := range table {
		if r.Prefix != r.Prefix.Masked() {
			t.Errorf("%s is not a masked prefix", r.Prefix)
		}
		if seen[r.Prefix] {
			t.Errorf("%s appears twice", r.Prefix)
		}
		seen[r.Prefix] = true
		if !rfc.MatchString(r.RFC) {
			t.Errorf("%s: RFC %q", r.Prefix, r.RFC)
		}
		if r.Name == "" || hasHan(r.Name) {
			t.Errorf("%s: English name %q", r.Prefix, r.Name)
		}
		if r.reachable {
			continue
		}
		if !hasHan(r.NameZh) {
			t.Errorf("%s: Chinese name %q has no Chinese", r.Prefix, r.NameZh)
		}
	}
	if got := len(Blocks()); got == 0 || got >= len(table) {
		t.Errorf("Blocks() has %d entries of %d rows; want only the non-reachable ones", got, len(table))
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// A wrapped IPv4 address is what it wraps: mapped, compatible and NAT64
// forms of every IPv4 case classify exactly like the IPv4 address.
func TestClassifyWrapped(t *testing.T) {
	var v4 []netip.Addr
	for _, c := range classCases {
		if a := mustAddr(c.in); a.Is4() {
			v4 = append(v4, a)
		}
	}
	for _, s := range publicCases {
		if a := mustAddr(s); a.Is4() {
			v4 = append(v4, a)
		}
	}
	for _, a := range v4 {
		b4, ok4 := Classify(a)
		q := a.As4()
		wrapped := []string{"::ffff:" + a.String(), "64:ff9b::" + a.String()}
		if binaryIsCompat(q) {
			wrapped = append(wrapped, "::"+a.String())
		}
		for _, w := range wrapped {
			b, ok := Classify(mustAddr(w))
			if b != b4 || ok != ok4 {
				t.Errorf("Classify(%s) = %q %v, want %q %v like %s", w, b.Name, ok, b4.Name, ok4, a)
			}
		}
	}
}

func binaryIsCompat(q [4]byte) bool { return q != [4]byte{} && q != [4]byte{0, 0, 0, 1} }

// refClassify is a slow, obviously correct classifier: longest-prefix match
// over the table with netip.Prefix.Contains. The indexed Classify must agree.
func refClassify(a netip.Addr) (Block, bool) {
	if !a.IsValid() {
		return invalid, true
	}
	a = a.WithZone("")
	b := a.As16()
	switch {
	case a.Is4In6():
		a = a.Unmap()
	case netip.MustParsePrefix("::/96").Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback(),
		netip.MustParsePrefix("64:ff9b::/96").Contains(a):
		a = netip.AddrFrom4([4]byte(b[12:]))
	case netip.MustParsePrefix("2002::/16").Contains(a):
		if blk, ok := longestMatch(netip.AddrFrom4([4]byte(b[2:6]))); ok {
			return blk, true
		}
	}
	return longestMatch(a)
}

func longestMatch(a netip.Addr) (Block, bool) {
	best := -1
	for i, r := range table {
		if r.Prefix.Contains(a) && (best < 0 || r.Prefix.Bits() > table[best].Prefix.Bits()) {
			best = i
		}
	}
	if best < 0 || table[best].reachable {
		return Block{}, false
	}
	return table[best].Block, true
}

func TestClassifyMatchesReference(t *testing.T) {
	var addrs []netip.Addr
	for _, r := range table {
		first := r.Prefix.Masked().Addr()
		last := lastAddr(r.Prefix)
		addrs = append(addrs, first, last, first.Prev(), last.Next())
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 30_000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		a6 := netip.AddrFrom16(b)
		a4 := netip.AddrFrom4([4]byte(b[:4]))
		addrs = append(addrs, a6, a4,
			netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
			netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
			netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: b[0], 3: b[1], 4: b[2], 5: b[3], 15: 1}),
			netip.AddrFrom16([16]byte{0: 0x20, 1: 0x01, 2: b[0] & 1, 3: b[1], 4: b[2], 15: b[3]}),
		)
	}
	for _, a := range addrs {
		if !a.IsValid() {
			continue
		}
		gb, gok := Classify(a)
		wb, wok := refClassify(a)
		if gb != wb || gok != wok {
			t.Fatalf("Classify(%s) = %+v %v, reference %+v %v", a, gb, gok, wb, wok)
		}
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestClassifyDoesNotAllocate(t *testing.T) {
	addrs := benchAddrs()
	allocs := testing.AllocsPerRun(100, func() {
		for _, a := range addrs {
			Classify(a)
		}
	})
	if allocs != 0 {
		t.Errorf("Classify allocates %.1f times per %d addresses", allocs, len(addrs))
	}
}

func benchAddrs() []netip.Addr {
	var out []netip.Addr
	for _, s := range []string{
		"8.8.8.8", "114.114.114.114", "2001:4860:4860::8888", "2606:4700:4700::1111",
		"192.168.1.1", "10.0.0.1", "::ffff:1.1.1.1", "64:ff9b::8.8.8.8",
		"fd00::1", "2001:db8::1", "2002:808:808::1", "::1",
	} {
		out = append(out, mustAddr(s))
	}
	return out
}

func BenchmarkClassify(b *testing.B) {
	b.Run("mix", func(b *testing.B) {
		addrs := benchAddrs()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			Classify(addrs[i%len(addrs)])
		}
	})
	for _, s := range []string{"8.8.8.8", "2001:4860:4860::8888", "::ffff:192.168.1.1"} {
		a := mustAddr(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(a)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, s := range []string{"8.8.8.8", "2001:4860:4860::8888", "::ffff:192.168.1.1"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustAddr(s string) netip.Addr {
	a, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

// BenchmarkNetipParseAddr is the floor Parse builds on, for comparison.
func BenchmarkNetipParseAddr(b *testing.B) {
	for _, s := range []string{"8.8.8.8", "2001:4860:4860::8888", "::ffff:192.168.1.1"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := netip.ParseAddr(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestParseErrorDetail(t *testing.T) {
	_, err := Parse("08.8.8.8")
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want *ParseError", err)
	}
	if got, want := pe.Detail(ipatlas.English), `"08.8.8.8": leading zeros are not allowed in IPv4 octets`; got != want {
		t.Errorf("English detail %q, want %q", got, want)
	}
	if got, want := pe.Detail(ipatlas.Chinese), `"08.8.8.8"：IPv4 地址的各段不允许有前导零`; got != want {
		t.Errorf("Chinese detail %q, want %q", got, want)
	}
}

func TestWhy(t *testing.T) {
	for _, tt := range []struct {
		in, en, zh string
	}{
		{"10.0.0.1", "10.0.0.1 is a private-use address (RFC 1918)", "10.0.0.1 是私有地址（RFC 1918）"},
		{"127.0.0.1", "127.0.0.1 is a loopback address (RFC 1122)", "127.0.0.1 是环回地址（RFC 1122）"},
		{"fd00::1", "fd00::1 belongs to the unique local block (RFC 4193)", "fd00::1 是唯一本地地址（RFC 4193）"},
		{"100.64.0.1", "100.64.0.1 belongs to the shared address space (CGNAT) block (RFC 6598)",
			"100.64.0.1 是共享地址空间（运营商级 NAT）（RFC 6598）"},
		{"::ffff:192.168.1.1", "::ffff:192.168.1.1 is a private-use address (RFC 1918)", "::ffff:192.168.1.1 是私有地址（RFC 1918）"},
		{"fe80::1", "fe80::1 is a link-local address (RFC 4291)", "fe80::1 是链路本地地址（RFC 4291）"},
	} {
		a := netip.MustParseAddr(tt.in)
		b, ok := Classify(a)
		if !ok {
			t.Fatalf("Classify(%s) says public", a)
		}
		if got := b.Why(a, ipatlas.English); got != tt.en {
			t.Errorf("Why(%s, en) = %q, want %q", a, got, tt.en)
		}
		if got := b.Why(a, ipatlas.Chinese); got != tt.zh {
			t.Errorf("Why(%s, zh) = %q, want %q", a, got, tt.zh)
		}
	}
	// Every block reads in Chinese without English words but its RFC.
	for _, r := range table {
		if r.reachable {
			continue
		}
		zh := r.Block.Why(r.Prefix.Addr(), ipatlas.Chinese)
		if strings.Contains(zh, " is ") || strings.Contains(zh, "block") {
			t.Errorf("%s: Chinese text %q carries English", r.Prefix, zh)
		}
	}
}
