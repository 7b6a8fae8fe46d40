package server

import (
	"encoding/json"
	"math/big"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/web"
)

// The echoip shape, under /echoip/ (and at the root with
// Config.EchoIPRoot): the paths of echoip, the program behind
// ifconfig.co, so that a script that runs `curl ifconfig.co/country`
// moves by changing the host. Each path answers one thing about an
// address: /ip the address, /country, /country-iso, /city, /asn,
// /asn-org and /coordinates one value as a line of text, /json the whole
// answer in echoip's JSON, and the prefix itself the address as text, or
// the JSON for a client that asks for JSON, as echoip's "/" does.
//
// Without ?ip= the address is the caller's own: free, without a key, and
// limited per client address, as GET /api/ip/me is (Config.MeRate; /ip,
// which looks nothing up, has the free endpoints' limit, as /ipv4). With
// ?ip= it is another address: that takes a key and is the metered query
// (query.go), one query per answer that holds something looked up; /ip
// and a value the data leaves empty are free. A failure is a line of
// text, "error: … (Code)", on the text paths and echoip's JSON error body
// on /json (and on every path for a client that asks for JSON), with
// ipatlas's statuses. docs/migrating.md lists what differs from echoip.

// echoipPrefix is where the shape is mounted.
const echoipPrefix = "/echoip/"

// echoipShape is echoip's paths under /echoip/, and at the root with
// Config.EchoIPRoot ("GET /json" beside "GET /echoip/json"; GET / stays
// the server's own: the web page, and the address as text for curl, as
// echoip's "/"). Each answers the caller's own address free, limited per
// address, or ?ip= with a key, metered; the route takes a key for the
// latter.
func (s *api) echoipShape() shape {
	sh := shape{name: "echoip", prefix: echoipPrefix, render: s.renderEchoIP, rootSetting: "Config.EchoIPRoot",
		routes: append([]route{
			{pattern: "GET /echoip", cors: true, k: s.echoip(echoNegotiated)},     // the address as text, or the JSON for a JSON client
			{pattern: "GET /echoip/{$}", cors: true, k: s.echoip(echoNegotiated)}, // the same
		}, s.echoipPaths(echoipPrefix)...)}
	if s.cfg.EchoIPRoot {
		sh.root = s.echoipPaths("/")
	}
	return sh
}

// echoipPaths are echoip's paths under prefix.
func (s *api) echoipPaths(prefix string) []route {
	return []route{
		{pattern: "GET " + prefix + "ip", cors: true, k: s.echoip(echoAddr)},                 // the address (text)
		{pattern: "GET " + prefix + "country", cors: true, k: s.echoip(echoCountry)},         // the country's name (text)
		{pattern: "GET " + prefix + "country-iso", cors: true, k: s.echoip(echoCountryISO)},  // its ISO 3166-1 code (text)
		{pattern: "GET " + prefix + "city", cors: true, k: s.echoip(echoCity)},               // the city (text)
		{pattern: "GET " + prefix + "asn", cors: true, k: s.echoip(echoASN)},                 // "AS15169" (text)
		{pattern: "GET " + prefix + "asn-org", cors: true, k: s.echoip(echoASNOrg)},          // the AS's organisation (text)
		{pattern: "GET " + prefix + "coordinates", cors: true, k: s.echoip(echoCoordinates)}, // "lat,lon" (text)
		{pattern: "GET " + prefix + "json", cors: true, k: s.echoip(echoJSON)},               // the whole answer (echoip's JSON)
	}
}

// echoipWhat is what a path of the echoip shape answers.
type echoipWhat uint8

const (
	echoAddr        echoipWhat = iota // /ip: the address
	echoCountry                       // /country: the country's name
	echoCountryISO                    // /country-iso: its ISO 3166-1 code
	echoCity                          // /city
	echoASN                           // /asn: "AS15169"
	echoASNOrg                        // /asn-org: the AS's organisation
	echoCoordinates                   // /coordinates: "lat,lon", 6 decimals
	echoJSON                          // /json: the whole answer
	echoNegotiated                    // the prefix: the address, or the whole answer for a JSON client
)

