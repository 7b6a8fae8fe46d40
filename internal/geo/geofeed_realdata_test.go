package geo_test

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gaissmai/bart"
	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/names/fold"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/ulikunitz/xz"
)

// The shared data beside the repository (CI lays it there): Netflix's
// published feed, which no test of the engine's rules was written
// against, and GeoNames' postal points, an independent record of where
// places are.
const (
	netflixFeed = "../../../shared/data/geofeeds/netflix-geofeed.csv"
	postalFile  = "../../../shared/data/postal/geonames-postal-allCountries.txt.xz"
)

// TestUnseenFeedGoal: an operator's real feed, served locally and given
// as a user gives one (its URL, no AS list), on the real dataset. Every
// entry must answer the feed's country, region code and city; the time
// zone must be one of the country's; the coordinates must be those of the
// named place: the dataset's for that city where it has it, which the
// test holds to GeoNames' postal points of that place name (within 30
// km; for the countries GeoNames covers and the names it spells alike).
func TestUnseenFeedGoal(t *testing.T) {
	dir := realdata.Dir(t)
	body, err := os.ReadFile(netflixFeed)
	if err != nil {
		t.Skipf("no Netflix feed beside the repository (../shared/data/geofeeds, laid by CI): %v", err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		w.Write(body)
	}))
	defer srv.Close()
	src, err := geofeed.ParseSource(srv.URL + "/geofeed.csv")
	if err != nil {
		t.Fatal(err)
	}
	copy, err := geofeed.Fetch(context.Background(), srv.Client(), t.TempDir(), src, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	e.SetFeeds([]geo.FeedInput{{Source: src, Copy: copy}})
	took := time.Since(start)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	info := e.Corrections()[0]
	t.Logf("feed: %d lines, %d entries, %d applied, %d partial, refused %v, %d unlocated, IPv4 share %.5f%%; built in %s; heap +%.1f MiB",
		info.Lines, info.Entries, info.Applied, info.Partial, info.Refused, info.Unlocated, 100*info.Share4,
		took.Round(time.Millisecond), float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20))

	// An address answers the most specific entry that holds it: feeds
	// nest /27s in /24s.
	all := slices.Collect(copy.Feed.All())
	var entries bart.Table[geofeed.Entry]
	for _, en := range all {
		entries.Insert(en.Prefix, en)
	}
	points := postalPoints(t, all)
	var n, country, region, city, zone, located, postalCodes, checked, near int
	var far []string
	for _, outer := range all {
		for _, addr := range []netip.Addr{outer.Prefix.Addr(), lastAddr(outer.Prefix)} {
			en, _ := entries.Lookup(addr)
			n++
			rec := lookup(t, e, addr.String(), ipatlas.English)
			asn, _ := strconv.ParseUint(strings.TrimPrefix(rec.ASN, "AS"), 10, 32)
			if rec.CountryCode == en.Country {
				country++
			}
			// The region code as the record answers it (province_code
			// beside country_code), and as the correction holds it.
			answered := ""
			if rec.ProvinceCode != "" {
				answered = rec.CountryCode + "-" + rec.ProvinceCode
			}
			if got, ok := geo.CorrectionRegion(e, addr, uint32(asn)); ok && got == en.Region && answered == en.Region {
				region++
			} else {
				t.Logf("%s (%s): region %q (record %s-%s), not the feed's %q", addr, en.Prefix, got, rec.CountryCode, rec.ProvinceCode, en.Region)
			}
			if rec.ZipCode != "" {
				postalCodes++
			}
			if rec.City == en.City && rec.LocationSource == "geofeed:"+src.Name {
				city++
			} else {
				t.Logf("%s (%s): %s, not the feed's %s", addr, en.Prefix, show(rec), en.City)
			}
			if slices.Contains(names.TimeZones(en.Country), rec.TimeZone) {
				zone++
			}
			if rec.Latitude == nil {
				t.Logf("%s (%s): no coordinates for %s %s %s", addr, en.Prefix, en.Country, en.Region, en.City)
				continue
			}
			located++
			pts := points[en.Country+"|"+foldKey(en.City)]
			if len(pts) == 0 {
				continue
			}
			checked++
			best := math.Inf(1)
			for _, p := range pts {
				best = min(best, distanceKm(*rec.Latitude, *rec.Longitude, p[0], p[1]))
			}
			if best <= 30 {
				near++
			} else {
				far = append(far, en.Country+" "+en.City)
			}
		}
	}
	pct := func(k int) string { return strconv.FormatFloat(100*float64(k)/float64(n), 'f', 1, 64) + "%" }
	t.Logf("%d addresses (first and last of %d entries): country %s, region code %s, city %s, a zone of the country %s, coordinates %s, a postal code %s; "+
		"of %d with GeoNames postal points of the place, %d within 30 km",
		n, copy.Feed.Len(), pct(country), pct(region), pct(city), pct(zone), pct(located), pct(postalCodes), checked, near)
	if country != n || region != n || city != n || zone != n || located != n {
		t.Errorf("not every address answers the feed's place")
	}
	if near != checked {
		slices.Sort(far)
		t.Errorf("coordinates farther than 30 km from every GeoNames postal point of the place: %q", slices.Compact(far))
	}
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func foldKey(s string) string {
	var buf fold.Buf
	full, _, _ := fold.Keys(&buf, s)
	return string(full)
}

// postalPoints reads GeoNames' postal points of the places the entries
// name, by country and fold key of the place name; none when the file is
// absent.
func postalPoints(t *testing.T, entries []geofeed.Entry) map[string][][2]float64 {
	want := map[string]bool{}
	for _, en := range entries {
		want[en.Country+"|"+foldKey(en.City)] = true
	}
	f, err := os.Open(postalFile)
	if err != nil {
		t.Logf("no GeoNames postal points beside the repository: coordinates are not compared (%v)", err)
		return nil
	}
	defer f.Close()
	r, err := xz.NewReader(bufio.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][2]float64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 11 {
			continue
		}
		k := cols[0] + "|" + foldKey(cols[2])
		if !want[k] {
			continue
		}
		lat, err1 := strconv.ParseFloat(cols[9], 64)
		lon, err2 := strconv.ParseFloat(cols[10], 64)
		if err1 == nil && err2 == nil {
			out[k] = append(out[k], [2]float64{lat, lon})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func distanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	const rad = math.Pi / 180
	dlat, dlon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dlat/2)*math.Sin(dlat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlon/2)*math.Sin(dlon/2)
	return 2 * 6371 * math.Asin(math.Min(1, math.Sqrt(a)))
}
