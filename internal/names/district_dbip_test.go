package names

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// TestDBIPDistrictByName measures, on the real DB-IP Lite city data, the
// Chinese districts chosen by name: the CN networks whose district name
// ("Wushipai (Nanshan Qu)") or town name ("Guancheng") spells a county of
// their city, and how many of those the county containing the coordinates
// would have named otherwise. Every district chosen by name must be a
// county of the record's city, with the English district the data's
// spelling. It needs the data (IPATLAS_TEST_DATA_DIR):
//
//	IPATLAS_TEST_DATA_DIR=/path/to/data go test -run TestDBIPDistrictByName -v ./internal/names
func TestDBIPDistrictByName(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	type place struct {
		province, city string
		lat, lon       float64
	}
	networks := map[place]int{}
	eachDBIPNetwork(t, dir, func(_ netip.Prefix, rec dbipCity) {
		if rec.Country == "CN" {
			networks[place{rec.State1, rec.City, rec.Lat, rec.Lon}]++
		}
	})
	if len(networks) == 0 {
		t.Fatal("no CN records in the DB-IP data")
	}

	type change struct {
		p                place
		n                int
		contained, named string
	}
	var changes []change
	var places, nets, namedPlaces, namedNets, changedPlaces, changedNets int
	for p, n := range networks {
		// "Town (District Qu)" as the engine splits it.
		city, dist := p.city, ""
		if i := strings.Index(city, " ("); i > 0 && strings.HasSuffix(city, ")") {
			city, dist = city[:i], city[i+2:len(city)-1]
		}
		places++
		nets += n
		r := chinaResolve(p.province, city, p.lat, p.lon)
		named, ok := "", false
		if dist != "" {
			named, ok = cnCountyNamed(r.chinese, dist)
		} else if r.town && r.county != r.chinese {
			named, ok = cnCountyNamed(r.chinese, city)
		}
		if !ok {
			continue
		}
		namedPlaces++
		namedNets += n
		got := District("CN", p.province, city, dist, p.lat, p.lon, ipatlas.Chinese)
		if got != named || !isCountyOf(got, r.chinese) {
			t.Errorf("%+v: zh district %q, want %q, a county of %s", p, got, named, r.chinese)
		}
		wantEN := city
		if dist != "" {
			wantEN = trimDistrictWord(dist)
		}
		if en := District("CN", p.province, city, dist, p.lat, p.lon, ipatlas.English); en != wantEN {
			t.Errorf("%+v: en district %q, want the data's %q", p, en, wantEN)
		}
		if contained := cnContainingCounty(p.province, r, p.lat, p.lon); contained != named {
			changedPlaces++
			changedNets += n
			changes = append(changes, change{p, n, contained, named})
		}
	}
	t.Logf("CN records: %d places, %d networks", places, nets)
	t.Logf("district or town name spells a county of its city: %d places, %d networks", namedPlaces, namedNets)
	t.Logf("of those, the containing county was another: %d places, %d networks", changedPlaces, changedNets)
	slices.SortFunc(changes, func(a, b change) int { return cmp.Compare(b.n, a.n) })
	for _, c := range changes[:min(len(changes), 40)] {
		t.Logf("  %6d  %s / %s (%.4f, %.4f): %q -> %s", c.n, c.p.province, c.p.city, c.p.lat, c.p.lon, c.contained, c.named)
	}
}
