package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
)

// The ipinfo shape, under /ipinfo/: ipinfo.io's request and answer forms,
// so that a program written for ipinfo (its official clients included)
// moves to ipatlas by changing its base URL to http://HOST/ipinfo/ and its
// token to an ipatlas key. The answers are ipatlas's records under
// ipinfo's names and formats; metering, quota and credits are the
// location query's: each address or AS answered is one query, and a
// failure costs nothing. What ipinfo has and ipatlas does not (hostname,
// anycast, company, carrier, abuse contacts, domains) is left out rather
// than guessed. docs/migrating.md lists the differences.

// ipinfoShape is ipinfo's paths under /ipinfo/, its answers and its error
// body (renderIPInfo). "GET /ipinfo/json" and "POST /ipinfo/batch" are
// fixed paths beside the wildcard; the router gives them their own 405s.
func (s *api) ipinfoShape() shape {
	return shape{name: "ipinfo", prefix: "/ipinfo/", render: s.renderIPInfo, routes: []route{
		{pattern: "GET /ipinfo", cors: true, k: s.handleIPInfoSelf},                 // the caller's own address
		{pattern: "GET /ipinfo/{$}", cors: true, k: s.handleIPInfoSelf},             // the same
		{pattern: "GET /ipinfo/json", cors: true, k: s.handleIPInfoSelf},            // the same
		{pattern: "GET /ipinfo/{what}", cors: true, k: s.handleIPInfo},              // an address, or an AS ("AS15169")
		{pattern: "GET /ipinfo/{what}/{field}", cors: true, k: s.handleIPInfoField}, // one field of an address ("8.8.8.8/city"), or "json"
		{pattern: "POST /ipinfo/batch", cors: true, k: s.handleIPInfoBatch},         // up to 1,000 items, metered per item
		// ipinfo's current API (shape_ipinfo_v2.go): Lite, and Core and Plus.
		{pattern: "GET /ipinfo/lite/me", cors: true, k: s.handleIPInfoLiteSelf},      // Lite: the caller's own address
		{pattern: "GET /ipinfo/lite/{ip}", cors: true, k: s.handleIPInfoLite},        // Lite: an address's country and AS
		{pattern: "GET /ipinfo/lookup/{$}", cors: true, k: s.handleIPInfoLookupSelf}, // Core and Plus: the caller's own address
		{pattern: "GET /ipinfo/lookup/me", cors: true, k: s.handleIPInfoLookupSelf},  // the same
		{pattern: "GET /ipinfo/lookup/{ip}", cors: true, k: s.handleIPInfoLookup},    // Core and Plus: an address
	}}
}

// ipinfoCore is ipinfo's answer for one address. Absent values are left
// out, as ipinfo leaves them out.
type ipinfoCore struct {
	IP       string         `json:"ip"`
	Hostname string         `json:"hostname,omitempty"` // the PTR name, as ipinfo answers it
	Bogon    bool           `json:"bogon,omitempty"`
	City     string         `json:"city,omitempty"`
	Region   string         `json:"region,omitempty"`
	Country  string         `json:"country,omitempty"` // ISO 3166-1 alpha-2
	Loc      string         `json:"loc,omitempty"`     // "lat,lon", 4 decimals
	Org      string         `json:"org,omitempty"`     // "AS15169 Google LLC"
	Postal   string         `json:"postal,omitempty"`
	Timezone string         `json:"timezone,omitempty"`
	ASN      *ipinfoASN     `json:"asn,omitempty"`
	Privacy  *ipinfoPrivacy `json:"privacy,omitempty"`
}

type ipinfoASN struct {
	ASN   string `json:"asn"`
	Name  string `json:"name"`
	Route string `json:"route,omitempty"`
}

