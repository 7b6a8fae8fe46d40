package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// GET /api/lookup/{ip} is the location query for tools that cannot POST
// (a browser's address bar, a spreadsheet's web function, curl without a
// body): the same checks, charge and envelope as POST /api/ip-query, with
// lang and fields as query parameters. GET /api/lookup/{ip}/{field}
// answers one field as plain text, for shell scripts. The paths live
// apart from /api/ip/ (which holds myip and me) and /api/ip-query/ (which
// holds batch), where a wildcard would shadow a fixed path or be
// shadowed by it.

// queryParams reads the lang and fields of a GET query: lang as the body's
// "lang" (absent, English), fields as a comma-separated list (or repeated
// parameters). lang given twice is refused, like a body's duplicate keys.
// lang is the language of an error until the parameters name one.
func queryParams(w *exchange, q url.Values, lang ipatlas.Lang) (ipatlas.Lang, ipatlas.FieldSet, *bodyError) {
	if berr := queryLang(w, q, &lang); berr != nil {
		return lang, 0, berr
	}
	var names []string
	for _, v := range q["fields"] {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	fields, berr := parseFields(names)
	return lang, fields, berr
}

// admitGET runs the checks of a metered GET, in the order of admit's:
// the parameters, then the key. lang is the language of the errors
// until the parameters name one.
func (s *api) admitGET(w *exchange, r *http.Request, lang ipatlas.Lang) (metered, error) {
	w.Header()["Cache-Control"] = hdrNoStore
	m := metered{lang: lang, meta: identify(w)}
	var berr *bodyError
	m.lang, m.fields, berr = queryParams(w, r.URL.Query(), lang)
	if berr != nil {
		return m, s.uncharged(r.Context(), w, &m.meta, berr.code, berr.detail(m.lang))
	}
	if !w.caller.identified() {
		return m, s.keyError(w, r, w.caller.err)
	}
	return m, nil
}

// chargeOne charges one query to the caller's key. On a grant it sets the
// quota headers and the balance in meta and returns nil; otherwise the
// error the location query answers: 402, 429 with Retry-After, 401 for a
// key revoked since it authenticated, 503 when the store cannot say.
func (s *api) chargeOne(ctx context.Context, w *exchange, r *http.Request, meta *ipatlas.Meta, lang ipatlas.Lang) error {
	out, err := s.deps.Meter.Charge(ctx, w.caller.key)
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "charging", errAttr(err))
		}
		return &apiError{code: ipatlas.CodeServiceUnavailable, meta: *meta}
	}
	if out.Deny == account.DenyKey {
		return s.keyError(w, r, account.ErrBadKey)
	}
	s.rateHeaders(w, out.Limit, out.Remaining, out.Reset)
	meta.CurrentCredits = out.Credits
	switch {
	case out.Deny == account.DenyNone && out.Granted:
		return nil
	case out.Deny == account.DenyCredits:
		return &apiError{code: ipatlas.CodeInsufficientCredits, meta: *meta}
	}
	w.Header()["Retry-After"] = []string{strconv.FormatInt(s.secondsUntil(out.Reset), 10)}
	return &apiError{code: ipatlas.CodeRateLimitExceeded, detail: quotaSpent(lang, out.Limit, out.Reset), meta: *meta}
}

// chargeBatch charges n queries to the caller's key at once. It sets the
// quota headers and meta's balance and returns the outcome and how many
// were granted, the first ones in order; the caller answers the others
// with deniedCode. When none could be granted, or the store cannot say,
// it returns the failure to answer the whole batch with, which charged
// nothing.
func (s *api) chargeBatch(ctx context.Context, w *exchange, r *http.Request, n int, meta *ipatlas.Meta, lang ipatlas.Lang) (account.Outcome, int, error) {
	out, err := s.deps.Meter.ChargeN(ctx, w.caller.key, int64(n))
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "charging", errAttr(err))
		}
		return out, 0, &apiError{code: ipatlas.CodeServiceUnavailable, meta: *meta}
	}
	if out.Deny == account.DenyKey {
		return out, 0, s.keyError(w, r, account.ErrBadKey) // revoked or rotated since authentication
	}
	s.rateHeaders(w, out.Limit, out.Remaining, out.Reset)
	meta.CurrentCredits = out.Credits
	granted := int(out.GrantedN)
	if granted == 0 {
		code := deniedCode(out, 0)
		s.metrics.queries.WithLabelValues(string(code)).Add(float64(n))
		detail := ""
		if code == ipatlas.CodeRateLimitExceeded {
			w.Header()["Retry-After"] = []string{strconv.FormatInt(s.secondsUntil(out.Reset), 10)}
			detail = quotaSpent(lang, out.Limit, out.Reset)
		}
		return out, 0, &apiError{code: code, detail: detail, meta: *meta}
	}
	return out, granted, nil
}

