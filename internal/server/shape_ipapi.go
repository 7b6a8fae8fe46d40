package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// The ip-api shape, under /ip-api/: ip-api.com's JSON endpoint and batch,
// with its field names, its fields parameter (names or the numeric mask),
// its lang values and its key parameter, so that a program written for
// ip-api moves by changing its base URL and adding ?key=. Each address
// answered is one location query. Like ip-api, an address that cannot be
// answered (private, reserved, invalid) is {"status": "fail", "message":
// ...} with status 200, and costs nothing; a refused key, a spent quota or
// credits keep ipatlas's statuses (401, 429, 402), so that a client
// notices them.

// ipapiShape is ip-api's paths under /ip-api/, its answers and its
// failure body (renderIPAPI).
func (s *api) ipapiShape() shape {
	return shape{name: "ip-api", prefix: "/ip-api/", render: s.renderIPAPI, routes: []route{
		{pattern: "GET /ip-api/json", cors: true, k: s.handleIPAPISelf},     // the caller's own address
		{pattern: "GET /ip-api/json/{$}", cors: true, k: s.handleIPAPISelf}, // the same
		{pattern: "GET /ip-api/json/{ip}", cors: true, k: s.handleIPAPI},    // one address (?fields=&lang=&key=)
		{pattern: "POST /ip-api/batch", cors: true, k: s.handleIPAPIBatch},  // up to 100 queries, metered per address
	}}
}

// ipapiField is one field of ip-api's answer and its bit in the numeric
// fields mask, as ip-api documents them.
type ipapiField struct {
	name string
	bit  uint64
}

// ipapiFields are ip-api's fields in its order. mobile and offset have no
// source here and are never answered; reverse is the PTR name, looked up
// only when asked for.
var ipapiFields = []ipapiField{
	{"status", 1 << 14}, {"message", 1 << 15}, {"continent", 1 << 20}, {"continentCode", 1 << 21},
	{"country", 1 << 0}, {"countryCode", 1 << 1}, {"region", 1 << 2}, {"regionName", 1 << 3},
	{"city", 1 << 4}, {"district", 1 << 19}, {"zip", 1 << 5}, {"lat", 1 << 6}, {"lon", 1 << 7},
	{"timezone", 1 << 8}, {"offset", 1 << 25}, {"currency", 1 << 23}, {"isp", 1 << 9}, {"org", 1 << 10},
	{"as", 1 << 11}, {"asname", 1 << 22}, {"reverse", 1 << 12}, {"mobile", 1 << 16}, {"proxy", 1 << 17},
	{"hosting", 1 << 24}, {"query", 1 << 13},
}

// ipapiDefault is ip-api's default selection: status, message, country,
// countryCode, region, regionName, city, zip, lat, lon, timezone, isp,
// org, as, query.
const ipapiDefault = 61439

// parseIPAPIFields reads ip-api's fields parameter: a number (the mask)
// or field names separated by commas. Unknown names are ignored, as ip-api
// ignores them; no parameter is the default selection.
func parseIPAPIFields(v string) uint64 {
	if v == "" {
		return ipapiDefault
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return n
	}
	var mask uint64
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		for _, f := range ipapiFields {
			if f.name == name {
				mask |= f.bit
			}
		}
	}
	return mask
}

// ipapiLang reads ip-api's lang: "zh-CN" (and the other spellings
// ParseLang knows) is Chinese; ip-api's other languages (de, es, pt-BR,
// fr, ja, ru) and anything else are English, the language ipatlas has.
func ipapiLang(v string) ipatlas.Lang {
	l, _ := ipatlas.ParseLang(v)
	return l
}

