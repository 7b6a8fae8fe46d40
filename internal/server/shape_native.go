package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
)

// The native shape: ipatlas's own answers to the metered query, as the
// envelope ({success, data | error, meta}; errors by renderAPI) and as
// plain text (one field; errors by renderText).
//
//   - POST /api/ip-query: one address in a JSON body;
//   - GET /api/lookup/{ip}: the same as a GET, with lang and fields as
//     query parameters, for tools that cannot POST (a browser's address
//     bar, a spreadsheet's web function, curl without a body);
//   - GET /api/lookup/{ip}/{field}: one field as plain text and a
//     newline, for shell scripts;
//   - POST /api/ip-query/batch: up to ipatlas.MaxBatchSize addresses;
//   - GET /api/asn/{asn}: one AS.
//
// The whole record (no fields) is the common answer: its JSON comes
// encoded from the engine (recordAppender) and the envelope is written
// around it by hand (ipatlas.AppendSuccess), byte for byte what
// encoding/json writes, without reflection or allocation, for the GET as
// for the POST.

// nativeShape is ipatlas's own answers, as the envelope, at every path
// no other shape holds: the public API's routes (routes.go).
func (s *api) nativeShape() shape {
	return shape{name: "native", routes: s.routes(), render: s.renderAPI}
}

// textShape is one field of the metered query as plain text, its failures
// a line of text too (renderText).
func (s *api) textShape() shape {
	return shape{name: "text", area: isLookupField, render: s.renderText, routes: []route{
		{pattern: "GET /api/lookup/{ip}/{field}", cors: true, k: s.handleLookupField}, // one field of the metered query, as text
	}}
}

// queryFields are the keys of the query body this server reads.
var queryFields = []string{"ip", "lang", "fields"}

var queryPool = sync.Pool{New: func() any { return new(ipatlas.QueryRequest) }}

// nativeQuery is what a native query asks for besides its address.
type nativeQuery struct {
	lang   ipatlas.Lang
	fields ipatlas.FieldSet // all, unless the request names some
}

// asksHost reports whether the fields name the host name (the whole
// record has none: a PTR round trip must not slow every answer).
func (q *nativeQuery) asksHost() bool {
	return !q.fields.All() && (q.fields.Has("hostname") || q.fields.Has("hostname_confirmed"))
}

// handleQuery is POST /api/ip-query.
func (s *api) handleQuery(w *exchange, r *http.Request, cr credential) error {
	// The request escapes to the heap through the decoder; reusing it
	// keeps the "fields" list from costing the common path anything.
	req := queryPool.Get().(*ipatlas.QueryRequest)
	defer func() { *req = ipatlas.QueryRequest{}; queryPool.Put(req) }()
	q := nativeQuery{lang: requestLang(r)} // until the body names one
	buf, f := readBody(w, r)
	if f == nil {
		f = decodeQuery(buf.Bytes(), req)
		if f == nil {
			q.lang, f = bodyLang(w, req.Lang)
		}
		if f == nil {
			q.fields, f = parseFields(req.Fields)
		}
		if f == nil && req.IP == "" && !hasStringMember(buf.Bytes(), "ip") {
			f = errIPMissing
		}
		putBuf(buf)
	}
	return s.nativeOne(w, r, cr, f, &q, addrItem(req.IP, q.lang))
}

// handleLookup is GET /api/lookup/{ip}.
func (s *api) handleLookup(w *exchange, r *http.Request, cr credential) error {
	q, f := nativeParams(w, r)
	return s.nativeOne(w, r, cr, f, &q, pathItem(r.PathValue("ip"), q.lang))
}

