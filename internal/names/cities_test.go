package names

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/names/cityindex"
)

// TestWorldCityTable looks places up in the generated table: the large
// cities of many countries, the spellings the IP data uses, and the
// coordinates that reject a namesake.
func TestWorldCityTable(t *testing.T) {
	for _, tt := range []struct {
		country, name string
		lat, lon      float64
		want          string // "" for the English name
	}{
		{"US", "Mountain View", 37.4220, -122.0850, "山景城"},
		{"AU", "Sydney", -33.8688, 151.2090, "悉尼"},
		{"RU", "Moscow", 55.7342, 37.5859, "莫斯科"},
		{"RU", "Moscow (Tsentralnyy administrativnyy okrug)", 55.7558, 37.6173, "莫斯科"},
		{"JP", "Tokyo", 35.6895, 139.6917, "东京"},
		{"jp", "Tokyo", 35.6895, 139.6917, "东京"},
		{"BR", "Sao Paulo", -23.5475, -46.6361, "圣保罗"},
		{"BR", "São Paulo", -23.5475, -46.6361, "圣保罗"},
		{"HK", "Hong Kong", 22.2783, 114.1747, "香港"},
		{"HK", "Central", 22.2830, 114.1585, "中环"},
		{"HK", "Kowloon", 22.3167, 114.1833, "九龙"},
		{"GB", "London", 51.5072, -0.1276, "伦敦"},
		{"FR", "Paris", 48.8566, 2.3522, "巴黎"},
		{"DE", "Frankfurt am Main", 50.1109, 8.6821, "法兰克福"},
		{"DE", "Nuremberg", 49.4521, 11.0767, "纽伦堡"}, // GeoNames' name is Nürnberg
		{"KR", "Seoul (Toegye-ro)", 37.5665, 126.9780, "首尔"},
		{"AE", "Dubai", 25.2048, 55.2708, "迪拜"},
		{"SG", "Singapore", 1.2897, 103.8501, "新加坡"},
		{"TW", "Taipei", 25.0330, 121.5654, "台北"},
		// Names from zh-places: GeoNames' alternate names, Who's On
		// First (Tokyo's wards in kanji, as IP data spells them), Natural
		// Earth.
		{"US", "Ashburn", 39.0438, -77.4874, "阿什本"},
		{"KR", "Seongnam-si", 37.4386, 127.1378, "城南市"},
		{"EG", "Giza", 30.0081, 31.2109, "吉萨"},
		{"JP", "Chiyoda City", 35.6940, 139.7536, "千代田区"},
		{"JP", "Chiyoda-ku", 35.6940, 139.7536, "千代田区"},
		{"JP", "Chiyoda", 35.6940, 139.7536, "千代田区"},
		{"JP", "Minato-ku", 35.6581, 139.7516, "港区"},

		// A Sydney 300 km from Sydney is not Sydney.
		{"AU", "Sydney", -31.0, 149.0, ""},
		// Nor is a Mountain View of Oklahoma (there is one with no
		// Chinese name), far from California's.
		{"US", "Mountain View", 35.1, -98.7, ""},
		// Without coordinates only a name no other place of the country
		// bears: Tokyo is one, Mountain View is not.
		{"JP", "Tokyo", math.NaN(), math.NaN(), "东京"},
		{"US", "Mountain View", math.NaN(), math.NaN(), ""},
		// Unknown places, countries and shapes keep their name.
		{"US", "Doraville", 33.8982, -84.2833, ""},
		{"XX", "Tokyo", 35.6895, 139.6917, ""},
		{"", "Tokyo", 35.6895, 139.6917, ""},
		{"JP", "", 35.6895, 139.6917, ""},
		{"JP", strings.Repeat("Tokyo", 40), 35.6895, 139.6917, ""},
	} {
		want := tt.want
		if want == "" {
			want = tt.name
		}
		if got := City(tt.country, "", tt.name, tt.lat, tt.lon, zh); got != want {
			t.Errorf("City(%q, %q, %v, %v, zh) = %q, want %q", tt.country, tt.name, tt.lat, tt.lon, got, want)
		}
		if got := City(tt.country, "", tt.name, tt.lat, tt.lon, en); got != tt.name {
			t.Errorf("City(%q, %q, en) = %q, want the name itself", tt.country, tt.name, got)
		}
	}
}

