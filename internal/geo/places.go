package geo

import (
	"cmp"
	"log/slog"
	"math"
	"strings"
	"sync"

	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/names/fold"
)

// placeQuery is a place a correction names, as it names it.
type placeQuery struct {
	cc     string // ISO 3166-1 alpha-2
	region string // ISO 3166-2, "" when not named
	city   string // "" when not named
	postal string
}

// placeKey finds places of the dataset: a country, a subdivision code
// ("" for anywhere in the country) and the fold key of a city name ("" for
// the subdivision itself).
type placeKey struct {
	cc, region, city string
}

// placeRecord is what the dataset says of a place: the record that
// stands for it, the one with the most networks among those that name it.
type placeRecord struct {
	province string // the subdivision's English name, as the dataset spells it
	lat, lon float64
	zone     string // the record's time zone, as a lookup would answer it
	zip      string
	networks int
}

// placeState is a generation's memory of the places corrections named:
// found once per dataset, kept for the next build (an overrides file
// edited twice names mostly the same places).
type placeState struct {
	mu     sync.Mutex
	places map[placeKey]*placeRecord // nil value: looked for, not found

	annOnce sync.Once
	ann     [2]float64 // announced IPv4 and IPv6 addresses
}

// resolvePlace turns a place a correction names into the input of a
// record part, and reports whether a named city got coordinates. The
// country and the subdivision are the correction's; the subdivision's
// English name is the dataset's spelling of that code. The coordinates
// and the time zone are those of the record the dataset has for that city
// in that subdivision (the one covering the most networks), else for that
// city anywhere in the country, the city found by its name, else by the
// first place of a compound name, else by its stem (cityStem); else
// hooks.Point's; a city that none
// knows has none, and its zone is its subdivision's. A correction that
// names no city gets no city and no coordinates: its zone is that of the
// subdivision's main place (its record with the most networks), or the
// country's only one. The postal code is the correction's, else
// hooks.Postal's for the place, else the dataset's for that record.
func resolvePlace(q placeQuery, found func(placeKey) *placeRecord, hooks PlaceHooks) (in cityInput, located bool) {
	in = cityInput{countryCode: q.cc, lat: math.NaN(), lon: math.NaN(), zip: q.postal}
	var region, at *placeRecord
	if q.region != "" {
		region = found(placeKey{q.cc, q.region, ""})
	}
	if q.city != "" {
		forms := append(cityForms(q.city), cityStem(q.city))
		regions := []string{q.region, ""}
		if q.region == "" {
			regions = regions[1:]
		}
	search:
		for _, r := range regions {
			for _, f := range forms {
				if f == "" {
					continue
				}
				if at = found(placeKey{q.cc, r, f}); at != nil {
					break search
				}
			}
		}
	}
	switch {
	case region != nil:
		in.province.EN = region.province
	case at != nil:
		// The correction names no subdivision the dataset knows (none,
		// or a lower-level one such as GB-WSM): the city's is the one.
		in.province.EN = at.province
	}
	if region != nil {
		in.timeZone = region.zone
	}
	if q.city == "" {
		return in, true
	}
	in.city.EN = q.city
	switch {
	case at != nil:
		in.lat, in.lon, in.timeZone = at.lat, at.lon, at.zone
		located = true
	case hooks.Point != nil:
		if lat, lon, ok := hooks.Point(q.cc, q.region, q.city); ok && validCoord(lat, 90) && validCoord(lon, 180) {
			in.lat, in.lon, located = lat, lon, true
			in.timeZone = "" // the zone at the point
		}
	}
	if in.zip == "" && hooks.Postal != nil {
		in.zip = hooks.Postal(q.cc, q.region, q.city, in.lat, in.lon)
	}
	if in.zip == "" && at != nil {
		in.zip = at.zip
	}
	return in, located
}

