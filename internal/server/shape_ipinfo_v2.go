package server

import (
	"context"
	"net/http"

	"github.com/ipatlas/ipatlas"
)

// ipinfo's current API, beside its legacy one in the same shape: Lite
// (lite/{ip}, lite/me) and Core and Plus (lookup/{ip}, lookup/ and
// lookup/me). Their official clients (NewLiteClient, NewCoreClient and
// NewPlusClient of ipinfo's Go module) move to ipatlas by their BaseURL,
// http://HOST/ipinfo/lite/ or http://HOST/ipinfo/lookup/, and an ipatlas
// key as their token. Keys, metering (each address answered is one
// query, a bogon is free), lang= and the error body are the legacy
// shape's.
//
// ipinfo tells Core from Plus by the token's plan, on one path; ipatlas
// answers both with one form: Core's fields, and of Plus's the ones
// ipatlas has data for (hostname, anonymous, privacy). A boolean ipatlas has no
// source for (is_anycast, is_mobile, is_satellite, is_proxy,
// is_res_proxy) is false: not detected. The objects and values it has no
// data for are left out, never guessed.

// ipinfoProduct is which of ipinfo's current answers a route gives.
type ipinfoProduct int

const (
	ipinfoLiteProduct   ipinfoProduct = iota // lite/{ip}
	ipinfoLookupProduct                      // lookup/{ip}: Core and Plus
)

// ipinfoLite is ipinfo Lite's answer for one address: the country and
// the AS. as_domain is left out: the data has no AS domains.
type ipinfoLite struct {
	IP            string `json:"ip"`
	ASN           string `json:"asn,omitempty"` // "AS15169"
	ASName        string `json:"as_name,omitempty"`
	CountryCode   string `json:"country_code,omitempty"`
	Country       string `json:"country,omitempty"`
	ContinentCode string `json:"continent_code,omitempty"`
	Continent     string `json:"continent,omitempty"`
}

// ipinfoLookup is ipinfo Core's and Plus's answer for one address. The
// five is_ flags are always sent, as ipinfo sends them: is_anonymous and
// is_hosting come from the privacy lists and are false also when the
// server has none loaded (anonymous and privacy are then absent, which
// tells the two apart); the others have no source here.
type ipinfoLookup struct {
	IP          string           `json:"ip"`
	Hostname    string           `json:"hostname,omitempty"` // Plus's: the PTR name
	Geo         *ipinfoGeo       `json:"geo"`
	AS          *ipinfoAS        `json:"as,omitempty"`
	Anonymous   *ipinfoAnonymous `json:"anonymous,omitempty"` // Plus's
	Privacy     *ipinfoPrivacy   `json:"privacy,omitempty"`   // Plus's, as the legacy answer's
	IsAnonymous bool             `json:"is_anonymous"`
	IsAnycast   bool             `json:"is_anycast"`
	IsHosting   bool             `json:"is_hosting"`
	IsMobile    bool             `json:"is_mobile"`
	IsSatellite bool             `json:"is_satellite"`
}

// ipinfoGeo is the geo object of the lookup answer. region_code is the
// region's ISO 3166-2 code without the country's part ("CA" for
// California), as ipinfo spells it, and left out when the data has none;
// Plus's dma_code, geoname_id, radius and last_changed are left out (no
// source); latitude and longitude are left out when the location is
// unknown, never 0.
type ipinfoGeo struct {
	City          string   `json:"city,omitempty"`
	Region        string   `json:"region,omitempty"`
	RegionCode    string   `json:"region_code,omitempty"`
	Country       string   `json:"country,omitempty"`
	CountryCode   string   `json:"country_code,omitempty"`
	Continent     string   `json:"continent,omitempty"`
	ContinentCode string   `json:"continent_code,omitempty"`
	Latitude      *float64 `json:"latitude,omitempty"`
	Longitude     *float64 `json:"longitude,omitempty"`
	Timezone      string   `json:"timezone,omitempty"`
	PostalCode    string   `json:"postal_code,omitempty"`
}

// ipinfoAS is the as object of the lookup answer. ipinfo's domain and
// type are left out (no source); route, the announced prefix holding the
// address, is ipatlas's addition, as in the legacy asn object.
type ipinfoAS struct {
	ASN   string `json:"asn"`
	Name  string `json:"name"`
	Route string `json:"route,omitempty"`
}

// ipinfoAnonymous is Plus's anonymous object, from the privacy lists.
// is_proxy and is_res_proxy have no list behind them: false, not
// detected. is_tor is left out while the Tor exit list is unknown; name
// is the VPN's or relay's service as its list names it.
type ipinfoAnonymous struct {
	IsProxy    bool   `json:"is_proxy"`
	IsRelay    bool   `json:"is_relay"`
	IsTor      *bool  `json:"is_tor,omitempty"`
	IsVPN      bool   `json:"is_vpn"`
	IsResProxy bool   `json:"is_res_proxy"`
	Name       string `json:"name,omitempty"`
}

