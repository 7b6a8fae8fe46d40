package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas/internal/names/fold"
)

// The world's first-level subdivisions come from two npm packages, pinned
// with the integrity hash the registry publishes:
//   - iso3166-2-db (MIT, github.com/esosedi/3166): each country's regions
//     with their ISO 3166-2 code, English and GeoNames spellings and a
//     Chinese name taken from Wikipedia and OpenStreetMap, in Traditional
//     or Simplified characters;
//   - cldr-subdivisions-full (Unicode-3.0, CLDR): the English names of
//     ISO 3166-2 codes, one more spelling of each.
var (
	iso31662Package = pinned{
		name:      "iso3166-2-db",
		version:   "2.3.11",
		integrity: "sha512-JMt9Cheiuo5aX07AGUEIWbmPXTROb4dk33n5L8m/AGV9G3piCA78v9R9wfBrRNLL7swr5ZLhtjkE6l4dV4VDzQ==",
	}
	cldrSubdivisionsPackage = pinned{
		name:      "cldr-subdivisions-full",
		version:   "48.2.0",
		integrity: "sha512-UPGETKyPhuWAGZDNwN38KZA+mDrp7TDIyLoNqAdoZ9LUQxqChFx9AAsA4mZfeWdO5ev1hcRO4NIoBGzRwk6wHA==",
	}
)

// A place is a first-level subdivision (or, for places without ISO 3166-2
// codes, a district the IP data uses in its stead) with every English
// spelling known for it and its Chinese name ("" when none is trusted).
type place struct {
	country, code string // "US", "US-CA"; code is "" for a place without one
	english       []string
	chinese       string
	hand          bool // written in subdivisions_hand.go: wins over the sources
}

type subdivisionSources struct {
	places  []*place
	sources []string // what was read, for the file header
	// codeClashes are codes whose CLDR name has no word in common with
	// iso3166-2-db's: a code ISO 3166-2 has reused for another division
	// ("MA-06" was Meknès-Tafilalet, is Casablanca-Settat), whose Chinese
	// name would be the old division's. The CLDR name is not used.
	codeClashes []string
}

// similar reports whether name is a spelling of the division one of names
// names: the same fold key, or a word in common (of three letters or more,
// accents and case folded, not a generic word such as "Province"), or a
// first word whose first three letters are alike ("Bucuresti",
// "Bucharest").
func similar(name string, names []string) bool {
	words := func(s string) []string {
		var buf fold.Buf
		var out []string
		for _, w := range strings.FieldsFunc(s, func(r rune) bool {
			return r == ' ' || r == '-' || r == '–' || r == '/' || r == ',' || r == '(' || r == ')' || r == '.' || r == '\''
		}) {
			if full, _, ok := fold.Keys(&buf, w); ok && len(full) >= 3 && !fold.Generic(string(full)) {
				out = append(out, string(full))
			}
		}
		return out
	}
	key := func(s string) string {
		var buf fold.Buf
		full, _, _ := fold.Keys(&buf, s)
		return string(full)
	}
	ws := words(name)
	for _, n := range names {
		if key(n) == key(name) {
			return true
		}
		nws := words(n)
		for _, w := range ws {
			if contains(nws, w) {
				return true
			}
		}
		if len(ws) > 0 && len(nws) > 0 && len(ws[0]) >= 3 && len(nws[0]) >= 3 && ws[0][:3] == nws[0][:3] {
			return true
		}
	}
	return false
}

