package server

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
)

// handleAS is GET /api/asn/{asn}: what the data knows of one AS (its name,
// country, announced prefixes and whether it is a hosting network). It is
// metered like the location query, and its checks run in the same order:
// the request (its lang), then the key, then the AS number (InvalidAS),
// then the data (UnknownAS), then the quota, then the credits. Only the
// meter's commit makes a success; every failure before it is free.
//
// A HEAD request is the same request without the body: it is charged, so
// that its status and quota headers are the ones a GET gets.
func (s *api) handleAS(w *exchange, r *http.Request) error {
	ctx := r.Context()
	meta := identify(w)
	lang := requestLang(r) // until the query names one
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return s.uncharged(ctx, w, &meta, ipatlas.CodeInvalidRequest, errBadQuery.detail(lang))
	}
	if berr := queryLang(w, q, &lang); berr != nil {
		return s.uncharged(ctx, w, &meta, berr.code, berr.detail(lang))
	}
	if !w.caller.identified() {
		return s.keyError(w, r, w.caller.err)
	}

	raw := r.PathValue("asn")
	n, err := ipatlas.ParseAS(raw)
	if err != nil {
		return s.uncharged(ctx, w, &meta, ipatlas.CodeInvalidAS, ipatlas.InvalidASDetail(raw, lang))
	}
	loc, ok := s.deps.Geo.(geo.ASLocator)
	if !ok {
		// A locator that cannot answer an AS is a deployment without the
		// engine: nothing the client can fix.
		return s.uncharged(ctx, w, &meta, ipatlas.CodeServiceUnavailable, "")
	}
	as, err := loc.AS(n, lang)
	switch {
	case errors.Is(err, ipatlas.ErrUnknownAS):
		return s.uncharged(ctx, w, &meta, ipatlas.CodeUnknownAS, unknownASDetail(n, lang))
	case err != nil:
		s.log.LogAttrs(ctx, slog.LevelError, "AS lookup", errAttr(err))
		return s.uncharged(ctx, w, &meta, ipatlas.CodeServiceUnavailable, "")
	}

	if err := s.chargeOne(ctx, w, r, &meta, lang); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, &ipatlas.ASEnvelope{Success: true, Data: &as, Meta: meta})
	return nil
}

// errBadQuery is a query string that does not parse (a bad %-escape).
var errBadQuery = &bodyError{ipatlas.CodeInvalidRequest,
	"the query string is malformed", "查询字符串格式错误"}

// queryLang reads the lang query parameter into *lang. Absent, the
// answer is in English, as a query body without "lang" is; given twice
// it is refused, since which one counts would be a guess (as with a
// body's duplicate keys).
func queryLang(w *exchange, q url.Values, lang *ipatlas.Lang) *bodyError {
	vs := q["lang"]
	if len(vs) > 1 {
		return &bodyError{ipatlas.CodeInvalidRequest,
			`the parameter "lang" is given more than once`, `参数 "lang" 出现了不止一次`}
	}
	raw := ""
	if len(vs) == 1 {
		raw = vs[0]
	}
	l, berr := bodyLang(w, raw)
	if berr != nil {
		return berr
	}
	*lang = l
	return nil
}

// unknownASDetail names the AS the data does not know, in lang.
func unknownASDetail(n uint32, lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return "ASN 数据中没有 " + ipatlas.FormatAS(n)
	}
	return "the ASN data has no " + ipatlas.FormatAS(n)
}