// echoipAnswer is echoip's JSON answer. region_code and metro_code have
// no source here and are never sent; latitude and longitude are left out
// when the location is unknown, never 0.
type echoipAnswer struct {
	IP         string           `json:"ip"`
	IPDecimal  *big.Int         `json:"ip_decimal"`
	Country    string           `json:"country,omitempty"`
	CountryISO string           `json:"country_iso,omitempty"`
	CountryEU  bool             `json:"country_eu"`
	RegionName string           `json:"region_name,omitempty"`
	PostalCode string           `json:"zip_code,omitempty"`
	City       string           `json:"city,omitempty"`
	Latitude   *float64         `json:"latitude,omitempty"`
	Longitude  *float64         `json:"longitude,omitempty"`
	TimeZone   string           `json:"time_zone,omitempty"`
	ASN        string           `json:"asn,omitempty"`
	ASNOrg     string           `json:"asn_org,omitempty"`
	Hostname   string           `json:"hostname,omitempty"`
	UserAgent  *echoipUserAgent `json:"user_agent,omitempty"`
}

// echoipUserAgent is the request's User-Agent as echoip splits it.
type echoipUserAgent struct {
	Product  string `json:"product,omitempty"`
	Version  string `json:"version,omitempty"`
	Comment  string `json:"comment,omitempty"`
	RawValue string `json:"raw_value,omitempty"`
}

// echoipError is echoip's JSON error body, with ipatlas's code beside it.
type echoipError struct {
	Status int               `json:"status"`
	Error  string            `json:"error"`
	Code   ipatlas.ErrorCode `json:"code"`
}

// parseUserAgent splits a User-Agent as echoip does: the product before
// the first "/", then a version when the rest starts with a digit (up to
// a space) and the rest as a comment; without a "/", the product up to
// the first space and the rest as a comment. nil for no User-Agent.
func parseUserAgent(s string) *echoipUserAgent {
	if s == "" {
		return nil
	}
	ua := &echoipUserAgent{RawValue: s}
	if product, rest, ok := strings.Cut(s, "/"); ok {
		ua.Product = product
		if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			ua.Version, ua.Comment, _ = strings.Cut(rest, " ")
		} else {
			ua.Comment = rest
		}
		return ua
	}
	ua.Product, ua.Comment, _ = strings.Cut(s, " ")
	return ua
}

// decimal is an address as one number, as echoip's ip_decimal: an IPv4
// address (also mapped into IPv6) its 32 bits, an IPv6 address its 128.
func decimal(a netip.Addr) *big.Int {
	return new(big.Int).SetBytes(a.Unmap().AsSlice())
}

// toEchoIP is a record in echoip's JSON shape, for addr, asked for by r.
func toEchoIP(rec *ipatlas.Record, addr netip.Addr, r *http.Request) *echoipAnswer {
	return &echoipAnswer{
		IP: rec.IP, IPDecimal: decimal(addr),
		Country: rec.Country, CountryISO: rec.CountryCode, CountryEU: names.InEU(rec.CountryCode),
		RegionName: rec.Province, PostalCode: rec.ZipCode, City: rec.City,
		Latitude: rec.Latitude, Longitude: rec.Longitude, TimeZone: rec.TimeZone,
		ASN: rec.ASN, ASNOrg: rec.ISP, Hostname: rec.Hostname,
		UserAgent: parseUserAgent(r.UserAgent()),
	}
}

