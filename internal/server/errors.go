package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// Handlers return their failures as one kind of value, *failure; one
// renderer per surface writes it in the surface's format:
//
//   - renderAPI, the public API's envelope ({success, error, code, meta},
//     ipatlas.Envelope), for the location query, Get my IP and the page's
//     endpoints;
//   - each shape's own (shape_*.go): renderText, one line of text, for
//     GET /api/lookup/{ip}/{field}, and the error bodies of the shapes of
//     other services;
//   - renderCoded, the {code, error} body of the owners' portal and the
//     operators' admin API (AdminError), whose codes are Code below.
//
// The router picks the renderer by the request's path (routes.go), for a
// route's failures as for a panic, a refused framing and an unknown path.
// What a renderer does not recognise is a failure of the store or a bug:
// logged, and answered as the surface's 503 or 500 without the cause.

// renderer answers a route's error in its surface's body.
type renderer func(w *exchange, r *http.Request, err error)

// failure is a request the server will not answer as asked.
type failure struct {
	// code is the failure's code on the public surfaces; it carries the
	// HTTP status. admin is the portal's and admin API's code instead.
	code  ipatlas.ErrorCode
	admin Code
	// en and zh are the detail that follows the code's text, in English
	// and in Chinese; zh "" is en in both (a detail already in the
	// request's language, or one without words).
	en, zh string
	meta   ipatlas.Meta // the envelope's meta
	status int          // the HTTP status when it is not the code's (421 of /ipv4 over IPv6)
	text   string       // a plain-text endpoint's own body, whole ("error: …\n")
	allow  []string     // 405: the methods the path takes, for Allow
	// why is the cause under code, for a renderer whose format tells
	// apart what code does not (errQuotaSpent under RateLimitExceeded, a
	// key scheme's own refusal under InvalidAPIKey); nil when code says
	// all there is.
	why error
}

func (e *failure) Error() string {
	c := string(e.code)
	if e.admin != "" {
		c = string(e.admin)
	}
	if e.en == "" {
		return c
	}
	return c + ": " + e.en
}

// detail is the failure's detail in lang.
func (e *failure) detail(lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese && e.zh != "" {
		return e.zh
	}
	return e.en
}

// httpStatus is the status the failure answers with.
func (e *failure) httpStatus() int {
	switch {
	case e.status != 0:
		return e.status
	case e.admin != "":
		return e.admin.HTTPStatus()
	}
	return e.code.HTTPStatus()
}

// withMeta is e with the meta of the caller it answers.
func (e *failure) withMeta(meta ipatlas.Meta) *failure {
	c := *e
	c.meta = meta
	return &c
}

// bodyFail is a public failure with its detail in both languages, for a
// check that runs before the request's language is known.
func bodyFail(code ipatlas.ErrorCode, en, zh string) *failure {
	return &failure{code: code, en: en, zh: zh, meta: apiMeta}
}

// apiFail is a public failure with a detail in the request's language, or
// none, and the meta of an anonymous API request.
func apiFail(code ipatlas.ErrorCode, detail string) *failure {
	return &failure{code: code, en: detail, meta: apiMeta}
}

// textFail is a plain-text endpoint's refusal (/ipv4, /ipv6, GET / for
// curl): a status and a body that is never an address, so that a client
// taking the body as its address cannot be misled. code is for the log
// line and the metrics, "" when none fits.
func textFail(status int, code ipatlas.ErrorCode, body string) *failure {
	return &failure{code: code, status: status, text: body}
}

// fail is a portal or admin API failure.
func fail(code Code, msg string) error { return &failure{admin: code, en: msg} }

// errInternal is a failure the client cannot act on (a panic, a request
// without a client address): 500 in every surface.
var errInternal = errors.New("internal error")

// apiMeta is the meta of an API request by nobody (no key accepted).
var apiMeta = ipatlas.Meta{IsAPIRequest: true}

// notFound and notAllowed are the router's answers: 404 for an unknown
// path, 405 with Allow for a path asked with another method.
func notFound(*http.Request) error { return &failure{code: ipatlas.CodeNotFound, meta: apiMeta} }

