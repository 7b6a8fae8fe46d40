package names

import (
	"sort"
	"sync"

	"github.com/ipatlas/ipatlas"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// A continent of the GeoIP convention and the CLDR region that names it.
// North America is CLDR's 003, which holds Central America and the
// Caribbean too (021 Northern America alone would not).
type continent struct {
	code   string
	region language.Region
	en, zh string
}

func (c *continent) name(lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return c.zh
	}
	return c.en
}

// continents in the order containment is tested; the names are filled in
// from CLDR by init.
var continents = [...]continent{
	{code: "AF", region: language.MustParseRegion("002")},
	{code: "AS", region: language.MustParseRegion("142")},
	{code: "EU", region: language.MustParseRegion("150")},
	{code: "NA", region: language.MustParseRegion("003")},
	{code: "SA", region: language.MustParseRegion("005")},
	{code: "OC", region: language.MustParseRegion("009")},
	{code: "AN", region: language.MustParseRegion("AQ")},
}

// geonamesContinent are the countries whose continent in GeoNames'
// countryInfo, which MaxMind follows, is not the CLDR region that contains
// them; GeoNames wins. Antarctica itself and the uninhabited sub-Antarctic
// islands, which CLDR files under Outlying Oceania (QO); Cyprus, which CLDR
// puts in Western Asia; the British Indian Ocean Territory (CLDR: Eastern
// Africa); Christmas Island and the Cocos Islands (CLDR: Australia and New
// Zealand); Timor-Leste (CLDR: South-Eastern Asia).
var geonamesContinent = map[string]string{
	"AQ": "AN", "BV": "AN", "GS": "AN", "HM": "AN", "TF": "AN",
	"CY": "EU",
	"IO": "AS", "CX": "AS", "CC": "AS",
	"TL": "OC",
}

// nonISO are the codes outside ISO 3166-1 that IP data uses for a place with
// a CLDR name (see the package comment).
var nonISO = [...]string{"XK", "EU"}

func init() {
	en := display.English.Regions()
	zh := display.Regions(language.SimplifiedChinese)
	for i := range continents {
		c := &continents[i]
		c.en, c.zh = en.Name(c.region), zh.Name(c.region)
	}
}

type countryInfo struct {
	en, zh    string // CLDR names
	continent string
	currency  string // ISO 4217
	calling   string // country calling code, no "+"
}

// countryTable is built on first use rather than at start-up: it asks CLDR
// about every country once, a few milliseconds that
// commands which never name a country should not pay.
var countryTable = sync.OnceValue(func() map[string]*countryInfo {
	en := display.English.Regions()
	zh := display.Regions(language.SimplifiedChinese)
	m := make(map[string]*countryInfo, len(isoCountries)+len(nonISO))
	add := func(code string) {
		r, err := language.ParseRegion(code)
		if err != nil || r.String() != code {
			return
		}
		c := &countryInfo{en: en.Name(r), zh: zh.Name(r)}
		switch {
		case geonamesContinent[code] != "":
			c.continent = geonamesContinent[code]
		case code == "EU":
			c.continent = "EU"
		default:
			for i := range continents {
				if continents[i].region.Contains(r) {
					c.continent = continents[i].code
					break
				}
			}
		}
		c.currency = tenderOf(code)
		c.calling = callingCodeOf(code)
		m[code] = c
	}
	for _, code := range isoCountries {
		add(code)
	}
	for _, code := range nonISO {
		add(code)
	}
	return m
})

// callingCodeOf is the region's calling code in the generated table
// callingCodes, "" when it has none.
func callingCodeOf(region string) string {
	i := sort.Search(len(callingCodes), func(i int) bool { return callingCodes[i].region >= region })
	if i < len(callingCodes) && callingCodes[i].region == region {
		return callingCodes[i].code
	}
	return ""
}

// tenderOf is the region's currency in the generated table tenders, "" when
// it has none.
func tenderOf(region string) string {
	i := sort.Search(len(tenders), func(i int) bool { return tenders[i].region >= region })
	if i < len(tenders) && tenders[i].region == region {
		return tenders[i].code
	}
	return ""
}

func lookupCountry(code string) *countryInfo {
	m := countryTable()
	if c, ok := m[code]; ok {
		return c
	}
	if b, ok := upper(code); ok {
		return m[string(b[:])]
	}
	return nil
}

// upper upper-cases a two-letter code into an array, so that a map lookup
// with string(b[:]) does not allocate.
func upper(code string) (b [2]byte, ok bool) {
	if len(code) != 2 {
		return b, false
	}
	for i := 0; i < 2; i++ {
		c := code[i]
		switch {
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		case 'A' <= c && c <= 'Z':
		default:
			return b, false
		}
		b[i] = c
	}
	return b, true
}

func upper2zones(code string) []string {
	if zs, ok := zonesByCountry[code]; ok {
		return zs
	}
	if b, ok := upper(code); ok {
		return zonesByCountry[string(b[:])]
	}
	return nil
}

func isChina(country string) bool {
	return country == "CN" || country == "cn" || country == "Cn" || country == "cN"
}