// cityForms are the fold keys a city name is looked up by: the name, then
// for a name joining two places ("Dallas-Fort Worth", a metropolitan
// area) its first.
func cityForms(name string) []string {
	var out []string
	add := func(s string) {
		var buf fold.Buf
		if full, _, ok := fold.Keys(&buf, s); ok {
			k := string(full)
			for _, o := range out {
				if o == k {
					return
				}
			}
			out = append(out, k)
		}
	}
	add(name)
	if i := strings.IndexAny(name, "-/"); i > 0 {
		add(name[:i])
	}
	return out
}

// cityStem is a last resort key of a city name: the fold key of its name
// without the words that say what kind of place it is, marked apart from
// the full keys ("Makati City", "Koto-ku", "Borough of Spelthorne" and
// "Spelthorne District" meet their other spellings); "" when nothing is
// left.
func cityStem(name string) string {
	s := strings.ToLower(clean(name))
	for _, p := range []string{"borough of ", "city of ", "municipality of ", "district of ", "town of "} {
		s = strings.TrimPrefix(s, p)
	}
	for _, w := range []string{" city", " district", " borough", " municipality", " town", "-ku", " ku", "-gu", " gu", "-shi", " shi", "-si", "-gun"} {
		if t, ok := strings.CutSuffix(s, w); ok && t != "" {
			s = t
			break
		}
	}
	var buf fold.Buf
	full, _, ok := fold.Keys(&buf, s)
	if !ok {
		return ""
	}
	return "~" + string(full)
}

// keysOf are the dataset places that resolvePlace may ask about for q.
func keysOf(q placeQuery) []placeKey {
	var out []placeKey
	if q.region != "" {
		out = append(out, placeKey{q.cc, q.region, ""})
	}
	if q.city != "" {
		forms := cityForms(q.city)
		if stem := cityStem(q.city); stem != "" {
			forms = append(forms, stem)
		}
		for _, f := range forms {
			if q.region != "" {
				out = append(out, placeKey{q.cc, q.region, f})
			}
			out = append(out, placeKey{q.cc, "", f})
		}
	}
	return out
}

// datasetPlaces finds in the city data every place the queries may ask
// about that no earlier build has looked for: one walk of the city files,
// a few seconds on the default dataset, only when something new is
// named. It returns the finder resolvePlace takes.
func (g *generation) datasetPlaces(qs []placeQuery, log *slog.Logger) func(placeKey) *placeRecord {
	st := &g.local
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.places == nil {
		st.places = map[placeKey]*placeRecord{}
	}
	wanted := map[placeKey]bool{}
	for _, q := range qs {
		for _, k := range keysOf(q) {
			if _, known := st.places[k]; !known {
				wanted[k] = true
			}
		}
	}
	if len(wanted) > 0 {
		g.walkPlaces(wanted, st.places, log)
		for k := range wanted {
			if _, ok := st.places[k]; !ok {
				st.places[k] = nil
			}
		}
	}
	out := make(map[placeKey]*placeRecord, len(qs))
	for _, q := range qs {
		for _, k := range keysOf(q) {
			out[k] = st.places[k]
		}
	}
	return func(k placeKey) *placeRecord { return out[k] }
}