func notAllowed(w http.ResponseWriter, allow []string) error {
	w.Header()["Allow"] = allow
	return &failure{code: ipatlas.CodeMethodNotAllowed, allow: allow, meta: apiMeta}
}

// failureOf is err as a public failure. An error no handler makes is
// logged and answers Internal.
func (s *Server) failureOf(r *http.Request, err error) *failure {
	var f *failure
	if errors.As(err, &f) && f.admin == "" {
		return f
	}
	if err != errInternal {
		s.log.LogAttrs(r.Context(), slog.LevelError, "unexpected failure", errAttr(err))
	}
	return &failure{code: ipatlas.CodeInternal, meta: apiMeta}
}

// renderAPI writes a public API failure as the envelope, in the request's
// language; a plain-text endpoint's own refusal as its text.
func (s *Server) renderAPI(w *exchange, r *http.Request, err error) {
	if f, lang, ok := s.ownText(w, r, err); ok {
		writeJSON(w, f.httpStatus(), &ipatlas.Envelope{Success: false, Error: errorText(f.code, f.detail(lang), lang), Code: f.code, Meta: f.meta})
	}
}

// renderText answers the failures of a plain-text route as one line of
// text, with the status and headers the JSON query would have: a shell
// script that captures the body without checking the status gets
// "error: …", never something that reads as a value, and a person at a
// terminal reads the reason without a JSON envelope around it. The code
// ends the line, for scripts that test it.
func (s *Server) renderText(w *exchange, r *http.Request, err error) {
	if f, lang, ok := s.ownText(w, r, err); ok {
		writeText(w, f.httpStatus(), "error: "+errorText(f.code, f.detail(lang), lang)+" ("+string(f.code)+")\n")
	}
}

// ownText records err's code and answers it when it is a plain-text
// endpoint's own refusal; otherwise it returns the failure and the
// request's language, for the renderer to write (ok).
func (s *Server) ownText(w *exchange, r *http.Request, err error) (f *failure, lang ipatlas.Lang, ok bool) {
	f = s.failureOf(r, err)
	w.code = f.code
	if f.text != "" {
		writeText(w, f.httpStatus(), f.text)
		return f, lang, false
	}
	return f, w.langOf(r), true
}

// errorText is an error's text as the envelope composes it: the code's
// text in lang, then the detail.
func errorText(code ipatlas.ErrorCode, detail string, lang ipatlas.Lang) string {
	text := code.Text(lang)
	if detail != "" {
		if lang == ipatlas.Chinese {
			return text + "：" + detail
		}
		return text + ": " + detail
	}
	return text
}

// Code is an error code of the portal's and the admin API's {code, error}
// body. It is for operators, scripts and the portal's page, which
// translates by code; the text is English. codeStatus maps each to its
// HTTP status. These codes are the contract of the operators' and owners'
// APIs (api/admin-openapi.yaml), apart from the public API's
// ipatlas.ErrorCode, which the location query's clients know.
type Code string

const (
	CodeUnauthorized   Code = "Unauthorized"         // missing or wrong admin token, no session, or none configured
	CodeInvalidRequest Code = "InvalidRequest"       // malformed body, bad field, bad id
	CodeNotFound       Code = "NotFound"             // no such account, key or path
	CodeNotAllowed     Code = "MethodNotAllowed"     // a known path asked with another method
	CodeConflict       Code = "Conflict"             // e.g. rotating a revoked key
	CodeInsufficient   Code = "InsufficientCredits"  // a deduction below zero
	CodeTooLarge       Code = "PayloadTooLarge"      // a body over the limit
	CodeMediaType      Code = "UnsupportedMediaType" // a body that is not JSON
	CodeUnavailable    Code = "ServiceUnavailable"   // the store cannot be reached
	CodeInternal       Code = "InternalError"        // a panic in a handler
	CodeForbidden      Code = "Forbidden"            // CSRF token or origin refused
	CodeTooMany        Code = "TooManyRequests"      // too many failures from one address, with Retry-After
	CodeSignInFailed   Code = "SignInFailed"         // any refused sign-in
	CodeBadToken       Code = "BadToken"             // unknown, used or expired one-time link
	CodeWeakPassword   Code = "WeakPassword"         // the error says why
)

