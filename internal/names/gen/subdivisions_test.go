package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestChineseName(t *testing.T) {
	for _, c := range []struct{ cc, iso, zh, want string }{
		{"BR", "SP", "聖保羅", "圣保罗州"}, // Simplified, and the state's suffix
		{"BR", "RJ", "里約熱內盧州", "里约热内卢州"},
		{"BR", "DF", "聯邦區", "联邦区"}, // the exception keeps no suffix
		{"US", "NY", "纽约", "纽约州"},
		{"US", "DC", "华盛顿哥伦比亚特区", "华盛顿哥伦比亚特区"},
		{"DE", "BY", "巴伐利亚", "巴伐利亚州"},       // a Land
		{"DE", "HB", "不来梅州", "不来梅"},         // a city-state: its city's name
		{"CA", "QC", "魁北克", "魁北克省"},         // a province
		{"CA", "YT", "育空", "育空地区"},          // a territory
		{"JP", "27", "大阪", "大阪府"},           // an urban prefecture
		{"KR", "11", "首尔", "首尔特别市"},         // the special city
		{"IN", "JK", "查谟-克什米尔邦", "查谟-克什米尔"}, // a state become a union territory
		{"GB", "SCT", "苏格兰", "苏格兰"},         // a country: no suffix
		{"TH", "10", "曼谷", "曼谷"},            // no kinds for Thailand: the source's name
		{"IR", "04", "錫斯坦－俾路支斯坦省", "锡斯坦-俾路支斯坦省"},
		{"RU", "MOW", "китайский", ""}, // not Chinese
		{"RU", "ROS", "罗", ""},         // one character: a fragment
		{"JP", "34", "広島県", ""},        // a Japanese form
		{"FR", "BFC", "Bourgogne-Franche-Comté", ""},
		{"FR", "IDF", "", ""},
	} {
		if got := chineseName(c.cc, c.iso, c.zh); got != c.want {
			t.Errorf("chineseName(%s-%s, %q) = %q, want %q", c.cc, c.iso, c.zh, got, c.want)
		}
	}
}

func TestSimilar(t *testing.T) {
	for _, c := range []struct {
		name  string
		names []string
		want  bool
	}{
		{"Bucuresti", []string{"Bucharest"}, true},
		{"Zhytomyrshchyna", []string{"Zhytomyr Oblast"}, true},
		{"Tangier-Tétouan", []string{"Tanger-Tetouan-Al Hoceima"}, true},
		{"Ha Noi", []string{"Hanoi"}, true},
		// A code reused for another division, and misfiled codes.
		{"Casablanca-Settat", []string{"Meknès-Tafilalet"}, false},
		{"Marrakesh-Safi", []string{"Rabat-Salé-Zemmour-Zaer"}, false},
		{"Analamanga", []string{"Mahajanga Province"}, false},
		{"Tarxien", []string{"Ta' Xbiex"}, false},
		// Generic words do not make two names alike.
		{"Northern Province", []string{"Southern Province"}, false},
	} {
		if got := similar(c.name, c.names); got != c.want {
			t.Errorf("similar(%q, %q) = %v, want %v", c.name, c.names, got, c.want)
		}
	}
}

