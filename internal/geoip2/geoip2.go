// Package geoip2 is MaxMind's GeoIP2 model of the engine's answer: the one
// tree that the MaxMind web-service shape (internal/server) writes as JSON
// and the export (internal/export) writes as an MMDB record. New builds it
// from a geo.Answer; a member added here reaches both.
//
// The tree is Insights' (City's plus the anonymizer and hosting flags),
// with:
//
//   - names maps in "en" and "zh-CN": the answer in English and in
//     Chinese (which is the English name where the data has no Chinese
//     one); geoname_id and confidence are left out (no source);
//   - registered_country the same as country: ipatlas has no separate
//     data on where a network is registered;
//   - subdivisions one entry, the province, its iso_code the ISO 3166-2
//     part after the country's (alone where a correction names a region
//     the data has no name for);
//   - location.accuracy_radius the answer's own (package accuracy: how far
//     the truth lay for 85% of such answers), and its confidence level in
//     ipatlas's keys;
//   - traits: the AS's number and name (its name also as isp and
//     organization, the data having no other ISP names); network, the
//     answer's network (geo.Engine.AnswerNetwork), in the web service's
//     answer only: a file's reader has it from the file's tree; the
//     anonymizer and hosting flags from the privacy lists, present
//     only when true, as MaxMind writes them (is_public_proxy and
//     is_residential_proxy have no list behind them).
//
// # The two encoders
//
// The web shape writes the tree with encoding/json, the export with
// MMDBEncoder, which reads the same json tags: the same names, and the
// same members left out when empty. Where the two differ, a field's mmdb
// tag says so, and only for what one of them cannot hold:
//
//   - mmdb:"-": the web service's alone. traits.ip_address is the address
//     asked about and traits.network its network (a file's reader fills
//     both from its lookup), maxmind the caller's account (a file has
//     none).
//   - json:"-" with an mmdb tag: the file's alone. The AS again at the top
//     level, as GeoLite2-ASN has it, so that one file serves both kinds of
//     proxy config; and "ipatlas", what GeoIP2 has no key for. The web
//     service answers these in ipatlas's own shapes.
//   - mmdb:"traits,omitzero": traits without an address may hold nothing,
//     and a file leaves an empty traits out.
//
// Both answer the same addresses: New is nil for an answer that says
// nothing (geo.Answer.Empty), which the web service answers with
// IP_ADDRESS_NOT_FOUND and the export leaves out.
package geoip2