// toIPInfoLite is a record in Lite's shape.
func toIPInfoLite(rec *ipatlas.Record) *ipinfoLite {
	return &ipinfoLite{IP: rec.IP, ASN: rec.ASN, ASName: rec.ISP, CountryCode: rec.CountryCode, Country: rec.Country,
		ContinentCode: rec.ContinentCode, Continent: rec.Continent}
}

// toIPInfoLookup is a record in Core's and Plus's shape.
func toIPInfoLookup(rec *ipatlas.Record) *ipinfoLookup {
	l := &ipinfoLookup{IP: rec.IP, Hostname: rec.Hostname, Geo: &ipinfoGeo{City: rec.City, Region: rec.Province, RegionCode: rec.ProvinceCode,
		Country: rec.Country, CountryCode: rec.CountryCode, Continent: rec.Continent, ContinentCode: rec.ContinentCode,
		Timezone: rec.TimeZone, PostalCode: rec.ZipCode}}
	if rec.Latitude != nil && rec.Longitude != nil {
		l.Geo.Latitude, l.Geo.Longitude = rec.Latitude, rec.Longitude
	}
	if rec.ASN != "" {
		l.AS = &ipinfoAS{ASN: rec.ASN, Name: rec.ISP}
		if rec.Route.IsValid() {
			l.AS.Route = rec.Route.String()
		}
	}
	if p := rec.Privacy; p != nil {
		tor := p.Tor != nil && *p.Tor
		l.IsAnonymous = p.VPN || p.Relay || tor
		l.IsHosting = p.Hosting
		l.Anonymous = &ipinfoAnonymous{IsRelay: p.Relay, IsTor: p.Tor, IsVPN: p.VPN}
		if p.VPN || p.Relay {
			l.Anonymous.Name = p.Service
		}
		l.Privacy = &ipinfoPrivacy{VPN: p.VPN, Tor: p.Tor, Relay: p.Relay, Hosting: p.Hosting, Service: p.Service}
	}
	return l
}

// ipinfoProductResolver answers an address in a product's form. A
// private or reserved address is ipinfo's bogon answer, free, in every
// product. The lookup answer has the host name, as Plus's has.
func (s *api) ipinfoProductResolver(ctx context.Context, q *ipinfoQuery, p ipinfoProduct) resolver {
	return func(_ int, it item) resolved {
		switch {
		case it.fail != nil && it.fail.code == ipatlas.CodePrivateIP:
			return resolved{v: &ipinfoCore{IP: it.addr.String(), Bogon: true}, free: true}
		case it.fail != nil:
			return failed(it)
		}
		rec, f := s.lookupRecord(ctx, &it, q.lang)
		if f != nil {
			return resolved{fail: f}
		}
		if p == ipinfoLiteProduct {
			return resolved{v: toIPInfoLite(rec)}
		}
		s.fillHostname(ctx, &it, rec, false)
		return resolved{v: toIPInfoLookup(rec)}
	}
}

// handleIPInfoLite is GET /ipinfo/lite/{ip}.
func (s *api) handleIPInfoLite(w *exchange, r *http.Request, cr credential) error {
	return s.ipinfoProductOne(w, r, cr, ipinfoLiteProduct, r.PathValue("ip"))
}

// handleIPInfoLiteSelf is GET /ipinfo/lite/me: the caller's own address.
func (s *api) handleIPInfoLiteSelf(w *exchange, r *http.Request, cr credential) error {
	return s.ipinfoProductSelf(w, r, cr, ipinfoLiteProduct)
}

// handleIPInfoLookup is GET /ipinfo/lookup/{ip}.
func (s *api) handleIPInfoLookup(w *exchange, r *http.Request, cr credential) error {
	return s.ipinfoProductOne(w, r, cr, ipinfoLookupProduct, r.PathValue("ip"))
}

// handleIPInfoLookupSelf is GET /ipinfo/lookup/ (what the Core and Plus
// clients ask for the caller's own address) and /ipinfo/lookup/me.
func (s *api) handleIPInfoLookupSelf(w *exchange, r *http.Request, cr credential) error {
	return s.ipinfoProductSelf(w, r, cr, ipinfoLookupProduct)
}

func (s *api) ipinfoProductSelf(w *exchange, r *http.Request, cr credential, p ipinfoProduct) error {
	if !w.client.IsValid() {
		return s.noAddress(r)
	}
	return s.ipinfoProductOne(w, r, cr, p, w.client.String())
}

// ipinfoProductOne answers one address in a product's form, charged as
// one location query. Only an address is an item here: an AS is the
// legacy path's (/ipinfo/AS15169).
func (s *api) ipinfoProductOne(w *exchange, r *http.Request, cr credential, p ipinfoProduct, raw string) error {
	q, f := ipinfoParams(w, r)
	it := pathItem(raw, q.lang)
	it.host = p == ipinfoLookupProduct
	res, _, err := s.one(w, r, cr, f, q.lang, it, s.ipinfoProductResolver(r.Context(), &q, p))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res.v)
	return nil
}
