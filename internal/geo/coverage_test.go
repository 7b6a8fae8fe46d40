package geo_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// TestCoverage measures how complete the answers of the real dataset are,
// over a fresh random sample of the address space that has an AS number:
//
//	IPATLAS_TEST_DATA_DIR=DIR go test -run TestCoverage -v ./internal/geo/
//
// Each run draws a new sample and prints its seed; IPATLAS_COVERAGE_SEED
// repeats a run. `ipatlas db coverage` prints the same report. The test
// fails when a measure misses its goal.
func TestCoverage(t *testing.T) {
	dir := realdata.Dir(t)
	seed := rand.Uint64()
	if s := os.Getenv("IPATLAS_COVERAGE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("IPATLAS_COVERAGE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (IPATLAS_COVERAGE_SEED=%d repeats this sample)", seed, seed)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rep, err := e.MeasureCoverage(geo.CoverageOptions{IPv4: 1000, IPv6: 300, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("coverage\n" + b.String())
	// Most announced addresses are located by the DB-IP data; a sample
	// that is not says the data dir or the engine is broken.
	if m := rep.Measure(geo.MeasureLocated); m.Share() < 90 {
		t.Errorf("only %d of %d sampled addresses located", m.Hit, m.Of)
	}
	// The goals (geo.Goal*) hold on every sample: a sample near a goal may
	// miss it by chance, which the ±95% column shows.
	for _, m := range rep.Measures {
		if !m.Met() && m.Name == geo.MeasureCityZh && m.Share() >= geo.FloorCityZh {
			t.Logf("%s: %.1f%%, short of the %.0f%% goal but above the %.0f%% floor the sources reach today",
				m.Name, m.Share(), m.Goal, geo.FloorCityZh)
			continue
		}
		if !m.Met() {
			t.Errorf("%s: %d/%d (%.1f%%), goal %.0f%%; the values most often missing are listed above",
				m.Name, m.Hit, m.Of, m.Share(), m.Goal)
		}
	}
}

// coverageFixture is the fixture's data dir, where every ASN network is
// one of the known places.
func coverageFixture(t *testing.T) *geo.Engine {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestCoverageOnFixture(t *testing.T) {
	e := coverageFixture(t)
	const n4, n6 = 400, 100
	rep, err := e.MeasureCoverage(geo.CoverageOptions{IPv4: n4, IPv6: n6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Seed != 1 || rep.IPv4 != n4 || rep.IPv6 != n6 || !reflect.DeepEqual(rep.ASNFiles, []string{geotest.ASNFile}) {
		t.Errorf("report header: %+v", rep)
	}
	m := func(name string) *geo.CoverageMeasure {
		t.Helper()
		mm := rep.Measure(name)
		if mm == nil {
			t.Fatalf("no measure %q", name)
		}
		return mm
	}
	// Every ASN network of the fixture has a located city record.
	if l := m(geo.MeasureLocated); l.Hit != n4+n6 || l.Of != n4+n6 {
		t.Errorf("located %d/%d, want all %d", l.Hit, l.Of, n4+n6)
	}
	// Every place has a city, and is either in China or has a province.
	cn, prov := m(geo.MeasureChinaCityZh), m(geo.MeasureProvinceZh)
	if cn.Of+prov.Of != n4+n6 || m(geo.MeasureCityPlain).Of != n4+n6 {
		t.Errorf("CN cities %d + provinces elsewhere %d, cities %d; want %d", cn.Of, prov.Of, m(geo.MeasureCityPlain).Of, n4+n6)
	}
	// Beijing and Shenzhen, 69,632 of the 69,888 IPv4 addresses with an
	// AS number, have Chinese names and area codes.
	if cn.Hit != cn.Of || cn.Of < n4*9/10 || cn.Of > n4 {
		t.Errorf("CN cities in Chinese: %d/%d of %d IPv4 draws", cn.Hit, cn.Of, n4)
	}
	if a := m(geo.MeasureChinaAreaCode); a.Hit != cn.Of || a.Of != cn.Of {
		t.Errorf("CN area codes %d/%d, want %d", a.Hit, a.Of, cn.Of)
	}
	// Only Nuremberg, half of the IPv6 space with an AS number, has a
	// district.
	d := m(geo.MeasureDistrict)
	if d.Of != n4+n6 || d.Hit < n6/4 || d.Hit > n6*3/4 {
		t.Errorf("districts %d/%d, want about %d", d.Hit, d.Of, n6/2)
	}
	if dz := m(geo.MeasureDistrictZh); dz.Of != d.Hit {
		t.Errorf("districts in Chinese counted %d answers, want the %d with a district", dz.Of, d.Hit)
	}
	for _, mm := range rep.Measures {
		missed := 0
		for _, v := range mm.Missing {
			missed += v.Count
		}
		if missed > mm.Of-mm.Hit || len(mm.Missing) > 15 {
			t.Errorf("%s: %d/%d but %d missing values %v", mm.Name, mm.Hit, mm.Of, missed, mm.Missing)
		}
	}

	again, err := e.MeasureCoverage(geo.CoverageOptions{IPv4: n4, IPv6: n6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep, again) {
		t.Errorf("the same seed measured differently:\n%+v\n%+v", rep, again)
	}

	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, mm := range rep.Measures {
		if !strings.Contains(b.String(), mm.Name) {
			t.Errorf("the table lacks %q:\n%s", mm.Name, b.String())
		}
	}
	if !strings.Contains(b.String(), "seed 1\n") {
		t.Errorf("the table does not name its seed:\n%s", b.String())
	}
}

func TestCoverageNeedsASNData(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFlatCity(t, filepath.Join(dir, geotest.CityV4File), geotest.CityV4Type, 4, []geotest.FlatRow{
		{Network: "8.8.8.0/24", CountryCode: "US", City: "Mountain View"},
	})
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.MeasureCoverage(geo.CoverageOptions{IPv4: 10, Seed: 1}); err == nil || !strings.Contains(err.Error(), "no ASN data") {
		t.Errorf("without ASN data: %v", err)
	}
	if _, err := e.MeasureCoverage(geo.CoverageOptions{}); err == nil {
		t.Error("an empty sample was measured")
	}
	e.Close()
	if _, err := e.MeasureCoverage(geo.CoverageOptions{IPv4: 1}); err != geo.ErrClosed {
		t.Errorf("after Close: %v", err)
	}
}

// The sample is weighted by network size and holds only public
// addresses of the family asked for.
func TestCoverageSampleIsWeighted(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteASN(t, filepath.Join(dir, geotest.ASNFile), geotest.ASNType, []geotest.ASNRow{
		{Network: "1.0.0.0/24", ASN: 1, Org: "small"},
		{Network: "2.0.0.0/22", ASN: 2, Org: "four times larger"},
		{Network: "10.0.0.0/8", ASN: 3, Org: "private, never drawn"},
		{Network: "2a00:1000::/32", ASN: 4, Org: "v6"},
		{Network: "2a00:2000::1/128", ASN: 5, Org: "longer than /64, never drawn"},
	})
	geotest.WriteFlatCity(t, filepath.Join(dir, geotest.CityV4File), geotest.CityV4Type, 4, []geotest.FlatRow{
		{Network: "2.0.0.0/22", CountryCode: "FR", City: "Paris"},
	})
	geotest.WriteFlatCity(t, filepath.Join(dir, geotest.CityV6File), geotest.CityV6Type, 6, []geotest.FlatRow{
		{Network: "2a00:1000::/32", CountryCode: "DE", City: "Berlin"},
	})
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const n = 2000
	rep, err := e.MeasureCoverage(geo.CoverageOptions{IPv4: n, IPv6: 50, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	// 2.0.0.0/22 holds 1024 of the 1280 drawable IPv4 addresses: 80%.
	// Every IPv6 draw is in 2a00:1000::/32.
	l := rep.Measure(geo.MeasureLocated)
	if fr := l.Hit - 50; fr < n*3/4 || fr > n*17/20 {
		t.Errorf("%d of %d IPv4 draws in the larger network, want about %d", fr, n, n*4/5)
	}
	if l.Of != n+50 {
		t.Errorf("%d draws, want %d", l.Of, n+50)
	}
	if p := rep.Measure(geo.MeasureCityPlain); p.Of != l.Hit {
		t.Errorf("%d cities for %d located answers", p.Of, l.Hit)
	}
}
