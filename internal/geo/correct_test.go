package geo_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/names"
)

func parseFeed(t *testing.T, name, text string) *geofeed.Feed {
	t.Helper()
	f, err := geofeed.Parse(strings.NewReader(text), name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func feedInput(t *testing.T, name string, ases []uint32, text string) geo.FeedInput {
	t.Helper()
	src := geofeed.Source{Name: name, URL: "https://" + name + ".example/geofeed.csv", ASes: ases}
	return geo.FeedInput{Source: src, Copy: &geofeed.Copy{Source: src, File: name + ".csv", Feed: parseFeed(t, name+".csv", text)}}
}

// openCorrectable opens the fixture with the share bound off: the fixture
// announces a few networks, so any feed would be a large share of them.
func openCorrectable(t *testing.T) *geo.Engine {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{MaxFeedShare: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// sameJSON holds AppendJSON to encoding/json of Lookup for addr.
func sameJSON(t *testing.T, e *geo.Engine, addr string, lang ipatlas.Lang) {
	t.Helper()
	a := netip.MustParseAddr(addr)
	rec, err := e.Lookup(a, lang)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	enc.Encode(&rec)
	got, err := e.AppendJSON(nil, a, lang)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != want.String() {
		t.Errorf("AppendJSON(%s):\n got %s\nwant %s", addr, got, want.String())
	}
}

// The layers answer in order, most specific first within each: an
// override, then a feed (only for its ASes, only for entries no broader
// than /8), then the dataset; and a corrected place moves whole.
func TestCorrectionsPrecedence(t *testing.T) {
	e := openCorrectable(t)
	e.SetFeeds([]geo.FeedInput{feedInput(t, "example", []uint32{15169}, `# a feed
8.8.8.0/24,DE,DE-BY,Nuremberg,
202.106.0.0/20,US,US-CA,Mountain View,
8.0.0.0/7,US,,,
2001:4860::/32,SG,,,
`)})
	e.SetOverrides(&geo.Overrides{File: "overrides.csv", Feed: parseFeed(t, "overrides.csv", `8.8.8.8/32,CN,CN-11,Beijing,
bogus,XX
8.8.8.16/28,US,US-CA,Mountain View,99999
`)})

	// The override wins for its /32.
	rec := lookup(t, e, "8.8.8.8", ipatlas.English)
	if rec.CountryCode != "CN" || rec.City != "Beijing" || rec.Province != "Beijing" || rec.AreaCode != "010" ||
		rec.TimeZone != "Asia/Shanghai" || rec.Currency != "CNY" || rec.LocationSource != geo.SourceOverride {
		t.Errorf("override: %s", show(rec))
	}
	if rec.Latitude == nil || *rec.Latitude != geotest.Beijing.Latitude || *rec.Longitude != geotest.Beijing.Longitude {
		t.Errorf("override's coordinates are not the dataset's Beijing: %s", show(rec))
	}
	if rec.ISP != "Google LLC" || rec.ASN != "AS15169" || rec.Route != netip.MustParsePrefix("8.8.8.0/24") {
		t.Errorf("a correction moves the location, not the network: %s", show(rec))
	}
	zh := lookup(t, e, "8.8.8.8", ipatlas.Chinese)
	if zh.Country != "中国" || zh.City != "北京市" || zh.Province != names.Province("CN", "Beijing", ipatlas.Chinese) {
		t.Errorf("override in Chinese: %s", show(zh))
	}
	// The override's postal code is its own.
	if rec := lookup(t, e, "8.8.8.17", ipatlas.English); rec.ZipCode != "99999" || rec.City != "Mountain View" || rec.LocationSource != geo.SourceOverride {
		t.Errorf("override with a postal code: %s", show(rec))
	}

	// The feed places the rest of its /24, whole: Bavaria's Nuremberg
	// with the dataset's coordinates, zone, postal code and calling code.
	rec = lookup(t, e, "8.8.8.9", ipatlas.English)
	want := geotest.Nuremberg
	if rec.CountryCode != "DE" || rec.Country != "Germany" || rec.Continent != "Europe" || rec.Province != "Bavaria" || rec.City != "Nuremberg" ||
		rec.District != "" || rec.TimeZone != "Europe/Berlin" || rec.Currency != "EUR" || rec.AreaCode != "49" || rec.ZipCode != want.ZipCode ||
		rec.Latitude == nil || *rec.Latitude != want.Latitude || *rec.Longitude != want.Longitude || rec.LocationSource != "geofeed:example" {
		t.Errorf("feed: %s", show(rec))
	}
	// A country alone makes no city and no coordinates up.
	rec = lookup(t, e, geotest.GoogleV6.IP, ipatlas.English)
	if rec.CountryCode != "SG" || rec.City != "" || rec.Province != "" || rec.Latitude != nil || rec.TimeZone != "Asia/Singapore" ||
		rec.LocationSource != "geofeed:example" {
		t.Errorf("country-only entry: %s", show(rec))
	}
	// Not the feed's AS: the dataset answers.
	if rec := lookup(t, e, geotest.Beijing.IP, ipatlas.English); rec.City != "Beijing" || rec.LocationSource != geo.SourceDataset {
		t.Errorf("an entry outside the feed's ASes moved an address: %s", show(rec))
	}
	for _, addr := range []string{"8.8.8.8", "8.8.8.9", "8.8.8.17", geotest.GoogleV6.IP, geotest.Beijing.IP, geotest.UncoveredIP} {
		sameJSON(t, e, addr, ipatlas.English)
		sameJSON(t, e, addr, ipatlas.Chinese)
	}
	if rec := lookup(t, e, geotest.UncoveredIP, ipatlas.English); rec.LocationSource != "" {
		t.Errorf("a record without location says where it comes from: %q", rec.LocationSource)
	}

	infos := e.Corrections()
	if len(infos) != 2 {
		t.Fatalf("corrections: %+v", infos)
	}
	ov, fd := infos[0], infos[1]
	if ov.Kind != "override" || ov.Entries != 2 || ov.Applied != 2 || ov.Skipped != 1 || len(ov.Problems) != 1 ||
		!strings.HasPrefix(ov.Problems[0].String(), "overrides.csv:2: ") {
		t.Errorf("overrides info: %+v", ov)
	}
	if fd.Kind != "geofeed" || fd.Entries != 4 || fd.Applied != 2 || fd.Refused["too_broad"] != 1 || fd.Refused["not_announced"] != 1 {
		t.Errorf("feed info: %+v", fd)
	}

	// A reload of the dataset keeps the corrections.
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if rec := lookup(t, e, "8.8.8.8", ipatlas.English); rec.LocationSource != geo.SourceOverride {
		t.Errorf("after a reload: %s", show(rec))
	}
	// Removing the overrides leaves the feed.
	e.SetOverrides(nil)
	if rec := lookup(t, e, "8.8.8.8", ipatlas.English); rec.LocationSource != "geofeed:example" || rec.City != "Nuremberg" {
		t.Errorf("without overrides: %s", show(rec))
	}
	e.SetFeeds(nil)
	if rec := lookup(t, e, "8.8.8.8", ipatlas.English); rec.LocationSource != geo.SourceDataset || rec.City != "Mountain View" {
		t.Errorf("without corrections: %s", show(rec))
	}
}

// Within a layer the most specific prefix wins, and of two feeds placing
// one prefix the first does.
func TestCorrectionsMostSpecific(t *testing.T) {
	e := openCorrectable(t)
	e.SetFeeds([]geo.FeedInput{
		feedInput(t, "first", nil, "8.8.8.0/24,SG,,,\n8.8.8.128/25,DE,DE-BY,Nuremberg,\n"),
		feedInput(t, "second", nil, "8.8.8.0/24,CN,,,\n8.8.8.64/26,CN,CN-11,Beijing,\n"),
	})
	for addr, want := range map[string]string{
		"8.8.8.1": "SG/geofeed:first", "8.8.8.200": "DE/geofeed:first", "8.8.8.70": "CN/geofeed:second",
	} {
		rec := lookup(t, e, addr, ipatlas.English)
		if got := rec.CountryCode + "/" + rec.LocationSource; got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}

// A feed that would place more than a plausible share of the announced
// space is refused whole, and says so. The fixture announces little, so
// the bound is set below the share of one /24 of it.
func TestCorrectionsShareBound(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{MaxFeedShare: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetFeeds([]geo.FeedInput{feedInput(t, "greedy", nil, "8.8.8.0/24,SG,,,\n")})
	if rec := lookup(t, e, "8.8.8.8", ipatlas.English); rec.LocationSource != geo.SourceDataset {
		t.Errorf("a refused feed answered: %s", show(rec))
	}
	info := e.Corrections()[0]
	if info.FeedRefused == "" || info.Applied != 0 || info.Refused["feed_refused"] != 1 || info.Share4 <= 0.001 {
		t.Errorf("refused feed's info: %+v", info)
	}
}

// Corrections name places the dataset spells otherwise, or knows in
// another subdivision: the coordinates are still the dataset's for that
// city, and a city no data knows has none.
func TestCorrectionsPlaceNames(t *testing.T) {
	e := openCorrectable(t)
	e.SetOverrides(&geo.Overrides{File: "o.csv", Feed: parseFeed(t, "o.csv", `8.8.8.1/32,DE,DE-BY,NUREMBERG
8.8.8.2/32,US,US-NY,Mountain View
8.8.8.3/32,DE,,Nuremberg-Fürth
8.8.8.4/32,US,US-CA,Nowhere Springs
8.8.8.5/32,DE,DE-BY,
`)})
	near := func(rec ipatlas.Record, k geotest.Known) bool {
		return rec.Latitude != nil && *rec.Latitude == k.Latitude && *rec.Longitude == k.Longitude
	}
	if rec := lookup(t, e, "8.8.8.1", ipatlas.English); rec.City != "NUREMBERG" || !near(rec, geotest.Nuremberg) || rec.Province != "Bavaria" {
		t.Errorf("a spelling of the dataset's city: %s", show(rec))
	}
	// New York is not a subdivision of the fixture: its name is unknown,
	// and the city is found in the country.
	if rec := lookup(t, e, "8.8.8.2", ipatlas.English); !near(rec, geotest.MountainView) || rec.TimeZone != "America/Los_Angeles" {
		t.Errorf("a city in another subdivision: %s", show(rec))
	}
	if rec := lookup(t, e, "8.8.8.3", ipatlas.English); !near(rec, geotest.Nuremberg) || rec.Province != "Bavaria" {
		t.Errorf("a metropolitan area: %s", show(rec))
	}
	if rec := lookup(t, e, "8.8.8.4", ipatlas.English); rec.City != "Nowhere Springs" || rec.Latitude != nil || rec.Province != "California" ||
		rec.TimeZone != "America/Los_Angeles" {
		t.Errorf("an unknown city: %s", show(rec))
	}
	if rec := lookup(t, e, "8.8.8.5", ipatlas.English); rec.City != "" || rec.Latitude != nil || rec.Province != "Bavaria" || rec.TimeZone != "Europe/Berlin" {
		t.Errorf("a subdivision alone: %s", show(rec))
	}
	info := e.Corrections()[0]
	if info.Unlocated != 1 {
		t.Errorf("unlocated: %d, want 1", info.Unlocated)
	}
}

// The postal hook completes a place the correction gives no postal code.
func TestCorrectionsPostalHook(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	var asked []string
	e, err := geo.Open(dir, geo.Options{MaxFeedShare: 1, Places: geo.PlaceHooks{
		Postal: func(cc, sub, place string, lat, lon float64) string {
			asked = append(asked, cc+"/"+sub+"/"+place)
			return "10115"
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.SetOverrides(&geo.Overrides{File: filepath.Join(dir, "o.csv"), Feed: parseFeed(t, "o.csv", "8.8.8.1/32,DE,DE-BY,Nuremberg\n8.8.8.2/32,DE,DE-BY,Nuremberg,90403\n")})
	if rec := lookup(t, e, "8.8.8.1", ipatlas.English); rec.ZipCode != "10115" {
		t.Errorf("postal hook: %s", show(rec))
	}
	if rec := lookup(t, e, "8.8.8.2", ipatlas.English); rec.ZipCode != "90403" {
		t.Errorf("the correction's own postal code: %s", show(rec))
	}
	if !slices.Equal(asked, []string{"DE/DE-BY/Nuremberg"}) {
		t.Errorf("hook asked %q", asked)
	}
}

// A correction's city keeps its spelling, brackets and all: it is no
// "City (District)" of the dataset, and a formula is text until something
// writes CSV.
func TestCorrectionsWholeCity(t *testing.T) {
	e := openCorrectable(t)
	e.SetOverrides(&geo.Overrides{File: "o.csv", Feed: parseFeed(t, "o.csv", `8.8.8.1/32,US,US-CA,"=HYPERLINK(""http://evil.example/"",""x"")"
8.8.8.2/32,DE,DE-BY,Nuremberg (Altstadt)
`)})
	if rec := lookup(t, e, "8.8.8.1", ipatlas.English); rec.City != `=HYPERLINK("http://evil.example/","x")` || rec.District != "" {
		t.Errorf("a formula city: %s", show(rec))
	}
	if rec := lookup(t, e, "8.8.8.2", ipatlas.English); rec.City != "Nuremberg (Altstadt)" || rec.District != "" {
		t.Errorf("a city with brackets: %s", show(rec))
	}
}

// A file of many bad lines is described by its first MaxProblems and a
// count; the entries nested in others count the space they claim once.
func TestCorrectionsManyProblems(t *testing.T) {
	e := openCorrectable(t)
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "8.8.8.%d/32,ZZ,,,\n", i%256)
	}
	b.WriteString("8.8.8.0/24,US,US-CA,Mountain View\n8.8.8.8/32,US,US-CA,Mountain View\n")
	e.SetFeeds([]geo.FeedInput{feedInput(t, "many", nil, b.String())})
	info := e.Corrections()[0]
	if info.Skipped != 1000 || len(info.Problems) != geo.MaxProblems || info.Entries != 2 || info.Applied != 2 {
		t.Errorf("skipped %d, %d problems, %d entries, %d applied", info.Skipped, len(info.Problems), info.Entries, info.Applied)
	}
	e.SetFeeds([]geo.FeedInput{feedInput(t, "outer", nil, "8.8.8.0/24,US,US-CA,Mountain View\n")})
	outer := e.Corrections()[0]
	if outer.Share4 == 0 || outer.Share4 != info.Share4 {
		t.Errorf("share of a /24: %v; with a /32 inside it: %v", outer.Share4, info.Share4)
	}
}

// Building the layer costs an entry its place in the table and no
// garbage: each place is resolved once, each ASN record decoded once.
func TestCorrectionsBuildAllocations(t *testing.T) {
	e := openCorrectable(t)
	build := func(n int) float64 {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "2a01:4f8::%x/128,DE,DE-BY,Nuremberg\n", i)
		}
		in := feedInput(t, "many", nil, b.String())
		allocs := testing.AllocsPerRun(1, func() { e.SetFeeds([]geo.FeedInput{in}) })
		if c := e.Corrections()[0]; c.Applied != n {
			t.Fatalf("applied %d of %d: %+v", c.Applied, n, c)
		}
		return allocs
	}
	const n = 2000
	if per := (build(2*n) - build(n)) / n; per > 3 {
		t.Errorf("%.1f allocations per entry", per)
	}
}
