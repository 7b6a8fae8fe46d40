package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/mmdbgen"
)

// makeFixture writes a default-shaped dataset of `networks` IPv4 and as
// many IPv6 networks, each record shared by about 15 networks as in DB-IP's
// data, every network under an ASN network, and returns the networks.
// Records have coordinates but no time zone, like DB-IP Lite's, so the
// zones come from the zone indexes written beside the city files, as on
// an installed dataset.
func makeFixture(dir string, networks int, seed uint64) ([]netip.Prefix, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}

	rng := rand.New(rand.NewPCG(seed, 2))
	countries := []string{"US", "CN", "DE", "JP", "GB", "FR", "BR", "IN", "RU", "KR", "CA", "AU", "SG", "NL", "IT"}
	pool := make([]mmdbgen.FlatRow, max(networks/15, 1))
	for i := range pool {
		pool[i] = mmdbgen.FlatRow{
			CountryCode: countries[rng.IntN(len(countries))],
			State1:      fmt.Sprintf("State %d", i%97), City: fmt.Sprintf("City %d", i),
			Latitude: -50 + rng.Float64()*110, Longitude: -170 + rng.Float64()*340,
		}
	}
	var v4, v6 []mmdbgen.FlatRow
	var asn []mmdbgen.ASNRow
	var nets []netip.Prefix
	seen := map[netip.Prefix]bool{}
	add := func(p netip.Prefix, rows *[]mmdbgen.FlatRow) {
		r := pool[rng.IntN(len(pool))]
		r.Network = p.String()
		*rows = append(*rows, r)
		asn = append(asn, mmdbgen.ASNRow{Network: p.String(), ASN: uint32(1000 + rng.IntN(networks/10+1)), Org: fmt.Sprintf("Load Networks %d", rng.IntN(1000))})
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
	if err := mmdbgen.WriteFlatCity(filepath.Join(dir, mmdbgen.CityV4File), mmdbgen.CityV4Type, 4, v4); err != nil {
		return nil, err
	}
	if err := mmdbgen.WriteFlatCity(filepath.Join(dir, mmdbgen.CityV6File), mmdbgen.CityV6Type, 6, v6); err != nil {
		return nil, err
	}
	if err := mmdbgen.WriteASN(filepath.Join(dir, mmdbgen.ASNFile), mmdbgen.ASNType, asn); err != nil {
		return nil, err
	}
	// Each city file gets its zone index, as `db fetch` installs it, so
	// that the harness measures what users run.
	for _, name := range []string{mmdbgen.CityV4File, mmdbgen.CityV6File} {
		if _, err := geo.WriteZoneIndex(context.Background(), filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	return nets, nil
}
