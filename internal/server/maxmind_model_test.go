package server

import (
	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geoip2"
	"github.com/ipatlas/ipatlas/internal/names"
)

// The MaxMind shape's tests read the GeoIP2 model (package geoip2) by the
// shape's names: its types, its accuracy radii, the European Union's
// members and the rule for an address the data says nothing about.

type (
	maxmindAnswer    = geoip2.Model
	maxmindNames     = geoip2.Names
	maxmindContinent = geoip2.Continent
	maxmindCountry   = geoip2.Country
	maxmindCityNames = geoip2.City
	maxmindPostal    = geoip2.Postal
	maxmindTraits    = geoip2.Traits
	maxmindAccount   = geoip2.MaxMind
)

// euMembers is names.InEU as a set of codes.
var euMembers = func() map[string]bool {
	m := map[string]bool{}
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			if code := string([]rune{a, b}); names.InEU(code) {
				m[code] = true
			}
		}
	}
	return m
}()

// known reports whether a record says anything the model answers: an
// address whose record does not is IP_ADDRESS_NOT_FOUND.
func known(rec *ipatlas.Record) bool {
	a := geo.AnswerOf(*rec, *rec)
	return !a.Empty()
}