// echoipText is one value of a record as the text paths answer it,
// without the newline; "" when the data has none.
func echoipText(rec *ipatlas.Record, what echoipWhat) string {
	switch what {
	case echoCountry:
		return rec.Country
	case echoCountryISO:
		return rec.CountryCode
	case echoCity:
		return rec.City
	case echoASN:
		return rec.ASN
	case echoASNOrg:
		return rec.ISP
	case echoCoordinates:
		if rec.Latitude == nil || rec.Longitude == nil {
			return ""
		}
		return strconv.FormatFloat(*rec.Latitude, 'f', 6, 64) + "," + strconv.FormatFloat(*rec.Longitude, 'f', 6, 64)
	}
	return rec.IP
}

// echoipQuery is what a request of the echoip shape asks for: the
// language of the names (lang=, an addition of ipatlas's) and the address
// of ?ip=, "" for the caller's own.
type echoipQuery struct {
	lang ipatlas.Lang
	ip   string
}

// echoipParams reads the parameters of the echoip shape. ?ip= given
// empty is the caller's own address, as echoip reads it; given twice it
// is refused, since which one counts would be a guess.
func echoipParams(w *exchange, r *http.Request) (echoipQuery, *failure) {
	w.Header()["Cache-Control"] = hdrNoStore
	q := echoipQuery{lang: ipatlas.English}
	if r.URL.RawQuery == "" {
		w.setLang(ipatlas.English)
		return q, nil
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return q, errBadQuery
	}
	// The address first: a request that names one is the keyed query,
	// whose refusals carry the caller's standing.
	ips := vals["ip"]
	if len(ips) > 0 {
		q.ip = ips[0]
	}
	if len(ips) > 1 {
		return q, bodyFail(ipatlas.CodeInvalidRequest, `the parameter "ip" is given more than once`, `参数 "ip" 出现了不止一次`)
	}
	return q, queryLang(w, vals, &q.lang)
}

// echoipItem parses the address of ?ip=, which echoip also takes with a
// port ("1.2.3.4:80", "[2001:db8::1]:80"): the port is dropped. Otherwise
// it is exactly its text, as an address in a path.
func echoipItem(raw string, lang ipatlas.Lang) item {
	if ap, err := netip.ParseAddrPort(raw); err == nil && ap.Addr().Zone() == "" {
		it := pathItem(ap.Addr().String(), lang)
		it.raw = raw
		return it
	}
	return pathItem(raw, lang)
}

// echoip is the handler of a path of the echoip shape. The route takes a
// key, which only ?ip= needs: the caller's own address is answered
// whatever the router made of a key.
func (s *api) echoip(what echoipWhat) keyedHandler {
	return func(w *exchange, r *http.Request, cr credential) error {
		what := what
		if what == echoNegotiated {
			w.Header()["Vary"] = hdrVaryRoot
			what = echoAddr
			if web.Wants(r) == web.FormatJSON {
				what = echoJSON
			}
		}
		q, f := echoipParams(w, r)
		if q.ip == "" {
			freeHeaders(w)
			if f != nil {
				return f
			}
			return s.echoipSelf(w, r, &q, what)
		}
		it := echoipItem(q.ip, q.lang)
		it.host = what == echoJSON
		res, _, err := s.one(w, r, cr, f, q.lang, it, func(_ int, it item) resolved {
			switch {
			case it.fail != nil:
				return failed(it)
			case what == echoAddr:
				return resolved{v: it.addr.String(), free: true} // nothing looked up
			}
			rec, f := s.lookupRecord(r.Context(), &it, q.lang)
			if f != nil {
				return resolved{fail: f}
			}
			return s.echoipResolve(r, &it, rec, what)
		})
		if err != nil {
			return err
		}
		writeEchoIP(w, res.v)
		return nil
	}
}

// echoipResolve is the answer of what for the item's record: the JSON
// (with the host name when the request may ask the resolver), or a text
// value, which holds nothing looked up when it is empty.
func (s *api) echoipResolve(r *http.Request, it *item, rec *ipatlas.Record, what echoipWhat) resolved {
	if what == echoJSON {
		s.fillHostname(r.Context(), it, rec, false)
		return resolved{v: toEchoIP(rec, it.addr, r)}
	}
	v := echoipText(rec, what)
	return resolved{v: v, free: v == ""}
}

