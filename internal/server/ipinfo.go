package server

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/netaddr"
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

// ipinfoCore is ipinfo's answer for one address. Absent values are left
// out, as ipinfo leaves them out.
type ipinfoCore struct {
	IP       string         `json:"ip"`
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
	c := &ipinfoCore{IP: rec.IP, City: rec.City, Region: rec.Province, Country: rec.CountryCode,
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

// ipinfoParams reads the one parameter the ipinfo shape adds: lang, for
// the names in Chinese. The key was read by the router (token=).
func (s *api) ipinfoParams(w *exchange, r *http.Request) (metered, error) {
	w.Header()["Cache-Control"] = hdrNoStore
	m := metered{lang: requestLang(r), meta: identify(w)}
	if l := r.URL.Query().Get("lang"); l != "" {
		lang, berr := bodyLang(w, l)
		if berr != nil {
			return m, s.uncharged(r.Context(), w, &m.meta, berr.code, berr.detail(m.lang))
		}
		m.lang = lang
	}
	if !w.caller.identified() {
		return m, s.keyError(w, r, w.caller.err)
	}
	return m, nil
}

// ipinfoItem is what one address or AS of the ipinfo shape resolves to
// before the charge: a value to answer free (a bogon's), a failure, or a
// value that needs a charge.
type ipinfoItem struct {
	value  any // the answer once charged, or the free answer
	charge bool
	code   ipatlas.ErrorCode // a failure, free
	detail string
}

// resolveIPInfo looks up one item of the ipinfo shape: "8.8.8.8",
// "8.8.8.8/city", "8.8.8.8/json" or "AS15169". A private or reserved
// address is ipinfo's bogon answer, free.
func (s *api) resolveIPInfo(r *http.Request, item string, lang ipatlas.Lang) ipinfoItem {
	if n, ok := asItem(item); ok {
		return s.resolveAS(r, n, lang)
	}
	ip, field, hasField := strings.Cut(item, "/")
	if field == "json" {
		hasField = false
	}
	addr, err := netaddr.Parse(ip)
	if err != nil {
		var pe *netaddr.ParseError
		detail := ""
		if errors.As(err, &pe) {
			detail = pe.ReasonIn(lang)
		}
		return ipinfoItem{code: ipatlas.CodeInvalidIP, detail: detail}
	}
	if hasField {
		if _, ok := ipinfoField(&ipinfoCore{}, field); !ok {
			return ipinfoItem{code: ipatlas.CodeNotFound, detail: "no field " + strconv.Quote(ipatlas.ShortFieldName(field))}
		}
	}
	if _, private := netaddr.Classify(addr); private {
		c := &ipinfoCore{IP: addr.String(), Bogon: true}
		if hasField {
			v, _ := ipinfoField(c, field)
			return ipinfoItem{value: v}
		}
		return ipinfoItem{value: c}
	}
	rec, err := s.deps.Geo.Lookup(addr, lang)
	if err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelError, "geo lookup", errAttr(err))
		return ipinfoItem{code: ipatlas.CodeServiceUnavailable}
	}
	c := toIPInfo(&rec)
	if hasField {
		v, _ := ipinfoField(c, field)
		return ipinfoItem{value: v, charge: true}
	}
	return ipinfoItem{value: c, charge: true}
}

// asItem reports whether an item names an AS ("AS15169", any case, or
// "AS15169/json") and which; a malformed number is n's error.
func asItem(item string) (string, bool) {
	if len(item) < 2 || !strings.EqualFold(item[:2], "AS") {
		return "", false
	}
	return strings.TrimSuffix(item, "/json"), true
}

// resolveAS looks up one AS for the ipinfo shape.
func (s *api) resolveAS(r *http.Request, item string, lang ipatlas.Lang) ipinfoItem {
	n, err := ipatlas.ParseAS(item)
	if err != nil {
		return ipinfoItem{code: ipatlas.CodeInvalidAS, detail: asErrorDetail(err)}
	}
	loc, ok := s.deps.Geo.(geo.ASLocator)
	if !ok {
		return ipinfoItem{code: ipatlas.CodeServiceUnavailable}
	}
	as, err := loc.AS(n, lang)
	var ie *ipatlas.Error
	switch {
	case errors.As(err, &ie) && ie.Code == ipatlas.CodeUnknownAS:
		return ipinfoItem{code: ipatlas.CodeUnknownAS, detail: ipatlas.FormatAS(n)}
	case err != nil:
		s.log.LogAttrs(r.Context(), slog.LevelError, "AS lookup", errAttr(err))
		return ipinfoItem{code: ipatlas.CodeServiceUnavailable}
	}
	return ipinfoItem{value: toIPInfoAS(&as), charge: true}
}

func asErrorDetail(err error) string {
	var ie *ipatlas.Error
	if errors.As(err, &ie) {
		return ie.Message
	}
	return ""
}

// handleIPInfoSelf is GET /ipinfo/ and GET /ipinfo/json: the caller's own
// address (ipinfo's client asks the base URL for it).
func (s *api) handleIPInfoSelf(w *exchange, r *http.Request) error {
	if !w.client.IsValid() {
		return s.noAddress(r)
	}
	return s.ipinfoOne(w, r, w.client.String())
}

// handleIPInfo is GET /ipinfo/{what}: an address or an AS.
func (s *api) handleIPInfo(w *exchange, r *http.Request) error {
	return s.ipinfoOne(w, r, r.PathValue("what"))
}

// handleIPInfoField is GET /ipinfo/{what}/{field}: one field of an
// address's answer, as text and a newline (JSON for asn and privacy), or
// the whole answer for "json".
func (s *api) handleIPInfoField(w *exchange, r *http.Request) error {
	return s.ipinfoOne(w, r, r.PathValue("what")+"/"+r.PathValue("field"))
}