// ipapiAnswer is one answer in ip-api's shape: its fields in ip-api's
// order, each present when selected and known.
type ipapiAnswer struct {
	Status        string            `json:"status,omitempty"`
	Message       string            `json:"message,omitempty"`
	Continent     *string           `json:"continent,omitempty"`
	ContinentCode *string           `json:"continentCode,omitempty"`
	Country       *string           `json:"country,omitempty"`
	CountryCode   *string           `json:"countryCode,omitempty"`
	Region        *string           `json:"region,omitempty"`
	RegionName    *string           `json:"regionName,omitempty"`
	City          *string           `json:"city,omitempty"`
	District      *string           `json:"district,omitempty"`
	Zip           *string           `json:"zip,omitempty"`
	Lat           *float64          `json:"lat,omitempty"`
	Lon           *float64          `json:"lon,omitempty"`
	Timezone      *string           `json:"timezone,omitempty"`
	Currency      *string           `json:"currency,omitempty"`
	ISP           *string           `json:"isp,omitempty"`
	Org           *string           `json:"org,omitempty"`
	AS            *string           `json:"as,omitempty"`
	ASName        *string           `json:"asname,omitempty"`
	Reverse       *string           `json:"reverse,omitempty"`
	Proxy         *bool             `json:"proxy,omitempty"`
	Hosting       *bool             `json:"hosting,omitempty"`
	Query         string            `json:"query,omitempty"`
	Code          ipatlas.ErrorCode `json:"code,omitempty"` // ipatlas's, on a failure
}

// toIPAPI is a record in ip-api's shape, restricted to mask. region
// (ip-api's region code) is empty: the data names regions but has no
// codes. org and asname are the AS's organisation, isp's name too; proxy
// is any of the VPN, Tor and relay flags. hosting and proxy are left out
// while the privacy data is not loaded: unknown, not false.
func toIPAPI(rec *ipatlas.Record, mask uint64) *ipapiAnswer {
	a := &ipapiAnswer{}
	has := func(name string) bool {
		for _, f := range ipapiFields {
			if f.name == name {
				return mask&f.bit != 0
			}
		}
		return false
	}
	str := func(name string, v string) *string {
		if has(name) {
			return &v
		}
		return nil
	}
	if has("status") {
		a.Status = "success"
	}
	a.Continent, a.ContinentCode = str("continent", rec.Continent), str("continentCode", rec.ContinentCode)
	a.Country, a.CountryCode = str("country", rec.Country), str("countryCode", rec.CountryCode)
	a.Region, a.RegionName = str("region", rec.ProvinceCode), str("regionName", rec.Province)
	a.City, a.District, a.Zip = str("city", rec.City), str("district", rec.District), str("zip", rec.ZipCode)
	if has("lat") {
		a.Lat = rec.Latitude
	}
	if has("lon") {
		a.Lon = rec.Longitude
	}
	a.Timezone, a.Currency = str("timezone", rec.TimeZone), str("currency", rec.Currency)
	a.ISP, a.Org = str("isp", rec.ISP), str("org", rec.ISP)
	a.AS, a.ASName = str("as", strings.TrimSpace(rec.ASN+" "+rec.ISP)), str("asname", rec.ISP)
	a.Reverse = str("reverse", rec.Hostname)
	if p := rec.Privacy; p != nil {
		if has("proxy") {
			proxy := p.VPN || p.Relay || (p.Tor != nil && *p.Tor)
			a.Proxy = &proxy
		}
		if has("hosting") {
			a.Hosting = &p.Hosting
		}
	}
	if has("query") {
		a.Query = rec.IP
	}
	return a
}

// ipapiFail is ip-api's failure answer for one query.
func ipapiFail(message, query string, code ipatlas.ErrorCode) *ipapiAnswer {
	return &ipapiAnswer{Status: "fail", Message: message, Query: query, Code: code}
}

// ipapiQuery is what one query of the ip-api shape asks for besides its
// address: the fields (the mask) and the language.
type ipapiQuery struct {
	mask uint64
	lang ipatlas.Lang
}

// ipapiResolver answers the queries of the ip-api shape, qs[i] being the
// i-th one's fields and language. Like ip-api, an address that cannot be
// answered (malformed, private, reserved) is a {"status": "fail"} answer,
// free; so is a lookup that failed. A selection without a field that is
// looked up (only status, message and query) holds nothing: free. A
// domain query's name is looked up first (lookupName); its answer is
// charged once the resolver has answered, as an invalid query too.
func (s *api) ipapiResolver(ctx, dns context.Context, qs []ipapiQuery) resolver {
	return func(i int, it item) resolved {
		q := qs[i]
		if it.name != "" {
			it = s.lookupName(dns, it, q.lang)
		}
		if it.fail != nil {
			msg := "invalid query"
			if it.fail.code == ipatlas.CodePrivateIP {
				msg = "reserved range"
				if b, _ := netaddr.Classify(it.addr); b.RFC == "RFC 1918" || b.RFC == "RFC 4193" {
					msg = "private range"
				}
				return resolved{v: ipapiFail(msg, it.addr.String(), it.fail.code), free: true, code: it.fail.code}
			}
			if it.fail.code == ipatlas.CodeServiceUnavailable {
				msg = "service unavailable"
			}
			return resolved{v: ipapiFail(msg, it.raw, it.fail.code), free: true, code: it.fail.code}
		}
		rec, f := s.lookupRecord(ctx, &it, q.lang)
		if f != nil {
			return resolved{v: ipapiFail("service unavailable", it.addr.String(), f.code), free: true, code: f.code}
		}
		if q.mask&ipapiReverse != 0 {
			s.fillHostname(dns, &it, rec, false)
		}
		a := toIPAPI(rec, q.mask)
		return resolved{v: a, free: a.empty()}
	}
}

