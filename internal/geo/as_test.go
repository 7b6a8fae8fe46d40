package geo_test

import (
	"errors"
	"log/slog"
	"net/netip"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

func asDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFlatCity(t, filepath.Join(dir, geotest.CityV4File), geotest.CityV4Type, 4, []geotest.FlatRow{
		{Network: "8.8.8.0/24", CountryCode: "US", City: "Mountain View", Latitude: 37.4, Longitude: -122.1},
		{Network: "8.8.4.0/24", CountryCode: "US", City: "Mountain View", Latitude: 37.4, Longitude: -122.1},
		{Network: "34.0.0.0/15", CountryCode: "US", City: "Council Bluffs", Latitude: 41.2, Longitude: -95.8},
		{Network: "35.200.0.0/24", CountryCode: "JP", City: "Tokyo", Latitude: 35.7, Longitude: 139.7},
	})
	geotest.WriteASN(t, filepath.Join(dir, geotest.ASNFile), geotest.ASNType, []geotest.ASNRow{
		{Network: "8.8.4.0/24", ASN: 15169, Org: "Google LLC"},
		{Network: "8.8.8.0/24", ASN: 15169, Org: "Google LLC"},
		{Network: "34.0.0.0/15", ASN: 15169, Org: "Google LLC"},
		{Network: "35.200.0.0/24", ASN: 15169, Org: "Google LLC"},
		{Network: "2001:4860::/32", ASN: 15169, Org: "Google LLC"},
		{Network: "202.106.0.0/20", ASN: 4808, Org: "China Unicom Beijing Province Network"},
		{Network: "2a01:4f8::/32", ASN: 24940, Org: "Hetzner Online GmbH"},
	})
	return dir
}

