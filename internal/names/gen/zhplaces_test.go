package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const zhHeader = "country\tname_en\tlat\tlon\tname_zh\tzh_hans\tlang\tpref_rank\tflags\tgeonameid\twikidata\tplacetype\tpopulation\tsource\tsource_id\talt_names_en\n"

// zhRows are rows of zh-places as the file has them, the junk the README
// names among them.
var zhRows = []string{
	// Two rows of one record: the lower rank wins.
	"US\tAshburn\t39.04372\t-77.48749\t阿什本\t阿什本\tzh*\t3\tgeonames;lang-tag-lost\t4744870\t\tPPL\t43511\tgeonames\t4744870\tAshburn",
	"US\tAshburn\t39.04372\t-77.48749\t阿什朋\t阿什朋\tzh-TW\t5\tgeonames;lang-tag-lost\t4744870\t\tPPL\t43511\tgeonames\t4744870\tAshburn",
	// A Tokyo ward, kanji only.
	"JP\tChiyoda\t35.68508\t139.76304\t千代田区\t千代田区\tja-Hani\t7\twof;derived-from-japanese-kanji\t\t\tborough\t\twof:whosonfirst-data-admin-jp\t1\tChiyoda|Tiyodaku|Chiyoda Ku",
	// Junk: a record whose currency is unknown (a person's name), a
	// suspect name, a name shared with a distant record.
	"NP\tAli\t28.0\t84.0\t阿里·本·阿比·塔利卜\t阿里·本·阿比·塔利卜\tzh\t2\twof;preferred;wof-current-unknown\t\t\tlocality\t\twof:whosonfirst-data-admin-np\t2\tAli",
	"TR\tKale\t37.4\t28.8\t羽衣甘蓝\t羽衣甘蓝\tzh\t2\twof;preferred;suspect-not-a-place-name\t\t\tlocality\t\twof:whosonfirst-data-admin-tr\t3\tKale",
	"JP\tMinato\t45.4\t141.6\t港\t港\tja-Hani\t8\twof;name-shared-with-distant-current-record\t\t\tlocality\t\twof:whosonfirst-data-admin-jp\t4\tMinato",
	// Kinds that are not towns, and a town with its county's name.
	"EG\tGiza\t28.62852\t29.27694\t吉薩省\t吉萨省\tzh\t2\twof;preferred\t360997\t\tregion\t\twof:sfomuseum-data-whosonfirst\t5\tGiza",
	"KR\tSujeong\t37.42773\t127.09979\t江南區\t江南区\tzh\t2\twof;preferred\t\t\tcounty\t\twof:whosonfirst-data-admin-kr\t6\tSujeong|Gangnam",
	"MY\tKuala Pilah\t2.7\t102.2\t瓜拉庇劳县\t瓜拉庇劳县\tzh\t2\twof;preferred\t\t\tlocality\t\twof:whosonfirst-data-admin-my\t7\tKuala Pilah",
	// A town given another's name, 78 km away: the town whose records
	// agree keeps it.
	"AM\tIjevan\t40.88037\t45.14776\t伊杰万\t伊杰万\tzh*\t3\tgeonames;lang-tag-lost\t616627\t\tPPLA\t\tgeonames\t616627\tIjevan",
	"AM\tIjevan\t40.87556\t45.14917\t伊杰万\t伊杰万\tzh\t2\tnaturalearth\t616627\t\tAdmin-1 capital\t\tnaturalearth\t9\tIjevan",
	"AM\tNor Geghi\t40.32105\t44.58027\t伊杰万\t伊杰万\tzh\t2\twof;preferred\t616341\t\tlocality\t\twof:whosonfirst-data-admin-am\t10\tNor Geghi",
	// A suburb given its city's name, 22 km away; a town given the name
	// of another whose records are all junk; a drink's name.
	"AR\tBuenos Aires\t-34.61315\t-58.37723\t布宜諾斯艾利斯\t布宜诺斯艾利斯\tzh*\t3\tgeonames\t3435910\t\tPPLC\t\tgeonames\t3435910\tBuenos Aires",
	"AR\tBuenos Aires\t-34.60250\t-58.39753\t布宜諾斯艾利斯\t布宜诺斯艾利斯\tzh\t2\tnaturalearth\t3435910\t\tAdmin-0 capital\t\tnaturalearth\t11\tBuenos Aires",
	"AR\tAdrogué\t-34.80126\t-58.38688\t布宜諾斯艾利斯\t布宜诺斯艾利斯\tzh\t2\twof;preferred\t\t\tlocality\t\twof:whosonfirst-data-admin-ar\t12\tAdrogu|Adrogué",
	"BD\tNayabazar\t23.65\t90.61667\t纳耶巴扎尔\t纳耶巴扎尔\tzh\t2\twof;preferred;wof-current-unknown\t1193030\t\tlocality\t\twof:whosonfirst-data-admin-bd\t13\tNayabazar",
	"BD\tNayabazar\t26.33902\t88.44146\t纳耶巴扎尔\t纳耶巴扎尔\tzh\t3\twof;preferred;wof-current-unknown\t7486944\t\tlocality\t\twof:whosonfirst-data-admin-bd\t14\tNayabazar",
	"BD\tTongi\t23.89154\t90.40232\t纳耶巴扎尔\t纳耶巴扎尔\tzh\t2\twof;preferred\t1185098\t\tlocality\t\twof:whosonfirst-data-admin-bd\t15\tTongi",
	"AT\tRum\t47.29539\t11.45871\t兰姆酒\t兰姆酒\tzh\t2\twof;preferred\t2766971\t\tlocality\t\twof:whosonfirst-data-admin-at\t16\tRum",
	// Mainland China has its own tables.
	"CN\tShenzhen\t22.5\t114.1\t深圳\t深圳\tzh\t1\twof;preferred\t\t\tlocality\t\twof:x\t8\tShenzhen",
}

