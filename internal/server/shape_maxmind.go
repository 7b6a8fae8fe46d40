package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// The MaxMind shape, under /geoip/v2.1/: the request and answer forms of
// MaxMind's GeoIP2 web services (Country, City and Insights), so that
// MaxMind's official clients move to ipatlas by their host setting alone.
// Those clients speak only HTTPS: serve ipatlas with --tls-cert and
// --tls-key, or behind a proxy that ends TLS.
//
// Authentication is HTTP Basic, as the clients send it: the account ID
// is the ID of the key's ipatlas account, the licence key is the ipatlas
// key (authMaxMind). Metering is the location query's: each address
// answered is one query; a failure costs nothing.
//
// The answers are ipatlas's records in MaxMind's model:
//
//   - names maps hold "en" and "zh-CN": the record in English and in
//     Chinese (which is the English name where the data has no Chinese
//     one); geoname_id and confidence are left out (no source);
//   - registered_country is the country: ipatlas has no separate data on
//     where a network is registered;
//   - subdivisions has one entry, the record's province, its iso_code the
//     ISO 3166-2 part after the country's;
//   - location.accuracy_radius is a class, not a measurement: 50 km for a
//     location that names a city, 1000 km for one that does not (a
//     region's or a country's point);
//   - traits: the AS's number and name (its name also as isp and
//     organization, the data having no other ISP names), never network
//     (the data does not say which networks share an answer); in
//     Insights the anonymizer and hosting flags, from the privacy lists,
//     sent when true as MaxMind sends them: a flag that is absent is
//     "not detected", and is_public_proxy and is_residential_proxy have
//     no list behind them;
//   - maxmind.queries_remaining is how many more queries the key can pay
//     for now: the fewer of its quota left this month and its account's
//     credits.
//
// docs/migrating.md lists the differences.

// maxmindProduct is which of MaxMind's web services a route answers.
type maxmindProduct int

const (
	maxmindCountryService maxmindProduct = iota
	maxmindCityService
	maxmindInsightsService
)

// maxmindPrefix is the shape's paths' prefix.
const maxmindPrefix = "/geoip/v2.1/"

// maxmindNames is a names map: English, and Chinese where the record has
// a name.
type maxmindNames struct {
	EN string `json:"en,omitempty"`
	ZH string `json:"zh-CN,omitempty"`
}

type maxmindContinent struct {
	Code  string       `json:"code,omitempty"`
	Names maxmindNames `json:"names"`
}

type maxmindCountry struct {
	IsInEuropeanUnion bool         `json:"is_in_european_union,omitempty"`
	ISOCode           string       `json:"iso_code,omitempty"`
	Names             maxmindNames `json:"names"`
}

type maxmindSubdivision struct {
	ISOCode string       `json:"iso_code,omitempty"`
	Names   maxmindNames `json:"names"`
}

type maxmindCityNames struct {
	Names maxmindNames `json:"names"`
}

type maxmindPostal struct {
	Code string `json:"code"`
}

type maxmindLocation struct {
	AccuracyRadius int      `json:"accuracy_radius,omitempty"`
	Latitude       *float64 `json:"latitude,omitempty"`
	Longitude      *float64 `json:"longitude,omitempty"`
	TimeZone       string   `json:"time_zone,omitempty"`
}

type maxmindTraits struct {
	ASN                uint32 `json:"autonomous_system_number,omitempty"`
	ASOrganization     string `json:"autonomous_system_organization,omitempty"`
	ISP                string `json:"isp,omitempty"`
	Organization       string `json:"organization,omitempty"`
	IPAddress          string `json:"ip_address"`
	IsAnonymous        bool   `json:"is_anonymous,omitempty"`
	IsAnonymousVPN     bool   `json:"is_anonymous_vpn,omitempty"`
	IsHostingProvider  bool   `json:"is_hosting_provider,omitempty"`
	IsPublicProxy      bool   `json:"is_public_proxy,omitempty"`
	IsResidentialProxy bool   `json:"is_residential_proxy,omitempty"`
	IsTorExitNode      bool   `json:"is_tor_exit_node,omitempty"`
}

type maxmindAccount struct {
	QueriesRemaining int64 `json:"queries_remaining"`
}

