package geo_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// FuzzOpenAndLookup feeds arbitrary bytes to the engine as a data dir's
// MMDB file: opening, describing and looking up must never panic, and a
// file that cannot be used must fail with an error naming it. Seeds are
// valid files of both schemas and truncations of them.
func FuzzOpenAndLookup(f *testing.F) {
	seedDir := f.TempDir()
	city := filepath.Join(seedDir, "city.mmdb")
	asn := filepath.Join(seedDir, "asn.mmdb")
	geotest.WriteFlatCity(f, city, geotest.CityV4Type, 4, []geotest.FlatRow{
		{Network: "8.8.8.0/24", CountryCode: "US", State1: "California", City: "Mountain View", Latitude: 37.4, Longitude: -122.1},
		{Network: "202.106.0.0/20", CountryCode: "CN", State1: "Beijing", City: "Beijing", Latitude: 39.9, Longitude: 116.4},
		// "City (District)" names, split when a record is composed.
		{Network: "113.108.0.0/16", CountryCode: "CN", State1: "Guangdong", City: "Wushipai (Nanshan Qu)", Latitude: 22.5138, Longitude: 113.908},
		{Network: "1.11.0.0/16", CountryCode: "KR", State1: "Seoul", City: "Seoul (Toegye-ro", Latitude: 37.56, Longitude: 126.98},
	})
	geotest.WriteASN(f, asn, geotest.ASNType, []geotest.ASNRow{{Network: "8.8.8.0/24", ASN: 15169, Org: "Google LLC"}})
	for _, p := range []string{city, asn} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[len(b)/3:])
	}
	f.Add([]byte{})
	f.Add([]byte("\xab\xcd\xefMaxMind.com"))

	probes := []netip.Addr{
		netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("202.106.0.20"),
		netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("2001:4860:4860::8888"),
		netip.MustParseAddr("113.108.1.1"), netip.MustParseAddr("1.11.1.1"),
	}
	// Warm the process-wide tables (time-zone finders, names) with every
	// probe in both languages: they are built lazily, once, and that build
	// (slow under the fuzzer's instrumentation) would otherwise stall the
	// first inputs that reach them.
	if e, err := geo.Open(seedDir, geo.Options{}); err == nil {
		for _, a := range probes {
			for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
				_, _ = e.Lookup(a, lang)
			}
		}
		e.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A corrupt tree must not make a walk loop forever: an input still
		// running after a minute crashes the worker, which saves it.
		watchdog := time.AfterFunc(time.Minute, func() { panic("geo: an input took over a minute: a loop on a corrupt file?") })
		defer watchdog.Stop()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "fuzz.mmdb"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := geo.Describe(dir); err != nil && !strings.Contains(err.Error(), "fuzz.mmdb") {
			t.Errorf("Describe error does not name the file: %v", err)
		}
		e, err := geo.Open(dir, geo.Options{AllowEmpty: true})
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.mmdb") {
				t.Errorf("Open error does not name the file: %v", err)
			}
			return
		}
		defer e.Close()
		for _, a := range probes {
			for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
				r, err := e.Lookup(a, lang)
				if err != nil {
					if !strings.Contains(err.Error(), "fuzz.mmdb") {
						t.Errorf("Lookup(%s) error does not name the file: %v", a, err)
					}
					continue
				}
				if r.IP != a.String() {
					t.Errorf("Lookup(%s).IP = %q", a, r.IP)
				}
			}
		}
	})
}
