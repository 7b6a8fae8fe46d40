package ipatlas

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// FieldSet is a selection of a Record's fields, for the optional "fields"
// list of a query or batch body: the answer's record then holds only those
// fields, and "ip" always.
//
// The zero FieldSet selects the default fields: every field but the
// optional ones (hostname, hostname_confirmed), which cost a DNS lookup
// and are sent only when a list names them. A FieldSet is canonical (a set
// of the default fields is the zero value, and "ip" is always in a
// non-zero one), so two equal selections are equal values and a FieldSet
// can key a map.
type FieldSet uint32

// Bits of a FieldSet, in the order of recordKeys (and of Record's fields).
const (
	fieldIP FieldSet = 1 << iota
	fieldContinent
	fieldContinentCode
	fieldCountry
	fieldCountryCode
	fieldProvince
	fieldProvinceCode
	fieldCity
	fieldDistrict
	fieldISP
	fieldASN
	fieldLatitude
	fieldLongitude
	fieldTimeZone
	fieldCurrency
	fieldZipCode
	fieldAreaCode
	fieldRoute
	fieldNetwork
	fieldPrivacy
	fieldLocationSource
	fieldAccuracyRadius
	fieldConfidence
	fieldHostname
	fieldHostnameConfirmed

	allFields      = fieldHostnameConfirmed<<1 - 1
	optionalFields = fieldHostname | fieldHostnameConfirmed
	defaultFields  = allFields &^ optionalFields
)

// recordKeys are the JSON names of Record's fields, in wire order and in
// the bit order of FieldSet.
var recordKeys = []string{
	"ip", "continent", "continent_code", "country", "country_code", "province",
	"province_code", "city", "district", "isp", "asn", "latitude", "longitude", "time_zone",
	"currency", "zip_code", "area_code", "route", "network", "privacy", "location_source",
	"accuracy_radius", "confidence", "hostname", "hostname_confirmed",
}

// RecordFields returns the JSON names of a Record's fields in wire order:
// the names a "fields" list may hold, the optional ones included.
func RecordFields() []string { return slices.Clone(recordKeys) }

// FieldNamed returns the set of the one Record field with this JSON name
// ("city", "time_zone"; exact, lower case), plus "ip". ok is false for any
// other name.
func FieldNamed(name string) (s FieldSet, ok bool) {
	for i, k := range recordKeys {
		if k == name {
			return canonical(fieldIP | 1<<i), true
		}
	}
	return 0, false
}

// ParseFields reads a "fields" list. An empty list selects every field;
// duplicates are harmless. A name that is not a field of Record is an
// *Error with CodeInvalidRequest whose English message names it (cut to
// 32 bytes) and lists the fields.
func ParseFields(names []string) (FieldSet, error) {
	var s FieldSet
	for _, n := range names {
		f, ok := FieldNamed(n)
		if !ok {
			return 0, &Error{Code: CodeInvalidRequest,
				Message: "unknown field " + strconv.Quote(ShortFieldName(n)) + ` in "fields"; the record's fields are ` + strings.Join(recordKeys, ", ")}
		}
		s |= f
	}
	return canonical(s), nil
}

// ShortFieldName is an unknown "fields" entry as error texts quote it: its
// first 32 bytes, and "..." when it is longer.
func ShortFieldName(name string) string {
	if len(name) > 32 {
		return name[:32] + "..."
	}
	return name
}

func canonical(s FieldSet) FieldSet {
	if s == 0 || s|fieldIP == defaultFields {
		return 0
	}
	return s | fieldIP
}

// bits are the selected fields' bits.
func (s FieldSet) bits() FieldSet {
	if s == 0 {
		return defaultFields
	}
	return s
}

// All reports whether s selects the default fields (no "fields" list, or
// one naming every field but the optional ones).
func (s FieldSet) All() bool { return s == 0 }

// Has reports whether s selects the field with this JSON name. The zero
// FieldSet has every field but the optional ones.
func (s FieldSet) Has(name string) bool {
	f, ok := FieldNamed(name)
	return ok && s.bits()&f == f
}

