package names

import (
	"math"
	"strings"

	"github.com/ipatlas/ipatlas/internal/names/fold"
)

// cityRow is a row of the generated table of the world's cities
// (cities_gen.go): a place outside China with a Chinese name, under one of
// the folded forms of its Latin names. Strings are slices of cityKeys and
// cityNames, so that the table is static data that costs no heap.
type cityRow struct {
	country  uint16 // 'U'<<8 | 'S'
	keyLen   uint8
	nameLen  uint8
	key      uint32 // offset in cityKeys
	name     uint32 // offset in cityNames
	lat, lon int32  // 1e-4 degrees
	radius   uint16 // 100 m: a point farther away is not this place
	unique   bool   // no other place of the country has the key
	alt      bool   // the key is an alternate name's: the place's own names go first
}

// A cityTable is the generated table: rows and the strings they slice.
type cityTable struct {
	rows        []cityRow
	keys, names string
}

var worldCities = cityTable{cityRows[:], cityKeys, cityNames}

func (t *cityTable) key(r *cityRow) string  { return t.keys[r.key : r.key+uint32(r.keyLen)] }
func (t *cityTable) name(r *cityRow) string { return t.names[r.name : r.name+uint32(r.nameLen)] }

// maxCityName bounds the names looked up, so that folding fits a buffer
// on the stack; no city of the table has a longer name.
const maxCityName = 96

// lookupCity finds the Chinese name of a place outside China by its
// English name and its coordinates (NaN when unknown):
//   - the name is folded (package fold) and a trailing " (...)", a place
//     within the city, is dropped: "Seoul (Toegye-ro)" is looked up as
//     "seoul";
//   - with coordinates, the nearest row of the country and key whose
//     radius holds them names the place (a namesake farther away is
//     another place), a row of a place's own name before one of an
//     alternate name;
//   - without, only a place's own name that no other place of the
//     country bears: another place's alternate name is too weak a clue.
//
// It allocates nothing.
func lookupCity(country, english string, lat, lon float64) (string, bool) {
	return worldCities.lookup(country, english, lat, lon)
}

func (t *cityTable) lookup(country, english string, lat, lon float64) (string, bool) {
	cc, ok := upper(country)
	if !ok {
		return "", false
	}
	if i := strings.Index(english, " ("); i > 0 && english[len(english)-1] == ')' {
		english = english[:i]
	}
	if len(english) > maxCityName {
		return "", false
	}
	var buf [2 * maxCityName]byte
	key := fold.Append(buf[:0], english)
	c := uint16(cc[0])<<8 | uint16(cc[1])

	// The first row not before (c, key).
	lo, hi := 0, len(t.rows)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		r := &t.rows[m]
		if r.country < c || r.country == c && compareKey(t.key(r), key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	known := !math.IsNaN(lat) && !math.IsNaN(lon)
	best, bestD, bestAlt := -1, math.Inf(1), true
	for i := lo; i < len(t.rows); i++ {
		r := &t.rows[i]
		if r.country != c || compareKey(t.key(r), key) != 0 {
			break
		}
		if !known {
			if r.unique && !r.alt {
				return t.name(r), true
			}
			continue
		}
		if r.alt && !bestAlt {
			continue
		}
		radius, rlat := float64(r.radius)/10, float64(r.lat)/1e4
		if math.Abs(lat-rlat)*kmPerDegree > radius {
			continue // a degree of latitude is 111 km anywhere
		}
		d := distanceKm(lat, lon, rlat, float64(r.lon)/1e4)
		if d > radius {
			continue
		}
		if d < bestD || bestAlt && !r.alt {
			best, bestD, bestAlt = i, d, r.alt
		}
	}
	if best < 0 {
		return "", false
	}
	return t.name(&t.rows[best]), true
}

// compareKey compares a row's key with a folded name, like strings.Compare.
func compareKey(a string, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// kmPerDegree is the length of a degree of latitude (a meridian's length
// over 180), a little less than any great-circle degree.
const kmPerDegree = 111.19

// distanceKm is the great-circle distance between two points (haversine).
func distanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	const earthKm = 6371.0
	const rad = math.Pi / 180
	dlat, dlon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dlat/2)*math.Sin(dlat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlon/2)*math.Sin(dlon/2)
	return 2 * earthKm * math.Asin(math.Min(1, math.Sqrt(a)))
}
