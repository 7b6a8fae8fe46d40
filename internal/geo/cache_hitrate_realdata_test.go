package geo

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// TestRealCacheHitRates measures, on the real dataset, how often the
// engine's two caches (composed city records and ASN records) hit at several sizes, for two address mixes:
//
//   - uniform: random public addresses, one in eight IPv6 (the load
//     harness's mix, the worst case: nothing repeats but the records);
//   - zipf: a service's clients, where few addresses ask most. 90% of the
//     queries draw from 100,000 popular addresses with Zipf's law
//     (s = 1.1: the k-th most popular is asked about k^-1.1 as often as
//     the first), 10% are the uniform mix's long tail. The popular
//     addresses are drawn as the tail's are, so that they fall in the
//     dataset's networks in proportion to the networks' share of the
//     announced space.
//
// The caches are simulated, not instrumented: each query's city and ASN
// records are found in the real files (their source and offset, the
// caches' key) and run through caches of the engine's own type at each
// size. 2 million warm-up queries, then 2 million counted. It is a measurement,
// not a check, so it is a benchmark that logs its table, run once:
//
//	IPATLAS_TEST_DATA_DIR=DIR go test -run '^$' -bench RealCacheHitRates -benchtime 1x -v ./internal/geo/
func BenchmarkRealCacheHitRates(b *testing.B) {
	t := b
	dir := realdata.Dir(t)
	e, err := Open(dir, Options{CacheEntries: -1, ASNCacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	g := e.acquire()
	defer g.release()

	type key struct {
		src uint32
		off uintptr
	}
	find := func(list []*source, a netip.Addr) (key, bool) {
		for _, s := range list {
			res := s.r.Lookup(a)
			if res.Err() == nil && res.Found() {
				return key{s.id, res.Offset()}, true
			}
		}
		return key{}, false
	}
	type query struct {
		city, asn       key
		hasCity, hasASN bool
	}
	resolve := func(a netip.Addr) query {
		var q query
		if a.Is4() {
			q.city, q.hasCity = find(g.city4, a)
			q.asn, q.hasASN = find(g.asn4, a)
		} else {
			q.city, q.hasCity = find(g.city6, a)
			q.asn, q.hasASN = find(g.asn6, a)
		}
		return q
	}
	uniform := func(rng *rand.Rand) netip.Addr { return randomPublicAddr(rng, rng.IntN(8) == 0) }

	const popular, warm, counted = 100_000, 2_000_000, 2_000_000
	// Each cache at each size, then the engine's defaults together and
	// the defaults before they were chosen from these figures.
	type sizing struct{ city, asn int }
	var sizes []sizing
	for _, n := range []int{1 << 10, 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16, 1 << 17} {
		sizes = append(sizes, sizing{n, n})
	}
	sizes = append(sizes, sizing{DefaultCacheEntries, DefaultASNCacheEntries},
		sizing{1 << 16, 1 << 16})
	mixes := []struct {
		name string
		next func() netip.Addr
	}{
		{"uniform", func() func() netip.Addr {
			rng := rand.New(rand.NewPCG(1, 1))
			return func() netip.Addr { return uniform(rng) }
		}()},
		{"zipf", func() func() netip.Addr {
			rng := rand.New(rand.NewPCG(2, 2))
			pop := make([]netip.Addr, popular)
			for i := range pop {
				pop[i] = uniform(rng)
			}
			z := rand.NewZipf(rand.New(rand.NewPCG(3, 3)), 1.1, 1, popular-1)
			return func() netip.Addr {
				if rng.IntN(10) == 0 {
					return uniform(rng)
				}
				return pop[z.Uint64()]
			}
		}()},
	}
	for _, mix := range mixes {
		qs := make([]query, warm+counted)
		distinctCity, distinctASN := map[key]bool{}, map[key]bool{}
		found := 0
		for i := range qs {
			qs[i] = resolve(mix.next())
			if i >= warm {
				distinctCity[qs[i].city] = true
				distinctASN[qs[i].asn] = true
				if qs[i].hasCity {
					found++
				}
			}
		}
		if found == 0 {
			t.Fatalf("%s: no query found a city record", mix.name)
		}
		t.Logf("%s: %d counted queries, %d with a city record; distinct: %d city records, %d ASN records",
			mix.name, counted, found, len(distinctCity), len(distinctASN))
		t.Logf("%s: %20s %8s %8s", mix.name, "entries", "city", "asn")
		for _, n := range sizes {
			city, asn := newCache[struct{}](n.city), newCache[struct{}](n.asn)
			var hc, ha, nc, na int
			for i, q := range qs {
				cityHit, asnHit := true, true
				if q.hasCity {
					cityHit = city.get(q.city.src, q.city.off) != nil
					if !cityHit {
						city.put(&entry[struct{}]{src: q.city.src, off: q.city.off})
					}
				}
				if q.hasASN {
					asnHit = asn.get(q.asn.src, q.asn.off) != nil
					if !asnHit {
						asn.put(&entry[struct{}]{src: q.asn.src, off: q.asn.off})
					}
				}
				if i < warm {
					continue
				}
				if q.hasCity {
					nc++
					if cityHit {
						hc++
					}
				}
				if q.hasASN {
					na++
					if asnHit {
						ha++
					}
				}
			}
			t.Logf("%s: %20s %7.1f%% %7.1f%%", mix.name, fmt.Sprintf("%d/%d", n.city, n.asn),
				100*float64(hc)/float64(max(nc, 1)), 100*float64(ha)/float64(max(na, 1)))
		}
	}
}

// randomPublicAddr draws a public address uniformly: from the IPv4 space,
// or with v6 from 2000::/3, the global unicast space.
func randomPublicAddr(rng *rand.Rand, v6 bool) netip.Addr {
	for {
		var a netip.Addr
		if v6 {
			var b [16]byte
			hi, lo := rng.Uint64(), rng.Uint64()
			for i := range 8 {
				b[i], b[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
			}
			b[0] = 0x20 | b[0]&0x1f
			a = netip.AddrFrom16(b)
		} else {
			v := rng.Uint32()
			a = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		}
		if _, special := netaddr.Classify(a); !special {
			return a
		}
	}
}
