package names

import (
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
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
	// Rows are sorted by key.
	keys := "springfield" + "newport" + "harbor"
	names := "春田甲" + "春田乙" + "纽波特" + "新港"
	row := func(cc string, key, keyLen, name, nameLen int, lat, lon float64, radiusKm float64, unique, alt bool) cityRow {
		return cityRow{country: uint16(cc[0])<<8 | uint16(cc[1]), keyLen: uint8(keyLen), nameLen: uint8(nameLen),
			key: uint32(key), name: uint32(name), lat: int32(lat * 1e4), lon: int32(lon * 1e4),
			radius: uint16(radiusKm * 10), unique: unique, alt: alt}
	}
	tab := cityTable{keys: keys, names: names, rows: []cityRow{
		row("US", 18, 6, 27, 6, 40.1, -90.0, 30, true, true),    // harbor 新港, its alternate name too
		row("US", 11, 7, 18, 9, 40.0, -90.0, 30, true, false),   // newport 纽波特, the place's own name
		row("US", 11, 7, 27, 6, 40.1, -90.0, 30, true, true),    // newport 新港, another place's alternate name
		row("US", 0, 11, 0, 9, 40.0, -80.0, 50, false, false),   // springfield 春田甲
		row("US", 0, 11, 9, 9, 40.0, -78.826, 50, false, false), // springfield 春田乙, 100 km east
	}}
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
		got, ok := tab.lookup("US", tt.name, tt.lat, tt.lon)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("lookup(%q, %v, %v) = %q, %v; want %q", tt.name, tt.lat, tt.lon, got, ok, tt.want)
		}
	}
	if got, ok := tab.lookup("GB", "Newport", 40.0, -90.0); ok {
		t.Errorf("another country's Newport: %q", got)
	}
}

// TestCityTableSorted: the lookup's binary search needs the rows sorted
// by country and key, and every row's strings within the table's.
func TestCityTableSorted(t *testing.T) {
	tab := &worldCities
	if len(tab.rows) < 20000 {
		t.Fatalf("only %d rows", len(tab.rows))
	}
	for i := range tab.rows {
		r := &tab.rows[i]
		if int(r.key)+int(r.keyLen) > len(tab.keys) || int(r.name)+int(r.nameLen) > len(tab.names) {
			t.Fatalf("row %d: strings out of range", i)
		}
		if k := tab.key(r); k == "" || len(k) > maxCityName || !isASCII(k) {
			t.Errorf("row %d: key %q", i, k)
		}
		if n := tab.name(r); !hasHan(n) {
			t.Errorf("row %d: name %q", i, n)
		}
		if i > 0 {
			p := &tab.rows[i-1]
			if p.country > r.country || p.country == r.country && tab.key(p) > tab.key(r) {
				t.Fatalf("rows %d and %d out of order: %q %q", i-1, i, tab.key(p), tab.key(r))
			}
		}
	}
}

// TestWorldCityMemory: the table is static data, so its first use costs no
// heap (a map built at start-up would cost megabytes). It logs the heap
// and, on Linux, the resident memory that looking every row's name up
// touches, which is the table's share of the service's RSS.
func TestWorldCityMemory(t *testing.T) {
	tab := &worldCities
	countries := map[uint16]string{}
	for i := range tab.rows {
		c := tab.rows[i].country
		countries[c] = string([]byte{byte(c >> 8), byte(c)})
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rss0 := residentKiB()
	for i := range tab.rows {
		r := &tab.rows[i]
		if _, ok := lookupCity(countries[r.country], tab.key(r), float64(r.lat)/1e4, float64(r.lon)/1e4); !ok {
			t.Errorf("%s %q (%s) is not found at its own place", countries[r.country], tab.key(r), tab.name(r))
		}
	}
	runtime.ReadMemStats(&after)
	rss1 := residentKiB()
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d rows (%d bytes each), keys %d bytes, names %d bytes; heap growth over a lookup of every row %d bytes, %d mallocs; resident memory %d KiB -> %d KiB",
		len(tab.rows), unsafe.Sizeof(cityRow{}), len(tab.keys), len(tab.names), growth, after.Mallocs-before.Mallocs, rss0, rss1)
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
