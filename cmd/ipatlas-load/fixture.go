package main

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// makeFixture writes a default-shaped dataset of `networks` IPv4 and as
// many IPv6 networks, each record shared by about 15 networks as in DB-IP's
// data, every network under an ASN network, and returns the networks.
// Records have coordinates but no time zone, like DB-IP Lite's, so the
// engine derives it as it does on the real data.
func makeFixture(dir string, networks int, seed uint64) (nets []netip.Prefix, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	t := &fixtureTB{}
	defer func() {
		if p := recover(); p != nil {
			if f, ok := p.(fixtureFailure); ok {
				err = f
				return
			}
			panic(p)
		}
	}()

	rng := rand.New(rand.NewPCG(seed, 2))
	countries := []string{"US", "CN", "DE", "JP", "GB", "FR", "BR", "IN", "RU", "KR", "CA", "AU", "SG", "NL", "IT"}
	pool := make([]geotest.FlatRow, max(networks/15, 1))
	for i := range pool {
		pool[i] = geotest.FlatRow{
			CountryCode: countries[rng.IntN(len(countries))],
			State1:      fmt.Sprintf("State %d", i%97), City: fmt.Sprintf("City %d", i),
			Latitude: -50 + rng.Float64()*110, Longitude: -170 + rng.Float64()*340,
		}
	}
	var v4, v6 []geotest.FlatRow
	var asn []geotest.ASNRow
	seen := map[netip.Prefix]bool{}
	add := func(p netip.Prefix, rows *[]geotest.FlatRow) {
		r := pool[rng.IntN(len(pool))]
		r.Network = p.String()
		*rows = append(*rows, r)
		asn = append(asn, geotest.ASNRow{Network: p.String(), ASN: uint32(1000 + rng.IntN(networks/10+1)), Org: fmt.Sprintf("Load Networks %d", rng.IntN(1000))})
		nets = append(nets, p)
	}
	for len(v4) < networks {
		// Disjoint /20s (nested networks would shadow each other), /20 to /28.
		a := netip.AddrFrom4([4]byte{byte(1 + rng.IntN(222)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
		outer, _ := a.Prefix(20)
		if seen[outer] || !a.IsGlobalUnicast() || a.IsPrivate() {
			continue
		}
		seen[outer] = true
		p, _ := a.Prefix(20 + rng.IntN(9))
		add(p, &v4)
	}
	for len(v6) < networks {
		// Disjoint /32s in 2400::/6 (allocated to registries, none special),
		// /32 to /48.
		var b [16]byte
		b[0] = 0x24 | byte(rng.IntN(4))
		b[1], b[2], b[3], b[4], b[5] = byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))
		a := netip.AddrFrom16(b)
		outer, _ := a.Prefix(32)
		if seen[outer] {
			continue
		}
		seen[outer] = true
		p, _ := a.Prefix(32 + rng.IntN(17))
		add(p, &v6)
	}
	geotest.WriteFlatCity(t, filepath.Join(dir, geotest.CityV4File), geotest.CityV4Type, 4, v4)
	geotest.WriteFlatCity(t, filepath.Join(dir, geotest.CityV6File), geotest.CityV6Type, 6, v6)
	geotest.WriteASN(t, filepath.Join(dir, geotest.ASNFile), geotest.ASNType, asn)
	return nets, nil
}

// fixtureTB lets the geotest writers, made for tests, run in this tool: a
// failure panics with fixtureFailure, recovered by makeFixture. Only the
// methods the writers call are implemented; the embedded nil interface
// would panic on any other.
type fixtureTB struct{ testing.TB }

type fixtureFailure struct{ msg string }

func (f fixtureFailure) Error() string { return f.msg }

func (*fixtureTB) Helper()                         {}
func (*fixtureTB) Fatal(args ...any)               { panic(fixtureFailure{fmt.Sprint(args...)}) }
func (*fixtureTB) Fatalf(format string, a ...any)  { panic(fixtureFailure{fmt.Sprintf(format, a...)}) }
func (*fixtureTB) Error(args ...any)               { panic(fixtureFailure{fmt.Sprint(args...)}) }
func (*fixtureTB) Errorf(format string, a ...any)  { panic(fixtureFailure{fmt.Sprintf(format, a...)}) }
func (*fixtureTB) Logf(format string, args ...any) {}