import (
	"math"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// Service is which of MaxMind's web services a tree answers: each holds
// less than the next.
type Service int

const (
	// CountryService holds the continent, the countries and the traits'
	// address.
	CountryService Service = iota
	// CityService adds the city, the subdivisions, the postal code, the
	// location and the AS.
	CityService
	// InsightsService adds the anonymizer and hosting flags. An export
	// holds what Insights does.
	InsightsService
)

// Model is the GeoIP2 tree of an answer.
type Model struct {
	City              *City         `json:"city,omitempty"`
	Continent         *Continent    `json:"continent,omitempty"`
	Country           *Country      `json:"country,omitempty"`
	Location          *Location     `json:"location,omitempty"`
	MaxMind           MaxMind       `json:"maxmind" mmdb:"-"`
	Postal            *Postal       `json:"postal,omitempty"`
	RegisteredCountry *Country      `json:"registered_country,omitempty"`
	Subdivisions      []Subdivision `json:"subdivisions,omitempty"`
	Traits            Traits        `json:"traits" mmdb:"traits,omitzero"`

	// The file's alone: the AS as GeoLite2-ASN has it, and ipatlas's own
	// keys.
	ASN            uint32   `json:"-" mmdb:"autonomous_system_number,omitempty"`
	ASOrganization string   `json:"-" mmdb:"autonomous_system_organization,omitempty"`
	Ipatlas        *Ipatlas `json:"-" mmdb:"ipatlas,omitempty"`
}

// Names is a names map: English, and Chinese.
type Names struct {
	EN string `json:"en,omitempty"`
	ZH string `json:"zh-CN,omitempty"`
}

// Continent is GeoIP2's continent record.
type Continent struct {
	Code  string `json:"code,omitempty"`
	Names Names  `json:"names"`
}

// Country is GeoIP2's country record (country and registered_country).
type Country struct {
	IsInEuropeanUnion bool   `json:"is_in_european_union,omitempty"`
	ISOCode           string `json:"iso_code,omitempty"`
	Names             Names  `json:"names"`
}

// Subdivision is one of GeoIP2's subdivisions.
type Subdivision struct {
	ISOCode string `json:"iso_code,omitempty"`
	Names   Names  `json:"names"`
}

// City is GeoIP2's city record.
type City struct {
	Names Names `json:"names"`
}

// Postal is GeoIP2's postal record.
type Postal struct {
	Code string `json:"code"`
}

// Location is GeoIP2's location record.
type Location struct {
	AccuracyRadius uint16   `json:"accuracy_radius,omitempty"`
	Latitude       *float64 `json:"latitude,omitempty"`
	Longitude      *float64 `json:"longitude,omitempty"`
	TimeZone       string   `json:"time_zone,omitempty"`
}

// Traits is GeoIP2's traits record.
type Traits struct {
	ASN                uint32 `json:"autonomous_system_number,omitempty"`
	ASOrganization     string `json:"autonomous_system_organization,omitempty"`
	ISP                string `json:"isp,omitempty"`
	Organization       string `json:"organization,omitempty"`
	IPAddress          string `json:"ip_address" mmdb:"-"`
	Network            string `json:"network,omitempty" mmdb:"-"`
	IsAnonymous        bool   `json:"is_anonymous,omitempty"`
	IsAnonymousVPN     bool   `json:"is_anonymous_vpn,omitempty"`
	IsHostingProvider  bool   `json:"is_hosting_provider,omitempty"`
	IsPublicProxy      bool   `json:"is_public_proxy,omitempty"`
	IsResidentialProxy bool   `json:"is_residential_proxy,omitempty"`
	IsTorExitNode      bool   `json:"is_tor_exit_node,omitempty"`
}

// MaxMind is the web service's account record: queries_remaining, how
// many more queries the caller can pay for.
type MaxMind struct {
	QueriesRemaining int64 `json:"queries_remaining"`
}

// Ipatlas is what an export holds that GeoIP2 has no key for.
type Ipatlas struct {
	// Privacy is every flag, false included; nil when no list is loaded.
	Privacy        *Privacy  `json:"privacy,omitempty"`
	District       *District `json:"district,omitempty"`
	Currency       string    `json:"currency,omitempty"`
	AreaCode       string    `json:"area_code,omitempty"`
	LocationSource string    `json:"location_source,omitempty"`
	// Confidence is the level of location.accuracy_radius.
	Confidence string `json:"confidence,omitempty"`
}

// Privacy is ipatlas's privacy object: tor is absent while the exit list
// is missing or too old to tell.
type Privacy struct {
	Hosting bool   `json:"hosting"`
	VPN     bool   `json:"vpn"`
	Relay   bool   `json:"relay"`
	Tor     *bool  `json:"tor,omitempty"`
	Service string `json:"service,omitempty"`
}

// District is the place below the city, which GeoIP2 does not have.
type District struct {
	Names Names `json:"names"`
}

// namesOf is the names map of an English and a Chinese name.
func namesOf(en, zh string) Names { return Names{EN: en, ZH: zh} }

// New is a's tree for service s, nil when a says nothing (a.Empty).
func New(a *geo.Answer, s Service) *Model {
	if a.Empty() {
		return nil
	}
	m := &Model{}
	if a.ContinentCode != "" || a.Continent != "" || a.ContinentZH != "" {
		m.Continent = &Continent{Code: a.ContinentCode, Names: namesOf(a.Continent, a.ContinentZH)}
	}
	if a.CountryCode != "" || a.Country != "" || a.CountryZH != "" {
		c := Country{IsInEuropeanUnion: names.InEU(a.CountryCode), ISOCode: a.CountryCode, Names: namesOf(a.Country, a.CountryZH)}
		reg := c
		m.Country, m.RegisteredCountry = &c, &reg
	}
	if s == CountryService {
		return m
	}
	if a.City != "" || a.CityZH != "" {
		m.City = &City{Names: namesOf(a.City, a.CityZH)}
	}
	if a.ProvinceCode != "" || a.Province != "" || a.ProvinceZH != "" {
		m.Subdivisions = []Subdivision{{ISOCode: a.ProvinceCode, Names: namesOf(a.Province, a.ProvinceZH)}}
	}
	if a.Postal != "" {
		m.Postal = &Postal{Code: a.Postal}
	}
	if a.HasLocation || a.TimeZone != "" {
		l := &Location{TimeZone: a.TimeZone}
		if a.HasLocation {
			lat, lon := a.Latitude, a.Longitude
			l.Latitude, l.Longitude = &lat, &lon
			l.AccuracyRadius = uint16(min(a.AccuracyRadius, math.MaxUint16))
		}
		m.Location = l
	}
	if a.ASN != 0 {
		t := &m.Traits
		t.ASN, t.ASOrganization, t.ISP, t.Organization = a.ASN, a.ISP, a.ISP, a.ISP
		m.ASN, m.ASOrganization = a.ASN, a.ISP
	}
	if s == InsightsService {
		t := &m.Traits
		t.IsAnonymousVPN, t.IsHostingProvider, t.IsTorExitNode = a.VPN, a.Hosting, a.Tor
		t.IsAnonymous = privacy.GeoIP2Anonymous(a.VPN, a.Hosting, a.Tor, a.Relay)
		m.Ipatlas = ipatlasOf(a)
	}
	return m
}

// ipatlasOf is a's own keys, nil when it has none.
func ipatlasOf(a *geo.Answer) *Ipatlas {
	own := Ipatlas{Currency: a.Currency, AreaCode: a.AreaCode, LocationSource: a.Source, Confidence: a.Confidence}
	if a.PrivacyKnown {
		own.Privacy = &Privacy{Hosting: a.Hosting, VPN: a.VPN, Relay: a.Relay, Service: a.Service}
		if a.TorKnown {
			tor := a.Tor
			own.Privacy.Tor = &tor
		}
	}
	if a.District != "" || a.DistrictZH != "" {
		own.District = &District{Names: namesOf(a.District, a.DistrictZH)}
	}
	if own == (Ipatlas{}) {
		return nil
	}
	return &own
}
