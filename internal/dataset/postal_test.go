package dataset_test

import (
	"bytes"
	"compress/gzip"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/postal"
)

// geonames is the GeoNames download every fetch of these tests reaches
// (options and the other helpers point PostalURL at it): tests never
// reach the internet.
var (
	geonames    *datasettest.GeoNames
	geonamesURL string
)

func TestMain(m *testing.M) {
	g, stop := datasettest.StartGeoNames()
	geonames, geonamesURL = g, g.URL
	code := m.Run()
	stop()
	os.Exit(code)
}

// answer looks addr up in the engine of dir.
func answer(t *testing.T, dir, addr string) ipatlas.Record {
	t.Helper()
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.Lookup(netip.MustParseAddr(addr), ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkPostal checks the codes the fixture's places get from
// datasettest.GeoNamesRows.
func checkPostal(t *testing.T, dir string) {
	t.Helper()
	for _, c := range []struct{ addr, zip, province string }{
		{"8.8.8.8", "94043", "CA"},          // by name, the nearest of Mountain View's three
		{"114.114.114.114", "210000", "JS"}, // Nanjing, the city's code
		{"1.1.1.1", "2000", "NSW"},          // no code named Sydney: the nearest, within reach
		{"81.2.69.160", "EC1A", "ENG"},      // the data's own code wins
		{"2001:4860::1", "94043", "CA"},
		{"2400:3200::1", "310000", "ZJ"},
	} {
		r := answer(t, dir, c.addr)
		if r.ZipCode != c.zip || r.ProvinceCode != c.province {
			t.Errorf("%s (%s, %s): zip %q, province code %q; want %q, %q", c.addr, r.City, r.Province, r.ZipCode, r.ProvinceCode, c.zip, c.province)
		}
	}
}

func TestFetchInstallsPostalCodes(t *testing.T) {
	before := geonames.Downloads()
	dir, reg := installV1(t)
	checkPostal(t, dir)
	for _, f := range []string{dataset.CityIPv4File, dataset.CityIPv6File} {
		if _, err := os.Stat(filepath.Join(dir, geo.PostalIndexFile(f))); err != nil {
			t.Errorf("no postal index beside %s: %v", f, err)
		}
	}
	m, err := dataset.ReadPostalManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source != geonamesURL || m.Codes != 8 || m.Countries != 3 || m.Attribution != postal.Attribution || !m.FetchedAt.Equal(fetchedAt.Truncate(time.Second)) {
		t.Errorf("postal manifest %+v", m)
	}
	if n := geonames.Downloads() - before; n != 1 {
		t.Errorf("%d downloads of the postal codes, want 1", n)
	}
	if ix, err := dataset.LoadPostal(dir); err != nil || ix.Len() != 8 || ix.Code("CN", "Zhejiang", "Hangzhou", math.NaN(), math.NaN()) != "310000" {
		t.Errorf("LoadPostal: %v, %v", ix.Len(), err)
	}

	// A fetch within PostalMaxAge downloads nothing; one after it does.
	if _, err := dataset.Fetch(t.Context(), options(dir, reg)); err != nil {
		t.Fatal(err)
	}
	if n := geonames.Downloads() - before; n != 1 {
		t.Errorf("%d downloads after a second fetch the same day, want 1", n)
	}
	later := options(dir, reg)
	later.Now = func() time.Time { return fetchedAt.Add(dataset.PostalMaxAge + time.Hour) }
	if _, err := dataset.Fetch(t.Context(), later); err != nil {
		t.Fatal(err)
	}
	if n := geonames.Downloads() - before; n != 2 {
		t.Errorf("%d downloads after PostalMaxAge, want 2", n)
	}
	checkPostal(t, dir)
}

// New postal codes give the installed city files new postal indexes,
// though the files themselves are current.
func TestNewPostalCodesRebuildTheIndexes(t *testing.T) {
	dir, reg := installV1(t)
	g := datasettest.NewGeoNames(t)
	g.Publish(datasettest.GeoNamesZip(strings.Replace(datasettest.GeoNamesRows, "94043", "94044", 1)))
	o := options(dir, reg)
	o.PostalURL, o.Force = g.URL, true
	if _, err := dataset.Fetch(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if n := reg.TarballRequests(dataset.CityPackage); n != 2 {
		t.Fatalf("%d city downloads, want 2 (Force)", n)
	}
	if r := answer(t, dir, "8.8.8.8"); r.ZipCode != "94044" {
		t.Errorf("8.8.8.8: zip %q after new postal codes, want 94044", r.ZipCode)
	}

	// The same with the city files current: only the index changes.
	g.Publish(datasettest.GeoNamesZip(strings.Replace(datasettest.GeoNamesRows, "94043", "94045", 1)))
	o.Force = false
	o.Now = func() time.Time { return fetchedAt.Add(dataset.PostalMaxAge + time.Hour) }
	if _, err := dataset.Fetch(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if n := reg.TarballRequests(dataset.CityPackage); n != 2 {
		t.Errorf("%d city downloads, want still 2", n)
	}
	if r := answer(t, dir, "8.8.8.8"); r.ZipCode != "94045" {
		t.Errorf("8.8.8.8: zip %q after newer postal codes, want 94045", r.ZipCode)
	}
}

// A bad download never replaces the copy in service: a cut one, one
// that is not GeoNames' format, one with far fewer codes.
func TestBadPostalDownloadKeepsTheCopy(t *testing.T) {
	dir, reg := installV1(t)
	g := datasettest.NewGeoNames(t)
	o := options(dir, reg)
	o.PostalURL = g.URL
	o.Now = func() time.Time { return fetchedAt.Add(dataset.PostalMaxAge + time.Hour) }
	var log bytes.Buffer
	o.Progress = &log
	for name, publish := range map[string]func(){
		"cut":       func() { g.Drop(100) },
		"not a zip": func() { g.Publish([]byte("<html>Service Unavailable</html>")) },
		"bad row":   func() { g.Publish(datasettest.GeoNamesZip("US\t94043\tMountain View\n")) },
		"too few":   func() { g.Publish(datasettest.GeoNamesZip(strings.SplitAfter(datasettest.GeoNamesRows, "\n")[0])) },
		"missing":   g.Unpublish,
	} {
		publish()
		log.Reset()
		if _, err := dataset.Fetch(t.Context(), o); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(log.String(), "could not be had") {
			t.Errorf("%s: no warning:\n%s", name, log.String())
		}
		if m, err := dataset.ReadPostalManifest(dir); err != nil || m.Source != geonamesURL {
			t.Errorf("%s: the copy in service was replaced: %+v, %v", name, m, err)
		}
		checkPostal(t, dir)
		g.Publish(datasettest.GeoNamesZip(datasettest.GeoNamesRows))
	}
}

// Where GeoNames cannot be reached and the data dir has no copy, the
// operator's copy serves (here gzip-compressed), and is kept.
func TestPostalFileServesOffline(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "allCountries.txt.gz")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(datasettest.GeoNamesRows))
	zw.Close()
	if err := os.WriteFile(file, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options(dir, reg)
	o.PostalURL, o.PostalFile = "http://127.0.0.1:1/allCountries.zip", file // nothing listens there
	if _, err := dataset.Fetch(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	checkPostal(t, dir)
	if m, err := dataset.ReadPostalManifest(dir); err != nil || m.Source != file || m.Codes != 8 {
		t.Errorf("postal manifest %+v, %v; want the copy of %s", m, err, file)
	}
	// The file is no longer needed: the data dir keeps its copy.
	os.Remove(file)
	o.Force = true
	if _, err := dataset.Fetch(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	checkPostal(t, dir)
}

// With no way to GeoNames, no copy and no file, the snapshot built in
// serves: Mountain View gets a code of its own.
func TestBuiltinPostalCodesServeLast(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	o := options(dir, reg)
	o.PostalURL = dataset.PostalOff
	var log bytes.Buffer
	o.Progress = &log
	if _, err := dataset.Fetch(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "snapshot built in") {
		t.Errorf("the log does not say the built-in snapshot serves:\n%s", log.String())
	}
	if r := answer(t, dir, "8.8.8.8"); !strings.HasPrefix(r.ZipCode, "940") {
		t.Errorf("8.8.8.8 (Mountain View): zip %q from the built-in snapshot, want one of Mountain View's 940xx", r.ZipCode)
	}
	if _, err := os.Stat(filepath.Join(dir, dataset.PostalFile)); !os.IsNotExist(err) {
		t.Errorf("the built-in snapshot was copied into the data dir: %v", err)
	}
	if ix, err := dataset.LoadPostal(dir); err != nil || ix.ID != postal.BuiltinID() {
		t.Errorf("LoadPostal without a copy: %v, not the built-in snapshot", err)
	}
}

// A copy in the data dir damaged after it was checked gives way to the
// snapshot built in, with a warning, rather than to no codes.
func TestDamagedPostalCopyFallsBackToBuiltin(t *testing.T) {
	dir, reg := installV1(t)
	if err := os.WriteFile(filepath.Join(dir, dataset.PostalFile), []byte("PK\x03\x04 not a zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options(dir, reg)
	o.Force = true // new city files, whose indexes need the codes
	var log bytes.Buffer
	o.Progress = &log
	o.PostalURL = "http://127.0.0.1:1/allCountries.zip" // nothing listens there
	if _, err := dataset.Fetch(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "using the built-in snapshot") {
		t.Errorf("no warning that the built-in snapshot serves:\n%s", log.String())
	}
	if r := answer(t, dir, "8.8.8.8"); !strings.HasPrefix(r.ZipCode, "940") {
		t.Errorf("8.8.8.8: zip %q, want one of Mountain View's from the built-in snapshot", r.ZipCode)
	}
}