// nativeParams reads the lang and fields of a GET query: lang as the
// body's "lang" (absent, English), fields as a comma-separated list (or
// repeated parameters). lang given twice is refused, like a body's
// duplicate keys.
func nativeParams(w *exchange, r *http.Request) (nativeQuery, *failure) {
	w.Header()["Cache-Control"] = hdrNoStore
	q := nativeQuery{lang: requestLang(r)}
	var f *failure
	if r.URL.RawQuery != "" {
		vals, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			f = errBadQuery
		}
		if f == nil {
			f = queryLang(w, vals, &q.lang)
		}
		if f == nil {
			var names []string
			for _, v := range vals["fields"] {
				for n := range strings.SplitSeq(v, ",") {
					if n = strings.TrimSpace(n); n != "" {
						names = append(names, n)
					}
				}
			}
			q.fields, f = parseFields(names)
		}
	} else {
		w.setLang(ipatlas.English)
		q.lang = ipatlas.English
	}
	return q, f
}

// nativeOne answers one address as the envelope, unless the request's
// own checks refused it (f).
func (s *api) nativeOne(w *exchange, r *http.Request, cr credential, f *failure, q *nativeQuery, it item) error {
	it.host = q.asksHost()
	var ans *answerBuf
	appender, encoded := s.deps.Geo.(recordAppender)
	if encoded && q.fields.All() {
		ans = answerPool.Get().(*answerBuf)
		defer putAnswer(ans)
	}
	res, meta, err := s.one(w, r, cr, f, q.lang, it, func(_ int, it item) resolved {
		if it.fail != nil {
			return failed(it)
		}
		if ans != nil {
			var err error
			if ans.data, err = appender.AppendJSON(ans.data[:0], it.addr, q.lang); err != nil {
				return resolved{fail: s.lookupFailed(r.Context(), err)}
			}
			return resolved{v: ans}
		}
		return s.nativeRecord(r.Context(), it, q)
	})
	if err != nil {
		return err
	}
	switch v := res.v.(type) {
	case *answerBuf:
		v.body = ipatlas.AppendSuccess(v.body[:0], v.data, meta)
		writeBody(w, http.StatusOK, v.body)
	case *ipatlas.Record:
		writeJSON(w, http.StatusOK, &ipatlas.Envelope{Success: true, Data: v, Meta: meta})
	case *ipatlas.PartialRecord:
		writeJSON(w, http.StatusOK, &partialEnvelope{Success: true, Data: v, Meta: meta})
	}
	return nil
}

// nativeRecord is an address's record, or the fields of it q names, with
// the host name when they name it (ctx bounds its lookup); a selection of
// fields that are all empty holds nothing looked up.
func (s *api) nativeRecord(ctx context.Context, it item, q *nativeQuery) resolved {
	rec, f := s.lookupRecord(ctx, &it, q.lang)
	if f != nil {
		return resolved{fail: f}
	}
	if q.fields.All() {
		return resolved{v: rec}
	}
	if q.asksHost() {
		s.fillHostname(ctx, &it, rec, q.fields.Has("hostname_confirmed"))
	}
	empty := true
	for _, name := range q.fields.Names() {
		if name == "ip" {
			continue
		}
		if rec.Text(name) != "" || (name == "privacy" && rec.Privacy != nil) || (name == "hostname_confirmed" && rec.HostnameConfirmed != nil) {
			empty = false
			break
		}
	}
	return resolved{v: q.fields.Partial(rec), free: empty}
}

// handleLookupField is GET /api/lookup/{ip}/{field}: the field's value
// alone, as plain text and a newline ("" when the data has none, which
// costs nothing), so that `$(curl -s .../8.8.8.8/city)` is the city.
// privacy, an object, is its JSON ("null" when the privacy data is not
// loaded). Failures are plain text too (renderText), with the statuses of
// the JSON query.
func (s *api) handleLookupField(w *exchange, r *http.Request, cr credential) error {
	name := r.PathValue("field")
	q, f := nativeParams(w, r)
	if _, ok := ipatlas.FieldNamed(name); !ok {
		// Before the parameters: a misspelt field is the likelier mistake.
		f = bodyFail(ipatlas.CodeInvalidRequest, fieldNameText(name, ipatlas.English), fieldNameText(name, ipatlas.Chinese))
	}
	it := pathItem(r.PathValue("ip"), q.lang)
	it.host = name == "hostname" || name == "hostname_confirmed"
	res, _, err := s.one(w, r, cr, f, q.lang, it, func(_ int, it item) resolved {
		if it.fail != nil {
			return failed(it)
		}
		rec, f := s.lookupRecord(r.Context(), &it, q.lang)
		if f != nil {
			return resolved{fail: f}
		}
		if it.host {
			s.fillHostname(r.Context(), &it, rec, name == "hostname_confirmed")
		}
		v := fieldText(rec, name)
		return resolved{v: v, free: v == "" || v == "null" || name == "ip"}
	})
	if err != nil {
		return err
	}
	writeText(w, http.StatusOK, res.v.(string)+"\n")
	return nil
}