// Names returns the JSON names of the selected fields in wire order.
func (s FieldSet) Names() []string {
	var out []string
	for i, k := range recordKeys {
		if s.bits()&(1<<i) != 0 {
			out = append(out, k)
		}
	}
	return out
}

// String is the comma-separated list of the selected names, in wire
// order; "" when s selects the default fields.
func (s FieldSet) String() string {
	if s == 0 {
		return ""
	}
	return strings.Join(s.Names(), ",")
}

// Apply returns r with every field outside s cleared (empty strings, nil
// pointers).
func (s FieldSet) Apply(r Record) Record {
	if s == 0 {
		r.Hostname, r.HostnameConfirmed = "", nil
		return r
	}
	p := s.Partial(&r)
	out := Record{IP: p.IP, Latitude: p.Latitude, Longitude: p.Longitude, Privacy: p.Privacy}
	if p.AccuracyRadius != nil {
		out.AccuracyRadius = *p.AccuracyRadius
	}
	if p.Route != nil {
		out.Route = *p.Route
	}
	if p.Network != nil {
		out.Network = *p.Network
	}
	if p.HostnameConfirmed != nil {
		out.HostnameConfirmed = *p.HostnameConfirmed
	}
	for _, f := range []struct {
		dst *string
		src *string
	}{
		{&out.Continent, p.Continent}, {&out.ContinentCode, p.ContinentCode}, {&out.Country, p.Country},
		{&out.CountryCode, p.CountryCode}, {&out.Province, p.Province}, {&out.ProvinceCode, p.ProvinceCode}, {&out.City, p.City},
		{&out.District, p.District}, {&out.ISP, p.ISP}, {&out.ASN, p.ASN}, {&out.TimeZone, p.TimeZone},
		{&out.Currency, p.Currency}, {&out.ZipCode, p.ZipCode}, {&out.AreaCode, p.AreaCode},
		{&out.LocationSource, p.LocationSource}, {&out.Confidence, p.Confidence},
		{&out.Hostname, p.Hostname},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return out
}

// PartialRecord is the JSON form of a Record restricted to a FieldSet, as
// the server sends it when a query names "fields": a field outside the set
// is left out of the object, a field inside it is written even when empty
// (the coordinates, their radius and confidence and privacy, as in a full
// record, only when known).
// hostname_confirmed, which no full record has unless asked for, is
// written whenever it is named: true or false, or null when it is unknown
// (no host name, or no forward answer in time).
// Clients decode it into a Record, where the absent fields read as unknown.
type PartialRecord struct {
	IP            string        `json:"ip"`
	Continent     *string       `json:"continent,omitempty"`
	ContinentCode *string       `json:"continent_code,omitempty"`
	Country       *string       `json:"country,omitempty"`
	CountryCode   *string       `json:"country_code,omitempty"`
	Province      *string       `json:"province,omitempty"`
	ProvinceCode  *string       `json:"province_code,omitempty"`
	City          *string       `json:"city,omitempty"`
	District      *string       `json:"district,omitempty"`
	ISP           *string       `json:"isp,omitempty"`
	ASN           *string       `json:"asn,omitempty"`
	Latitude      *float64      `json:"latitude,omitempty"`
	Longitude     *float64      `json:"longitude,omitempty"`
	TimeZone      *string       `json:"time_zone,omitempty"`
	Currency      *string       `json:"currency,omitempty"`
	ZipCode       *string       `json:"zip_code,omitempty"`
	AreaCode      *string       `json:"area_code,omitempty"`
	Route         *netip.Prefix `json:"route,omitempty"`
	Network       *netip.Prefix `json:"network,omitempty"`
	Privacy       *Privacy      `json:"privacy,omitempty"` // absent, as in a full record, when unknown
	// LocationSource is Record.LocationSource.
	LocationSource *string `json:"location_source,omitempty"`
	// AccuracyRadius and Confidence are written, as in a full record,
	// only when the record has coordinates.
	AccuracyRadius *int    `json:"accuracy_radius,omitempty"`
	Confidence     *string `json:"confidence,omitempty"`
	Hostname       *string `json:"hostname,omitempty"`
	// HostnameConfirmed points at the record's when selected: written as
	// null when that is nil (unknown), left out when not selected.
	HostnameConfirmed **bool `json:"hostname_confirmed,omitempty"`
}

// Partial returns r restricted to s, pointing into r (which must outlive
// it). With the zero FieldSet every default field is set.
func (s FieldSet) Partial(r *Record) *PartialRecord {
	s = s.bits()
	p := &PartialRecord{IP: r.IP}
	str := func(bit FieldSet, f *string) *string {
		if s&bit != 0 {
			return f
		}
		return nil
	}
	p.Continent = str(fieldContinent, &r.Continent)
	p.ContinentCode = str(fieldContinentCode, &r.ContinentCode)
	p.Country = str(fieldCountry, &r.Country)
	p.CountryCode = str(fieldCountryCode, &r.CountryCode)
	p.Province = str(fieldProvince, &r.Province)
	p.ProvinceCode = str(fieldProvinceCode, &r.ProvinceCode)
	p.City = str(fieldCity, &r.City)
	p.District = str(fieldDistrict, &r.District)
	p.ISP = str(fieldISP, &r.ISP)
	p.ASN = str(fieldASN, &r.ASN)
	if s&fieldLatitude != 0 {
		p.Latitude = r.Latitude
	}
	if s&fieldLongitude != 0 {
		p.Longitude = r.Longitude
	}
	p.TimeZone = str(fieldTimeZone, &r.TimeZone)
	p.Currency = str(fieldCurrency, &r.Currency)
	p.ZipCode = str(fieldZipCode, &r.ZipCode)
	p.AreaCode = str(fieldAreaCode, &r.AreaCode)
	if s&fieldRoute != 0 {
		p.Route = &r.Route
	}
	if s&fieldNetwork != 0 {
		p.Network = &r.Network
	}
	if s&fieldPrivacy != 0 {
		p.Privacy = r.Privacy
	}
	p.LocationSource = str(fieldLocationSource, &r.LocationSource)
	if s&fieldAccuracyRadius != 0 && r.AccuracyRadius != 0 {
		p.AccuracyRadius = &r.AccuracyRadius
	}
	if s&fieldConfidence != 0 && r.Confidence != "" {
		p.Confidence = &r.Confidence
	}
	p.Hostname = str(fieldHostname, &r.Hostname)
	if s&fieldHostnameConfirmed != 0 {
		p.HostnameConfirmed = &r.HostnameConfirmed
	}
	return p
}

// Text is the record's field named by its JSON key, as text: strings as
// they are, coordinates in the shortest decimal that reads back exactly,
// the route and the network in CIDR form. It is "" for an unset value, an unknown key, and
// privacy, an object that each caller writes its own way.
func (r *Record) Text(key string) string {
	switch key {
	case "ip":
		return r.IP
	case "continent":
		return r.Continent
	case "continent_code":
		return r.ContinentCode
	case "country":
		return r.Country
	case "country_code":
		return r.CountryCode
	case "province":
		return r.Province
	case "province_code":
		return r.ProvinceCode
	case "city":
		return r.City
	case "district":
		return r.District
	case "isp":
		return r.ISP
	case "asn":
		return r.ASN
	case "latitude":
		return coordText(r.Latitude)
	case "longitude":
		return coordText(r.Longitude)
	case "time_zone":
		return r.TimeZone
	case "currency":
		return r.Currency
	case "zip_code":
		return r.ZipCode
	case "area_code":
		return r.AreaCode
	case "location_source":
		return r.LocationSource
	case "accuracy_radius":
		if r.AccuracyRadius != 0 {
			return strconv.Itoa(r.AccuracyRadius)
		}
	case "confidence":
		return r.Confidence
	case "route":
		if r.Route.IsValid() {
			return r.Route.String()
		}
	case "network":
		if r.Network.IsValid() {
			return r.Network.String()
		}
	case "hostname":
		return r.Hostname
	case "hostname_confirmed":
		if r.HostnameConfirmed != nil {
			return strconv.FormatBool(*r.HostnameConfirmed)
		}
	}
	return ""
}

func coordText(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}