// maxmindAnswer is the answer of the three services: Country has the
// continent, the countries and the traits' address; City and Insights add
// the rest.
type maxmindAnswer struct {
	City              *maxmindCityNames    `json:"city,omitempty"`
	Continent         *maxmindContinent    `json:"continent,omitempty"`
	Country           *maxmindCountry      `json:"country,omitempty"`
	Location          *maxmindLocation     `json:"location,omitempty"`
	MaxMind           maxmindAccount       `json:"maxmind"`
	Postal            *maxmindPostal       `json:"postal,omitempty"`
	RegisteredCountry *maxmindCountry      `json:"registered_country,omitempty"`
	Subdivisions      []maxmindSubdivision `json:"subdivisions,omitempty"`
	Traits            maxmindTraits        `json:"traits"`
}

// Accuracy radii, in kilometres: a class of the location, not a measured
// radius.
const (
	maxmindCityRadius   = 50
	maxmindCoarseRadius = 1000
)

// namesOf is a names map of an English and a Chinese name.
func namesOf(en, zh string) maxmindNames {
	if en == "" {
		return maxmindNames{ZH: zh}
	}
	return maxmindNames{EN: en, ZH: zh}
}

// toMaxMind is an address's records, in English and Chinese, in a
// service's form.
func toMaxMind(en, zh *ipatlas.Record, p maxmindProduct) *maxmindAnswer {
	a := &maxmindAnswer{Traits: maxmindTraits{IPAddress: en.IP}}
	if en.ContinentCode != "" || en.Continent != "" {
		a.Continent = &maxmindContinent{Code: en.ContinentCode, Names: namesOf(en.Continent, zh.Continent)}
	}
	if en.CountryCode != "" || en.Country != "" {
		c := &maxmindCountry{IsInEuropeanUnion: euMembers[en.CountryCode], ISOCode: en.CountryCode, Names: namesOf(en.Country, zh.Country)}
		// ipatlas has no separate data on where a network is registered.
		reg := *c
		a.Country, a.RegisteredCountry = c, &reg
	}
	if p == maxmindCountryService {
		return a
	}
	if en.City != "" || zh.City != "" {
		a.City = &maxmindCityNames{Names: namesOf(en.City, zh.City)}
	}
	if en.Province != "" || zh.Province != "" {
		a.Subdivisions = []maxmindSubdivision{{ISOCode: en.ProvinceCode, Names: namesOf(en.Province, zh.Province)}}
	}
	if en.ZipCode != "" {
		a.Postal = &maxmindPostal{Code: en.ZipCode}
	}
	if en.Latitude != nil && en.Longitude != nil || en.TimeZone != "" {
		l := &maxmindLocation{TimeZone: en.TimeZone}
		if en.Latitude != nil && en.Longitude != nil {
			l.Latitude, l.Longitude = en.Latitude, en.Longitude
			l.AccuracyRadius = maxmindCoarseRadius
			if en.City != "" {
				l.AccuracyRadius = maxmindCityRadius
			}
		}
		a.Location = l
	}
	if n, err := ipatlas.ParseAS(en.ASN); err == nil && en.ASN != "" {
		a.Traits.ASN = n
		a.Traits.ASOrganization, a.Traits.ISP, a.Traits.Organization = en.ISP, en.ISP, en.ISP
	}
	if p == maxmindInsightsService && en.Privacy != nil {
		pr := en.Privacy
		tor := pr.Tor != nil && *pr.Tor
		t := &a.Traits
		t.IsAnonymousVPN, t.IsHostingProvider, t.IsTorExitNode = pr.VPN, pr.Hosting, tor
		t.IsAnonymous = privacy.GeoIP2Anonymous(pr.VPN, pr.Hosting, tor, pr.Relay)
	}
	return a
}

// known reports whether a record holds anything looked up (a privacy
// list's flag counts): MaxMind answers an address its data does not cover
// with IP_ADDRESS_NOT_FOUND.
func known(rec *ipatlas.Record) bool {
	if p := rec.Privacy; p != nil && (p.VPN || p.Hosting || p.Relay || p.Tor != nil && *p.Tor) {
		return true
	}
	return rec.CountryCode != "" || rec.ContinentCode != "" || rec.ASN != "" || rec.Latitude != nil ||
		rec.City != "" || rec.Province != ""
}

