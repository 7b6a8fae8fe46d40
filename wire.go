// Package ipatlas holds the public wire format of the ipatlas IP information
// service (the location record, the response envelope, the Get-my-IP, ping and
// usage bodies, the error codes with their HTTP statuses and *Error).
//
// The server builds its responses from these types and the Go client
// (package github.com/ipatlas/ipatlas/client) decodes them with the same
// types, so the two cannot drift apart.
package ipatlas

import (
	"net/netip"
	"strings"
	"time"
)

// Record is the location of one IP address: the "data" object of a
// successful location query.
//
// String fields are empty when the data has no value for them. Latitude and
// Longitude are nil when the location is unknown: 0,0 is a real place in the
// Gulf of Guinea and never stands for "unknown".
type Record struct {
	IP            string `json:"ip"`
	Continent     string `json:"continent"`
	ContinentCode string `json:"continent_code"`
	Country       string `json:"country"`
	CountryCode   string `json:"country_code"`
	Province      string `json:"province"`
	// ProvinceCode is the province's ISO 3166-2 code without the
	// country's part, which CountryCode holds: "QC" for Quebec (CA-QC),
	// "CA" for California (US-CA). Empty when unknown or when the
	// province has no code.
	ProvinceCode string   `json:"province_code"`
	City         string   `json:"city"`
	District     string   `json:"district"`
	ISP          string   `json:"isp"`
	ASN          string   `json:"asn"`
	Latitude     *float64 `json:"latitude,omitempty"`
	Longitude    *float64 `json:"longitude,omitempty"`
	TimeZone     string   `json:"time_zone"`
	Currency     string   `json:"currency"`
	ZipCode      string   `json:"zip_code"`
	AreaCode     string   `json:"area_code"`
	// Route is the announced prefix that holds the address, as the ASN
	// data records it ("8.8.8.0/24"); the zero Prefix, sent as "", when
	// the data has none.
	Route netip.Prefix `json:"route"`
	// Network is the largest network that holds the address and over
	// which the whole record is the same, the address aside: every field,
	// in both languages, the privacy flags and the location source
	// ("8.8.8.0/24", "::ffff:8.8.8.0/120" for an address queried in that
	// form); the zero Prefix, sent as "", when unknown.
	Network netip.Prefix `json:"network"`
	// Privacy says what kind of network the address belongs to. It is nil
	// (absent) when the service has no privacy data loaded: the flags are
	// then unknown, not false.
	Privacy *Privacy `json:"privacy,omitempty"`
	// LocationSource says where the location fields (continent to
	// district, coordinates, time zone, currency, postal and area codes)
	// come from: "dataset", "override" (the operator's corrections file),
	// or "geofeed:" and the name of an operator's published feed
	// ("geofeed:netflix"); "" when the record has no location.
	LocationSource string `json:"location_source"`
	// AccuracyRadius is how far from the coordinates, in km, the address
	// may be: the truth lay within it for about 85% of the answers of its
	// kind on ground truth (docs/accuracy.md). 0, and absent, when the
	// record has no coordinates.
	AccuracyRadius int `json:"accuracy_radius,omitempty"`
	// Confidence is how good the location is, in three levels of the
	// radius: "high", "medium" or "low" (see the Confidence* constants);
	// "", and absent, when the record has no coordinates.
	Confidence string `json:"confidence,omitempty"`
	// Hostname is the address's host name, from its PTR record. It costs
	// a DNS lookup, so a record holds it only when a query names it in
	// "fields" (see FieldSet); it is then "" when the address has no
	// usable name or the lookup had no answer in time.
	Hostname string `json:"hostname,omitempty"`
	// HostnameConfirmed is whether Hostname resolves back to the address
	// (forward-confirmed reverse DNS: a PTR name that does not is only a
	// claim). It is nil when unknown: no hostname, not asked for, or the
	// forward lookup had no answer in time; a query that names it in
	// "fields" gets it even then, as null (see PartialRecord).
	HostnameConfirmed *bool `json:"hostname_confirmed,omitempty"`
}