// fieldNameText is the detail of an unknown field in a lookup's path.
func fieldNameText(name string, lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return unknownFieldTextZh(name)
	}
	return "unknown field " + strconv.Quote(ipatlas.ShortFieldName(echo(name))) + "; fields: " + strings.Join(ipatlas.RecordFields(), ", ")
}

// fieldText is a record's field as GET /api/lookup/{ip}/{field} writes it:
// strings as they are, coordinates in the shortest decimal that reads
// back exactly, the route in CIDR form, privacy as JSON. An unset value
// is "".
func fieldText(rec *ipatlas.Record, name string) string {
	if name == "privacy" {
		b, _ := json.Marshal(rec.Privacy) // nil: "null", unknown flags
		return string(b)
	}
	return rec.Text(name)
}

// isLookupField reports whether a path is GET /api/lookup/{ip}/{field}'s.
func isLookupField(path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/lookup/")
	return ok && strings.Count(rest, "/") == 1
}

// maxBatchBodyBytes bounds a batch body. 100 of the longest address texts
// (45 bytes, quoted, with a comma) take under 5 KiB; 16 KiB leaves room
// for whitespace, "lang" and a "fields" list naming every field.
const maxBatchBodyBytes = 16 << 10

// batchItem is ipatlas.BatchItem as the server writes it: Data is a
// *ipatlas.Record, or a *ipatlas.PartialRecord when the body names fields.
type batchItem struct {
	Success bool              `json:"success"`
	IP      string            `json:"ip"`
	Data    any               `json:"data,omitempty"`
	Error   string            `json:"error,omitempty"`
	Code    ipatlas.ErrorCode `json:"code,omitempty"`
}

type batchEnvelope struct {
	Success bool              `json:"success"`
	Data    []batchItem       `json:"data"`
	Meta    ipatlas.BatchMeta `json:"meta"`
}

// handleBatch is POST /api/ip-query/batch: up to ipatlas.MaxBatchSize
// addresses in one request, each answered as a single query would be, in
// order, and charged together (query.go's batch: one Meter charge, one
// place in a group commit, one ledger entry). The answer is 200 with one
// item per address unless the caller can pay for none: then the batch
// gets the error the first of them would get alone, 429 with Retry-After
// or 402.
func (s *api) handleBatch(w *exchange, r *http.Request, cr credential) error {
	var req ipatlas.BatchRequest
	lang := requestLang(r)
	buf, f := readBodyLimit(w, r, maxBatchBodyBytes, errBatchTooLarge, false)
	if f == nil {
		f = decodeJSON(buf.Bytes(), &req, nil)
		putBuf(buf)
	}
	var q nativeQuery
	if f == nil {
		if q.lang, f = bodyLang(w, req.Lang); f == nil {
			lang = q.lang
			q.fields, f = parseFields(req.Fields)
		}
	}
	if f == nil {
		f = checkBatchSize(len(req.IPs), req.IPs == nil)
	}
	var items []item
	if f == nil {
		items = make([]item, len(req.IPs))
		for i, ip := range req.IPs {
			items[i] = addrItem(ip, lang)
			items[i].host = q.asksHost()
		}
	}
	dns, cancel := context.WithTimeout(r.Context(), batchDNSBudget)
	defer cancel()
	res, err := s.batch(w, r, cr, f, items, func(_ int, it item) resolved {
		if it.fail != nil {
			return failed(it)
		}
		return s.nativeRecord(dns, it, &q)
	})
	if err != nil {
		return err
	}
	out := make([]batchItem, len(items))
	for i, rr := range res.items {
		if rr.fail != nil {
			out[i] = batchItem{IP: req.IPs[i], Error: errorText(rr.fail.code, rr.fail.detail(lang), lang), Code: rr.fail.code}
			continue
		}
		out[i] = batchItem{Success: true, IP: req.IPs[i], Data: rr.v}
	}
	writeJSON(w, http.StatusOK, &batchEnvelope{Success: true, Data: out, Meta: ipatlas.BatchMeta{Meta: res.meta, Charged: res.charged}})
	return nil
}