func loadSubdivisions(dir, registry string) (*subdivisionSources, error) {
	isoTgz, err := iso31662Package.load(dir, registry)
	if err != nil {
		return nil, err
	}
	files, err := untar(isoTgz, "package/data/iso3166-2.json")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", iso31662Package.name, err)
	}
	var iso map[string]struct {
		Regions []struct {
			Name  string            `json:"name"`
			Names map[string]string `json:"names"`
			ISO   string            `json:"iso"`
		} `json:"regions"`
	}
	if err := json.Unmarshal(files["package/data/iso3166-2.json"], &iso); err != nil {
		return nil, fmt.Errorf("%s: %w", iso31662Package.name, err)
	}

	cldrTgz, err := cldrSubdivisionsPackage.load(dir, registry)
	if err != nil {
		return nil, err
	}
	const enFile = "package/subdivisions/en/en.json"
	files, err = untar(cldrTgz, enFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cldrSubdivisionsPackage.name, err)
	}
	var cldr struct {
		Subdivisions struct {
			LocaleDisplayNames struct {
				Subdivisions map[string]string `json:"subdivisions"`
			} `json:"localeDisplayNames"`
		} `json:"subdivisions"`
	}
	if err := json.Unmarshal(files[enFile], &cldr); err != nil {
		return nil, fmt.Errorf("%s: %w", cldrSubdivisionsPackage.name, err)
	}
	cldrEn := cldr.Subdivisions.LocaleDisplayNames.Subdivisions
	if len(iso) < 200 || len(cldrEn) < 3000 {
		return nil, fmt.Errorf("subdivision sources: only %d countries and %d CLDR names", len(iso), len(cldrEn))
	}

	renamed, err := loadCodeAliases(dir, registry)
	if err != nil {
		return nil, err
	}

	s := &subdivisionSources{sources: []string{iso31662Package.String(), cldrSubdivisionsPackage.String(), cldrCorePackage.String()}}
	// byCode is keyed by the code iso3166-2-db gives; a place's own code
	// is the current one.
	byCode := map[string]*place{}
	ccs := make([]string, 0, len(iso))
	for cc := range iso {
		ccs = append(ccs, cc)
	}
	sort.Strings(ccs)
	for _, cc := range ccs {
		for _, r := range iso[cc].Regions {
			if r.ISO == "" {
				continue // no code: only the hand-written table names such places
			}
			code := cc + "-" + r.ISO
			p := byCode[code]
			if p == nil {
				p = &place{country: cc, code: currentCode(code, renamed)}
				byCode[code] = p
				s.places = append(s.places, p)
			}
			p.english = appendNew(p.english, r.Name, r.Names["en"])
			// GeoNames' and CLDR's spellings only where they name the same
			// division as iso3166-2-db's: where ISO 3166-2 reused a code
			// ("MA-06" was Meknès-Tafilalet, is Casablanca-Settat) they
			// name the new division, and the Chinese name is the old one's.
			// Where GeoNames and CLDR agree with each other, two sources
			// name the code alike and both spellings are kept.
			geo, cldrName := r.Names["geonames"], cldrEn[strings.ToLower(cc+r.ISO)]
			agree := geo != "" && cldrName != "" && similar(geo, []string{cldrName})
			for _, alt := range [...]struct{ from, name string }{
				{"GeoNames", geo},
				{"CLDR", cldrName},
			} {
				switch {
				case alt.name == "":
				case agree || similar(alt.name, p.english):
					p.english = appendNew(p.english, alt.name)
				default:
					s.codeClashes = append(s.codeClashes, fmt.Sprintf("%s: %s %q, iso3166-2-db %q", code, alt.from, alt.name, p.english))
				}
			}
			if p.chinese == "" {
				_, iso, _ := strings.Cut(p.code, "-")
				p.chinese = chineseName(cc, iso, r.Names["zh"])
			}
		}
	}
	for code, en := range subdivisionAliases {
		p := byCode[code]
		if p == nil {
			return nil, fmt.Errorf("alias for %s, a code the sources do not list", code)
		}
		p.english = appendNew(p.english, en...)
	}
	for code, zh := range subdivisionChinese {
		p := byCode[code]
		if p == nil {
			return nil, fmt.Errorf("Chinese name for %s, a code the sources do not list", code)
		}
		cc, iso, _ := strings.Cut(p.code, "-")
		p.chinese, p.hand = withKindSuffix(cc, iso, zh), true
	}
	for _, h := range placesWithoutCode {
		s.places = append(s.places, &place{country: h.country, code: h.code, english: h.english, chinese: h.chinese, hand: true})
	}
	named := 0
	for _, p := range s.places {
		if p.chinese != "" {
			named++
		}
	}
	if named < 2000 {
		return nil, fmt.Errorf("only %d subdivisions have a Chinese name", named)
	}
	return s, nil
}

// chineseName is the Chinese name a source gives a subdivision, in
// Simplified characters, with the suffix of its kind where the country's
// kinds are known (subdivisionKinds); "" when the name is not a Simplified Chinese name of
// at least two characters.
func chineseName(cc, iso, zh string) string {
	zh, ok := simplified(zh)
	if !ok || utf8.RuneCountInString(zh) < 2 {
		return ""
	}
	zh = strings.ReplaceAll(zh, "－", "-") // one hyphen for every name
	return withKindSuffix(cc, iso, zh)
}

// loadCodeAliases reads CLDR's subdivision aliases (cldr-core's
// supplemental aliases.json): the codes ISO 3166-2 has replaced, each
// with its one successor in the same country ("CN-11" is "CN-BJ" since
// 2017), upper case with the country's hyphen.
func loadCodeAliases(dir, registry string) (map[string]string, error) {
	tgz, err := cldrCorePackage.load(dir, registry)
	if err != nil {
		return nil, err
	}
	const file = "package/supplemental/aliases.json"
	files, err := untar(tgz, file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cldrCorePackage.name, err)
	}
	var data struct {
		Supplemental struct {
			Metadata struct {
				Alias struct {
					Subdivision map[string]struct {
						Reason      string `json:"_reason"`
						Replacement string `json:"_replacement"`
					} `json:"subdivisionAlias"`
				} `json:"alias"`
			} `json:"metadata"`
		} `json:"supplemental"`
	}
	if err := json.Unmarshal(files[file], &data); err != nil {
		return nil, fmt.Errorf("%s: %w", cldrCorePackage.name, err)
	}
	code := func(cldr string) string { return strings.ToUpper(cldr[:2] + "-" + cldr[2:]) }
	out := map[string]string{}
	for old, a := range data.Supplemental.Metadata.Alias.Subdivision {
		if a.Reason != "deprecated" || len(old) < 3 || len(a.Replacement) < 3 || strings.Contains(a.Replacement, " ") || a.Replacement[:2] != old[:2] {
			continue
		}
		out[code(old)] = code(a.Replacement)
	}
	if len(out) < 50 {
		return nil, fmt.Errorf("%s: only %d subdivision aliases", cldrCorePackage.name, len(out))
	}
	return out, nil
}