func TestParseZhPlaces(t *testing.T) {
	places, err := parseZhPlaces(strings.NewReader(zhHeader + strings.Join(zhRows, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range places {
		got = append(got, p.country+" "+p.name+" "+p.zh+" "+strings.Join(p.keys, "|"))
	}
	want := []string{"US Ashburn 阿什本 ashburn", "JP Chiyoda 千代田区 chiyoda|tiyodaku|chiyoda ku", "AM Ijevan 伊杰万 ijevan", "AM Ijevan 伊杰万 ijevan",
		"AR Buenos Aires 布宜诺斯艾利斯 buenos aires", "AR Buenos Aires 布宜诺斯艾利斯 buenos aires"}
	if !slices.Equal(got, want) {
		t.Errorf("places = %q, want %q", got, want)
	}
}

func TestWithKindSuffixes(t *testing.T) {
	for _, tt := range []struct {
		country, zh string
		keys        []string
		primary     int
		want        []string
		wantPrimary int
	}{
		{"JP", "千代田区", []string{"chiyoda", "chiyoda ku"}, 2, []string{"chiyoda", "chiyoda ku", "chiyoda city", "chiyoda ward"}, 4},
		{"JP", "千代田町", []string{"chiyodacho"}, 1, []string{"chiyodacho"}, 1},
		{"KR", "城南市", []string{"seongnam", "songnam"}, 1, []string{"seongnam", "seongnam si", "seongnam city", "songnam"}, 3},
		{"US", "阿什本", []string{"ashburn"}, 1, []string{"ashburn"}, 1},
	} {
		got, p := withKindSuffixes(tt.country, tt.zh, slices.Clone(tt.keys), tt.primary)
		if !slices.Equal(got, tt.want) || p != tt.wantPrimary {
			t.Errorf("withKindSuffixes(%s, %s, %q) = %q, %d; want %q, %d", tt.country, tt.zh, tt.keys, got, p, tt.want, tt.wantPrimary)
		}
	}
}

func TestNameFromZhPlaces(t *testing.T) {
	gn := func(id int, name string, lat, lon float64, zh string) *gnPlace {
		p := &gnPlace{id: id, name: name, country: "US", code: "PPL", lat: lat, lon: lon, pop: 5000, zh: zh}
		p.keys, p.primary = latinKeys(name, name, nil)
		return p
	}
	zp := func(id int, name string, lat, lon float64, zh, kind, source string, rank int) *zhPlace {
		z := &zhPlace{country: "US", name: name, lat: lat, lon: lon, zh: zh, rank: rank, geonameid: id, placetype: kind, source: source}
		z.keys, _ = latinKeys(name, name, nil)
		return z
	}
	ashburn := gn(1, "Ashburn", 39.04, -77.49, "")
	named := gn(2, "Springfield", 40.0, -80.0, "春田")
	far := gn(3, "Farville", 35.0, -100.0, "")
	unsure := gn(4, "Twotown", 30.0, -90.0, "")
	renamed := gn(5, "Joined", 45.0, -70.0, "")
	places := []*gnPlace{ashburn, named, far, unsure, renamed}
	extra, got := nameFromZhPlaces(places, []*zhPlace{
		zp(0, "Ashburn", 39.05, -77.48, "阿什本", "locality", "wof", 2),      // by name, 1.4 km away
		zp(0, "Springfield", 40.0, -80.0, "斯普林菲尔德", "locality", "wof", 2), // named already: kept
		zp(0, "Farville", 36.0, -100.0, "远城", "locality", "wof", 2),       // 111 km away: another place
		zp(0, "Twotown", 30.01, -90.0, "图敦", "locality", "wof", 2),        // two records disagree
		zp(0, "Twotown", 30.0, -90.01, "吐屯", "locality", "wof", 2),
		zp(5, "Joined Town", 45.1, -70.0, "乔因德", "PPL", "geonames", 3), // the GeoNames id joins, whatever the name
		zp(1, "Otherplace", 39.0, -77.5, "奥瑟", "locality", "wof", 2),   // a concordance to a place of another name: not joined
		zp(0, "Newplace", 10.0, 10.0, "新地", "locality", "wof", 2),      // a town cities500 lacks
		zp(0, "Newplace", 10.01, 10.0, "纽普莱斯", "Populated place", "naturalearth", 2),
	})
	want := map[*gnPlace]string{ashburn: "阿什本", renamed: "乔因德"}
	if len(got) != len(want) {
		t.Errorf("named %d places, want %d: %v", len(got), len(want), got)
	}
	for p, zh := range want {
		if got[p].zh != zh {
			t.Errorf("%s named %q, want %q", p.name, got[p].zh, zh)
		}
	}
	if !got[renamed].byID || got[ashburn].byID {
		t.Errorf("joined by id: %s %v, %s %v", renamed.name, got[renamed].byID, ashburn.name, got[ashburn].byID)
	}
	if len(extra) != 2 || extra[0].name != "Farville" && extra[1].name != "Farville" {
		var names []string
		for _, e := range extra {
			names = append(names, e.name+" "+e.zh)
		}
		t.Errorf("extra places %q, want Farville and one Newplace", names)
	}
	for _, e := range extra {
		if e.name == "Newplace" && e.zh != "新地" {
			t.Errorf("Newplace named %q from the lower kind, want 新地 of the locality record", e.zh)
		}
	}
}

// TestZhPlacesMissing: a contributor without the shared file is told in
// one line where it comes from.
func TestZhPlacesMissing(t *testing.T) {
	_, err := loadZhPlaces(t.TempDir())
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "../shared/data/zh-places/") || !strings.Contains(msg, "-zh-places") {
		t.Errorf("error %q: want one line naming ../shared/data/zh-places/ and -zh-places", msg)
	}
}

// TestZhPlacesFile reads the real file, when it is where the generator
// looks for it, and checks the README's examples.
func TestZhPlacesFile(t *testing.T) {
	dir := defaultZhPlacesDir()
	if _, err := os.Stat(filepath.Join(dir, zhPlacesFile)); err != nil {
		t.Skipf("%v: the generator's test of the committed tables needs it", err)
	}
	places, err := loadZhPlaces(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, p := range places {
		switch p.country + " " + p.name {
		case "US Ashburn", "KR Seongnam", "EG Giza", "JP Chiyoda":
			if p.placetype != "county" {
				found[p.country+" "+p.name+" "+p.zh] = p.placetype
			}
		case "NP Ali", "TR Kale", "IR Qanat":
			if p.zh == "阿里·本·阿比·塔利卜" || p.zh == "羽衣甘蓝" || p.zh == "坎儿井" {
				t.Errorf("junk kept: %s %s → %s", p.country, p.name, p.zh)
			}
		}
	}
	for _, w := range []string{"US Ashburn 阿什本", "KR Seongnam 城南市", "EG Giza 吉萨", "JP Chiyoda 千代田区"} {
		if _, ok := found[w]; !ok {
			t.Errorf("no place %s", w)
		}
	}
}