// echoipSelf answers about the caller's own address, free. /ip looks
// nothing up: it has the free endpoints' limit and answers any address,
// as GET / does for curl. The other paths look the address up, under the
// per-address limit of GET /api/ip/me, and refuse a private or reserved
// one as it does; the JSON's host name is one PTR question per lookup
// within that limit, none for a HEAD.
func (s *api) echoipSelf(w *exchange, r *http.Request, q *echoipQuery, what echoipWhat) error {
	addr := w.client
	if !addr.IsValid() {
		return s.noAddress(r)
	}
	if what == echoAddr {
		if err := s.limitAddress(w, r, true); err != nil {
			return err
		}
		writeText(w, http.StatusOK, addr.String()+"\n")
		return nil
	}
	addr = addr.Unmap().WithZone("")
	if b, special := netaddr.Classify(addr); special {
		// The path is the route's own (one of the shape's fixed paths).
		return apiFail(ipatlas.CodePrivateIP, ownPrivate(addr, b, q.lang, "GET "+r.URL.Path+"?ip=8.8.8.8"))
	}
	if d := s.meWait(addr); d > 0 {
		return limited(w, r, apiMeta, retrySeconds(d),
			"too many lookups of this address's own location, retry in %d s", "查询本机位置过于频繁，请在 %d 秒后重试")
	}
	rec, err := s.deps.Geo.Lookup(addr, q.lang)
	if err != nil {
		return s.lookupFailed(r.Context(), err)
	}
	it := item{addr: addr}
	if r.Method != http.MethodHead && s.deps.Resolver != nil {
		it.dns = &lookups{r: s.deps.Resolver, left: 1}
	}
	writeEchoIP(w, s.echoipResolve(r, &it, &rec, what).v)
	return nil
}

// writeEchoIP writes an answer of the echoip shape: a text value and a
// newline, or the JSON indented as echoip indents it, without a final
// newline.
func writeEchoIP(w *exchange, v any) {
	if text, ok := v.(string); ok {
		writeText(w, http.StatusOK, text+"\n")
		return
	}
	writeEchoIPJSON(w, http.StatusOK, v)
}

// writeEchoIPJSON writes v as echoip writes its JSON: indented by two
// spaces, with HTML's characters escaped (encoding/json's default), and
// no final newline.
func writeEchoIPJSON(w *exchange, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only a programming error (an unencodable type) gets here.
		writeJSON(w, http.StatusInternalServerError, &echoipError{Status: http.StatusInternalServerError,
			Error: ipatlas.CodeInternal.Text(ipatlas.English), Code: ipatlas.CodeInternal})
		return
	}
	writeBody(w, status, b)
}

// echoipWantsJSON reports whether a failure of the echoip shape is
// answered in JSON: on /json, and for a client that asks for JSON
// (Accept: application/json), as echoip answers its 404.
func echoipWantsJSON(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/json") || web.Wants(r) == web.FormatJSON
}

// renderEchoIP answers the failures of the echoip shape, with ipatlas's
// statuses: a line of text (renderText), or echoip's JSON error body
// with ipatlas's code.
func (s *Server) renderEchoIP(w *exchange, r *http.Request, err error) {
	if !echoipWantsJSON(r) {
		s.renderText(w, r, err)
		return
	}
	f := s.failureOf(r, err)
	w.code = f.code
	msg := strings.TrimSuffix(strings.TrimPrefix(f.text, "error: "), "\n")
	if msg == "" {
		lang := w.langOf(r)
		msg = errorText(f.code, f.detail(lang), lang)
	}
	writeEchoIPJSON(w, f.httpStatus(), &echoipError{Status: f.httpStatus(), Error: msg, Code: f.code})
}
