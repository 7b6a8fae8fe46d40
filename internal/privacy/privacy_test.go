package privacy_test

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/privacy"
)

func list(t *testing.T, name string) privacy.List {
	t.Helper()
	l, ok := privacy.Named(name)
	if !ok {
		t.Fatalf("no list %s", name)
	}
	return l
}

// TestParseRejects: an empty, cut or malformed copy of any format is
// ErrMalformed, so that it can never replace a good one.
func TestParseRejects(t *testing.T) {
	good := func(n int, line func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i) + "\n")
		}
		return b.String()
	}
	cidrs := good(3000, func(i int) string { return netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}).String() + "/24" })
	asns := good(400, func(i int) string { return "AS" + strconv.Itoa(i+1) + " # Some Host, US" })
	exits := good(200, func(i int) string { return netip.AddrFrom4([4]byte{185, 220, byte(i >> 8), byte(i)}).String() })
	for _, c := range []struct {
		list, body string
		ok         bool
	}{
		{"x4bnet-vpn-ipv4", cidrs, true},
		{"x4bnet-vpn-ipv4", "", false},
		{"x4bnet-vpn-ipv4", cidrs[:len(cidrs)-5], false},                  // cut mid-line
		{"x4bnet-vpn-ipv4", cidrs[:strings.Index(cidrs, "10.1.")], false}, // cut at a line: too few
		{"x4bnet-vpn-ipv4", cidrs + "<html>\n", false},
		{"x4bnet-vpn-ipv4", cidrs + "10.0.0.0/33\n", false},
		{"x4bnet-vpn-ipv4", "# comment\n\n" + cidrs, true},
		{"x4bnet-datacenter-asn", asns, true},
		{"x4bnet-datacenter-asn", asns + "AS-1\n", false},
		{"x4bnet-datacenter-asn", asns + "AS4294967296\n", false},
		{"x4bnet-datacenter-asn", asns + "ASx # x\n", false},
		{privacy.TorList, exits, true},
		{privacy.TorList, exits + "185.220.1.0/33\n", false},
		{privacy.TorList, exits + "185.220.1.0/24\n", true}, // parses; Check refuses the entry
		{privacy.TorList, exits + "fe80::1%eth0\n", false},
		{privacy.TorList, "<!doctype html>\n", false},
		{privacy.TorList, "# nothing\n", false},
	} {
		l := list(t, c.list)
		e, err := l.Parse([]byte(c.body))
		if err == nil {
			err = l.Plausible(e.Len(), 0)
		}
		if c.ok && err != nil {
			t.Errorf("%s: %v", c.list, err)
		}
		if !c.ok && !errors.Is(err, privacy.ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", c.list, err)
		}
	}
}

func compile(t *testing.T, lists map[string]string) *privacy.Table {
	t.Helper()
	var loaded []privacy.Loaded
	for _, l := range privacy.Lists {
		body, ok := lists[l.Name]
		if !ok {
			continue
		}
		e, err := l.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, privacy.Loaded{List: l, Entries: e, Info: privacy.ListInfo{Name: l.Name}})
	}
	return privacy.Compile(loaded)
}