// maxmindResolver answers an address in a service's form, from its
// records in English and in Chinese (one query).
func (s *api) maxmindResolver(ctx context.Context, p maxmindProduct) resolver {
	return func(_ int, it item) resolved {
		if it.fail != nil {
			return failed(it)
		}
		en, f := s.lookupRecord(ctx, &it, ipatlas.English)
		if f != nil {
			return resolved{fail: f}
		}
		if !known(en) {
			return resolved{fail: &failure{code: ipatlas.CodeNotFound, sub: maxmindNotFound,
				en: "the data has no record of " + it.addr.String(), zh: "数据中没有 " + it.addr.String() + " 的记录"}}
		}
		zh, f := s.lookupRecord(ctx, &it, ipatlas.Chinese)
		if f != nil {
			return resolved{fail: f}
		}
		return resolved{v: toMaxMind(en, zh, p)}
	}
}

// maxmind is GET /geoip/v2.1/{service}/{ip}.
func (s *api) maxmind(p maxmindProduct) keyedHandler {
	return func(w *exchange, r *http.Request, cr credential) error {
		return s.maxmindOne(w, r, cr, p, r.PathValue("ip"))
	}
}

// maxmindSelf is GET /geoip/v2.1/{service}/me: the caller's own address.
func (s *api) maxmindSelf(p maxmindProduct) keyedHandler {
	return func(w *exchange, r *http.Request, cr credential) error {
		if !w.client.IsValid() {
			return s.noAddress(r)
		}
		return s.maxmindOne(w, r, cr, p, w.client.String())
	}
}

// maxmindRequired is GET /geoip/v2.1/{service}/: no address.
func (s *api) maxmindRequired(w *exchange, r *http.Request, cr credential) error {
	detail := "name an address, or me for your own: " + maxmindPrefix + "city/8.8.8.8"
	if w.langOf(r) == ipatlas.Chinese {
		detail = "请给出地址，或以 me 表示本机地址：" + maxmindPrefix + "city/8.8.8.8"
	}
	_, err := s.admit(w, r, cr, &failure{code: ipatlas.CodeInvalidIP, sub: maxmindAddressRequired, en: detail, meta: apiMeta})
	return err
}

// maxmindOne answers one address in a service's form, charged as one
// location query.
func (s *api) maxmindOne(w *exchange, r *http.Request, cr credential, p maxmindProduct, raw string) error {
	c, err := s.admit(w, r, cr, nil)
	if err != nil {
		return err
	}
	lang := w.langOf(r)
	res, meta, err := s.one(w, r, c, lang, pathItem(raw, lang), s.maxmindResolver(r.Context(), p))
	if err != nil {
		return err
	}
	a := res.v.(*maxmindAnswer)
	a.MaxMind.QueriesRemaining = s.queriesRemaining(w, meta)
	writeJSON(w, http.StatusOK, a)
	return nil
}

// queriesRemaining is how many more queries the caller can pay for after
// this answer: the fewer of the quota left, as the answer's quota
// headers say it, and the queries the account's credits pay for.
func (s *api) queriesRemaining(w *exchange, meta ipatlas.Meta) int64 {
	v := w.Header()["Ratelimit-Remaining"]
	if len(v) == 0 {
		return 0
	}
	left, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil {
		return 0
	}
	if cost := s.deps.Meter.Cost(); cost > 0 {
		left = min(left, max(0, meta.CurrentCredits)/cost)
	}
	return left
}

// MaxMind's error codes (its web services' documentation, and its
// clients, which map them to their exception types).
const (
	maxmindAddressInvalid  = "IP_ADDRESS_INVALID"
	maxmindAddressRequired = "IP_ADDRESS_REQUIRED"
	maxmindAddressReserved = "IP_ADDRESS_RESERVED" // the clients' AddressNotFoundError
	maxmindNotFound        = "IP_ADDRESS_NOT_FOUND"
	maxmindAuthInvalid     = "AUTHORIZATION_INVALID"
	maxmindLicenseRequired = "LICENSE_KEY_REQUIRED"
	maxmindAccountRequired = "ACCOUNT_ID_REQUIRED"
	maxmindFunds           = "INSUFFICIENT_FUNDS"
	maxmindOutOfQueries    = "OUT_OF_QUERIES"
)

// maxmindAuthError is a MaxMind credential refused, with MaxMind's code;
// underneath it is errNoKey (a credential incomplete or malformed, no key
// looked up) or account.ErrBadKey (a key not accepted, or not with the
// account ID given).
type maxmindAuthError struct {
	code string
	err  error
}

func (e *maxmindAuthError) Error() string { return e.code }
func (e *maxmindAuthError) Unwrap() error { return e.err }

