package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// queryFields are the keys of the query body this server reads.
var queryFields = []string{"ip", "lang", "fields"}

// caller is who a request to a route that takes a key authenticated as;
// the router authenticates the key once per request (Server.limit).
type caller struct {
	key  account.Key
	acct account.Account
	err  error // nil: identified; errNoKey, account.ErrBadKey or a store failure
}

var errNoKey = errors.New("no bearer key")

var queryPool = sync.Pool{New: func() any { return new(ipatlas.QueryRequest) }}

// identified reports whether the key was accepted. The zero caller (a
// route that takes no key) is not identified.
func (c *caller) identified() bool { return c.err == nil && c.key.ID != "" }

// bearer extracts the key of an "Authorization: Bearer <key>" header. The
// scheme is case-insensitive (RFC 9110 section 11.1).
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "Bearer ") {
		return "", false
	}
	k := strings.TrimSpace(h[7:])
	return k, k != ""
}

// identify starts a metered request's meta: logged in with the cached
// balance when the router accepted the key.
func identify(w *exchange) ipatlas.Meta {
	meta := ipatlas.Meta{IsAPIRequest: true}
	if w.caller.identified() {
		meta.IsLoggedIn = true
		meta.CurrentCredits = w.caller.acct.Credits
	}
	return meta
}

// uncharged is a metered request's failure before its charge. An
// identified caller gets its fresh standing (balance and quota headers)
// from the store: two indexed reads, only on this path.
func (s *api) uncharged(ctx context.Context, w *exchange, meta *ipatlas.Meta, code ipatlas.ErrorCode, detail string) error {
	if w.caller.identified() {
		s.standing(ctx, w, &w.caller, meta)
	}
	return &apiError{code: code, detail: detail, meta: *meta}
}

// bodyLang reads the lang a body names, and tells the exchange (for a 500
// after a panic).
func bodyLang(w *exchange, raw string) (ipatlas.Lang, *bodyError) {
	l, ok := ipatlas.ParseLang(raw)
	if !ok {
		return l, &bodyError{ipatlas.CodeInvalidRequest,
			"lang " + strconv.Quote(truncate(raw, 32)) + " is not supported; use \"en\" or \"zh\"",
			"不支持语言 " + strconv.Quote(truncate(raw, 32)) + "，请使用 \"en\" 或 \"zh\""}
	}
	w.setLang(l)
	return l, nil
}

// keyError is the failure of a request whose key was not accepted: 401
// for a missing or bad key, 503 when the store could not say.
func (s *api) keyError(w *exchange, r *http.Request, err error) error {
	if errors.Is(err, errNoKey) || errors.Is(err, account.ErrBadKey) {
		w.Header()["Www-Authenticate"] = hdrBearer
		return apiFail(ipatlas.CodeInvalidAPIKey, "")
	}
	s.log.LogAttrs(r.Context(), slog.LevelWarn, "authenticating", errAttr(err))
	return apiFail(ipatlas.CodeServiceUnavailable, "")
}

// meteredBody says how a metered route reads its body: the size limit and
// the error that names it, where to decode it, and where the decoded body
// keeps its lang and fields.
type meteredBody struct {
	limit    int64
	tooLarge *bodyError
	dst      any
	lang     *string
	fields   *[]string
	decode   func(data []byte) *bodyError // decodes into dst; nil: decodeJSON
}

// metered is a metered request that passed the checks of admit.
type metered struct {
	meta   ipatlas.Meta
	lang   ipatlas.Lang
	fields ipatlas.FieldSet // all, unless the body names some
}

// admit runs the checks every metered route shares, each once and in this
// order: the body (type, size, JSON), its lang, its fields, the route's
// own check (check, of the decoded body; raw is the body as sent), then
// the key (authenticated by the router). A request that fails one gets
// its error, uncharged. The addresses are checked afterwards, one
// by one, with locate.
func (s *api) admit(w *exchange, r *http.Request, b meteredBody, check func(raw []byte) *bodyError) (m metered, err error) {
	ctx := r.Context()
	m.lang = requestLang(r) // until the body names one
	m.meta = identify(w)
	buf, berr := readBodyLimit(w, r, b.limit, b.tooLarge)
	if berr == nil {
		if b.decode != nil {
			berr = b.decode(buf.Bytes())
		} else {
			berr = decodeJSON(buf.Bytes(), b.dst, nil)
		}
		if berr == nil {
			var l ipatlas.Lang
			if l, berr = bodyLang(w, *b.lang); berr == nil {
				m.lang = l
				m.fields, berr = parseFields(*b.fields)
			}
		}
		if berr == nil {
			berr = check(buf.Bytes())
		}
		putBuf(buf)
	}
	if berr != nil {
		return m, s.uncharged(ctx, w, &m.meta, berr.code, berr.detail(m.lang))
	}
	if !w.caller.identified() {
		return m, s.keyError(w, r, w.caller.err)
	}
	return m, nil
}

