package netaddr

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

// U128 orders and steps addresses as netip does, across the halves'
// carry and at both ends of the space.
func TestU128(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edges := []string{"::", "::1", "::ffff:ffff:ffff:ffff", "0:0:0:1::", "ffff:ffff:ffff:ffff::", "ffff:ffff:ffff:fffe:ffff:ffff:ffff:ffff",
		"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::", "::ffff:192.0.2.1"}
	var addrs []netip.Addr
	for _, s := range edges {
		addrs = append(addrs, netip.MustParseAddr(s))
	}
	for range 1000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		addrs = append(addrs, netip.AddrFrom16(b))
	}
	for _, a := range addrs {
		x := U128Of(a)
		if x.Addr() != a.Unmap() && x.Addr() != netip.AddrFrom16(a.As16()) {
			t.Errorf("U128Of(%s).Addr() = %s", a, x.Addr())
		}
		if n := a.Next(); n.IsValid() {
			if got := x.Next(); got != U128Of(n) || got.Prev() != x {
				t.Errorf("%s: Next %v, want %v; back %v", a, got, U128Of(n), got.Prev())
			}
		} else if x != MaxU128 || x.Next() != (U128{}) {
			t.Errorf("%s: the last address is not MaxU128, or does not wrap", a)
		}
		for _, b := range addrs[:20] {
			if got, want := x.Cmp(U128Of(b)), netip.AddrFrom16(a.As16()).Compare(netip.AddrFrom16(b.As16())); got != want {
				t.Errorf("Cmp(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	if (U128{}).Prev() != MaxU128 {
		t.Error("zero's Prev does not wrap to MaxU128")
	}
}
