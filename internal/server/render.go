package server

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// Handlers return their failures; one renderer per body shape turns an
// error into the answer:
//
//   - renderAPI, the public API's envelope ({success, error, code, meta},
//     ipatlas.Envelope), for the location query, Get my IP and the page's
//     endpoints;
//   - renderCoded, the {code, error} body of the owners' portal and the
//     operators' admin API (AdminError), whose codes are Code below.
//
// What a renderer does not recognise is a failure of the store or a bug:
// logged, and answered as the surface's 503 or 500 without the cause.

// renderer answers a route's error in its surface's body.
type renderer func(w *exchange, r *http.Request, err error)

// errInternal is a failure the client cannot act on (a panic, a request
// without a client address): 500 in every surface.
var errInternal = errors.New("internal error")

// apiError is a failure of the public API: a code of ipatlas's table,
// which carries the HTTP status, a detail in the request's language
// appended to the code's text, and the answer's meta.
type apiError struct {
	code   ipatlas.ErrorCode
	detail string
	meta   ipatlas.Meta
}

func (e *apiError) Error() string { return string(e.code) + ": " + e.detail }

// apiMeta is the meta of an API request by nobody (no key accepted).
var apiMeta = ipatlas.Meta{IsAPIRequest: true}

// apiFail is a public API failure with the meta of an anonymous API request.
func apiFail(code ipatlas.ErrorCode, detail string) error {
	return &apiError{code: code, detail: detail, meta: apiMeta}
}

// textError is a failure of a plain-text endpoint (/ipv4, /ipv6, GET /
// for curl): a status and a body that is never an address, so that a
// client taking the body as its address cannot be misled.
type textError struct {
	status int
	code   ipatlas.ErrorCode // for the log line; "" when none fits
	body   string
}

func (e *textError) Error() string { return e.body }

// renderAPI writes a public API failure as the envelope, in the request's
// language.
func (s *Server) renderAPI(w *exchange, r *http.Request, err error) {
	lang := w.langOf(r)
	switch e := err.(type) {
	case *apiError:
		writeError(w, lang, e.code, e.detail, e.meta)
	case *bodyError:
		writeError(w, lang, e.code, e.detail(lang), apiMeta)
	case *routeError:
		code := ipatlas.CodeNotFound
		if e.allow != "" {
			code = ipatlas.CodeMethodNotAllowed
		}
		writeError(w, lang, code, "", apiMeta)
	case *textError:
		w.code = e.code
		writeText(w, e.status, e.body)
	default:
		if err != errInternal {
			s.log.LogAttrs(r.Context(), slog.LevelError, "unexpected failure", errAttr(err))
		}
		writeError(w, lang, ipatlas.CodeInternal, "", apiMeta)
	}
}

// failureOf is the public API's code and detail, in lang, for a
// handler's error: the shapes of other services (ipinfo, ip-api) write
// them in their own bodies. An error no handler makes is logged and
// answers Internal.
func (s *Server) failureOf(r *http.Request, err error, lang ipatlas.Lang) (ipatlas.ErrorCode, string) {
	var ae *apiError
	var be *bodyError
	var re *routeError
	switch {
	case errors.As(err, &ae):
		return ae.code, ae.detail
	case errors.As(err, &be):
		return be.code, be.detail(lang)
	case errors.As(err, &re):
		if re.allow != "" {
			return ipatlas.CodeMethodNotAllowed, ""
		}
		return ipatlas.CodeNotFound, ""
	}
	if err != errInternal {
		s.log.LogAttrs(r.Context(), slog.LevelError, "unexpected failure", errAttr(err))
	}
	return ipatlas.CodeInternal, ""
}

// Code is an error code of the portal's and the admin API's {code, error}
// body. It is for operators, scripts and the portal's page, which
// translates by code; the text is English. codeStatus maps each to its
// HTTP status.
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

// codedError is a failure of the portal or the admin API.
type codedError struct {
	code Code
	msg  string
}

func (e *codedError) Error() string { return string(e.code) + ": " + e.msg }

// fail is a portal or admin API failure.
func fail(code Code, msg string) error { return &codedError{code, msg} }

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
	e := s.coded(r, err)
	writeJSON(w, e.code.HTTPStatus(), &AdminError{Code: e.code, Error: e.msg})
}

func (s *Server) coded(r *http.Request, err error) *codedError {
	var weak *account.WeakPasswordError
	switch e := err.(type) {
	case *codedError:
		return e
	case *routeError:
		if e.allow == "" {
			return &codedError{CodeNotFound, "no such path: " + r.URL.Path}
		}
		return &codedError{CodeNotAllowed, r.Method + " is not allowed here; allowed: " + e.allow}
	case *bodyError:
		switch e.code {
		case ipatlas.CodePayloadTooLarge:
			return &codedError{CodeTooLarge, e.en}
		case ipatlas.CodeUnsupportedMediaType:
			return &codedError{CodeMediaType, "Content-Type must be application/json"}
		}
		return &codedError{CodeInvalidRequest, e.en}
	}
	switch {
	case err == errInternal:
		return &codedError{CodeInternal, "internal error; see the server log"}
	case errors.As(err, &weak):
		return &codedError{CodeWeakPassword, weak.Reason}
	case errors.Is(err, account.ErrInvalid):
		return &codedError{CodeInvalidRequest, err.Error()}
	case errors.Is(err, account.ErrNotFound):
		return &codedError{CodeNotFound, err.Error()}
	case errors.Is(err, account.ErrInsufficient):
		return &codedError{CodeInsufficient, err.Error()}
	case errors.Is(err, account.ErrRevoked), errors.Is(err, account.ErrConflict):
		return &codedError{CodeConflict, err.Error()}
	case errors.Is(err, account.ErrBadToken):
		return &codedError{CodeBadToken, account.ErrBadToken.Error()}
	case errors.Is(err, account.ErrNoSession):
		return &codedError{CodeUnauthorized, account.ErrNoSession.Error()}
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "admin: store failure", errAttr(err))
	return &codedError{CodeUnavailable, "the store failed or cannot be reached; see the server log"}
}

// reply answers a handler's success with a JSON body.
func reply(w *exchange, status int, v any) error {
	writeJSON(w, status, v)
	return nil
}
