package geo_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"go4.org/netipx"
)

// fullAnswer is everything an address's answer says but the address and
// its network: both languages, the AS, the flags, the source, the route.
type fullAnswer struct {
	geo.Answer
	route netip.Prefix
}

func answerAt(t *testing.T, e *geo.Engine, a netip.Addr) (fullAnswer, netip.Prefix) {
	t.Helper()
	ans, n, err := e.AnswerNetwork(a)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.Lookup(a, ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Network != n {
		t.Errorf("%s: the record's network %s, the answer's %s", a, rec.Network, n)
	}
	return fullAnswer{ans, rec.Route}, n
}

// randomInNet is a random address of p.
func randomInNet(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As16()
	host := p.Addr().BitLen() - p.Bits()
	for i := 15; i >= 0 && host > 0; i-- {
		bitsHere := min(host, 8)
		b[i] |= byte(rng.UintN(1 << bitsHere))
		host -= bitsHere
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// checkNetwork holds the network the engine gives addr (an address it
// looks up by itself, not by an embedded IPv4 address) to its definition:
// it holds addr; addresses drawn from it, and its ends, have addr's
// answer and network (networkHolds); and unless it is a whole family, the
// network one bit shorter holds an address whose answer differs
// (networkIsLargest). It returns the network.
func checkNetwork(t *testing.T, e *geo.Engine, ps *geo.Pieces, rng *rand.Rand, addr netip.Addr) netip.Prefix {
	t.Helper()
	n, ok := networkHolds(t, e, rng, addr)
	if ok && !networkIsLargest(t, e, ps, addr, n) {
		t.Errorf("%s: every address of the network one bit shorter than its network %s has its answer", addr, n)
	}
	return n
}

// networkHolds checks that the network of addr's answer holds addr, and
// that addresses drawn from it, and its ends, have addr's answer and
// network; it reports an error and false where one does not.
func networkHolds(t *testing.T, e *geo.Engine, rng *rand.Rand, addr netip.Addr) (netip.Prefix, bool) {
	t.Helper()
	want, n := answerAt(t, e, addr)
	if !n.IsValid() || !n.Contains(addr) {
		t.Errorf("%s: network %s does not hold it", addr, n)
		return n, false
	}
	inside := []netip.Addr{n.Masked().Addr(), netipx.PrefixLastIP(n)}
	for range 16 {
		inside = append(inside, randomInNet(rng, n))
	}
	for _, a := range inside {
		got, gn := answerAt(t, e, a)
		if got != want || gn != n {
			t.Errorf("%s in %s, the network of %s: answer %+v, network %s; want %+v", a, n, addr, got, gn, want)
			return n, false
		}
	}
	return n, true
}

// networkIsLargest reports whether n, the network of addr's answer, is
// a whole family or its sibling holds an address whose answer differs.
func networkIsLargest(t *testing.T, e *geo.Engine, ps *geo.Pieces, addr netip.Addr, n netip.Prefix) bool {
	t.Helper()
	if n.Bits() == 0 {
		return true
	}
	want, _ := answerAt(t, e, addr)
	parent, _ := addr.Prefix(n.Bits() - 1)
	sibling := netip.PrefixFrom(parent.Addr(), n.Bits())
	if sibling.Contains(addr) {
		last := netipx.PrefixLastIP(parent)
		sibling, _ = last.Prefix(n.Bits())
	}
	for a := range geo.PieceStarts(ps, sibling.Addr(), netipx.PrefixLastIP(sibling)) {
		if got, _ := answerAt(t, e, a); got != want {
			return true
		}
	}
	return false
}

func pieces(t *testing.T, e *geo.Engine) *geo.Pieces {
	t.Helper()
	ps, err := e.Pieces()
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// randomPublicAddr is a public address: IPv4, or IPv6 of 2000::/3 that
// embeds no IPv4 address.
func randomPublicAddr(rng *rand.Rand) netip.Addr {
	for {
		var a netip.Addr
		if rng.IntN(2) == 0 {
			v := rng.Uint32()
			a = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		} else {
			var b [16]byte
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			b[0] = 0x20 | b[0]&0x1f
			a = netip.AddrFrom16(b)
		}
		if _, special := netaddr.Classify(a); !special && netaddr.Embedded(a) == a {
			return a
		}
	}
}

// The network of each known place is the place's network, and of every
// address, the largest over which the answer is the same.
func TestNetworkOfFixture(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	ps := pieces(t, e)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range geotest.Places {
		n := checkNetwork(t, e, ps, rng, netip.MustParseAddr(k.IP))
		if want := netip.MustParsePrefix(k.Network); n != want {
			t.Errorf("%s: network %s, want %s", k.Label, n, want)
		}
	}
	for range 300 {
		checkNetwork(t, e, ps, rng, randomPublicAddr(rng))
	}
}

// Corrections bound the network: the entry that answers, the more
// specific entries inside it, and the entries of a layer above that an
// address of the layer below is clear of.
func TestNetworkBoundedByCorrections(t *testing.T) {
	e := openCorrectable(t)
	e.SetFeeds([]geo.FeedInput{feedInput(t, "example", []uint32{15169}, `8.8.8.0/24,DE,DE-BY,Nuremberg,
202.106.0.0/20,US,US-CA,Mountain View,
2001:4860::/32,SG,,,
2001:4860:4860::/48,JP,,,
`)})
	e.SetOverrides(&geo.Overrides{File: "overrides.csv", Feed: parseFeed(t, "overrides.csv", `8.8.8.8/32,CN,CN-11,Beijing,
8.8.8.16/28,US,US-CA,Mountain View,99999
`)})
	ps := pieces(t, e)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ addr, network string }{
		{"8.8.8.8", "8.8.8.8/32"},     // an override
		{"8.8.8.17", "8.8.8.16/28"},   // another
		{"8.8.8.9", "8.8.8.9/32"},     // the feed, clear of the override beside it
		{"8.8.8.10", "8.8.8.10/31"},   // likewise
		{"8.8.8.100", "8.8.8.64/26"},  // the feed's /24, clear of both overrides
		{"8.8.8.200", "8.8.8.128/25"}, // likewise
		// The feed's entry is not for this AS: the dataset answers, for
		// the whole entry.
		{geotest.Beijing.IP, "202.106.0.0/20"},
		// A more specific entry of the feed bounds the feed's outer one.
		{"2001:4860:4860::8888", "2001:4860:4860::/48"},
		{"2001:4860:4861::1", "2001:4860:4861::/48"},
		{"2001:4860:8000::1", "2001:4860:8000::/33"},
		// No correction: the dataset's network, clear of every entry.
		{geotest.Nuremberg.IP, geotest.Nuremberg.Network},
	} {
		n := checkNetwork(t, e, ps, rng, netip.MustParseAddr(c.addr))
		if n != netip.MustParsePrefix(c.network) {
			t.Errorf("%s: network %s, want %s", c.addr, n, c.network)
		}
	}
	for range 300 {
		checkNetwork(t, e, ps, rng, randomPublicAddr(rng))
	}
}

// A privacy list's range bounds the network: the flags are part of the
// answer.
func TestNetworkBoundedByPrivacyLists(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(40, "8.8.8.77", "2001:4860:4860::8844"), time.Now())
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ps := pieces(t, e)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ addr, network string }{
		{"8.8.8.8", "8.8.8.0/26"},
		{"8.8.8.77", "8.8.8.77/32"},
		{"8.8.8.78", "8.8.8.78/31"},
		{"8.8.8.200", "8.8.8.128/25"},
		{"2001:4860:4860::8844", "2001:4860:4860::8844/128"},
		{"2001:4860:4860::8888", "2001:4860:4860::8880/121"},
	} {
		n := checkNetwork(t, e, ps, rng, netip.MustParseAddr(c.addr))
		if n != netip.MustParsePrefix(c.network) {
			t.Errorf("%s: network %s, want %s", c.addr, n, c.network)
		}
	}
	for range 300 {
		checkNetwork(t, e, ps, rng, randomPublicAddr(rng))
	}
}

// An address that embeds an IPv4 address has the network of that
// address, written in its own family.
func TestNetworkOfEmbeddedIPv4(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	for _, c := range []struct{ addr, network string }{
		{"8.8.8.8", "8.8.8.0/24"},
		{geotest.MappedIP, "::ffff:8.8.8.0/120"},
		{geotest.NAT64IP, "64:ff9b::808:800/120"},
	} {
		_, n, err := e.AnswerNetwork(netip.MustParseAddr(c.addr))
		if err != nil || n != netip.MustParsePrefix(c.network) {
			t.Errorf("%s: network %s, %v; want %s", c.addr, n, err, c.network)
		}
	}
}
