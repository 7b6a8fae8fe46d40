package geo

import (
	"errors"
	"net/netip"

	"github.com/ipatlas/ipatlas"
)

// Answer is the engine's answer for an address in both languages at
// once, with the AS as its number: what the GeoIP2 model (package geoip2)
// and the export read, from one lookup. It holds what the addresses of a
// network share, not the address itself nor its route, so it is
// comparable: the export merges neighbouring networks with equal answers.
//
// Each name is in English (Continent) and in Chinese (ContinentZH, the
// English name where the data has no Chinese one), as the records in the
// two languages have it.
type Answer struct {
	ContinentCode, Continent, ContinentZH string
	CountryCode, Country, CountryZH       string
	ProvinceCode, Province, ProvinceZH    string
	City, CityZH                          string
	District, DistrictZH                  string
	Postal, TimeZone, Currency, AreaCode  string
	Latitude, Longitude                   float64
	HasLocation                           bool

	ASN uint32 // 0 when no AS announces the network
	ISP string

	// PrivacyKnown is false when no privacy list is loaded: the flags are
	// then unknown. TorKnown is false while the Tor exit list is missing
	// or too old.
	PrivacyKnown             bool
	Hosting, VPN, Relay, Tor bool
	TorKnown                 bool
	Service                  string

	Source string // Record.LocationSource

	// AccuracyRadius and Confidence are Record's: 0 and "" without a
	// location.
	AccuracyRadius int
	Confidence     string
}

// Empty reports whether a has nothing to say: no place (no continent,
// country, province, city, postal code, coordinates or time zone), no AS
// and no privacy flag raised. That is an address the data does not cover:
// MaxMind's web services answer it with IP_ADDRESS_NOT_FOUND, and an
// export leaves it out, as an MMDB leaves out what it knows nothing about.
// What only ipatlas's own fields hold (a district, where the location
// comes from, a privacy list's service name with no flag) is not enough.
func (a *Answer) Empty() bool {
	return a.ContinentCode == "" && a.Continent == "" && a.ContinentZH == "" &&
		a.CountryCode == "" && a.Country == "" && a.CountryZH == "" &&
		a.ProvinceCode == "" && a.Province == "" && a.ProvinceZH == "" &&
		a.City == "" && a.CityZH == "" && a.Postal == "" && !a.HasLocation && a.TimeZone == "" &&
		a.ASN == 0 && !a.Hosting && !a.VPN && !a.Relay && !a.Tor
}

// AnswerOf is the answer that the records en and zh, the engine's records
// of one address in English and Chinese, make. Engine.Answer is the same
// from one lookup (a test holds the two together).
func AnswerOf(en, zh ipatlas.Record) Answer {
	a := Answer{
		ContinentCode: en.ContinentCode, Continent: en.Continent, ContinentZH: zh.Continent,
		CountryCode: en.CountryCode, Country: en.Country, CountryZH: zh.Country,
		ProvinceCode: en.ProvinceCode, Province: en.Province, ProvinceZH: zh.Province,
		City: en.City, CityZH: zh.City, District: en.District, DistrictZH: zh.District,
		Postal: en.ZipCode, TimeZone: en.TimeZone, Currency: en.Currency, AreaCode: en.AreaCode,
		ISP: en.ISP, Source: en.LocationSource, AccuracyRadius: en.AccuracyRadius, Confidence: en.Confidence,
	}
	if en.Latitude != nil && en.Longitude != nil {
		a.Latitude, a.Longitude, a.HasLocation = *en.Latitude, *en.Longitude, true
	}
	if n, err := ipatlas.ParseAS(en.ASN); err == nil && en.ASN != "" {
		a.ASN = n
	}
	if p := en.Privacy; p != nil {
		a.PrivacyKnown, a.Hosting, a.VPN, a.Relay, a.Service = true, p.Hosting, p.VPN, p.Relay, p.Service
		if p.Tor != nil {
			a.TorKnown, a.Tor = true, *p.Tor
		}
	}
	return a
}

// AnswerLocator is a Locator that answers both languages in one lookup.
type AnswerLocator interface {
	Locator
	Answer(addr netip.Addr) (Answer, error)
}

var _ AnswerLocator = (*Engine)(nil)