// TestAS: an AS's prefixes of both families with their sizes, its IPv4
// address count, its country (where most of its addresses are) in both
// languages, and hosting from the datacenter AS list.
func TestAS(t *testing.T) {
	dir := asDir(t)
	geotest.WritePrivacyList(t, dir, "x4bnet-datacenter-asn", "AS24940 # HETZNER-AS, DE\n", time.Now())
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.AS(15169, ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	pfx := func(s, size string) ipatlas.ASPrefix {
		return ipatlas.ASPrefix{Netblock: netip.MustParsePrefix(s), Size: size}
	}
	want := ipatlas.AS{
		ASN: "AS15169", Name: "Google LLC", Country: "United States", CountryCode: "US",
		NumIPs: 131072 + 256*3,
		Prefixes: []ipatlas.ASPrefix{pfx("8.8.4.0/24", "256"), pfx("8.8.8.0/24", "256"), pfx("34.0.0.0/15", "131072"),
			pfx("35.200.0.0/24", "256")},
		Prefixes6: []ipatlas.ASPrefix{pfx("2001:4860::/32", "79228162514264337593543950336")},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("AS15169:\n got %+v\nwant %+v", got, want)
	}
	zh, err := e.AS(15169, ipatlas.Chinese)
	if err != nil || zh.Country != "美国" || zh.CountryCode != "US" || zh.Name != "Google LLC" {
		t.Errorf("AS15169 in Chinese: %+v, %v", zh, err)
	}
	h, err := e.AS(24940, ipatlas.English)
	if err != nil || !h.Hosting || len(h.Prefixes) != 0 || h.NumIPs != 0 || len(h.Prefixes6) != 1 || h.Prefixes == nil {
		t.Errorf("AS24940: %+v, %v", h, err)
	}
	if got, _ := e.AS(4808, ipatlas.English); got.Hosting || got.CountryCode != "" {
		t.Errorf("AS4808 (no city data, not on the list): %+v", got)
	}
	for _, n := range []uint32{0, 64512, ipatlas.MaxASN} {
		if _, err := e.AS(n, ipatlas.English); !errors.Is(err, ipatlas.ErrUnknownAS) {
			t.Errorf("AS%d: %v, want UnknownAS", n, err)
		}
	}
}

// TestRealAS checks the index over the real ASN data.
func TestRealAS(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	g, err := e.AS(15169, ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("first AS query (builds the index): %s, heap %+d MB", took.Round(time.Millisecond), (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>20)
	if g.Name == "" || g.CountryCode != "US" || g.NumIPs < 1<<20 || len(g.Prefixes) < 100 || len(g.Prefixes6) < 5 {
		t.Errorf("AS15169: %s %s %s, %d IPv4 addresses, %d+%d prefixes", g.ASN, g.Name, g.CountryCode, g.NumIPs, len(g.Prefixes), len(g.Prefixes6))
	}
	t.Logf("AS15169: %s %s, %d IPv4 addresses, %d+%d prefixes, hosting %v", g.Name, g.CountryCode, g.NumIPs, len(g.Prefixes), len(g.Prefixes6), g.Hosting)
	r, err := e.Lookup(netip.MustParseAddr("8.8.8.8"), ipatlas.English)
	if err != nil || !r.Route.IsValid() || !r.Route.Contains(netip.MustParseAddr("8.8.8.8")) {
		t.Errorf("8.8.8.8: route %v, %v", r.Route, err)
	}
	t.Logf("8.8.8.8: route %s privacy %+v", r.Route, *r.Privacy)
}

// TestASIndexAhead: once asked, the engine builds the AS index of the
// dataset in service without waiting for an AS query, and again for a
// dataset reloaded later, whose index holds the new data; AS queries
// racing the build answer as after it.
func TestASIndexAhead(t *testing.T) {
	dir := asDir(t)
	logs := &syncBuffer{}
	e, err := geo.Open(dir, geo.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	built := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); strings.Count(logs.String(), `msg="AS index built"`) < n; {
			if time.Now().After(deadline) {
				t.Fatalf("no AS index built ahead (%d wanted); log:\n%s", n, logs.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if strings.Contains(logs.String(), "AS index") {
		t.Fatalf("an AS index was built before it was asked for:\n%s", logs.String())
	}
	e.IndexASAhead()
	e.IndexASAhead() // asking twice builds once
	built(1)
	if !strings.Contains(logs.String(), "networks=7 ") {
		t.Errorf("the index built ahead does not count the fixture's 7 networks:\n%s", logs.String())
	}
	if g, err := e.AS(15169, ipatlas.English); err != nil || g.NumIPs != 131072+256*3 || len(g.Prefixes6) != 1 {
		t.Errorf("AS15169 from the index built ahead: %+v, %v", g, err)
	}

	// A new dataset (installed by a rename, as `db fetch` does): its index
	// is built ahead too, from its own ASN file.
	reload := func(rows ...geotest.ASNRow) {
		t.Helper()
		side := filepath.Join(t.TempDir(), "asn.mmdb")
		geotest.WriteASN(t, side, geotest.ASNType, rows)
		install(t, side, filepath.Join(dir, geotest.ASNFile))
		if err := e.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	google := geotest.ASNRow{Network: "8.8.8.0/24", ASN: 15169, Org: "Google LLC"}
	cloudflare := geotest.ASNRow{Network: "1.1.1.0/24", ASN: 13335, Org: "Cloudflare, Inc."}
	reload(google, cloudflare)
	built(2)
	if !strings.Contains(logs.String(), "networks=2 ") {
		t.Errorf("the reloaded dataset's index does not count its 2 networks:\n%s", logs.String())
	}
	if g, err := e.AS(15169, ipatlas.English); err != nil || g.NumIPs != 256 || len(g.Prefixes6) != 0 {
		t.Errorf("AS15169 after the reload: %+v, %v", g, err)
	}

	// Queries racing the build of the next one answer from the new data.
	reload(cloudflare)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if g, err := e.AS(13335, ipatlas.English); err != nil || g.Name != "Cloudflare, Inc." || g.NumIPs != 256 {
				t.Errorf("AS13335 during the build: %+v, %v", g, err)
			}
			if _, err := e.AS(15169, ipatlas.English); !errors.Is(err, ipatlas.ErrUnknownAS) {
				t.Errorf("AS15169, gone from the new data: %v, want UnknownAS", err)
			}
		})
	}
	wg.Wait()
}

// A background build that gives up (its dataset was replaced) leaves the
// index to the first query rather than an error for it.
func TestASIndexAheadStops(t *testing.T) {
	e, err := geo.Open(asDir(t), geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if stopped, later := geo.ASIndexStopped(e); !stopped || !later {
		t.Errorf("stopped %v, built by the next query %v; want both", stopped, later)
	}
	if g, err := e.AS(15169, ipatlas.English); err != nil || g.Name != "Google LLC" {
		t.Errorf("AS15169 after a stopped build: %+v, %v", g, err)
	}
}