// ipapiReverse is the bit of ip-api's reverse field.
const ipapiReverse = 1 << 12

// empty reports whether an answer holds no value that was looked up:
// nothing but status, message and query.
func (a *ipapiAnswer) empty() bool {
	return a.Continent == nil && a.ContinentCode == nil && a.Country == nil && a.CountryCode == nil &&
		a.Region == nil && a.RegionName == nil && a.City == nil && a.District == nil && a.Zip == nil &&
		a.Lat == nil && a.Lon == nil && a.Timezone == nil && a.Currency == nil && a.ISP == nil &&
		a.Org == nil && a.AS == nil && a.ASName == nil && a.Proxy == nil && a.Hosting == nil &&
		(a.Reverse == nil || *a.Reverse == "")
}

// ipapiParams reads ip-api's fields and lang of the URL (the defaults of
// a batch's queries). An unknown lang is English, as ip-api answers its
// other languages in English here.
func ipapiParams(w *exchange, r *http.Request) ipapiQuery {
	w.Header()["Cache-Control"] = hdrNoStore
	q := r.URL.Query()
	lang := ipapiLang(q.Get("lang"))
	w.setLang(lang)
	return ipapiQuery{mask: parseIPAPIFields(q.Get("fields")), lang: lang}
}

// handleIPAPISelf is GET /ip-api/json and /ip-api/json/: the caller's own
// address, as ip-api answers an empty query.
func (s *api) handleIPAPISelf(w *exchange, r *http.Request, cr credential) error {
	if !w.client.IsValid() {
		return s.noAddress(r)
	}
	return s.ipapiOne(w, r, cr, w.client.String())
}

// handleIPAPI is GET /ip-api/json/{ip}.
func (s *api) handleIPAPI(w *exchange, r *http.Request, cr credential) error {
	return s.ipapiOne(w, r, cr, r.PathValue("ip"))
}

func (s *api) ipapiOne(w *exchange, r *http.Request, cr credential, query string) error {
	q := ipapiParams(w, r)
	res, _, err := s.one(w, r, cr, nil, q.lang, ipapiItem(query, q), s.ipapiResolver(r.Context(), r.Context(), []ipapiQuery{q}))
	if err != nil {
		return err
	}
	ipapiRateHeaders(w.Header())
	writeJSON(w, http.StatusOK, res.v)
	return nil
}

// ipapiItem is the query of GET /ip-api/json/{query}: an address, or, as
// ip-api takes it, a domain name, answered for its first globally
// reachable address (A before AAAA), looked up in the metered query
// (lookupName), after the caller is known to be able to pay. A name that
// does not resolve and one that has only private or reserved addresses
// are both an invalid query; a resolver that did not answer is
// unavailable.
func ipapiItem(query string, q ipapiQuery) item {
	it := pathItem(query, q.lang)
	if it.fail != nil && it.fail.code == ipatlas.CodeInvalidIP && domainLike(query) {
		it = item{raw: query, name: query}
	}
	it.host = q.mask&ipapiReverse != 0
	return it
}

// domainLike reports whether a query that is no address may be a domain
// name: dotted labels of letters, digits and '-' (or non-ASCII, for an
// internationalised name), with a letter somewhere.
func domainLike(q string) bool {
	letter := false
	for _, c := range q {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= 0x80 && unicode.IsLetter(c):
			letter = true
		case c >= '0' && c <= '9', c == '-', c == '.':
		default:
			return false
		}
	}
	return letter && strings.Contains(q, ".")
}