var codeStatus = map[Code]int{
	CodeUnauthorized:   http.StatusUnauthorized,
	CodeInvalidRequest: http.StatusBadRequest,
	CodeNotFound:       http.StatusNotFound,
	CodeNotAllowed:     http.StatusMethodNotAllowed,
	CodeConflict:       http.StatusConflict,
	CodeInsufficient:   http.StatusConflict,
	CodeTooLarge:       http.StatusRequestEntityTooLarge,
	CodeMediaType:      http.StatusUnsupportedMediaType,
	CodeUnavailable:    http.StatusServiceUnavailable,
	CodeInternal:       http.StatusInternalServerError,
	CodeForbidden:      http.StatusForbidden,
	CodeTooMany:        http.StatusTooManyRequests,
	CodeSignInFailed:   http.StatusUnauthorized,
	CodeBadToken:       http.StatusBadRequest,
	CodeWeakPassword:   http.StatusBadRequest,
}

// HTTPStatus is the code's status; 500 for a code not in the table.
func (c Code) HTTPStatus() int {
	if st, ok := codeStatus[c]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// AdminError is the body of every admin API and portal failure.
type AdminError struct {
	Code  Code   `json:"code"`
	Error string `json:"error"`
}

// renderCoded writes a portal or admin API failure as {code, error}. The
// account service's errors map to codes here, once; anything else is the
// store (the service validates all input first, and stores do not always
// wrap ErrUnavailable around their driver's errors), answered as the
// transient failure it most likely is, with the cause in the log only.
func (s *Server) renderCoded(w *exchange, r *http.Request, err error) {
	code, msg := s.coded(r, err)
	writeJSON(w, code.HTTPStatus(), &AdminError{Code: code, Error: msg})
}

func (s *Server) coded(r *http.Request, err error) (Code, string) {
	var weak *account.WeakPasswordError
	if f, ok := err.(*failure); ok {
		switch {
		case f.admin != "":
			return f.admin, f.en
		case f.code == ipatlas.CodeNotFound:
			return CodeNotFound, "no such path: " + r.URL.Path
		case f.code == ipatlas.CodeMethodNotAllowed:
			return CodeNotAllowed, r.Method + " is not allowed here; allowed: " + strings.Join(f.allow, ", ")
		case f.code == ipatlas.CodePayloadTooLarge:
			return CodeTooLarge, f.en
		case f.code == ipatlas.CodeUnsupportedMediaType:
			return CodeMediaType, "Content-Type must be application/json"
		case f.code == ipatlas.CodeInternal:
			return CodeInternal, "internal error; see the server log"
		}
		return CodeInvalidRequest, f.en
	}
	switch {
	case err == errInternal:
		return CodeInternal, "internal error; see the server log"
	case errors.As(err, &weak):
		return CodeWeakPassword, weak.Reason
	case errors.Is(err, account.ErrInvalid):
		return CodeInvalidRequest, err.Error()
	case errors.Is(err, account.ErrNotFound):
		return CodeNotFound, err.Error()
	case errors.Is(err, account.ErrInsufficient):
		return CodeInsufficient, err.Error()
	case errors.Is(err, account.ErrRevoked), errors.Is(err, account.ErrConflict):
		return CodeConflict, err.Error()
	case errors.Is(err, account.ErrBadToken):
		return CodeBadToken, account.ErrBadToken.Error()
	case errors.Is(err, account.ErrNoSession):
		return CodeUnauthorized, account.ErrNoSession.Error()
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "admin: store failure", errAttr(err))
	return CodeUnavailable, "the store failed or cannot be reached; see the server log"
}

// reply answers a handler's success with a JSON body.
func reply(w *exchange, status int, v any) error {
	writeJSON(w, status, v)
	return nil
}
