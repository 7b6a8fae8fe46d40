// Package names turns codes and English place names into the names,
// currencies and telephone codes of the location record: continent and
// country names in English and Chinese (CLDR), Chinese names of China's
// provinces, prefecture-level cities and counties, ISO 4217 currencies, and
// area codes. A Chinese town the tables do not know is found by its
// coordinates in China's county boundaries (china_regions.bin, decoded on
// first use, about 3 MB of heap). Tables the code cannot compute are
// generated files (see gen/); the largest, the world's cities, is searched
// where it lies embedded in the binary (package cityindex), at no heap.
//
// Every function is a few map lookups, or a point-in-polygon test, and
// allocates nothing, so the engine can call them for every record. Unknown
// input gives "" (or the English name itself), never an error or a panic.
//
// Country codes are ISO 3166-1 alpha-2 (upper or lower case), plus two
// codes that IP data uses outside ISO 3166-1: XK (Kosovo, user-assigned, used
// by CLDR, DB-IP and MaxMind) and EU (the European Union, used by registries
// for networks with no single country), both named by CLDR. Other non-ISO
// codes (ZZ "unknown", AP "Asia/Pacific", A1/A2/O1 of old GeoIP data) have
// no name, continent, currency or area code: they are unknown, not places.
package names

//go:generate go run ./gen -out .

import "github.com/ipatlas/ipatlas"

// ContinentCode returns the continent of an ISO 3166-1 alpha-2 country code
// as one of AF AN AS EU NA OC SA, "" when unknown. It follows GeoNames'
// countryInfo, as MaxMind does: CLDR's region containment, but Cyprus in
// Europe, Timor-Leste in Oceania and a few more (geonamesContinent).
func ContinentCode(country string) string {
	if c := lookupCountry(country); c != nil {
		return c.continent
	}
	return ""
}

// Continent names a continent code ("AS") in lang.
func Continent(code string, lang ipatlas.Lang) string {
	for i := range continents {
		if continents[i].code == code {
			return continents[i].name(lang)
		}
	}
	return ""
}

// Country names an ISO 3166-1 alpha-2 code in lang (CLDR names).
func Country(code string, lang ipatlas.Lang) string {
	c := lookupCountry(code)
	if c == nil {
		return ""
	}
	if lang == ipatlas.Chinese {
		return c.zh
	}
	return c.en
}

// Province returns the name in lang of a first-level subdivision given by
// its English name. For China every province-level division has a Chinese
// name; elsewhere worldProvince names it where a table knows it. Without a
// Chinese name the English name is returned for both languages.
func Province(country, english string, lang ipatlas.Lang) string {
	if lang != ipatlas.Chinese || english == "" {
		return english
	}
	if isChina(country) {
		if p, _, ok := cnProvinceOf(english); ok {
			return p.chinese
		}
		return english
	}
	return worldProvince(country, english)
}

// City returns the name in lang of a city given by its English name, its
// province's English name and its coordinates (NaN when unknown). For
// China every prefecture-level city has a Chinese name; elsewhere
// worldCity names it where a table knows it. English asks for the name
// as it is, but for China's towns (below).
//
// A Chinese place the tables do not know (a town or district of the IP
// data, "Guancheng") is resolved by its coordinates to the prefecture-level
// city that contains it: 郑州市 in Chinese, "Zhengzhou" in English, the
// town becoming the district (see District). Without coordinates it keeps
// its English name, except in the four municipalities, whose every place
// is in the city 北京市, 上海市, 天津市 or 重庆市.
func City(country, provinceEnglish, english string, lat, lon float64, lang ipatlas.Lang) string {
	if english == "" {
		return ""
	}
	if isChina(country) {
		return chinaCity(provinceEnglish, english, lat, lon, lang)
	}
	if lang != ipatlas.Chinese {
		return english
	}
	return worldCity(country, provinceEnglish, english, lat, lon)
}

// District returns the name in lang of a district or county given by its
// English name ("" when the data gives none), within the city and
// province given by theirs, at the coordinates (NaN when unknown). Outside
// China it is the English name in both languages. In China a given
// district is named without the word for its kind in English ("Nanshan
// Qu" is Nanshan); a town the tables do not know is the district of the
// city that contains it (Guancheng). In Chinese either is the county of
// the city whose pinyin the district's name, else the town's, spells
// (南山区, 管城回族区), else the county that contains the coordinates.
func District(country, provinceEnglish, cityEnglish, english string, lat, lon float64, lang ipatlas.Lang) string {
	if isChina(country) {
		return chinaDistrict(provinceEnglish, cityEnglish, english, lat, lon, lang)
	}
	return english
}

// Currency returns the ISO 4217 code of the country's tender ("USD"): the
// currency CLDR lists as tender on the generated table's date (currencyDate),
// "EUR" for Croatia and Bulgaria, "VES" for Venezuela.
func Currency(country string) string {
	if c := lookupCountry(country); c != nil {
		return c.currency
	}
	return ""
}

// InEU reports whether an ISO 3166-1 alpha-2 code (upper case) is a
// member state of the European Union: 27 since 1 February 2020. echoip's
// country_eu and GeoIP2's is_in_european_union say it.
func InEU(country string) bool { return euMembers[country] }

var euMembers = map[string]bool{
	"AT": true, "BE": true, "BG": true, "HR": true, "CY": true, "CZ": true, "DK": true, "EE": true, "FI": true,
	"FR": true, "DE": true, "GR": true, "HU": true, "IE": true, "IT": true, "LV": true, "LT": true, "LU": true,
	"MT": true, "NL": true, "PL": true, "PT": true, "RO": true, "SK": true, "SI": true, "ES": true, "SE": true,
}

// AreaCode returns the telephone area code: for China the city's
// long-distance code ("010", "0755") when the city is known, otherwise the
// country calling code ("1", "44", "86"); "" when unknown. lat and lon are
// the city's coordinates, NaN when unknown.
//
// A Chinese province all of whose cities share one code (the four
// municipalities, Hainan's 0898) gives that code whatever the city.
func AreaCode(country, provinceEnglish, cityEnglish string, lat, lon float64) string {
	if isChina(country) {
		if code := chinaAreaCode(provinceEnglish, cityEnglish, lat, lon); code != "" {
			return code
		}
	}
	if c := lookupCountry(country); c != nil {
		return c.calling
	}
	return ""
}

// TimeZones returns the IANA zones of a country, for the fallback "the
// country's only zone" when coordinates give none. The slice is shared:
// callers must not modify it.
func TimeZones(country string) []string {
	return upper2zones(country)
}

// OnlyZone returns the country's zone when it has exactly one, else "".
func OnlyZone(country string) string {
	if zs := TimeZones(country); len(zs) == 1 {
		return zs[0]
	}
	return ""
}