func TestBuildSubdivisions(t *testing.T) {
	cityA := &place{country: "TW", code: "TW-CYI", english: []string{"Chiayi", "Chiayi City"}, chinese: "嘉义市"}
	countyA := &place{country: "TW", code: "TW-CYQ", english: []string{"Chiayi", "Chiayi County"}, chinese: "嘉义县"}
	city := &place{country: "UZ", code: "UZ-TK", english: []string{"Tashkent"}, chinese: "塔什干"}
	prov := &place{country: "UZ", code: "UZ-TO", english: []string{"Tashkent Province"}, chinese: "塔什干州"}
	source := &place{country: "HK", english: []string{"Kowloon"}, chinese: "九龍"}
	hand := &place{country: "HK", english: []string{"Kowloon"}, chinese: "九龙", hand: true}
	unnamed := &place{country: "FR", code: "FR-GES", english: []string{"Grand Est"}}
	tb, err := buildSubdivisions(&subdivisionSources{places: []*place{cityA, countyA, city, prov, source, hand, unnamed}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, e := range tb.entries {
		if i > 0 && tb.entries[i-1].key >= e.key {
			t.Errorf("entries not sorted: %q before %q", tb.entries[i-1].key, e.key)
		}
		got[e.key] = e.place.chinese
	}
	for key, want := range map[string]string{
		"TWchiayicity":       "嘉义市",
		"TWchiayicounty":     "嘉义县",
		"TW.chiayi":          "", // the stripped key of both
		"TWchiayi":           "", // the full key of both
		"UZtashkent":         "塔什干",
		"UZ.tashkent":        "", // the stripped key of the city and the province
		"UZtashkentprovince": "塔什干州",
		"HKkowloon":          "九龙", // the hand-written place wins
		"FRgrandest":         "",   // no Chinese name: not in the table
	} {
		if got[key] != want {
			t.Errorf("key %q: %q, want %q", key, got[key], want)
		}
	}
	if len(tb.ambiguous) != 3 {
		t.Errorf("ambiguous keys %q, want TW.chiayi, TWchiayi, UZ.tashkent", tb.ambiguous)
	}
}

// kindCountries are the ten countries with the most networks in DB-IP Lite
// (US, BR, DE, GB, NL, FR, AU, IN, IT, ES, in that order, in the
// 2026-06 city data) and Canada, Japan, Korea and Mexico, with the number
// of first-level subdivisions the sources list for each.
var kindCountries = map[string]int{
	"US": 51, "BR": 27, "DE": 16, "GB": 4, "NL": 12, "FR": 13, "AU": 8, "IN": 35, "IT": 20, "ES": 19,
	"CA": 13, "JP": 47, "KR": 17, "MX": 32,
}

// TestSubdivisionKindsFollowed reads the committed subdivision table and
// checks that every subdivision of kindCountries has a Chinese name that
// ends with the suffix of its kind (subdivisionKinds), and a kind without
// one ends with no other kind's: one convention per country, whatever the
// sources wrote. TestGeneratedTablesCurrent keeps the table the
// generator's output.
func TestSubdivisionKindsFollowed(t *testing.T) {
	b, err := os.ReadFile("../subdivisions_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	// A place of placesWithoutCode that lies in a subdivision with a
	// code today (France's regions before 2016) has that code beside the
	// subdivision's own entries, and its own name, of no kind of the
	// country's.
	former := map[string]bool{}
	for _, p := range placesWithoutCode {
		former[p.code+" "+p.chinese] = true
	}
	all := map[string][]string{}
	for _, m := range regexp.MustCompile(`\{"[^"]*", "([A-Z]{2})-([A-Z0-9]+)", "([^"]*)"\}`).FindAllStringSubmatch(string(b), -1) {
		if _, ok := kindCountries[m[1]]; ok && m[3] != "" && !contains(all[m[1]+"-"+m[2]], m[3]) {
			all[m[1]+"-"+m[2]] = append(all[m[1]+"-"+m[2]], m[3])
		}
	}
	names := map[string]string{}
	for code, zhs := range all {
		for _, zh := range zhs {
			if len(zhs) == 1 || !former[code+" "+zh] {
				names[code] = zh
			}
		}
	}
	count := map[string]int{}
	for code, zh := range names {
		cc, iso, _ := strings.Cut(code, "-")
		count[cc]++
		k, ok := subdivisionKindOf(cc, iso)
		if !ok {
			t.Errorf("%s: no kinds for %s", code, cc)
			continue
		}
		if !strings.HasSuffix(zh, k.suffix) {
			t.Errorf("%s %s, a %s, does not end in %s", code, zh, k.kind, k.suffix)
		}
		for _, other := range subdivisionKinds[cc] {
			if other.suffix != "" && !strings.HasSuffix(k.suffix, other.suffix) && strings.HasSuffix(zh, other.suffix) {
				t.Errorf("%s %s, a %s, ends in the %s of a %s", code, zh, k.kind, other.suffix, other.kind)
			}
		}
	}
	for cc, want := range kindCountries {
		if count[cc] != want {
			t.Errorf("%s: %d subdivisions with a Chinese name in the table, want all %d", cc, count[cc], want)
		}
		for _, k := range subdivisionKinds[cc] {
			for _, iso := range k.codes {
				if _, ok := names[cc+"-"+iso]; !ok {
					t.Errorf("%s-%s, a %s, has no Chinese name in the table", cc, iso, k.kind)
				}
			}
		}
	}
}
