package names

import (
	"math"
	"strings"
	"sync"

	"github.com/ipatlas/ipatlas/internal/names/cityindex"
	"github.com/ipatlas/ipatlas/internal/names/fold"
)

// worldCities is the generated table of the world's cities (cities_gen.go):
// the places outside China with a Chinese name, each under the folded
// forms of its Latin names. Lookups search its embedded files where they
// lie (package cityindex), so that the table costs no heap; it is opened
// on first use, so that a program that looks no city up maps none of its
// pages. A table that does not open (a build defect, which
// TestCityTableValid catches) knows no city.
var worldCities = sync.OnceValue(func() *cityindex.Table {
	t, err := cityindex.Open(cityindex.Data{Keys: cityKeysData, Places: cityPlacesData, Names: cityNamesText})
	if err != nil {
		return &cityindex.Table{}
	}
	return t
})

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
	return lookupCityIn(worldCities(), country, english, lat, lon)
}

func lookupCityIn(t *cityindex.Table, country, english string, lat, lon float64) (string, bool) {
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

	known := !math.IsNaN(lat) && !math.IsNaN(lon)
	best, found, bestD, bestAlt := "", false, math.Inf(1), true
	rows := t.Find(uint16(cc[0])<<8|uint16(cc[1]), key)
	for rows.Next() {
		r := rows.Match()
		if !known {
			if r.Unique && !r.Alt {
				return rows.Name(), true
			}
			continue
		}
		if r.Alt && !bestAlt {
			continue
		}
		radius, rlat := float64(r.Radius)/10, float64(r.Lat)/1e4
		if math.Abs(lat-rlat)*kmPerDegree > radius {
			continue // a degree of latitude is 111 km anywhere
		}
		d := distanceKm(lat, lon, rlat, float64(r.Lon)/1e4)
		if d > radius {
			continue
		}
		if d < bestD || bestAlt && !r.Alt {
			best, found, bestD, bestAlt = rows.Name(), true, d, r.Alt
		}
	}
	return best, found
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