// currentCode is the code that stands for code today: the hand-written
// one (codeRenames), else CLDR's successor, else code itself.
func currentCode(code string, cldr map[string]string) string {
	if c, ok := codeRenames[code]; ok {
		return c
	}
	if c, ok := cldr[code]; ok {
		return c
	}
	return code
}

func appendNew(s []string, vs ...string) []string {
	for _, v := range vs {
		if v != "" && !contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// A subdivisionKey is one entry of the generated table: a country and the
// folded key of one English spelling, with the place it leads to.
type subdivisionKey struct {
	key   string // country + fold key
	place *place
}

type subdivisionTable struct {
	entries   []subdivisionKey
	ambiguous []string // keys dropped because they lead to two places
	unnamed   int      // places without a Chinese name
	named     int
}

// buildSubdivisions indexes every place twice: by the full key of each of
// its spellings (country + key), and by their stripped keys (country +
// fold.StrippedMark + key), which the lookup tries when the full key is not
// found. Where a key leads to two places, a hand-written place beats a
// source's; a key that still leads to two places with different Chinese
// names or codes is dropped, since no name is better than a wrong one:
// "Tashkent Region" strips to the key of both the city of Tashkent and
// Tashkent Province, and keeps its English name. Places without a Chinese
// name are kept for their code; the lookup of their Chinese name answers
// the English one, as for a name it does not know.
func buildSubdivisions(s *subdivisionSources) (*subdivisionTable, error) {
	cands := map[string][]*place{}
	var buf fold.Buf
	for _, p := range s.places {
		for _, en := range p.english {
			full, stripped, ok := fold.Keys(&buf, en)
			if !ok {
				continue
			}
			for _, key := range []string{p.country + string(full), p.country + fold.StrippedMark + string(stripped)} {
				if !containsPlace(cands[key], p) {
					cands[key] = append(cands[key], p)
				}
			}
		}
	}
	rank := func(p *place) int {
		if p.hand {
			return 1
		}
		return 0
	}
	t := &subdivisionTable{}
	for key, cs := range cands {
		best := -1
		var winners []*place
		for _, c := range cs {
			switch r := rank(c); {
			case r > best:
				best, winners = r, []*place{c}
			case r == best && !containsPlace(winners, c):
				winners = append(winners, c)
			}
		}
		if len(winners) > 1 {
			same := true
			for _, w := range winners[1:] {
				same = same && w.chinese == winners[0].chinese && w.code == winners[0].code
			}
			if !same {
				t.ambiguous = append(t.ambiguous, key)
				continue
			}
		}
		if winners[0].chinese != "" || winners[0].code != "" {
			t.entries = append(t.entries, subdivisionKey{key, winners[0]})
		}
	}
	sort.Slice(t.entries, func(i, j int) bool { return t.entries[i].key < t.entries[j].key })
	sort.Strings(t.ambiguous)
	for _, p := range s.places {
		if p.chinese == "" {
			t.unnamed++
		} else {
			t.named++
		}
	}
	return t, nil
}

func containsPlace(ps []*place, p *place) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func emitSubdivisions(t *subdivisionTable, sources []string) ([]byte, string) {
	var b bytes.Buffer
	b.WriteString(header)
	b.WriteString("//\n// Sources:\n")
	for _, s := range sources {
		fmt.Fprintf(&b, "//   - %s;\n", s)
	}
	b.WriteString(`//   - the hand-written names and spellings of
//     internal/names/gen/subdivisions_hand.go.
// The rules that join them are in internal/names/gen/subdivisions.go.

package names

// subdivisions names the world's first-level subdivisions in Chinese and
// gives their current ISO 3166-2 codes, sorted by key: the country code and
// the full fold key of an English spelling, or the country code,
// fold.StrippedMark and its stripped key (see package fold). code is ""
// for a place without one, chinese "" for a place without a Chinese name.
var subdivisions = [...]subdivision{
`)
	for _, e := range t.entries {
		fmt.Fprintf(&b, "\t{%q, %q, %q},\n", e.key, e.place.code, e.place.chinese)
	}
	b.WriteString("}\n")
	stats := fmt.Sprintf("%d subdivisions with a Chinese name, %d without; %d keys, %d dropped as ambiguous",
		t.named, t.unnamed, len(t.entries), len(t.ambiguous))
	return b.Bytes(), stats
}