// ipapiRateHeaders adds ip-api's own quota headers, which programs written
// for ip-api read to slow down: X-Rl, the requests left in the window, and
// X-Ttl, the seconds until it resets. The window here is the key's month,
// so they repeat RateLimit-Remaining and RateLimit-Reset; an answer with
// Retry-After but no quota (the burst limit's 429) is X-Rl 0 and X-Ttl its
// Retry-After. An answer with neither, such as a refused key's, has none.
func ipapiRateHeaders(h http.Header) {
	if rem, ok := h["Ratelimit-Remaining"]; ok {
		h["X-Rl"], h["X-Ttl"] = rem, h["Ratelimit-Reset"]
	} else if ra, ok := h["Retry-After"]; ok {
		h["X-Rl"], h["X-Ttl"] = hdrZero, ra
	}
}

var hdrZero = []string{"0"}

// ipapiBatchItem is one item of ip-api's batch body: a query string, or
// an object with its own fields and lang.
type ipapiBatchItem struct {
	Query  string `json:"query"`
	Fields string `json:"fields"`
	Lang   string `json:"lang"`
}

func (it *ipapiBatchItem) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &it.Query)
	}
	var o struct {
		Query  string          `json:"query"`
		Fields json.RawMessage `json:"fields"` // names, or the mask as a number
		Lang   string          `json:"lang"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	it.Query, it.Lang = o.Query, o.Lang
	if len(o.Fields) == 0 || string(o.Fields) == "null" {
		return nil
	}
	if err := json.Unmarshal(o.Fields, &it.Fields); err == nil {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(o.Fields, &n); err != nil {
		return err
	}
	it.Fields = n.String()
	return nil
}

// maxIPAPIBatch is ip-api's limit of one batch.
const maxIPAPIBatch = 100

// handleIPAPIBatch is POST /ip-api/batch: up to 100 queries, as strings
// or {"query", "fields", "lang"} objects (the URL's fields and lang are
// the defaults), answered as an array in order (query.go's batch). The
// body is read as JSON whatever its Content-Type, as ip-api reads it.
func (s *api) handleIPAPIBatch(w *exchange, r *http.Request, cr credential) error {
	def := ipapiParams(w, r)
	var raws []ipapiBatchItem
	buf, f := readBodyLimit(w, r, maxBatchBodyBytes, errBatchTooLarge, true)
	if f == nil {
		if err := json.Unmarshal(buf.Bytes(), &raws); err != nil {
			f = bodyFail(ipatlas.CodeInvalidRequest, "the body must be a JSON array of queries", "请求体必须是查询组成的 JSON 数组")
		}
		putBuf(buf)
	}
	if f == nil {
		f = batchNoun{"the batch", "批量请求", "queries", "个查询", "个"}.check(len(raws), maxIPAPIBatch)
	}
	items := make([]item, len(raws))
	qs := make([]ipapiQuery, len(raws))
	for i, it := range raws {
		qs[i] = def
		if it.Fields != "" {
			qs[i].mask = parseIPAPIFields(it.Fields)
		}
		if it.Lang != "" {
			qs[i].lang = ipapiLang(it.Lang)
		}
		items[i] = addrItem(it.Query, qs[i].lang)
		items[i].host = qs[i].mask&ipapiReverse != 0
	}
	dns, cancel := context.WithTimeout(r.Context(), batchDNSBudget)
	defer cancel()
	res, err := s.batch(w, r, cr, f, items, s.ipapiResolver(r.Context(), dns, qs))
	if err != nil {
		return err
	}
	out := make([]any, len(raws))
	for i, rr := range res.items {
		if rr.fail != nil {
			out[i] = ipapiFail(errorText(rr.fail.code, rr.fail.detail(qs[i].lang), qs[i].lang), raws[i].Query, rr.fail.code)
			continue
		}
		out[i] = rr.v
	}
	ipapiRateHeaders(w.Header())
	writeJSON(w, http.StatusOK, out)
	return nil
}

// renderIPAPI answers the failures of the ip-api shape in its body,
// {"status": "fail", "message": ...}, with ipatlas's statuses and code.
func (s *Server) renderIPAPI(w *exchange, r *http.Request, err error) {
	lang := w.langOf(r)
	f := s.failureOf(r, err)
	w.code = f.code
	ipapiRateHeaders(w.Header())
	writeJSON(w, f.httpStatus(), ipapiFail(errorText(f.code, f.detail(lang), lang), "", f.code))
}
