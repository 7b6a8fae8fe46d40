package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geoip2"
)

// The MaxMind shape, under /geoip/v2.1/: the request and answer forms of
// MaxMind's GeoIP2 web services (Country, City and Insights), so that
// MaxMind's official clients move to ipatlas by their host setting alone.
// Those clients speak only HTTPS: serve ipatlas with --tls-cert and
// --tls-key, or behind a proxy that ends TLS.
//
// Authentication is HTTP Basic, as the clients send it: the account ID
// is the ID of the key's ipatlas account, the licence key is the ipatlas
// key (maxmindKey). Metering is the location query's: each address
// answered is one query; a failure costs nothing.
//
// The answers are the GeoIP2 model of the engine's answer (package
// geoip2, which the MMDB export writes too): names in "en" and "zh-CN",
// registered_country the country, the province as the one subdivision,
// accuracy_radius a class, the AS in traits, the privacy lists' flags in
// Insights. The shape adds what belongs to the request:
// traits.ip_address, and maxmind.queries_remaining, how many more
// queries the key can pay for now (the fewer of its quota left this month
// and its account's credits). An address the data says nothing about is
// IP_ADDRESS_NOT_FOUND.
//
// docs/migrating.md lists the differences.

// maxmindProduct is which of MaxMind's web services a route answers.
type maxmindProduct = geoip2.Service

const (
	maxmindCountryService  = geoip2.CountryService
	maxmindCityService     = geoip2.CityService
	maxmindInsightsService = geoip2.InsightsService
)

// maxmindPrefix is the shape's paths' prefix.
const maxmindPrefix = "/geoip/v2.1/"

// maxmindShape is MaxMind's GeoIP2 web services under /geoip/v2.1/, with
// MaxMind's authentication (maxmindKey) and error body (renderMaxMind).
func (s *api) maxmindShape() shape {
	sh := shape{name: "MaxMind", prefix: maxmindPrefix, render: s.renderMaxMind, key: maxmindKey}
	for _, sv := range []struct {
		name string
		p    maxmindProduct
	}{{"country", maxmindCountryService}, {"city", maxmindCityService}, {"insights", maxmindInsightsService}} {
		prefix := "GET " + maxmindPrefix + sv.name + "/"
		sh.routes = append(sh.routes,
			route{pattern: prefix + "{$}", k: s.maxmindRequired},  // no address: IP_ADDRESS_REQUIRED
			route{pattern: prefix + "me", k: s.maxmindSelf(sv.p)}, // the caller's own address
			route{pattern: prefix + "{ip}", k: s.maxmind(sv.p)})   // an address
	}
	return sh
}

// maxmindResolver answers an address in a service's form, from the
// engine's one lookup of it in both languages.
func (s *api) maxmindResolver(ctx context.Context, p maxmindProduct) resolver {
	return func(_ int, it item) resolved {
		if it.fail != nil {
			return failed(it)
		}
		a, network, err := geo.LookupAnswerNetwork(s.deps.Geo, it.addr)
		if err != nil {
			return resolved{fail: s.lookupFailed(ctx, err)}
		}
		m := geoip2.New(&a, p)
		if m == nil {
			return resolved{fail: &failure{code: ipatlas.CodeNotFound, why: maxmindCode(maxmindNotFound),
				en: "the data has no record of " + it.addr.String(), zh: "数据中没有 " + it.addr.String() + " 的记录"}}
		}
		m.Traits.IPAddress = it.addr.WithZone("").String()
		if network.IsValid() {
			m.Traits.Network = network.String()
		}
		return resolved{v: m}
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
	_, err := s.admit(w, r, cr, &failure{code: ipatlas.CodeInvalidIP, why: maxmindCode(maxmindAddressRequired), en: detail, meta: apiMeta})
	return err
}

// maxmindOne answers one address in a service's form, charged as one
// location query.
func (s *api) maxmindOne(w *exchange, r *http.Request, cr credential, p maxmindProduct, raw string) error {
	lang := w.langOf(r)
	res, meta, err := s.one(w, r, cr, nil, lang, pathItem(raw, lang), s.maxmindResolver(r.Context(), p))
	if err != nil {
		return err
	}
	a := res.v.(*geoip2.Model)
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

// maxmindCode is one of MaxMind's codes as a failure's why: the code the
// failure answers with, where ipatlas's code is coarser.
type maxmindCode string

func (c maxmindCode) Error() string { return string(c) }

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

// The credentials that name no key to look up, with the code of each.
var (
	errMaxMindMalformed = fmt.Errorf("%w (%w)", maxmindCode(maxmindAuthInvalid), errNoKey)
	errMaxMindAccount   = fmt.Errorf("%w (%w)", maxmindCode(maxmindAccountRequired), errNoKey)
	errMaxMindLicense   = fmt.Errorf("%w (%w)", maxmindCode(maxmindLicenseRequired), errNoKey)
)

// maxmindKey is the MaxMind shape's keyScheme: HTTP Basic as MaxMind's
// clients send it, the account ID as the user name (a decimal number,
// which must be the key's account's, as MaxMind refuses a licence key
// with another account's ID) and the licence key, the ipatlas key, as the
// password.
func maxmindKey(_ *exchange, r *http.Request) (key string, accountID int64, err error) {
	user, pass, ok := r.BasicAuth()
	switch {
	case !ok && r.Header.Get("Authorization") != "":
		return "", 0, errMaxMindMalformed
	case !ok || strings.TrimSpace(user) == "":
		return "", 0, errMaxMindAccount
	case strings.TrimSpace(pass) == "":
		return "", 0, errMaxMindLicense
	}
	id, perr := strconv.ParseInt(strings.TrimSpace(user), 10, 64)
	if perr != nil || id <= 0 {
		return "", 0, errMaxMindMalformed
	}
	return strings.TrimSpace(pass), id, nil
}

// maxmindError is MaxMind's error body.
type maxmindError struct {
	Code  string `json:"code"`
	Error string `json:"error"`
}

// maxmindCodeOf is a failure's MaxMind code and HTTP status: the code
// under it (failure.why) when it has one, else the one of ipatlas's code.
// The failures MaxMind has no code for keep ipatlas's status under an
// upper-case spelling of ipatlas's code: the clients report any of them
// as an error of the request (4xx) or of the server (5xx).
func maxmindCodeOf(f *failure) (string, int) {
	if c, ok := errors.AsType[maxmindCode](f.why); ok {
		switch {
		case c == maxmindNotFound:
			return string(c), http.StatusNotFound
		case f.code == ipatlas.CodeInvalidAPIKey:
			return string(c), http.StatusUnauthorized
		}
		return string(c), http.StatusBadRequest
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
		if errors.Is(f.why, errQuotaSpent) {
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