// checkBatchSize refuses a missing, empty or too long "ips" list.
func checkBatchSize(n int, missing bool) *failure {
	if missing {
		return bodyFail(ipatlas.CodeInvalidRequest, `the field "ips" is required`, `缺少必填字段 "ips"`)
	}
	return batchNoun{`"ips"`, `"ips" `, "addresses", "个地址", "个"}.check(n, ipatlas.MaxBatchSize)
}

// batchNoun names a batch's list and its items in both languages, for the
// errors of its size: the list (`"ips"`), its items ("addresses") and, in
// Chinese, the items with their measure word ("个地址") and the measure
// word alone ("个").
type batchNoun struct{ list, listZh, items, itemsZh, unitZh string }

// check refuses an empty batch, or one of more than limit items.
func (b batchNoun) check(n, limit int) *failure {
	l := strconv.Itoa(limit)
	switch {
	case n == 0:
		return bodyFail(ipatlas.CodeInvalidRequest,
			b.list+" is empty; give 1 to "+l+" "+b.items,
			b.listZh+"为空，请提供 1 到 "+l+" "+b.itemsZh)
	case n > limit:
		return bodyFail(ipatlas.CodeTooManyItems,
			strconv.Itoa(n)+" "+b.items+"; the limit is "+l,
			strconv.Itoa(n)+" "+b.itemsZh+"，上限为 "+l+" "+b.unitZh)
	}
	return nil
}