// walkPlaces walks every city file and keeps, for each wanted key, the
// record that names it and covers the most networks.
func (g *generation) walkPlaces(wanted map[placeKey]bool, into map[placeKey]*placeRecord, log *slog.Logger) {
	countries := map[string]bool{}
	for k := range wanted {
		countries[k.cc] = true
	}
	type cand struct {
		rec  placeRecord
		keys []placeKey
	}
	// The files that answer IPv4 first: they name most places, and a key
	// they answer is not looked for in the others.
	var files []*source
	for _, s := range g.sources {
		if s.kind == kindCity && s.has4 {
			files = append(files, s)
		}
	}
	for _, s := range g.sources {
		if s.kind == kindCity && !s.has4 {
			files = append(files, s)
		}
	}
	for _, s := range files {
		for k := range wanted {
			if into[k] != nil {
				delete(wanted, k)
			}
		}
		if len(wanted) == 0 {
			return
		}
		seen := map[uintptr]*cand{}
		for res := range s.r.Networks() {
			if err := res.Err(); err != nil {
				log.Warn("walking a city file for the places corrections name", "file", s.info.File, "err", err)
				break
			}
			off := res.Offset()
			c, ok := seen[off]
			var err error
			if !ok {
				seen[off] = nil
				// The country alone first: most records are of
				// countries no correction names.
				var cc string
				if s.schema == schemaGeoIP2 {
					err = res.DecodePath(&cc, "country", "iso_code")
				} else {
					err = res.DecodePath(&cc, "country_code")
				}
				if err != nil || !countries[strings.ToUpper(strings.TrimSpace(cc))] {
					continue
				}
				in, err := s.decodeCity(res)
				if err != nil {
					continue
				}
				keys := matchKeys(in, wanted)
				if len(keys) == 0 {
					continue
				}
				c = &cand{rec: recordOf(s, in, off), keys: keys}
				seen[off] = c
			}
			if c != nil {
				c.rec.networks++
			}
		}
		for _, c := range seen {
			if c == nil {
				continue
			}
			for _, k := range c.keys {
				if cur := into[k]; cur == nil || better(&c.rec, cur) {
					r := c.rec
					into[k] = &r
				}
			}
		}
	}
}

// better orders the records of one place: most networks first, then by
// coordinates, so that the choice never depends on map order.
func better(a, b *placeRecord) bool {
	if a.networks != b.networks {
		return a.networks > b.networks
	}
	if c := cmp.Compare(a.lat, b.lat); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(a.lon, b.lon); c != 0 {
		return c < 0
	}
	return a.province < b.province
}

// matchKeys are the wanted keys a decoded city record answers.
func matchKeys(in cityInput, wanted map[placeKey]bool) []placeKey {
	cc := countryCodeOf(in)
	code := "" // the full ISO 3166-2 code, as feeds give it ("US-CA")
	if c := names.ProvinceCode(cc, clean(in.province.EN)); c != "" {
		code = cc + "-" + c
	}
	var out []placeKey
	try := func(k placeKey) {
		if wanted[k] {
			out = append(out, k)
		}
	}
	if code != "" {
		try(placeKey{cc, code, ""})
	}
	city, _ := splitDistrict(in.city.EN)
	whole := clean(in.city.EN)
	for _, name := range []string{city, whole} {
		var buf fold.Buf
		full, _, ok := fold.Keys(&buf, name)
		if !ok {
			continue
		}
		f := string(full)
		if code != "" {
			try(placeKey{cc, code, f})
		}
		try(placeKey{cc, "", f})
		if city == whole {
			break
		}
	}
	if stem := cityStem(city); stem != "" {
		if code != "" {
			try(placeKey{cc, code, stem})
		}
		try(placeKey{cc, "", stem})
	}
	return out
}

// recordOf is what a place takes from a city record: its coordinates, and
// the zone and postal code a lookup of it answers.
func recordOf(s *source, in cityInput, off uintptr) placeRecord {
	cc := countryCodeOf(in)
	r := placeRecord{province: clean(in.province.EN), lat: math.NaN(), lon: math.NaN(), zip: clean(in.zip)}
	if r.zip == "" && s.postal != nil {
		// The code the file's postal index gives the record, as a lookup
		// of it answers: a corrected place takes its city's code.
		r.zip = strings.Clone(s.postal.code(off))
	}
	coords, has := coordsOf(in)
	if has {
		r.lat, r.lon = coords[0], coords[1]
	}
	r.zone = clean(in.timeZone)
	if r.zone == "" {
		if z, known := s.zones.zone(off); known && needsPointZone(cc, "", has) {
			r.zone = z
		} else {
			r.zone = timeZoneOf(cc, coords[0], coords[1], has)
		}
	}
	return r
}