// locate checks one address of a metered request and looks it up. A
// failure comes back as its code and detail (code "" on success), for
// the route to answer alone or as one item of a batch.
func (s *api) locate(ctx context.Context, ip string, lang ipatlas.Lang) (ipatlas.Record, ipatlas.ErrorCode, string) {
	addr, code, detail := checkAddr(ip, lang)
	if code != "" {
		return ipatlas.Record{}, code, detail
	}
	rec, err := s.deps.Geo.Lookup(addr, lang)
	if err != nil {
		return ipatlas.Record{}, s.lookupFailed(ctx, err), ""
	}
	return rec, "", ""
}

// checkAddr parses one address of a metered request and refuses the
// special-purpose ones, with the code and detail of the refusal (code ""
// when the address may be looked up).
func checkAddr(ip string, lang ipatlas.Lang) (netip.Addr, ipatlas.ErrorCode, string) {
	addr, err := netaddr.Parse(ip)
	if err != nil {
		var pe *netaddr.ParseError
		detail := ""
		if errors.As(err, &pe) {
			detail = pe.ReasonIn(lang)
		}
		return addr, ipatlas.CodeInvalidIP, detail
	}
	if b, private := netaddr.Classify(addr); private {
		return addr, ipatlas.CodePrivateIP, b.Why(addr, lang)
	}
	return addr, "", ""
}

// lookupFailed logs a failure of the engine and is its code: the data is
// unavailable (closed, or a file that cannot be read), not the request wrong.
func (s *api) lookupFailed(ctx context.Context, err error) ipatlas.ErrorCode {
	s.log.LogAttrs(ctx, slog.LevelError, "geo lookup", errAttr(err))
	return ipatlas.CodeServiceUnavailable
}

// recordAppender is an engine that writes a record's JSON itself
// (geo.Engine.AppendJSON): the very bytes encoding/json writes for the
// record Lookup returns, from a cache of encoded records, so a query
// writes only its address and the route and privacy flags that belong
// to it.
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
func decodeQuery(data []byte, req *ipatlas.QueryRequest) *bodyError {
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

// errIPMissing is a query body without "ip" (or with "ip": null). "ip": ""
// is an address that is not one: InvalidIP.
var errIPMissing = &bodyError{ipatlas.CodeInvalidRequest, `the field "ip" is required`, `缺少必填字段 "ip"`}

// handleQuery is POST /api/ip-query. The checks run in this order: the
// body and the key (admit), then the address, then the quota, then the
// credits. Only the meter's commit makes a success, and every failure
// before it is free.
func (s *api) handleQuery(w *exchange, r *http.Request) error {
	ctx := r.Context()
	// The request escapes to the heap through the decoder; reusing it
	// keeps the "fields" list from costing the common path anything.
	req := queryPool.Get().(*ipatlas.QueryRequest)
	defer func() { *req = ipatlas.QueryRequest{}; queryPool.Put(req) }()
	m, err := s.admit(w, r, meteredBody{
		limit: maxBodyBytes, tooLarge: errTooLarge,
		dst: req, lang: &req.Lang, fields: &req.Fields,
		decode: func(data []byte) *bodyError { return decodeQuery(data, req) },
	}, func(raw []byte) *bodyError {
		if req.IP == "" && !hasStringMember(raw, "ip") {
			return errIPMissing
		}
		return nil
	})
	if err != nil {
		return err
	}
	c, meta, lang, fields := &w.caller, m.meta, m.lang, m.fields

	addr, code, detail := checkAddr(req.IP, lang)
	if code != "" {
		return s.uncharged(ctx, w, &meta, code, detail)
	}
	// The whole record (no "fields") is the common answer: its JSON comes
	// encoded from the engine and the envelope is written around it by
	// hand (ipatlas.AppendSuccess), byte for byte what encoding/json
	// writes, without reflection or allocation. A selection of fields
	// goes through the record, which is allocated only then: a local
	// would escape to the heap on every query through the encoders below.
	var (
		rec *ipatlas.Record
		ans *answerBuf
	)
	appender, encoded := s.deps.Geo.(recordAppender)
	encoded = encoded && fields.All()
	if encoded {
		ans = answerPool.Get().(*answerBuf)
		defer putAnswer(ans)
		ans.data, err = appender.AppendJSON(ans.data[:0], addr, lang)
	} else {
		rec = new(ipatlas.Record)
		*rec, err = s.deps.Geo.Lookup(addr, lang)
	}
	if err != nil {
		return s.uncharged(ctx, w, &meta, s.lookupFailed(ctx, err), "")
	}

	out, err := s.deps.Meter.Charge(ctx, c.key)
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "charging", errAttr(err))
		}
		// Nothing is known to be charged; the cached balance is the best
		// cheap answer and the store is likely down anyway.
		return &apiError{code: ipatlas.CodeServiceUnavailable, meta: meta}
	}
	switch out.Deny {
	case account.DenyNone:
		if !out.Granted {
			break
		}
		s.rateHeaders(w, out.Limit, out.Remaining, out.Reset)
		meta.CurrentCredits = out.Credits
		w.success = true
		switch {
		case encoded:
			ans.body = ipatlas.AppendSuccess(ans.body[:0], ans.data, meta)
			writeBody(w, http.StatusOK, ans.body)
		case fields.All():
			writeJSON(w, http.StatusOK, &ipatlas.Envelope{Success: true, Data: rec, Meta: meta})
		default:
			writeJSON(w, http.StatusOK, &partialEnvelope{Success: true, Data: fields.Partial(rec), Meta: meta})
		}
		return nil
	case account.DenyKey:
		// Revoked or rotated between authentication and charge.
		return s.keyError(w, r, account.ErrBadKey)
	}
	s.rateHeaders(w, out.Limit, out.Remaining, out.Reset)
	meta.CurrentCredits = out.Credits
	if out.Deny == account.DenyCredits {
		return &apiError{code: ipatlas.CodeInsufficientCredits, meta: meta}
	}
	w.Header()["Retry-After"] = []string{strconv.FormatInt(s.secondsUntil(out.Reset), 10)}
	return &apiError{code: ipatlas.CodeRateLimitExceeded, detail: quotaSpent(lang, out.Limit, out.Reset), meta: meta}
}

