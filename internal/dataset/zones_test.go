package dataset_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geo"
)

// checkZoneIndexes checks that each city file of dir has a zone index
// that fits it, that the ASN file has none, and that the engine answers
// a time zone that comes from coordinates.
func checkZoneIndexes(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{dataset.CityIPv4File, dataset.CityIPv6File} {
		need, err := geo.NeedsZoneIndex(filepath.Join(dir, name))
		if err != nil || need {
			t.Errorf("%s: needs a zone index: %v, %v", name, need, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, geo.ZoneIndexFile(dataset.ASNFile))); err == nil {
		t.Errorf("%s has a zone index", dataset.ASNFile)
	}
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for ip, want := range map[string]string{"8.8.8.8": "America/Los_Angeles", "2400:3200::1": "Asia/Shanghai", "1.1.1.1": "Australia/Sydney"} {
		r, err := e.Lookup(netip.MustParseAddr(ip), ipatlas.English)
		if err != nil || r.TimeZone != want {
			t.Errorf("%s: time zone %q (%v), want %q", ip, r.TimeZone, err, want)
		}
	}
}

func TestFetchInstallsZoneIndexes(t *testing.T) {
	dir, _ := installV1(t)
	checkZoneIndexes(t, dir)
}

func TestFetchOfCurrentDatasetAddsMissingZoneIndex(t *testing.T) {
	dir, reg := installV1(t)
	// One index gone, the other written for another file: an install
	// made before indexes existed, or by hand.
	if err := os.Remove(filepath.Join(dir, geo.ZoneIndexFile(dataset.CityIPv4File))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, geo.ZoneIndexFile(dataset.CityIPv6File)), []byte("IPATZONE stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.Fetch(t.Context(), options(dir, reg)); err != nil {
		t.Fatal(err)
	}
	if n := reg.TarballRequests(dataset.CityPackage); n != 1 {
		t.Errorf("%d city downloads, want 1: the data was current", n)
	}
	checkZoneIndexes(t, dir)
}
