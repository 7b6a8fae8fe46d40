package main

import "testing"

func TestChineseName(t *testing.T) {
	for _, c := range []struct{ cc, iso, zh, want string }{
		{"BR", "SP", "聖保羅", "圣保罗州"}, // Simplified, and the state's suffix
		{"BR", "RJ", "里約熱內盧州", "里约热内卢州"},
		{"BR", "DF", "聯邦區", "联邦区"}, // the exception keeps no suffix
		{"US", "NY", "纽约", "纽约州"},
		{"US", "DC", "华盛顿哥伦比亚特区", "华盛顿哥伦比亚特区"},
		{"DE", "BY", "巴伐利亚", "巴伐利亚"}, // no suffix rule for Germany
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