// TestCityTableMatching checks the lookup's rules on a table made for it.
func TestCityTableMatching(t *testing.T) {
	// Two Springfields 100 km apart, each with a radius of half that;
	// a Newport with an alternate name's row and a Newport of its own.
	row := func(key, name string, lat, lon float64, radiusKm float64, unique, alt bool) cityindex.Row {
		return cityindex.Row{Country: "US", Key: key, Name: name, Match: cityindex.Match{
			Lat: int32(lat * 1e4), Lon: int32(lon * 1e4), Radius: uint16(radiusKm * 10), Unique: unique, Alt: alt}}
	}
	d, err := cityindex.Encode([]cityindex.Row{
		row("harbor", "新港", 40.1, -90.0, 30, true, true),           // its alternate name too
		row("newport", "纽波特", 40.0, -90.0, 30, true, false),        // the place's own name
		row("newport", "新港", 40.1, -90.0, 30, true, true),          // another place's alternate name
		row("springfield", "春田甲", 40.0, -80.0, 50, false, false),   //
		row("springfield", "春田乙", 40.0, -78.826, 50, false, false), // 100 km east
	})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := cityindex.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		lat, lon float64
		want     string
	}{
		{"Springfield", 40.0, -80.05, "春田甲"},
		{"springfield", 40.0, -78.9, "春田乙"},
		{"Springfield", 40.0, -79.5, "春田甲"}, // nearer the first
		{"Springfield", 40.0, -79.2, "春田乙"}, // nearer the second
		{"Springfield", 41.0, -80.0, ""},    // 111 km from both
		{"Springfield", math.NaN(), 0, ""},  // ambiguous without coordinates
		{"Newport", 40.09, -90.0, "纽波特"},    // the own name wins though farther
		{"Newport", math.NaN(), math.NaN(), "纽波特"},
		{"Harbor", math.NaN(), math.NaN(), ""}, // an alternate name only
		{"Harbor", 40.1, -90.0, "新港"},          // which holds with coordinates
		{"Newport (Harbor)", 40.0, -90.0, "纽波特"},
		{"Newport", 40.0, -89.0, ""}, // 85 km away
		{"Newport", 40.0, -90.0, "纽波特"},
	} {
		got, ok := lookupCityIn(tab, "US", tt.name, tt.lat, tt.lon)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("lookup(%q, %v, %v) = %q, %v; want %q", tt.name, tt.lat, tt.lon, got, ok, tt.want)
		}
	}
	if got, ok := lookupCityIn(tab, "GB", "Newport", 40.0, -90.0); ok {
		t.Errorf("another country's Newport: %q", got)
	}
}

// TestCityTableValid: the embedded table opens, every byte of it decodes
// (cityindex's Check: the lookup's binary search needs the rows sorted by
// country and key), and its rows hold what the lookup expects.
func TestCityTableValid(t *testing.T) {
	tab, err := cityindex.Open(cityindex.Data{Keys: cityKeysData, Places: cityPlacesData, Names: cityNamesText})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for r := range worldCities().All() {
		n++
		if len(r.Key) > maxCityName || !isASCII(r.Key) {
			t.Errorf("%s: key %q", r.Country, r.Key)
		}
		if !hasHan(r.Name) {
			t.Errorf("%s %q: name %q", r.Country, r.Key, r.Name)
		}
	}
	if n < 20000 {
		t.Fatalf("only %d rows", n)
	}
}

// TestWorldCityMemory: the table is searched where it is embedded, so
// looking every row up costs no heap (a map built at start-up would cost
// megabytes). It logs the heap and, on Linux, the resident memory that
// looking every row's name up touches, which is the table's share of the
// service's RSS.
func TestWorldCityMemory(t *testing.T) {
	type query struct {
		country, key string
		lat, lon     float64
		name         string
	}
	var qs []query
	for r := range worldCities().All() {
		qs = append(qs, query{r.Country, r.Key, float64(r.Lat) / 1e4, float64(r.Lon) / 1e4, r.Name})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rss0 := residentKiB()
	for _, q := range qs {
		if _, ok := lookupCity(q.country, q.key, q.lat, q.lon); !ok {
			t.Errorf("%s %q (%s) is not found at its own place", q.country, q.key, q.name)
		}
	}
	runtime.ReadMemStats(&after)
	rss1 := residentKiB()
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d rows; index %d bytes, places %d bytes, names %d bytes; heap growth over a lookup of every row %d bytes, %d mallocs; resident memory %d KiB -> %d KiB",
		len(qs), len(cityKeysData), len(cityPlacesData), len(cityNamesText), growth, after.Mallocs-before.Mallocs, rss0, rss1)
	if growth > 1<<20 {
		t.Errorf("the lookups grew the heap by %d bytes", growth)
	}
}

// residentKiB is the process's resident set size from /proc, 0 elsewhere.
func residentKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
