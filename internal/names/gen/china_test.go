package main

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestEnglishVariants(t *testing.T) {
	for in, want := range map[string][]string{
		"XiAn":            {"Xi'an", "Xi’an"},
		"MaAnshan":        {"Ma'anshan", "Ma’anshan"},
		"Lüliang":         {"Luliang", "Lvliang"},
		"Beijing":         nil,
		"Da Hinggan Ling": nil, // capitals after a space are words, not syllables
	} {
		if got := englishVariants(in); !slices.Equal(got, want) {
			t.Errorf("englishVariants(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCommonPrefix(t *testing.T) {
	for _, tt := range []struct{ a, b, want string }{
		{"广西北海市", "广西壮族自治区", "广西"},
		{"吉林省吉林市", "吉林省", "吉林省"},
		{"北京市", "北京市", "北京市"},
		{"天津", "天津市", "天津"},
		{"abc", "xyz", ""},
	} {
		if got := commonPrefix(tt.a, tt.b); got != tt.want {
			t.Errorf("commonPrefix(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestChoose(t *testing.T) {
	c := &china{}
	official := map[string]bool{"0999": true}
	for _, tt := range []struct {
		cs   []cand
		want string
	}{
		{nil, ""},
		{[]cand{{"024", 3}, {"0410", 1}}, "0410"},              // a single place beats a list
		{[]cand{{"0992", 1}, {"0999", 1}}, "0999"},             // the official table breaks a tie
		{[]cand{{"0979", 1}, {"0977", 1}}, "0977"},             // else the lower code
		{[]cand{{"028", 3}, {"0832", 2}, {"0999", 3}}, "0832"}, // width first
	} {
		if got := c.choose(tt.cs, official); got != tt.want {
			t.Errorf("choose(%v) = %q, want %q", tt.cs, got, tt.want)
		}
	}
}

// testSources is a small model of the two sources with every rule at work.
func testSources() (*divisions, []areaEntry, map[phoneDesc]int) {
	dv := &divisions{
		provinces: []division{{"11", "北京市"}, {"44", "广东省"}, {"45", "广西壮族自治区"}, {"52", "贵州省"}, {"65", "新疆维吾尔自治区"}},
		cities: map[string][]division{
			"44": {{"4401", "广州市"}, {"4403", "深圳市"}, {"4406", "佛山市"}},
			"45": {{"4501", "南宁市"}, {"4502", "柳州市"}},
			"52": {{"5206", "铜仁市"}},
			"65": {{"6501", "乌鲁木齐市"}, {"6502", "克拉玛依市"}, {"6540", "伊犁哈萨克自治州"}},
		},
		areaCodes: map[string][]string{
			"伊犁哈萨克自治州": {"0999"},
			"柳州市":      {"0772"},
			"克拉玛依市":    {"0990"},
			"深圳市":      {"0567"}, // no area code: ignored
		},
	}
	fixed := []areaEntry{
		{"010", phoneDesc{"Beijing", "北京市"}},
		{"020", phoneDesc{"Guangzhou, Guangdong", "广东省广州市"}},
		{"0755", phoneDesc{"Shenzhen, Guangdong", "广东省深圳市"}},
		{"0757", phoneDesc{"Shunde/Foshan, Guangdong", "广东省佛山市、顺德市"}},
		{"0771", phoneDesc{"Nanning, Guangxi", "广西南宁市"}},
		{"0856", phoneDesc{"Tongren, Guizhou", "贵州省铜仁地区"}},
		{"0992", phoneDesc{"Kuitun, Xinjiang", "新疆伊犁哈萨克自治州"}},
		{"0999", phoneDesc{"Yining, Xinjiang", "新疆伊犁哈萨克自治州"}},
		{"0991", phoneDesc{"Urumchi, Xinjiang", "新疆乌鲁木齐市"}},
	}
	mobile := map[phoneDesc]int{
		{"Beijing", "北京市"}:                 10,
		{"Foshan, Guangdong", "广东省佛山市"}:    5,
		{"Shenzhen, Guangdong", "广东省深圳市"}:  5,
		{"Liuzhou, Guangxi", "广西柳州市"}:      3,
		{"Ili, Xinjiang", "新疆伊犁哈萨克自治州"}:    4,
		{"Urumchi, Xinjiang", "新疆乌鲁木齐市"}:   3,
		{"Nanning, Guangxi", "广西南宁市"}:      2,
		{"Guangzhou, Guangdong", "广东省广州市"}: 9,
	}
	return dv, fixed, mobile
}

var testHand = handTables{
	englishOfDivision: map[string]string{"6502": "Karamay"},
	exonyms:           []exonym{{"Xinjiang", "Urumqi", "Urumchi"}},
	provinceAliases:   map[string][]string{"Guangxi": {"Guangxi Zhuang Autonomous Region"}},
}

func TestBuildChina(t *testing.T) {
	dv, fixed, mobile := testSources()
	c, err := buildChina(dv, fixed, mobile, testHand, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	prov := func(en string) *province {
		p := c.provByEn[en]
		if p == nil {
			p = c.provAlias[en]
		}
		if p == nil {
			t.Fatalf("no province %q", en)
		}
		return p
	}
	if p := prov("Beijing"); !p.municipality || p.areaCode != "010" || p.zh != "北京市" {
		t.Errorf("Beijing: %+v", p)
	}
	if prov("Guangxi Zhuang Autonomous Region") != prov("Guangxi") || prov("Guangdong Sheng") != prov("Guangdong") || prov("Beijing Shi") != prov("Beijing") {
		t.Error("province aliases")
	}
	// Guangxi's only fixed-line code is given to the whole province (the
	// Hainan rule), but a city with its own code keeps it.
	if p := prov("Guangxi"); p.areaCode != "0771" {
		t.Errorf("Guangxi: area code %q", p.areaCode)
	}
	for _, tt := range []struct{ prov, en, zh, code string }{
		{"Beijing", "Beijing", "北京市", "010"},
		{"Guangdong", "Guangzhou", "广州市", "020"},
		{"Guangdong", "Shenzhen", "深圳市", "0755"},
		{"Guangdong", "Foshan", "佛山市", "0757"},
		{"Guangdong", "Shunde", "顺德市", "0757"},  // paired by elimination in a list
		{"Guangxi", "Liuzhou", "柳州市", "0772"},   // code from the official table
		{"Guizhou", "Tongren", "铜仁市", "0856"},   // 铜仁地区 is now 铜仁市
		{"Xinjiang", "Ili", "伊犁哈萨克自治州", "0999"}, // the official table breaks the tie
		{"Xinjiang", "Kuitun", "伊犁哈萨克自治州", "0992"},
		{"Xinjiang", "Yining", "伊犁哈萨克自治州", "0999"},
		{"Xinjiang", "Urumchi", "乌鲁木齐市", "0991"},
		{"Xinjiang", "Urumqi", "乌鲁木齐市", "0991"},
		{"Xinjiang", "Karamay", "克拉玛依市", "0990"},
	} {
		e := c.entries[key{prov(tt.prov), tt.en}]
		if e == nil {
			t.Errorf("%s/%s: no entry", tt.prov, tt.en)
			continue
		}
		if e.zh != tt.zh || e.areaCode != tt.code {
			t.Errorf("%s/%s = %s %s, want %s %s", tt.prov, tt.en, e.zh, e.areaCode, tt.zh, tt.code)
		}
	}
	if c.entries[key{prov("Guangxi"), "Shunde"}] != nil {
		t.Error("a city found in the wrong province")
	}
	if len(c.conflicts) != 0 {
		t.Errorf("conflicts: %q", c.conflicts)
	}
}

func TestBuildChinaErrors(t *testing.T) {
	dv, fixed, mobile := testSources()
	for name, h := range map[string]handTables{
		"no English":     {},
		"stale English":  {englishOfDivision: map[string]string{"6502": "Karamay", "4403": "Shenzhen"}},
		"stale exonym":   {englishOfDivision: testHand.englishOfDivision, exonyms: []exonym{{"Xinjiang", "Urumqi", "Wulumuqi"}}},
		"stale province": {englishOfDivision: testHand.englishOfDivision, provinceAliases: map[string][]string{"Atlantis": {"X"}}},
		"stale override": {englishOfDivision: testHand.englishOfDivision, areaCodeOverrides: map[string]string{"4403": "0755"}},
	} {
		if _, err := buildChina(dv, fixed, mobile, h, io.Discard); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A province the phone data never names has no English name.
	dv.provinces = append(dv.provinces, division{"46", "海南省"})
	dv.cities["46"] = []division{{"4601", "海口市"}}
	if _, err := buildChina(dv, fixed, mobile, testHand, io.Discard); err == nil || !strings.Contains(err.Error(), "海南省") {
		t.Errorf("missing province: %v", err)
	}
}