// LookupAnswerNetwork is LookupAnswer with the network of the answer
// (Engine.AnswerNetwork); from a Locator that is not the engine, the
// network of its English record.
func LookupAnswerNetwork(loc Locator, addr netip.Addr) (Answer, netip.Prefix, error) {
	if nl, ok := loc.(interface {
		AnswerNetwork(netip.Addr) (Answer, netip.Prefix, error)
	}); ok {
		return nl.AnswerNetwork(addr)
	}
	en, err := loc.Lookup(addr, ipatlas.English)
	if err != nil {
		return Answer{}, netip.Prefix{}, err
	}
	zh, err := loc.Lookup(addr, ipatlas.Chinese)
	if err != nil {
		return Answer{}, netip.Prefix{}, err
	}
	return AnswerOf(en, zh), en.Network, nil
}

// LookupAnswer is loc's answer for addr in both languages: one lookup
// when loc is an AnswerLocator (the engine), else its records in English
// and Chinese.
func LookupAnswer(loc Locator, addr netip.Addr) (Answer, error) {
	if al, ok := loc.(AnswerLocator); ok {
		return al.Answer(addr)
	}
	en, err := loc.Lookup(addr, ipatlas.English)
	if err != nil {
		return Answer{}, err
	}
	zh, err := loc.Lookup(addr, ipatlas.Chinese)
	if err != nil {
		return Answer{}, err
	}
	return AnswerOf(en, zh), nil
}

// Answer implements AnswerLocator: addr's answer in both languages, from
// the same parts as Lookup. Its errors are Lookup's.
func (e *Engine) Answer(addr netip.Addr) (Answer, error) {
	if !addr.IsValid() {
		return Answer{}, errors.New("geo: invalid address")
	}
	g := e.acquire()
	if g == nil {
		return Answer{}, ErrClosed
	}
	defer g.release()
	a, _, err := e.answer(g, addr.WithZone(""))
	return a, err
}

// AnswerNetwork is Answer with the network of addr's answer: the network
// of its records (ipatlas.Record.Network), within which every address has
// the same answer.
func (e *Engine) AnswerNetwork(addr netip.Addr) (Answer, netip.Prefix, error) {
	if !addr.IsValid() {
		return Answer{}, netip.Prefix{}, errors.New("geo: invalid address")
	}
	g := e.acquire()
	if g == nil {
		return Answer{}, netip.Prefix{}, ErrClosed
	}
	defer g.release()
	return e.answer(g, addr.WithZone(""))
}

func (e *Engine) answer(g *generation, addr netip.Addr) (Answer, netip.Prefix, error) {
	ps, err := e.parts(g, addr)
	if err != nil {
		return Answer{}, netip.Prefix{}, err
	}
	a := Answer{Source: ps.source}
	if ps.city != nil {
		ps.city.answer(&a)
	}
	a.AccuracyRadius, a.Confidence = accuracyOf(ps.city, ps.source)
	if ps.as != nil {
		a.ASN, a.ISP = ps.as.number, ps.as.isp
	}
	bits := ps.bits
	if pt := e.priv.Load(); pt != nil {
		p, tor, known, pbits := e.privacyOf(pt, ps.key, a.ASN)
		a.PrivacyKnown, a.Hosting, a.VPN, a.Relay, a.Service = true, p.Hosting, p.VPN, p.Relay, p.Service
		a.TorKnown, a.Tor = known, known && tor
		bits = max(bits, pbits)
	}
	return a, networkOf(addr, ps.key, bits), nil
}

// answer copies the city part into a, in both languages.
func (c *cityData) answer(a *Answer) {
	if k := c.country; k != nil {
		en, zh := &k.names[ipatlas.English], &k.names[ipatlas.Chinese]
		a.Continent, a.ContinentZH, a.Country, a.CountryZH = en.continent, zh.continent, en.country, zh.country
		a.ContinentCode, a.CountryCode, a.Currency = k.continentCode, k.countryCode, k.currency
	}
	en, zh := &c.text[ipatlas.English], &c.text[ipatlas.Chinese]
	a.Province, a.ProvinceZH, a.City, a.CityZH, a.District, a.DistrictZH = en.province, zh.province, en.city, zh.city, en.district, zh.district
	a.ProvinceCode, a.TimeZone, a.Postal, a.AreaCode = c.provinceCode, c.timeZone, c.zip, c.areaCode
	if c.hasCoords {
		a.Latitude, a.Longitude, a.HasLocation = c.coords[0], c.coords[1], true
	}
}
