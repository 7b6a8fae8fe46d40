package export_test

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/ipatlas/ipatlas/internal/export"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"go4.org/netipx"
)

// TestRealExportHoldsNetworks checks on the real dataset, with the
// built-in privacy lists, that the export's network of a random public
// address holds the network of the engine's answer (holdsNetwork). The
// whole export takes minutes, so the walk is the export's own over
// windows around the sample's networks, each two bits shorter than the
// network: the export's network within a window that holds the answer's
// network holds it as the whole export's does.
//
//	IPATLAS_TEST_DATA_DIR=~/.cache/ipatlas-ci/data go test -run TestRealExportHoldsNetworks -v ./internal/export/
func TestRealExportHoldsNetworks(t *testing.T) {
	realdata.Whole(t)
	dir := realdata.Dir(t)
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	exported := exportedSpace(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	var sample []netip.Addr
	var windows netipx.IPSetBuilder
	for len(sample) < 300 {
		a := randomExported(rng, exported)
		ans, n, err := e.AnswerNetwork(a)
		if err != nil {
			t.Fatal(err)
		}
		if ans.Empty() {
			continue // not in an export
		}
		w, _ := n.Addr().Prefix(max(n.Bits()-2, 0))
		windows.AddPrefix(w)
		sample = append(sample, a)
	}
	var rest netipx.IPSetBuilder
	rest.AddPrefix(netip.MustParsePrefix("0.0.0.0/0"))
	rest.AddPrefix(netip.MustParsePrefix("::/0"))
	ws, err := windows.IPSet()
	if err != nil {
		t.Fatal(err)
	}
	rest.RemoveSet(ws)
	skip, err := rest.IPSet()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = export.Walk(e, export.Options{Skip: append(skip.Prefixes(), export.SixToFour)}, func(r netipx.IPRange, _ *export.Answer) error {
		for _, a := range sample {
			if !r.Contains(a) {
				continue
			}
			for _, p := range r.Prefixes() {
				if p.Contains(a) {
					holdsNetwork(t, e, exported, p, a)
					seen++
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(sample) {
		t.Errorf("the walk held %d of the %d addresses, all answered", seen, len(sample))
	}
}

// randomExported is a random address of the exported space: IPv4, or
// IPv6 of 2000::/3.
func randomExported(rng *rand.Rand, exported *netipx.IPSet) netip.Addr {
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
		if exported.Contains(a) {
			return a
		}
	}
}