// TestCompile: flags of every covering range add up; the most specific
// range that names a service names it; the edges of each range are exact.
func TestCompile(t *testing.T) {
	tab := compile(t, map[string]string{
		"x4bnet-datacenter-ipv4":    "3.0.0.0/8\n52.0.0.0/8\n",
		"ipranges-amazon-ipv4":      "3.5.0.0/16\n",
		"x4bnet-vpn-ipv4":           "3.5.7.0/24\n",
		"ipranges-protonvpn-ipv4":   "3.5.7.128/25\n",
		"ipranges-apple-proxy-ipv4": "104.28.0.0/24\n",
		"ipranges-apple-proxy-ipv6": "2a02:26f7:b00a:4000::/64\n",
		"x4bnet-datacenter-ipv6":    "2600:1f00::/24\n",
		"ipranges-amazon-ipv6":      "2600:1f00::/24\n",
		privacy.TorList:             "3.5.7.200\n2001:db8::1\n",
		"x4bnet-datacenter-asn":     "AS16509 # AMAZON-02, US\n",
	})
	H, V, T, R := privacy.Hosting, privacy.VPN, privacy.Tor, privacy.Relay
	for _, c := range []struct {
		addr    string
		asn     uint32
		flags   privacy.Flags
		service string
	}{
		{"2.255.255.255", 0, 0, ""},
		{"3.0.0.0", 0, H, ""},
		{"3.4.255.255", 0, H, ""},
		{"3.5.0.0", 0, H, "Amazon AWS"},
		{"3.5.7.0", 0, H | V, "Amazon AWS"},
		{"3.5.7.127", 0, H | V, "Amazon AWS"},
		{"3.5.7.128", 0, H | V, "Proton VPN"},
		{"3.5.7.200", 0, H | V | T, "Proton VPN"},
		{"3.5.8.0", 0, H, "Amazon AWS"},
		{"3.6.0.0", 0, H, ""},
		{"3.255.255.255", 0, H, ""},
		{"4.0.0.0", 0, 0, ""},
		{"4.0.0.0", 16509, H, ""},
		{"4.0.0.0", 15169, 0, ""},
		{"104.28.0.1", 0, R, "iCloud Private Relay"},
		{"::ffff:104.28.0.1", 0, R, "iCloud Private Relay"},
		{"255.255.255.255", 0, 0, ""},
		{"0.0.0.0", 0, 0, ""},
		{"2a02:26f7:b00a:4000::5", 0, R, "iCloud Private Relay"},
		{"2a02:26f7:b00a:4001::", 0, 0, ""},
		{"2600:1fff:ffff:ffff:ffff:ffff:ffff:ffff", 0, H, "Amazon AWS"},
		{"2600:2000::", 0, 0, ""},
		{"2001:db8::1", 0, T, ""},
		{"2001:db8::2", 0, 0, ""},
		{"::", 0, 0, ""},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0, 0, ""},
	} {
		f, s := tab.Lookup(netip.MustParseAddr(c.addr), c.asn)
		if f != c.flags || s != c.service {
			t.Errorf("%s (AS%d): %04b %q, want %04b %q", c.addr, c.asn, f, s, c.flags, c.service)
		}
	}
}

// TestTouches: a prefix touches the lists when any of its addresses is on
// a range.
func TestTouches(t *testing.T) {
	tab := compile(t, map[string]string{
		"x4bnet-datacenter-ipv4": "3.5.7.0/24\n255.255.255.255/32\n",
		"x4bnet-datacenter-ipv6": "2600:1f00::/24\n",
	})
	for p, want := range map[string]bool{
		"3.5.7.0/24": true, "3.5.0.0/16": true, "3.5.7.255/32": true, "3.5.8.0/24": false, "3.5.6.0/24": false,
		"0.0.0.0/0": true, "255.255.255.254/32": false, "255.255.255.255/32": true, "0.0.0.0/32": false,
		"2600:1f00::/32": true, "2600::/12": true, "2600:2000::/24": false, "::/0": true, "::/128": false,
	} {
		if got := tab.Touches(netip.MustParsePrefix(p)); got != want {
			t.Errorf("Touches(%s) = %v", p, got)
		}
	}
}