// ipinfoPrivacy is the record's privacy flags. ipinfo's "proxy" (open
// proxies) has no source here, so it is left out, and so is "tor" while
// the exit list is unknown: a flag is only ever false when a list says
// the address is not on it.
type ipinfoPrivacy struct {
	VPN     bool   `json:"vpn"`
	Tor     *bool  `json:"tor,omitempty"`
	Relay   bool   `json:"relay"`
	Hosting bool   `json:"hosting"`
	Service string `json:"service"`
}

// ipinfoASNDetails is ipinfo's answer for one AS.
type ipinfoASNDetails struct {
	ASN       string         `json:"asn"`
	Name      string         `json:"name"`
	Country   string         `json:"country,omitempty"`
	NumIPs    uint64         `json:"num_ips"`
	Type      string         `json:"type,omitempty"` // "hosting" for an AS on the datacenter list
	Prefixes  []ipinfoPrefix `json:"prefixes"`
	Prefixes6 []ipinfoPrefix `json:"prefixes6"`
	// The page of the prefixes (ipatlas.PageAS), beyond ipinfo's fields.
	NumPrefixes  int `json:"num_prefixes"`
	NumPrefixes6 int `json:"num_prefixes6"`
	Page         int `json:"page"`
	Pages        int `json:"pages"`
}

type ipinfoPrefix struct {
	Netblock string `json:"netblock"`
	Size     string `json:"size"`
}

// ipinfoError is ipinfo's error body, with ipatlas's code beside it.
type ipinfoError struct {
	Status int               `json:"status"`
	Error  ipinfoErrorText   `json:"error"`
	Code   ipatlas.ErrorCode `json:"code"`
}

type ipinfoErrorText struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

// toIPInfo is a record in ipinfo's shape.
func toIPInfo(rec *ipatlas.Record) *ipinfoCore {
	c := &ipinfoCore{IP: rec.IP, Hostname: rec.Hostname, City: rec.City, Region: rec.Province, Country: rec.CountryCode,
		Postal: rec.ZipCode, Timezone: rec.TimeZone}
	if rec.Latitude != nil && rec.Longitude != nil {
		c.Loc = strconv.FormatFloat(*rec.Latitude, 'f', 4, 64) + "," + strconv.FormatFloat(*rec.Longitude, 'f', 4, 64)
	}
	c.Org = strings.TrimSpace(rec.ASN + " " + rec.ISP)
	if rec.ASN != "" {
		c.ASN = &ipinfoASN{ASN: rec.ASN, Name: rec.ISP}
		if rec.Route.IsValid() {
			c.ASN.Route = rec.Route.String()
		}
	}
	if p := rec.Privacy; p != nil {
		c.Privacy = &ipinfoPrivacy{VPN: p.VPN, Tor: p.Tor, Relay: p.Relay, Hosting: p.Hosting, Service: p.Service}
	}
	return c
}

// toIPInfoAS is an AS in ipinfo's shape.
func toIPInfoAS(as *ipatlas.AS) *ipinfoASNDetails {
	d := &ipinfoASNDetails{ASN: as.ASN, Name: as.Name, Country: as.CountryCode, NumIPs: as.NumIPs,
		NumPrefixes: as.NumPrefixes, NumPrefixes6: as.NumPrefixes6, Page: as.Page, Pages: as.Pages,
		Prefixes: make([]ipinfoPrefix, len(as.Prefixes)), Prefixes6: make([]ipinfoPrefix, len(as.Prefixes6))}
	if as.Hosting {
		d.Type = "hosting"
	}
	for i, p := range as.Prefixes {
		d.Prefixes[i] = ipinfoPrefix{Netblock: p.Netblock.String(), Size: p.Size}
	}
	for i, p := range as.Prefixes6 {
		d.Prefixes6[i] = ipinfoPrefix{Netblock: p.Netblock.String(), Size: p.Size}
	}
	return d
}

