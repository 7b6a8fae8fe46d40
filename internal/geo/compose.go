package geo

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
)

// cityInput is one decoded city or country record, whatever its schema.
// English names come from the data; ZH names only from a GeoIP2 file.
type cityInput struct {
	continentCode  string
	continentNames localNames
	countryCode    string
	countryNames   localNames
	province       localNames
	city           localNames
	district       localNames
	lat, lon       float64 // NaN when absent
	timeZone       string
	zip            string
	// postal is the code the file's postal index gives the record, for a
	// record without a zip of its own; "" when it gives none.
	postal string
	// pointZone is the zone at the coordinates as the file's zone index
	// gives it, when pointZoneKnown; see needsPointZone.
	pointZone      string
	pointZoneKnown bool
	// wholeCity keeps city.EN whole: a correction's city is as it is
	// written, never a "City (District)".
	wholeCity bool
}

// place is the localized text of a record in one language, below the
// country.
type place struct {
	province, city, district string
}

// countryData is the country-level part of records, shared by every
// cached record of the country: it makes entries 40% smaller.
type countryData struct {
	names         [2]struct{ continent, country string } // indexed by ipatlas.Lang
	continentCode string
	countryCode   string
	currency      string
}

// cityData is the composed city part of a record, both languages, as
// cached per data record.
type cityData struct {
	country  *countryData // nil when the record has no country
	text     [2]place     // indexed by ipatlas.Lang
	timeZone string
	zip      string
	areaCode string
	// provinceCode is the province's ISO 3166-2 code without the
	// country's part ("QC"), the same in both languages.
	provinceCode string
	coords       [2]float64
	hasCoords    bool
}

// fill copies the city part into r. The coordinates go into coords, which
// the record owns, so that no caller can write into the shared cache;
// coords may be nil when c has no coordinates.
func (c *cityData) fill(r *ipatlas.Record, lang ipatlas.Lang, coords *[2]float64) {
	if k := c.country; k != nil {
		r.Continent, r.Country = k.names[lang].continent, k.names[lang].country
		r.ContinentCode, r.CountryCode, r.Currency = k.continentCode, k.countryCode, k.currency
	}
	t := &c.text[lang]
	r.Province, r.City, r.District = t.province, t.city, t.district
	// A correction may name a region code the dataset has no name for
	// (SG-02): the code stands alone then.
	r.ProvinceCode = c.provinceCode
	r.TimeZone, r.ZipCode, r.AreaCode = c.timeZone, c.zip, c.areaCode
	if c.hasCoords {
		*coords = c.coords
		r.Latitude, r.Longitude = &coords[0], &coords[1]
	}
}

// countryKey is everything the country part is made of.
type countryKey struct {
	countryCode, continentCode   string
	continentNames, countryNames localNames
}

// countryTable holds a generation's countryData, one per key; it is only
// consulted when a record is composed.
type countryTable struct {
	mu sync.Mutex
	m  map[countryKey]*countryData
}

func (t *countryTable) get(k countryKey) *countryData {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, ok := t.m[k]; ok {
		return d
	}
	d := &countryData{continentCode: k.continentCode, countryCode: k.countryCode}
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		n := &d.names[lang]
		if k.continentCode != "" {
			n.continent = orFileName(names.Continent(k.continentCode, lang), k.continentNames, lang)
		}
		if k.countryCode != "" {
			n.country = orFileName(names.Country(k.countryCode, lang), k.countryNames, lang)
		}
	}
	if k.countryCode != "" {
		d.currency = names.Currency(k.countryCode)
	}
	if t.m == nil {
		t.m = make(map[countryKey]*countryData)
	}
	t.m[k] = d
	return d
}

// compose builds the city part from a decoded record: names from the
// names package (CLDR for continents and countries, the China tables for
// Chinese provinces and cities), GeoIP2 zh-CN names for the rest of the
// world where the file has them, else the English name.
func compose(in cityInput, countries *countryTable) cityData {
	cc := countryCodeOf(in)
	var d cityData
	cont := strings.ToUpper(strings.TrimSpace(in.continentCode))
	if cont == "" && cc != "" {
		cont = names.ContinentCode(cc)
	}
	if cc != "" || cont != "" {
		d.country = countries.get(countryKey{cc, cont, in.continentNames, in.countryNames})
	}

	// "City (District)" is two places, unless it is a place's own name
	// ("Frankfurt (Oder)"); a district the data gives on its own wins over
	// the one in brackets.
	prov := clean(in.province.EN)
	city, dist := splitDistrict(in.city.EN)
	if whole := clean(in.city.EN); in.wholeCity || names.WholeName(cc, whole) {
		city, dist = whole, ""
	}
	cityZH, distZH := splitDistrict(in.city.ZH)
	if d := clean(in.district.EN); d != "" {
		dist = d
	}
	if d := clean(in.district.ZH); d != "" {
		distZH = d
	}
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		t := &d.text[lang]
		if prov != "" {
			t.province = localize(names.Province(cc, prov, lang), prov, in.province.ZH, lang)
		} else if lang == ipatlas.Chinese {
			t.province = chineseOnly(in.province.ZH)
		}
		if city != "" {
			t.city = localize(names.City(cc, prov, city, in.lat, in.lon, lang), city, cityZH, lang)
		} else if lang == ipatlas.Chinese {
			t.city = chineseOnly(cityZH)
		}
		// The names package may name a district the data only implies (a
		// town of China the tables resolve to its prefecture by its
		// coordinates): its English answer then stands for the data's.
		distEN := dist
		fromNames := names.District(cc, prov, city, dist, in.lat, in.lon, lang)
		if distEN == "" && lang == ipatlas.English {
			distEN = fromNames
		}
		if distEN == "" && lang == ipatlas.Chinese {
			distEN = names.District(cc, prov, city, dist, in.lat, in.lon, ipatlas.English)
		}
		if distEN != "" {
			t.district = localize(fromNames, distEN, distZH, lang)
		} else if lang == ipatlas.Chinese {
			t.district = chineseOnly(distZH)
		}
	}

	if cc != "" {
		d.areaCode = names.AreaCode(cc, prov, city, in.lat, in.lon)
		if prov != "" {
			d.provinceCode = names.ProvinceCode(cc, prov)
		}
	}
	d.zip = strings.TrimSpace(in.zip)
	if d.zip == "" {
		d.zip = in.postal
	}
	d.coords, d.hasCoords = coordsOf(in)
	d.timeZone = strings.TrimSpace(in.timeZone)
	switch {
	case in.pointZoneKnown && needsPointZone(cc, in.timeZone, d.hasCoords):
		d.timeZone = in.pointZone
	case d.timeZone == "":
		d.timeZone = timeZoneOf(cc, d.coords[0], d.coords[1], d.hasCoords)
	}
	return d
}