// quotaSpent is the detail of a 429 for a spent monthly quota. It keeps
// the code of the burst limit's 429 but says which limit it is and when it
// lifts, since waiting seconds will not help.
func quotaSpent(lang ipatlas.Lang, limit int64, reset time.Time) string {
	at := reset.UTC().Format("2006-01-02 15:04 MST")
	if lang == ipatlas.Chinese {
		return "本月 " + strconv.FormatInt(limit, 10) + " 次查询的额度已用完，将于 " + at + " 重置"
	}
	queries := " queries"
	if limit == 1 {
		queries = " query"
	}
	return "the monthly quota of " + strconv.FormatInt(limit, 10) + queries + " is used up; it resets at " + at
}

// standing refreshes an identified caller's balance and sets the quota
// headers from the store. On a store failure it leaves the cached balance
// and sends no quota headers rather than failing the answer.
func (s *api) standing(ctx context.Context, w http.ResponseWriter, c *caller, meta *ipatlas.Meta) {
	store := s.deps.Accounts.Store
	now := s.now()
	a, err := store.Account(ctx, c.acct.ID)
	if err != nil {
		return
	}
	used, err := store.Usage(ctx, c.key.ID, account.Period(now))
	if err != nil {
		return
	}
	meta.CurrentCredits = a.Credits
	limit := account.Limit(a.Tier, a.CustomLimit)
	s.rateHeaders(w, limit, max(0, limit-used), account.PeriodReset(now))
}

// rateHeaders sets the quota headers in the IETF draft's spelling
// (draft-ietf-httpapi-ratelimit-headers-07): RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset, in seconds from now. There is no
// X-RateLimit-* copy: under that name some services send the reset as a
// Unix time, so a client could read it either way, and each copy costs
// every answer three header entries.
func (s *Server) rateHeaders(w http.ResponseWriter, limit, remaining int64, reset time.Time) {
	// Every metered answer carries these, so they are built with two
	// allocations: the three numbers in one string, and one array whose
	// elements back the three header values (net/http only reads them).
	var buf [64]byte
	b := strconv.AppendInt(buf[:0], limit, 10)
	i := len(b)
	b = strconv.AppendInt(b, remaining, 10)
	j := len(b)
	b = strconv.AppendInt(b, s.secondsUntil(reset), 10)
	nums := string(b)
	v := &[3]string{nums[:i], nums[i:j], nums[j:]}
	l, rem, rs := v[0:1:1], v[1:2:2], v[2:3:3]
	h := w.Header()
	h["Ratelimit-Limit"] = l
	h["Ratelimit-Remaining"] = rem
	h["Ratelimit-Reset"] = rs
}

// secondsUntil rounds up, so that a client waiting that long finds the
// month changed; at least 1.
func (s *Server) secondsUntil(t time.Time) int64 {
	d := t.Sub(s.now())
	return max(1, int64(math.Ceil(d.Seconds())))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
