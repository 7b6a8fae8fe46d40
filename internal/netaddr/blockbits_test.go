package netaddr

import (
	"math/rand/v2"
	"testing"
)

// BlockBits is the shortest prefix of x whose block lies in [first,
// last], as a search over every length finds it, for random small ranges
// and the ends of the space.
func TestBlockBits(t *testing.T) {
	brute := func(x, first, last uint64, width int) int {
		for bits := 0; bits <= width; bits++ {
			host := uint64(1)<<(width-bits) - 1
			if x&^host >= first && x|host <= last {
				return bits
			}
		}
		return -1
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 100000 {
		a, b := rng.Uint64N(1<<12), rng.Uint64N(1<<12)
		first, last := min(a, b), max(a, b)
		x := first + rng.Uint64N(last-first+1)
		// Shifted into the top of a 32-bit space, so that both families'
		// upper bits take part.
		const s = 20
		lo, hi := first<<s, last<<s|(1<<s-1)
		got := BlockBits(U128{Lo: x << s}, U128{Lo: lo}, U128{Lo: hi}, 32)
		if want := brute(x<<s, lo, hi, 32); got != want {
			t.Fatalf("BlockBits(%#x, [%#x, %#x]) = %d, want %d", x<<s, lo, hi, got, want)
		}
	}
	if got := BlockBits(U128{Lo: 5}, U128{}, U128{Lo: 1<<32 - 1}, 32); got != 0 {
		t.Errorf("the whole IPv4 space: %d", got)
	}
	if got := BlockBits(U128{Hi: 5}, U128{}, MaxU128, 128); got != 0 {
		t.Errorf("the whole IPv6 space: %d", got)
	}
	if got := BlockBits(U128{Hi: 1 << 63}, U128{Hi: 1 << 63}, MaxU128, 128); got != 1 {
		t.Errorf("the upper half of IPv6: %d", got)
	}
	if got := BlockBits(U128{Lo: 7}, U128{Lo: 7}, U128{Lo: 7}, 128); got != 128 {
		t.Errorf("one address: %d", got)
	}
}