// lookupOne is one metered lookup of ip: the address's checks, then the
// charge. Every failure is free.
func (s *api) lookupOne(w *exchange, r *http.Request, ip string, m *metered) (ipatlas.Record, error) {
	ctx := r.Context()
	rec, code, detail := s.locate(ctx, ip, m.lang)
	if code != "" {
		return rec, s.uncharged(ctx, w, &m.meta, code, detail)
	}
	if err := s.chargeOne(ctx, w, r, &m.meta, m.lang); err != nil {
		return rec, err
	}
	w.success = true
	return rec, nil
}

// handleLookup is GET /api/lookup/{ip}.
func (s *api) handleLookup(w *exchange, r *http.Request) error {
	m, err := s.admitGET(w, r, requestLang(r))
	if err != nil {
		return err
	}
	rec, err := s.lookupOne(w, r, r.PathValue("ip"), &m)
	if err != nil {
		return err
	}
	if m.fields.All() {
		writeJSON(w, http.StatusOK, &ipatlas.Envelope{Success: true, Data: &rec, Meta: m.meta})
	} else {
		writeJSON(w, http.StatusOK, &partialEnvelope{Success: true, Data: m.fields.Partial(&rec), Meta: m.meta})
	}
	return nil
}

// handleLookupField is GET /api/lookup/{ip}/{field}: the field's value
// alone, as plain text and a newline ("" when the data has none), so
// that `$(curl -s .../8.8.8.8/city)` is the city. privacy, an object, is
// its JSON ("null" when the privacy data is not loaded). Failures are
// plain text too (renderText), with the statuses of the JSON query.
func (s *api) handleLookupField(w *exchange, r *http.Request) error {
	name := r.PathValue("field")
	lang := requestLang(r)
	if _, ok := ipatlas.FieldNamed(name); !ok {
		// Before the key: a misspelt field costs nothing and says why.
		return s.uncharged(r.Context(), w, &ipatlas.Meta{IsAPIRequest: true}, ipatlas.CodeInvalidRequest,
			fieldNameText(name, lang))
	}
	m, err := s.admitGET(w, r, lang)
	if err != nil {
		return err
	}
	rec, err := s.lookupOne(w, r, r.PathValue("ip"), &m)
	if err != nil {
		return err
	}
	writeText(w, http.StatusOK, fieldText(&rec, name)+"\n")
	return nil
}

// fieldNameText is the detail of an unknown field in a lookup's path.
func fieldNameText(name string, lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return unknownFieldTextZh(name)
	}
	return "unknown field " + strconv.Quote(ipatlas.ShortFieldName(name)) + "; fields: " + strings.Join(ipatlas.RecordFields(), ", ")
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

// renderText answers the failures of a plain-text route as one line of
// text, with the status and headers the JSON query would have: a shell
// script that captures the body without checking the status gets
// "error: …", never something that reads as a value, and a person at a
// terminal reads the reason without a JSON envelope around it. The code
// ends the line, for scripts that test it.
func (s *Server) renderText(w *exchange, r *http.Request, err error) {
	if e, ok := err.(*textError); ok {
		w.code = e.code
		writeText(w, e.status, e.body)
		return
	}
	lang := w.langOf(r)
	code, detail := s.failureOf(r, err, lang)
	w.code = code
	writeText(w, code.HTTPStatus(), "error: "+errorText(code, detail, lang)+" ("+string(code)+")\n")
}