// Privacy is what kind of network an address belongs to, from public
// lists. A flag is true only when a named list holds the address, so false
// means "on none of the lists", not "proven otherwise".
type Privacy struct {
	Hosting bool `json:"hosting"` // a datacenter, cloud or hosting network
	VPN     bool `json:"vpn"`     // a known VPN service's exit
	// Tor is whether the address is a Tor exit relay. Exits change every
	// hour, so Tor is nil (absent) when the service's copy of the exit
	// list is missing or too old to tell.
	Tor     *bool  `json:"tor,omitempty"`
	Relay   bool   `json:"relay"`   // an anonymising relay such as iCloud Private Relay
	Service string `json:"service"` // the provider a list names ("Amazon AWS", "iCloud Private Relay"), as the list spells it in every language
}

// The levels of Record.Confidence.
const (
	ConfidenceHigh   = "high"
	ConfidenceMedium = "medium"
	ConfidenceLow    = "low"
)

// QueryRequest is the body of POST /api/ip-query.
type QueryRequest struct {
	IP   string `json:"ip"`
	Lang string `json:"lang,omitempty"`
	// Fields, when not empty, asks for only these fields of the record
	// (JSON names, see RecordFields); "ip" is always sent. See FieldSet.
	Fields []string `json:"fields,omitempty"`
}

// Meta describes the caller and its credit balance. It is present in every
// location query response, successful or not.
type Meta struct {
	IsLoggedIn     bool  `json:"isLoggedIn"`
	IsAPIRequest   bool  `json:"isApiRequest"`
	CurrentCredits int64 `json:"currentCredits"`
}

// Envelope is the body of every location query response.
type Envelope struct {
	Success bool      `json:"success"`
	Data    *Record   `json:"data,omitempty"`
	Error   string    `json:"error,omitempty"`
	Code    ErrorCode `json:"code,omitempty"`
	Meta    Meta      `json:"meta"`
}

// MyIPResponse is the body of GET /api/ip/myip, the auto-detection endpoint.
type MyIPResponse struct {
	Result    bool   `json:"result"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	IP        string `json:"IP"`
	IPVersion string `json:"IPVersion"`
}

// Values of MyIPResponse fields on success.
const (
	MyIPCodeSuccess    = "querySuccess"
	MyIPMessageSuccess = "Query Success"
	IPv4               = "IPv4"
	IPv6               = "IPv6"
)

// PingResponse is the body of GET /api/ping. Time is the server's clock when
// it answered, in RFC 3339 with nanoseconds, so a client can measure the
// round trip and the clock offset.
type PingResponse struct {
	Code    string `json:"code"` // always "pong"
	Time    string `json:"time"`
	IP      string `json:"ip"`
	Version string `json:"version"`
}

// PingCode is the code of every ping answer.
const PingCode = "pong"

// Usage is the body of GET /api/usage: the calling key's quota for the
// current month and its account's credits.
type Usage struct {
	AccountID int64     `json:"account_id"`
	KeyID     string    `json:"key_id"`
	Tier      string    `json:"tier"`
	Period    string    `json:"period"` // calendar month in UTC, "2026-11"
	Used      int64     `json:"used"`
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"` // start of the next month, UTC
	Credits   int64     `json:"credits"`
	QueryCost int64     `json:"query_cost"`
}

// Lang is the language of a location record's text values and error texts.
type Lang uint8

// The two languages the service speaks.
const (
	English Lang = iota
	Chinese
)

// ParseLang reads a request's lang value. The empty string is English;
// "zh", "zh-CN", "zh-Hans" (any case, "_" or "-") are Chinese. Anything
// else is rejected.
func ParseLang(s string) (Lang, bool) {
	switch strings.ToLower(strings.ReplaceAll(s, "_", "-")) {
	case "", "en", "en-us", "en-gb":
		return English, true
	case "zh", "zh-cn", "zh-hans", "zh-hans-cn", "zh-sg":
		return Chinese, true
	}
	return English, false
}

// String returns the wire name of the language: "en" or "zh".
func (l Lang) String() string {
	if l == Chinese {
		return "zh"
	}
	return "en"
}