// TestSnapshot: every list but the Tor exits is in the snapshot and parses,
// and the snapshot holds nothing else.
func TestSnapshot(t *testing.T) {
	for _, l := range privacy.Lists {
		b, ok, err := privacy.Snapshot(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (l.Name != privacy.TorList) {
			t.Errorf("%s: in the snapshot: %v", l.Name, ok)
			continue
		}
		if !ok {
			continue
		}
		e, err := l.Parse(b)
		if err == nil {
			err = l.Plausible(e.Len(), 0)
		}
		if err == nil {
			_, _, err = l.Check(e)
		}
		if err != nil {
			t.Error(err)
		}
	}
	for _, l := range privacy.Lists {
		if err := l.Plausible(l.MinEntries, 2*l.MinEntries); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
		if err := l.Plausible(l.MinEntries+10, 2*l.MinEntries+22); err == nil {
			t.Errorf("%s: a copy of fewer than half the entries of the one in service is plausible", l.Name)
		}
	}
	tab, err := privacy.Load(t.TempDir(), true)
	if err != nil || tab == nil {
		t.Fatalf("Load of the snapshot: %v, %v", tab, err)
	}
	if got := len(tab.Lists()); got != len(privacy.Lists)-1 {
		t.Errorf("%d lists loaded, want %d", got, len(privacy.Lists)-1)
	}
	if tab, err := privacy.Load(t.TempDir(), false); tab != nil || err != nil {
		t.Errorf("Load without lists or snapshot = %v, %v; want nil, nil", tab, err)
	}
}

// snapshotEntries is the entries of the snapshot's copy of a list that
// Check keeps; ok is false for a list the snapshot lacks.
func snapshotEntries(t testing.TB, l privacy.List) (e privacy.Entries, ok bool) {
	t.Helper()
	b, ok, err := privacy.Snapshot(l.Name)
	if err != nil || !ok {
		return e, false
	}
	e, err = l.Parse(b)
	if err == nil {
		e, _, err = l.Check(e)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e, true
}

// TestFlagsAgainstSources draws a fresh random sample of 1,000 addresses
// from every range list of the snapshot, uniformly over the entries its
// bounds keep and then within the entry: every one must carry the list's
// flags.
func TestFlagsAgainstSources(t *testing.T) {
	tab, err := privacy.Load(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, l := range privacy.Lists {
		e, ok := snapshotEntries(t, l)
		if !ok || l.Format != privacy.FormatCIDR {
			continue
		}
		const n = 1000
		missed := 0
		for range n {
			a := RandomIn(rng, e.Prefixes[rng.IntN(len(e.Prefixes))])
			if f, _ := tab.Lookup(a, 0); f&l.Flags != l.Flags {
				missed++
				if missed < 4 {
					t.Errorf("%s: %s has flags %04b, want %04b", l.Name, a, f, l.Flags)
				}
			}
		}
		t.Logf("%s: %d of %d flagged (seed %d)", l.Name, n-missed, n, seed)
	}
}

// RandomIn draws an address of p uniformly.
func RandomIn(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	host := len(b)*8 - p.Bits()
	for i := len(b) - 1; i >= 0 && host > 0; i-- {
		bits := min(host, 8)
		mask := byte(1<<bits - 1)
		b[i] = b[i]&^mask | byte(rng.UintN(256))&mask
		host -= bits
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// FuzzParse: no input makes a parser or Check panic, and whatever parses
// has only valid, masked entries.
func FuzzParse(f *testing.F) {
	f.Add("1.2.3.0/24\n2001:db8::/32\n")
	f.Add("AS15169 # Google, US\nAS1\t# x\n")
	f.Add("185.220.101.1\n::ffff:1.2.3.4\n")
	f.Add("185.220.101.0/24\n::ffff:1.2.3.4/128\n0.0.0.0/0\n")
	f.Add("# c\r\n\r\n10.0.0.0/8\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"x4bnet-vpn-ipv4", "x4bnet-datacenter-asn", privacy.TorList} {
			l, _ := privacy.Named(name)
			e, err := l.Parse([]byte(s))
			if err != nil {
				continue
			}
			for _, p := range e.Prefixes {
				if !p.IsValid() || p != p.Masked() {
					t.Fatalf("%s: entry %v", name, p)
				}
			}
			if kept, r, err := l.Check(e); err == nil && kept.Len()+r.Count != e.Len() {
				t.Fatalf("%s: %d kept and %d refused of %d", name, kept.Len(), r.Count, e.Len())
			}
		}
	})
}

// TestLookupMatchesTheLists compares the compiled snapshot with a plain
// scan of every list range its bounds keep, for addresses drawn from the ranges (and
// their neighbours) and at random.
func TestLookupMatchesTheLists(t *testing.T) {
	tab, err := privacy.Load(t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	type rng struct {
		p     netip.Prefix
		flags privacy.Flags
	}
	var all []rng
	for _, l := range privacy.Lists {
		e, ok := snapshotEntries(t, l)
		if !ok || l.Format != privacy.FormatCIDR {
			continue
		}
		for _, p := range e.Prefixes {
			all = append(all, rng{p, l.Flags})
		}
	}
	seed := rand.Uint64()
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range 400 {
		var a netip.Addr
		switch i % 4 {
		case 0:
			v := r.Uint32()
			a = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		case 1:
			a = RandomIn(r, all[r.IntN(len(all))].p)
		case 2: // just past a range
			a = lastOf(all[r.IntN(len(all))].p).Next()
		default: // just before one
			a = all[r.IntN(len(all))].p.Addr().Prev()
		}
		if !a.IsValid() {
			continue
		}
		var want privacy.Flags
		for _, x := range all {
			if x.p.Contains(a) {
				want |= x.flags
			}
		}
		if got, _ := tab.Lookup(a, 0); got != want {
			t.Errorf("%s: %04b, want %04b (seed %d)", a, got, want, seed)
		}
	}
}

// lastOf is the last address of a masked prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
