package privacy_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/ipatlas/ipatlas/internal/privacy"
)

// BenchmarkLookup is one lookup in the snapshot's table, for random IPv4
// addresses and for an AS on none of the lists:
//
//	go test -run '^$' -bench . -benchmem ./internal/privacy/
func BenchmarkLookup(b *testing.B) {
	tab, err := privacy.Load(b.TempDir(), true)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	addrs := make([]netip.Addr, 1<<16)
	for i := range addrs {
		v := rng.Uint32()
		addrs[i] = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tab.Lookup(addrs[i&(len(addrs)-1)], 3320)
	}
}