// countryCodeOf is the record's country code as the record answers it.
func countryCodeOf(in cityInput) string {
	return strings.ToUpper(strings.TrimSpace(in.countryCode))
}

// coordsOf is the record's coordinates as the record answers them, and
// whether it has any.
func coordsOf(in cityInput) ([2]float64, bool) {
	if validCoord(in.lat, 90) && validCoord(in.lon, 180) {
		return [2]float64{shortest(in.lat), shortest(in.lon)}, true
	}
	return [2]float64{}, false
}

// needsPointZone reports whether the zone of a record of country cc (as
// countryCodeOf gives it) with its own zone ownZone comes from the finders
// at its coordinates: it has no zone of its own, its country does not
// decide one (timeZoneOf), and it has coordinates. These records, and only
// they, are what a zone index holds.
func needsPointZone(cc, ownZone string, hasCoords bool) bool {
	if strings.TrimSpace(ownZone) != "" || !hasCoords {
		return false
	}
	_, ok := countryZone(cc)
	return !ok
}

// splitDistrict splits a city name written "City (District)", as DB-IP
// writes a place within a city ("Seoul (Toegye-ro)", "Guangzhou (Yuexiu
// Qu)"), at its last top-level bracket pair. It never loses the city: a
// name with no such pair, with text after the closing bracket, or whose
// brackets do not balance is all city; an empty part gives "" for the
// district, or the bracket's text for the city ("(Toegye-ro)"); an opening
// bracket never closed splits there ("Seoul (Toegye-ro").
func splitDistrict(s string) (city, district string) {
	s = clean(s)
	if !strings.HasSuffix(s, ")") {
		if i := strings.LastIndexByte(s, '('); i >= 0 && !strings.ContainsRune(s[i:], ')') {
			return orWhole(clean(s[:i]), clean(s[i+1:]), s)
		}
		return s, ""
	}
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return orWhole(clean(s[:i]), clean(s[i+1:len(s)-1]), s)
			}
		}
	}
	return s, ""
}

// orWhole keeps a split only when it leaves a city: the inner text
// becomes the city when nothing stands before the bracket, and a city
// with nothing in brackets has no district.
func orWhole(city, district, whole string) (string, string) {
	switch {
	case city != "" && district != "":
		return city, district
	case city != "":
		return city, ""
	case district != "":
		return district, ""
	}
	return whole, ""
}

// localize picks a subdivision or city name in lang. fromNames is the names
// package's answer for the English name en ("" when it has none); zh is the
// data's own Chinese name.
func localize(fromNames, en, zh string, lang ipatlas.Lang) string {
	if lang == ipatlas.English {
		if fromNames != "" && !hasHan(fromNames) {
			return fromNames
		}
		if hasHan(en) {
			// A handful of DB-IP's "English" names are written in Han
			// characters (东涌, 室蘭): unknown in English, kept for
			// Chinese.
			return ""
		}
		return en
	}
	// The names package returns the English name where it knows no
	// Chinese one: then the data's zh-CN name is better.
	if fromNames != "" && fromNames != en && hasHan(fromNames) {
		return fromNames
	}
	if zh := clean(zh); zh != "" && hasHan(zh) {
		return zh
	}
	return en
}

// orFileName falls back to the file's own name where the names tables
// have none (an unusual code).
func orFileName(fromNames string, file localNames, lang ipatlas.Lang) string {
	if fromNames != "" {
		return fromNames
	}
	if lang == ipatlas.Chinese {
		if zh := clean(file.ZH); zh != "" {
			return zh
		}
	}
	return clean(file.EN)
}

// chineseOnly keeps a Chinese name that has no English counterpart for
// the Chinese text only, never for the English one.
func chineseOnly(zh string) string {
	if zh = clean(zh); hasHan(zh) {
		return zh
	}
	return ""
}

func clean(s string) string { return strings.TrimSpace(s) }

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func validCoord(v, limit float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= -limit && v <= limit
}

// shortest undoes float32 storage: DB-IP stores 37.422 as a float32,
// which widens to 37.42200088500977. A value that is exactly a float32 is
// replaced by the float64 nearest to its shortest float32 decimal form.
func shortest(v float64) float64 {
	if float64(float32(v)) != v {
		return v
	}
	s := strconv.FormatFloat(v, 'g', -1, 32)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return v
	}
	return f
}
