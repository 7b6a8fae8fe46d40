package names

import "strings"

// The types of the generated tables in china_gen.go.

// cnProvince is one of China's 31 mainland province-level divisions.
type cnProvince struct {
	division     string // GB/T 2260 code, "44"
	english      string // as libphonenumber and DB-IP spell it, "Guangdong"
	chinese      string // official name, "广东省"
	areaCode     string // the code all its cities share, if one does
	municipality bool   // 北京市, 天津市, 上海市, 重庆市: the province is the city
}

// cnPlace is what an English city name resolves to. A seat town or an old
// spelling resolves to its prefecture (Yuci to 晋中市), with its own area
// code where it has one (Kuitun 0992 in 伊犁哈萨克自治州, 0999).
type cnPlace struct {
	chinese  string // "" when only the area code is known
	areaCode string // "0755"
	division string // GB/T 2260 code of the prefecture-level division, "" if none
}

// cnPrefecture is an official prefecture-level division.
type cnPrefecture struct {
	division string
	province uint8
	english  string
	chinese  string
	areaCode string
}

// chinaCity is City for China.
func chinaCity(provinceEnglish, english string, lat, lon float64) string {
	p, i, ok := cnProvinceOf(provinceEnglish)
	if !ok {
		return english
	}
	if pl, ok := cnCity(i, english); ok && pl.chinese != "" {
		return pl.chinese
	}
	if p.municipality {
		return p.chinese
	}
	return english
}

// chinaAreaCode is AreaCode for China: "" when the city's code is unknown.
func chinaAreaCode(provinceEnglish, cityEnglish string, lat, lon float64) string {
	p, i, ok := cnProvinceOf(provinceEnglish)
	if !ok {
		return ""
	}
	if pl, ok := cnCity(i, cityEnglish); ok && pl.areaCode != "" {
		return pl.areaCode
	}
	return p.areaCode
}

func cnProvinceOf(english string) (*cnProvince, uint8, bool) {
	i, ok := cnProvinceIndex[english]
	if !ok {
		return nil, 0, false
	}
	return &cnProvinces[i], i, true
}

// cnCity finds a city of province i by an English name as the IP data
// writes it: the name itself, else the forms GeoNames-derived data decorates
// it with, tried in order without allocating:
//
//	"Guangzhou (Yuexiu Qu)"  -> "Guangzhou"        (a place in the city)
//	"Huangshan City"         -> "Huangshan"
//	"Xianyangshi"            -> "Xianyang"         (shi: city)
//	"Huiyuan (Yining)"       -> "Yining"           (a town in the city)
//	"Duyun (Duyun Shi)"      -> "Duyun"
func cnCity(i uint8, name string) (cnPlace, bool) {
	places := cnPlaces[i]
	if pl, ok := places[name]; ok {
		return pl, true
	}
	base, inner := name, ""
	if j := strings.Index(name, " ("); j > 0 && strings.HasSuffix(name, ")") {
		base, inner = name[:j], name[j+2:len(name)-1]
	}
	for _, s := range [...]string{base, trimCity(base), inner, trimCity(inner)} {
		if s == "" || s == name {
			continue
		}
		if pl, ok := places[s]; ok {
			return pl, true
		}
	}
	return cnPlace{}, false
}

// cityWords are the suffixes that say "city" in the IP data's names.
var cityWords = [...]string{" City", " Shi", " Prefecture", "shi"}

func trimCity(s string) string {
	for _, w := range cityWords {
		if t, ok := strings.CutSuffix(s, w); ok && t != "" && t[len(t)-1] != ' ' {
			return t
		}
	}
	return ""
}
