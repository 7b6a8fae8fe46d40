package netaddr

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"go4.org/netipx"
)

// TestPublic checks Public against Classify: an address is in it exactly
// when Classify lets it be queried, apart from the ranges judged by the
// IPv4 address inside, which Public leaves to the IPv4 space.
func TestPublic(t *testing.T) {
	var b netipx.IPSetBuilder
	for _, p := range Public() {
		b.AddPrefix(p)
	}
	set, err := b.IPSet()
	if err != nil {
		t.Fatal(err)
	}
	check := func(a netip.Addr) {
		_, refused := Classify(a)
		embedded := a.Is6() && Embedded(a).Is4()
		if want := !refused && !embedded; set.Contains(a) != want {
			t.Errorf("%s: in Public %v, want %v", a, set.Contains(a), want)
		}
	}
	for _, s := range []string{"8.8.8.8", "192.0.0.9", "192.0.0.8", "10.0.0.1", "192.88.99.1", "2001:4860::1", "2001:1::1",
		"2001::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "fe80::1", "2002:808:808::1", "255.255.255.255", "0.0.0.0", "::"} {
		check(netip.MustParseAddr(s))
	}
	// Every row's edges and a random sample.
	for _, r := range table {
		p := r.Prefix.Masked()
		check(p.Addr())
		check(netipx.PrefixLastIP(p))
		if prev := p.Addr().Prev(); prev.IsValid() {
			check(prev)
		}
		if next := netipx.PrefixLastIP(p).Next(); next.IsValid() {
			check(next)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		var b4 [4]byte
		var b16 [16]byte
		for i := range b4 {
			b4[i] = byte(rng.Uint32())
		}
		for i := range b16 {
			b16[i] = byte(rng.Uint32())
		}
		check(netip.AddrFrom4(b4))
		check(netip.AddrFrom16(b16))
	}
}
