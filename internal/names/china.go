package names

import (
	"strings"

	"github.com/ipatlas/ipatlas"
)

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

// cnResolved is where a Chinese place of the IP data lies.
type cnResolved struct {
	chinese  string // the prefecture-level city, "" when unknown
	english  string // its English name where a source gives one
	areaCode string
	county   string // the county containing a town, "" when unknown
	town     bool   // the data's name is a place within the city, found by its coordinates
}

// chinaResolve finds the prefecture-level city of a place: by its name
// in the tables (a city, its seat, an old spelling), else by the county
// boundaries that contain its coordinates, within its province when the
// province is known and has a county there, else anywhere in China. A
// municipality contains all its places.
func chinaResolve(provinceEnglish, english string, lat, lon float64) cnResolved {
	p, i, okP := cnProvinceOf(provinceEnglish)
	var r cnResolved
	if okP {
		if pl, ok := cnCity(i, english); ok {
			if pl.chinese != "" {
				return cnResolved{chinese: pl.chinese, areaCode: pl.areaCode}
			}
			r.areaCode = pl.areaCode
		}
	}
	if english != "" || !okP {
		province := -1
		if okP {
			province = int(i)
		}
		c, ok := cnCountyAt(lat, lon, province, cnNearLimit)
		if !ok && okP && p.municipality {
			// Every place of a municipality is in it, wherever the data
			// puts it (DB-IP places some at China's centroid).
			return cnResolved{chinese: p.chinese, english: p.english, areaCode: p.areaCode, town: english != p.english}
		}
		if !ok && province >= 0 {
			// Coordinates outside the province the data names: the
			// data's province is the wrong one more often than its
			// coordinates (a Zhejiang record at Shanghai's 书院镇), unless
			// the point is off the province's own coast.
			if c, ok = cnCountyAt(lat, lon, -1, cnNearLimit); !ok {
				c, ok = cnCountyAt(lat, lon, province, cnProvinceNearLimit)
			}
		}
		if ok {
			u := &cnUnits[cnCounties[c].unit]
			code := u.areaCode
			if r.areaCode != "" {
				code = r.areaCode
			}
			return cnResolved{chinese: u.chinese, english: u.english, areaCode: code, county: cnCounties[c].chinese, town: true}
		}
	}
	if okP && p.municipality {
		return cnResolved{chinese: p.chinese, english: p.english, areaCode: p.areaCode, town: english != p.english}
	}
	if r.areaCode == "" && okP {
		r.areaCode = p.areaCode
	}
	return r
}

// chinaCity is City for China: in Chinese the prefecture-level city; in
// English the data's name, but for a town found by its coordinates, whose
// city is its prefecture's English name (the town is then the district).
func chinaCity(provinceEnglish, english string, lat, lon float64, lang ipatlas.Lang) string {
	r := chinaResolve(provinceEnglish, english, lat, lon)
	if lang == ipatlas.Chinese {
		if r.chinese != "" {
			return r.chinese
		}
		return english
	}
	if r.town && r.english != "" {
		return r.english
	}
	return english
}

// chinaDistrict is District for China. A district the data gives
// ("Nanshan Qu") is, in English, its name without the word for its kind
// (Nanshan). A town the tables do not know (Guancheng) is the district,
// in English as the data spells it. In Chinese either is the county of
// its city whose pinyin the district's name, or the town's name when the
// data gives no district, spells (南山区, 管城回族区): the town's name is
// no guide beside a district ("Lianyun (Baitabuzhen)" is a town of 东海县,
// not 连云区). Failing that, the county its coordinates lie in when that
// county is in the same city; failing that, the data's spelling. A name
// beats the coordinates: the boundaries are simplified to about 500 m and
// the data's coordinates are approximate, so a town near a county border
// often lies in the neighbouring polygon.
func chinaDistrict(provinceEnglish, cityEnglish, english string, lat, lon float64, lang ipatlas.Lang) string {
	r := chinaResolve(provinceEnglish, cityEnglish, lat, lon)
	if english == "" {
		// A county-level city a province administers directly (琼海市)
		// is its own county: no district below it.
		if !r.town || cityEnglish == "" || r.county == r.chinese {
			return ""
		}
		if lang == ipatlas.English {
			return cityEnglish
		}
		if c, ok := cnCountyNamed(r.chinese, cityEnglish); ok {
			return c
		}
		if r.county != "" {
			return r.county
		}
		return cityEnglish
	}
	if lang == ipatlas.English {
		return trimDistrictWord(english)
	}
	if c, ok := cnCountyNamed(r.chinese, english); ok {
		return c
	}
	if county := cnContainingCounty(provinceEnglish, r, lat, lon); county != "" {
		return county
	}
	return english
}

// cnContainingCounty is the county of r's city that contains the point:
// the one the town was resolved by, else the one the coordinates lie in
// within the data's province, when it is a county of r's city.
func cnContainingCounty(provinceEnglish string, r cnResolved, lat, lon float64) string {
	if r.town || r.chinese == "" {
		return r.county
	}
	_, i, _ := cnProvinceOf(provinceEnglish)
	if c, ok := cnCountyAt(lat, lon, int(i), cnNearLimit); ok && cnUnits[cnCounties[c].unit].chinese == r.chinese {
		return cnCounties[c].chinese
	}
	return ""
}

// districtWords are the kinds of county-level division the IP data
// writes after a district's name.
var districtWords = [...]string{" Xinqu", " Qu", " District", " Xian", " County", " Shi", " Qi"}

func trimDistrictWord(s string) string {
	for _, w := range districtWords {
		if t, ok := strings.CutSuffix(s, w); ok && t != "" {
			return t
		}
	}
	return s
}

// chinaAreaCode is AreaCode for China: "" when the city's code is unknown.
func chinaAreaCode(provinceEnglish, cityEnglish string, lat, lon float64) string {
	return chinaResolve(provinceEnglish, cityEnglish, lat, lon).areaCode
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