// ipinfoField is one field of ipinfo's answer, for GET /ipinfo/{ip}/{field}:
// text for a text field, JSON for an object. ok is false for a name
// ipinfo's answer does not have here.
func ipinfoField(c *ipinfoCore, name string) (v any, ok bool) {
	switch name {
	case "ip":
		return c.IP, true
	case "hostname":
		return c.Hostname, true
	case "city":
		return c.City, true
	case "region":
		return c.Region, true
	case "country":
		return c.Country, true
	case "loc":
		return c.Loc, true
	case "org":
		return c.Org, true
	case "postal":
		return c.Postal, true
	case "timezone":
		return c.Timezone, true
	case "asn":
		return c.ASN, true
	case "privacy":
		return c.Privacy, true
	}
	return nil, false
}

// ipinfoQuery is what a request of the ipinfo shape asks for besides its
// items: the language of the names (lang=, an addition of ipatlas's) and
// the page of an AS's prefixes (page=).
type ipinfoQuery struct {
	lang ipatlas.Lang
	page int
}

// ipinfoParams reads the parameters the ipinfo shape adds. The key was
// read by the router (token=, Bearer or Basic).
func ipinfoParams(w *exchange, r *http.Request) (ipinfoQuery, *failure) {
	w.Header()["Cache-Control"] = hdrNoStore
	q := ipinfoQuery{lang: requestLang(r), page: 1}
	if r.URL.RawQuery == "" {
		return q, nil
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	var f *failure
	if err != nil {
		f = errBadQuery
	}
	if f == nil {
		if l := vals.Get("lang"); l != "" {
			q.lang, f = bodyLang(w, l)
		}
	}
	if f == nil {
		q.page, f = pageParam(vals)
	}
	return q, f
}

// ipinfoItem parses one item of the ipinfo shape: "8.8.8.8",
// "8.8.8.8/city", "8.8.8.8/json", "AS15169" or "AS15169/json". field is
// the field asked for, "" for the whole answer.
func ipinfoItem(raw string, lang ipatlas.Lang, parse func(string, ipatlas.Lang) item) (it item, field string) {
	if len(raw) >= 2 && strings.EqualFold(raw[:2], "AS") {
		return asItem(strings.TrimSuffix(raw, "/json"), lang), ""
	}
	ip, field, _ := strings.Cut(raw, "/")
	if field == "json" {
		field = ""
	}
	it = parse(ip, lang)
	it.raw = raw
	if it.fail == nil || it.fail.code == ipatlas.CodePrivateIP {
		if _, ok := ipinfoField(&ipinfoCore{}, field); field != "" && !ok {
			it.fail = apiFail(ipatlas.CodeNotFound, "no field "+strconv.Quote(ipatlas.ShortFieldName(echo(field))))
		}
	}
	return it, field
}

// ipinfoResolver answers the items of the ipinfo shape, fields[i] being
// the field the i-th asks for. A private or reserved address is ipinfo's
// bogon answer, free. An AS is looked up once per request, however often
// it is asked for. The host name is in an address's whole answer, as
// ipinfo answers it, when hostnames is set (a single query), and in the
// answer of an item that asks for it ("8.8.8.8/hostname"); dns bounds
// its lookups.
func (s *api) ipinfoResolver(ctx, dns context.Context, q *ipinfoQuery, fields []string, hostnames bool) resolver {
	ases := map[uint32]*ipinfoASNDetails{}
	return func(i int, it item) resolved {
		field := fields[i]
		switch {
		case it.fail != nil && it.fail.code == ipatlas.CodePrivateIP:
			c := &ipinfoCore{IP: it.addr.String(), Bogon: true}
			if field != "" {
				v, _ := ipinfoField(c, field)
				return resolved{v: v, free: true}
			}
			return resolved{v: c, free: true}
		case it.fail != nil:
			return failed(it)
		case it.isAS:
			if d, ok := ases[it.as]; ok {
				return resolved{v: d}
			}
			as, f := s.lookupAS(ctx, &it, q.lang, q.page)
			if f != nil {
				return resolved{fail: f}
			}
			d := toIPInfoAS(as)
			ases[it.as] = d
			return resolved{v: d}
		}
		rec, f := s.lookupRecord(ctx, &it, q.lang)
		if f != nil {
			return resolved{fail: f}
		}
		if field == "hostname" || (field == "" && hostnames) {
			s.fillHostname(dns, &it, rec, false)
		}
		c := toIPInfo(rec)
		if field == "" {
			return resolved{v: c}
		}
		v, _ := ipinfoField(c, field)
		return resolved{v: v, free: isEmptyValue(v)}
	}
}

// isEmptyValue reports whether a field's value holds nothing.
func isEmptyValue(v any) bool {
	switch v := v.(type) {
	case string:
		return v == ""
	case *ipinfoASN:
		return v == nil
	case *ipinfoPrivacy:
		return v == nil
	}
	return v == nil
}

// handleIPInfoSelf is GET /ipinfo, /ipinfo/ and /ipinfo/json: the
// caller's own address (ipinfo's client asks the base URL for it).
func (s *api) handleIPInfoSelf(w *exchange, r *http.Request, cr credential) error {
	if !w.client.IsValid() {
		return s.noAddress(r)
	}
	return s.ipinfoOne(w, r, cr, w.client.String())
}

// handleIPInfo is GET /ipinfo/{what}: an address or an AS.
func (s *api) handleIPInfo(w *exchange, r *http.Request, cr credential) error {
	return s.ipinfoOne(w, r, cr, r.PathValue("what"))
}

// handleIPInfoField is GET /ipinfo/{what}/{field}: one field of an
// address's answer, as text and a newline (JSON for asn and privacy), or
// the whole answer for "json".
func (s *api) handleIPInfoField(w *exchange, r *http.Request, cr credential) error {
	return s.ipinfoOne(w, r, cr, r.PathValue("what")+"/"+r.PathValue("field"))
}

// ipinfoOne answers one item, charged as one location query.
func (s *api) ipinfoOne(w *exchange, r *http.Request, cr credential, raw string) error {
	q, f := ipinfoParams(w, r)
	it, field := ipinfoItem(raw, q.lang, pathItem)
	it.host = !it.isAS && (field == "" || field == "hostname")
	res, _, err := s.one(w, r, cr, f, q.lang, it, s.ipinfoResolver(r.Context(), r.Context(), &q, []string{field}, true))
	if err != nil {
		return err
	}
	switch v := res.v.(type) {
	case string:
		writeText(w, http.StatusOK, v+"\n")
	default:
		writeJSON(w, http.StatusOK, v)
	}
	return nil
}

// maxIPInfoBatch is ipinfo's limit of one batch request, which its
// client fills by default.
const maxIPInfoBatch = 1000

// maxIPInfoBatchAS bounds the AS items of one batch, counted as sent (a
// spelling of an AS already asked for is looked up and charged once, but
// answered under its own key): each answer holds up to two pages of
// prefixes (ipatlas.ASPageSize of each family), so a batch answers at
// most a few megabytes of them. A batch over it is refused whole, before
// anything is looked up or charged.
const maxIPInfoBatchAS = 20

// maxIPInfoBatchBytes bounds a batch body: 1,000 of the longest items
// (an IPv6 address and a field name, quoted, with a comma) take about
// 60 KB.
const maxIPInfoBatchBytes = 96 << 10

var errIPInfoBatchTooLarge = bodyFail(ipatlas.CodePayloadTooLarge,
	"the limit of a batch body is "+strconv.Itoa(maxIPInfoBatchBytes)+" bytes",
	"批量请求体上限为 "+strconv.Itoa(maxIPInfoBatchBytes)+" 字节")

// handleIPInfoBatch is POST /ipinfo/batch: a JSON array of up to 1,000
// items ("8.8.8.8", "8.8.8.8/city", "AS15169"), answered as one object
// keyed by item (query.go's batch). With ?filter=1, failed items and
// empty values are left out, as ipinfo does. The body is read as JSON
// whatever its Content-Type, as ipinfo reads it.
func (s *api) handleIPInfoBatch(w *exchange, r *http.Request, cr credential) error {
	q, f := ipinfoParams(w, r)
	var raws []string
	var buf *bytes.Buffer
	if f == nil {
		buf, f = readBodyLimit(w, r, maxIPInfoBatchBytes, errIPInfoBatchTooLarge, true)
	}
	if f == nil {
		if err := json.Unmarshal(buf.Bytes(), &raws); err != nil {
			f = bodyFail(ipatlas.CodeInvalidRequest, "the body must be a JSON array of strings", "请求体必须是字符串组成的 JSON 数组")
		}
		putBuf(buf)
	}
	if f == nil {
		f = batchNoun{"the batch", "批量请求", "items", "项", "项"}.check(len(raws), maxIPInfoBatch)
	}
	items := make([]item, len(raws))
	fields := make([]string, len(raws))
	if f == nil {
		nAS, nHost := 0, 0
		for i, raw := range raws {
			items[i], fields[i] = ipinfoItem(raw, q.lang, addrItem)
			if items[i].isAS {
				nAS++
			} else if fields[i] == "hostname" {
				items[i].host = true
				nHost++
			}
		}
		switch {
		case nAS > maxIPInfoBatchAS:
			f = bodyFail(ipatlas.CodeTooManyItems,
				strconv.Itoa(nAS)+" AS items; the limit of one batch is "+strconv.Itoa(maxIPInfoBatchAS)+" (ask for more in further batches)",
				strconv.Itoa(nAS)+" 个 AS 项，单个批量请求上限为 "+strconv.Itoa(maxIPInfoBatchAS)+" 个（其余请分批查询）")
		case nHost > maxRequestLookups:
			f = bodyFail(ipatlas.CodeTooManyItems,
				strconv.Itoa(nHost)+" hostname items; the limit of one batch is "+strconv.Itoa(maxRequestLookups)+" (ask for more in further batches)",
				strconv.Itoa(nHost)+" 个 hostname 项，单个批量请求上限为 "+strconv.Itoa(maxRequestLookups)+" 个（其余请分批查询）")
		}
	}
	dns, cancel := context.WithTimeout(r.Context(), batchDNSBudget)
	defer cancel()
	res, err := s.batch(w, r, cr, f, items, s.ipinfoResolver(r.Context(), dns, &q, fields, false))
	if err != nil {
		return err
	}
	out := make(map[string]any, len(raws))
	filter := false
	if v := r.URL.Query().Get("filter"); v != "" && v != "0" && v != "false" {
		filter = true
	}
	for i, rr := range res.items {
		switch {
		case rr.fail != nil && !filter:
			out[raws[i]] = ipinfoErrorOf(rr.fail, q.lang)
		case rr.fail == nil && !(filter && isEmptyValue(rr.v)):
			out[raws[i]] = rr.v
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ipinfoErrorOf is ipinfo's error body for a failure: the code's text as
// the title, the whole text as the message.
func ipinfoErrorOf(f *failure, lang ipatlas.Lang) *ipinfoError {
	return &ipinfoError{Status: f.httpStatus(), Code: f.code,
		Error: ipinfoErrorText{Title: f.code.Text(lang), Message: errorText(f.code, f.detail(lang), lang)}}
}

// renderIPInfo answers the failures of the ipinfo shape in ipinfo's error
// body, with ipatlas's statuses: every one is outside 2xx, which ipinfo's
// clients report as an error (429 as ipinfo's quota error).
func (s *Server) renderIPInfo(w *exchange, r *http.Request, err error) {
	f := s.failureOf(r, err)
	w.code = f.code
	writeJSON(w, f.httpStatus(), ipinfoErrorOf(f, w.langOf(r)))
}