// ipinfoOne answers one item, charged as one location query.
func (s *api) ipinfoOne(w *exchange, r *http.Request, item string) error {
	m, err := s.ipinfoParams(w, r)
	if err != nil {
		return err
	}
	it := s.resolveIPInfo(r, item, m.lang)
	if it.code != "" {
		return s.uncharged(r.Context(), w, &m.meta, it.code, it.detail)
	}
	if it.charge {
		if err := s.chargeOne(r.Context(), w, r, &m.meta, m.lang); err != nil {
			return err
		}
		w.success = true
	}
	switch v := it.value.(type) {
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

// maxIPInfoBatchBytes bounds a batch body: 1,000 of the longest items
// (an IPv6 address and a field name, quoted, with a comma) take about
// 60 KB.
const maxIPInfoBatchBytes = 96 << 10

var errIPInfoBatchTooLarge = &bodyError{ipatlas.CodePayloadTooLarge,
	"the limit of a batch body is " + strconv.Itoa(maxIPInfoBatchBytes) + " bytes",
	"批量请求体上限为 " + strconv.Itoa(maxIPInfoBatchBytes) + " 字节"}

// handleIPInfoBatch is POST /ipinfo/batch: a JSON array of up to 1,000
// items ("8.8.8.8", "8.8.8.8/city", "AS15169"), answered as one object
// keyed by item. Each distinct item that needs a lookup is one query;
// they are charged together, and when the quota or the balance allows
// only some, the first ones (in request order) are answered and the
// others get ipinfo's error object, as the native batch does. When not
// one could be charged, the batch is refused as a single query would be.
// With ?filter=1, failed items and empty values are left out, as ipinfo
// does.
func (s *api) handleIPInfoBatch(w *exchange, r *http.Request) error {
	ctx := r.Context()
	w.Header()["Cache-Control"] = hdrNoStore
	m := metered{lang: requestLang(r), meta: identify(w)}
	var items []string
	buf, berr := readBodyLimit(w, r, maxIPInfoBatchBytes, errIPInfoBatchTooLarge)
	if berr == nil {
		if err := json.Unmarshal(buf.Bytes(), &items); err != nil {
			berr = &bodyError{ipatlas.CodeInvalidRequest, "the body must be a JSON array of strings", "请求体必须是字符串组成的 JSON 数组"}
		}
		putBuf(buf)
	}
	if berr == nil {
		berr = batchNoun{"the batch", "批量请求", "items", "项", "项"}.check(len(items), maxIPInfoBatch)
	}
	if berr != nil {
		return s.uncharged(ctx, w, &m.meta, berr.code, berr.detail(m.lang))
	}
	mm, err := s.ipinfoParams(w, r)
	if err != nil {
		return err
	}
	m.lang, m.meta = mm.lang, mm.meta

	out := make(map[string]any, len(items))
	var charged []string // distinct items to charge, in order
	pending := map[string]any{}
	for _, item := range items {
		if _, seen := out[item]; seen {
			continue
		}
		if _, seen := pending[item]; seen {
			continue
		}
		it := s.resolveIPInfo(r, item, m.lang)
		switch {
		case it.code != "":
			s.metrics.queries.WithLabelValues(string(it.code)).Inc()
			out[item] = ipinfoErrorOf(it.code, it.detail, m.lang)
		case it.charge:
			pending[item] = it.value
			charged = append(charged, item)
		default:
			out[item] = it.value
		}
	}
	granted := 0
	if len(charged) > 0 {
		var res account.Outcome
		var err error
		res, granted, err = s.chargeBatch(ctx, w, r, len(charged), &m.meta, m.lang)
		if err != nil {
			return err
		}
		for j, item := range charged {
			if j < granted {
				out[item] = pending[item]
				continue
			}
			code, detail := deniedCode(res, j-granted), ""
			if code == ipatlas.CodeRateLimitExceeded {
				detail = quotaSpent(m.lang, res.Limit, res.Reset)
			}
			s.metrics.queries.WithLabelValues(string(code)).Inc()
			out[item] = ipinfoErrorOf(code, detail, m.lang)
		}
		s.metrics.queries.WithLabelValues("success").Add(float64(granted))
	}
	if f := r.URL.Query().Get("filter"); f != "" && f != "0" && f != "false" {
		for k, v := range out {
			if _, failed := v.(*ipinfoError); failed || v == "" {
				delete(out, k)
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// ipinfoErrorOf is ipinfo's error body for a code: the code's text as the
// title, the whole text as the message.
func ipinfoErrorOf(code ipatlas.ErrorCode, detail string, lang ipatlas.Lang) *ipinfoError {
	return &ipinfoError{Status: code.HTTPStatus(), Code: code,
		Error: ipinfoErrorText{Title: code.Text(lang), Message: errorText(code, detail, lang)}}
}

// renderIPInfo answers the failures of the ipinfo shape in ipinfo's error
// body, with ipatlas's statuses: every one is outside 2xx, which ipinfo's
// clients report as an error (429 as ipinfo's quota error).
func (s *Server) renderIPInfo(w *exchange, r *http.Request, err error) {
	lang := w.langOf(r)
	code, detail := s.failureOf(r, err, lang)
	w.code = code
	writeJSON(w, code.HTTPStatus(), ipinfoErrorOf(code, detail, lang))
}

// isIPInfo reports whether a path is the ipinfo shape's.
func isIPInfo(path string) bool { return strings.HasPrefix(path, "/ipinfo/") || path == "/ipinfo" }