// maxmindCredentials reads MaxMind's HTTP Basic credentials: the account
// ID as the user name, a decimal number, and the licence key as the
// password.
func maxmindCredentials(r *http.Request) (key string, accountID int64, err error) {
	user, pass, ok := r.BasicAuth()
	switch {
	case !ok && r.Header.Get("Authorization") != "":
		return "", 0, &maxmindAuthError{code: maxmindAuthInvalid, err: errNoKey}
	case !ok || strings.TrimSpace(user) == "":
		return "", 0, &maxmindAuthError{code: maxmindAccountRequired, err: errNoKey}
	case strings.TrimSpace(pass) == "":
		return "", 0, &maxmindAuthError{code: maxmindLicenseRequired, err: errNoKey}
	}
	id, perr := strconv.ParseInt(strings.TrimSpace(user), 10, 64)
	if perr != nil || id <= 0 {
		return "", 0, &maxmindAuthError{code: maxmindAuthInvalid, err: errNoKey}
	}
	return strings.TrimSpace(pass), id, nil
}

// maxmindError is MaxMind's error body.
type maxmindError struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// maxmindCodeOf is a failure's MaxMind code and HTTP status. The failures
// MaxMind has no code for keep ipatlas's status under an upper-case
// spelling of ipatlas's code: the clients report any of them as an error
// of the request (4xx) or of the server (5xx).
func maxmindCodeOf(f *failure) (string, int) {
	switch {
	case f.sub == maxmindNotFound:
		return maxmindNotFound, http.StatusNotFound
	case f.sub != "" && f.code == ipatlas.CodeInvalidAPIKey:
		return f.sub, http.StatusUnauthorized
	case f.sub != "":
		return f.sub, http.StatusBadRequest
	}
	switch f.code {
	case ipatlas.CodeInvalidIP:
		return maxmindAddressInvalid, http.StatusBadRequest
	case ipatlas.CodePrivateIP:
		return maxmindAddressReserved, http.StatusBadRequest
	case ipatlas.CodeInvalidAPIKey:
		return maxmindAuthInvalid, http.StatusUnauthorized
	case ipatlas.CodeInsufficientCredits:
		return maxmindFunds, http.StatusPaymentRequired
	case ipatlas.CodeRateLimitExceeded:
		if f.spent {
			return maxmindOutOfQueries, http.StatusPaymentRequired
		}
		// A burst limit lifts in seconds: 429 with Retry-After.
		return "TOO_MANY_REQUESTS", http.StatusTooManyRequests
	}
	return upperSnake(string(f.code)), f.httpStatus()
}

// upperSnake spells an ipatlas code as MaxMind spells its codes:
// "ServiceUnavailable" is "SERVICE_UNAVAILABLE".
func upperSnake(code string) string {
	var b strings.Builder
	for i := 0; i < len(code); i++ {
		c := code[i]
		if 'A' <= c && c <= 'Z' && i > 0 {
			b.WriteByte('_')
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// hdrBasic is the challenge of the MaxMind shape's 401s.
var hdrBasic = []string{`Basic realm="ipatlas"`}

// renderMaxMind answers the failures of the MaxMind shape in MaxMind's
// error body and with its statuses, which its clients map to their
// exception types. The text is the failure's, in the request's language;
// it never repeats a credential.
func (s *Server) renderMaxMind(w *exchange, r *http.Request, err error) {
	f := s.failureOf(r, err)
	w.code = f.code
	code, status := maxmindCodeOf(f)
	if status == http.StatusUnauthorized {
		w.Header()["Www-Authenticate"] = hdrBasic
	}
	lang := w.langOf(r)
	msg := errorText(f.code, f.detail(lang), lang)
	switch {
	case code == maxmindAccountRequired && lang == ipatlas.Chinese:
		msg = "请以 HTTP Basic 认证的用户名发送账户 ID（您的 ipatlas 账户的 ID）"
	case code == maxmindAccountRequired:
		msg = "send your account ID (the ID of your ipatlas account) as the user name of HTTP Basic authentication"
	case code == maxmindLicenseRequired && lang == ipatlas.Chinese:
		msg = "请以 HTTP Basic 认证的密码发送许可证密钥（您的 ipatlas API 密钥）"
	case code == maxmindLicenseRequired:
		msg = "send your licence key (your ipatlas API key) as the password of HTTP Basic authentication"
	}
	writeJSON(w, status, &maxmindError{Code: code, Error: msg})
}

// isMaxMind reports whether a path is the MaxMind shape's.
func isMaxMind(path string) bool {
	return strings.HasPrefix(path, maxmindPrefix) || path == "/geoip/v2.1"
}