// handleAS is GET /api/asn/{asn}: what the data knows of one AS (its
// name, country, announced prefixes a page at a time, and whether it is a
// hosting network), metered like the location query.
func (s *api) handleAS(w *exchange, r *http.Request, cr credential) error {
	w.Header()["Cache-Control"] = hdrNoStore
	lang := requestLang(r)
	q, qerr := url.ParseQuery(r.URL.RawQuery)
	var f *failure
	if qerr != nil {
		f = errBadQuery
	}
	if f == nil {
		f = queryLang(w, q, &lang)
	}
	page := 1
	if f == nil {
		page, f = pageParam(q)
	}
	res, meta, err := s.one(w, r, cr, f, lang, asItem(r.PathValue("asn"), lang), func(_ int, it item) resolved {
		if it.fail != nil {
			return failed(it)
		}
		as, f := s.lookupAS(r.Context(), &it, lang, page)
		if f != nil {
			return resolved{fail: f}
		}
		return resolved{v: as}
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &ipatlas.ASEnvelope{Success: true, Data: res.v.(*ipatlas.AS), Meta: meta})
	return nil
}

// maxPage bounds the page parameter: no AS has a millionth page.
const maxPage = 1_000_000

// pageParam reads the page of an AS's prefixes: 1 when absent.
func pageParam(q url.Values) (int, *failure) {
	vs := q["page"]
	if len(vs) == 0 {
		return 1, nil
	}
	n, err := strconv.Atoi(vs[0])
	if len(vs) > 1 || err != nil || n < 1 || n > maxPage {
		return 1, bodyFail(ipatlas.CodeInvalidRequest,
			`the parameter "page" must be one whole number from 1 to `+strconv.Itoa(maxPage),
			`参数 "page" 必须是 1 到 `+strconv.Itoa(maxPage)+` 之间的一个整数`)
	}
	return n, nil
}

// errBadQuery is a query string that does not parse (a bad %-escape).
var errBadQuery = bodyFail(ipatlas.CodeInvalidRequest, "the query string is malformed", "查询字符串格式错误")

// queryLang reads the lang query parameter into *lang. Absent, the
// answer is in English, as a query body without "lang" is; given twice
// it is refused, since which one counts would be a guess (as with a
// body's duplicate keys).
func queryLang(w *exchange, q url.Values, lang *ipatlas.Lang) *failure {
	vs := q["lang"]
	if len(vs) > 1 {
		return bodyFail(ipatlas.CodeInvalidRequest,
			`the parameter "lang" is given more than once`, `参数 "lang" 出现了不止一次`)
	}
	raw := ""
	if len(vs) == 1 {
		raw = vs[0]
	}
	l, f := bodyLang(w, raw)
	if f != nil {
		return f
	}
	*lang = l
	return nil
}

// bodyLang reads the lang a request names, and tells the exchange (for a
// 500 after a panic).
func bodyLang(w *exchange, raw string) (ipatlas.Lang, *failure) {
	l, ok := ipatlas.ParseLang(raw)
	if !ok {
		v := strconv.Quote(echo(raw))
		return l, bodyFail(ipatlas.CodeInvalidRequest,
			"lang "+v+" is not supported; use \"en\" or \"zh\"",
			"不支持语言 "+v+"，请使用 \"en\" 或 \"zh\"")
	}
	w.setLang(l)
	return l, nil
}

// errIPMissing is a query body without "ip" (or with "ip": null). "ip": ""
// is an address that is not one: InvalidIP.
var errIPMissing = bodyFail(ipatlas.CodeInvalidRequest, `the field "ip" is required`, `缺少必填字段 "ip"`)

// recordAppender is an engine that writes a record's JSON itself
// (geo.Engine.AppendJSON): the very bytes encoding/json writes for the
// record Lookup returns, written from the engine's cached parts with no
// reflection and no allocation.
type recordAppender interface {
	AppendJSON(dst []byte, addr netip.Addr, lang ipatlas.Lang) ([]byte, error)
}

// answerBuf holds a query's encoded record and its answer's body, so that
// a success allocates neither.
type answerBuf struct{ data, body []byte }

var answerPool = sync.Pool{New: func() any { return new(answerBuf) }}

// putAnswer returns b to the pool, unless a rare huge answer made it big.
func putAnswer(b *answerBuf) {
	if cap(b.data)+cap(b.body) <= 64<<10 {
		answerPool.Put(b)
	}
}

// decodeQuery decodes a query body into req as decodeJSON does. The
// common body, an object of plain strings under exactly "ip" and "lang"
// (no escapes, valid UTF-8, no other member), is read directly: what
// encoding/json decodes it to is then plain, and reading it so spares the
// reflection and most of the allocations of every query. Any other body
// goes to decodeJSON, which decodes it and says what is wrong with it.
func decodeQuery(data []byte, req *ipatlas.QueryRequest) *failure {
	if !json.Valid(data) {
		return decodeJSON(data, req, nil)
	}
	var (
		m        members
		ip, lang []byte
		seen     [2]bool // "ip", "lang"
	)
	if !m.start(data) {
		return decodeJSON(data, req, nil)
	}
	for {
		key, v, ok, err := m.next()
		if err != nil {
			return decodeJSON(data, req, nil)
		}
		if !ok {
			break
		}
		if v >= len(data) || data[v] != '"' {
			return decodeJSON(data, req, nil)
		}
		val := data[v+1 : skipString(data, v)-1]
		if bytes.IndexByte(val, '\\') >= 0 || !utf8.Valid(val) {
			return decodeJSON(data, req, nil)
		}
		i := -1
		switch string(key) {
		case "ip":
			i, ip = 0, val
		case "lang":
			i, lang = 1, val
		}
		if i < 0 || seen[i] {
			return decodeJSON(data, req, nil)
		}
		seen[i] = true
	}
	req.IP = string(ip)
	switch string(lang) { // the languages there are, without an allocation
	case "":
		req.Lang = ""
	case "en":
		req.Lang = "en"
	case "zh":
		req.Lang = "zh"
	default:
		req.Lang = string(lang)
	}
	return nil
}
