package ipatlas

import (
	"fmt"
	"net/http"
	"time"
)

// ErrorCode names a failure. It is sent in the envelope's "code" field; the
// five codes of the location query come first, then the service's own.
type ErrorCode string

// The error codes of the service.
const (
	CodeInvalidIP           ErrorCode = "InvalidIP"
	CodePrivateIP           ErrorCode = "PrivateIP"
	CodeRateLimitExceeded   ErrorCode = "RateLimitExceeded"
	CodeInsufficientCredits ErrorCode = "InsufficientCredits"
	CodeInvalidAPIKey       ErrorCode = "InvalidAPIKey"

	CodeInvalidRequest       ErrorCode = "InvalidRequest"
	CodePayloadTooLarge      ErrorCode = "PayloadTooLarge"
	CodeUnsupportedMediaType ErrorCode = "UnsupportedMediaType"
	CodeTooManyItems         ErrorCode = "TooManyItems"
	CodeNotFound             ErrorCode = "NotFound"
	CodeMethodNotAllowed     ErrorCode = "MethodNotAllowed"
	CodeServiceUnavailable   ErrorCode = "ServiceUnavailable"
	CodeInternal             ErrorCode = "InternalError"
	CodeInvalidAS            ErrorCode = "InvalidAS" // not an AS number: "AS", "ASx", "AS-1", "AS4294967296"
	CodeUnknownAS            ErrorCode = "UnknownAS" // a well-formed AS number the data does not know
)

type codeInfo struct {
	status int
	en, zh string
}

// codes is the one table from code to HTTP status and default texts. The
// server renders errors from it and the client maps statuses back with it.
var codes = map[ErrorCode]codeInfo{
	CodeInvalidIP:            {http.StatusBadRequest, "Invalid IP address format", "无效的 IP 地址格式"},
	CodePrivateIP:            {http.StatusBadRequest, "Private IP address not supported", "不支持私有 IP 地址"},
	CodeRateLimitExceeded:    {http.StatusTooManyRequests, "API rate limit exceeded", "API请求频率超出限制"},
	CodeInsufficientCredits:  {http.StatusPaymentRequired, "Not enough API credits", "API积分不足"},
	CodeInvalidAPIKey:        {http.StatusUnauthorized, "Invalid or missing API key", "API密钥无效或缺失"},
	CodeInvalidRequest:       {http.StatusBadRequest, "Invalid request", "无效的请求"},
	CodePayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Request body too large", "请求体过大"},
	CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "Content-Type must be application/json", "Content-Type 必须是 application/json"},
	CodeTooManyItems:         {http.StatusUnprocessableEntity, "Too many items in the batch", "批量请求的条目过多"},
	CodeNotFound:             {http.StatusNotFound, "Not found", "未找到"},
	CodeMethodNotAllowed:     {http.StatusMethodNotAllowed, "Method not allowed", "不允许的请求方法"},
	CodeServiceUnavailable:   {http.StatusServiceUnavailable, "Service temporarily unavailable", "服务暂时不可用"},
	CodeInternal:             {http.StatusInternalServerError, "Internal server error", "服务器内部错误"},
	CodeInvalidAS:            {http.StatusBadRequest, "Invalid AS number", "无效的AS号"},
	CodeUnknownAS:            {http.StatusNotFound, "Unknown AS number", "未知的AS号"},
}

// Codes lists every error code, in a stable order.
func Codes() []ErrorCode {
	return []ErrorCode{
		CodeInvalidIP, CodePrivateIP, CodeRateLimitExceeded, CodeInsufficientCredits, CodeInvalidAPIKey,
		CodeInvalidRequest, CodePayloadTooLarge, CodeUnsupportedMediaType, CodeTooManyItems,
		CodeNotFound, CodeMethodNotAllowed, CodeServiceUnavailable, CodeInternal,
		CodeInvalidAS, CodeUnknownAS,
	}
}

// HTTPStatus returns the HTTP status a code is answered with; 500 for an
// unknown code.
func (c ErrorCode) HTTPStatus() int {
	if i, ok := codes[c]; ok {
		return i.status
	}
	return http.StatusInternalServerError
}

// Text returns the code's default human-readable text in lang.
func (c ErrorCode) Text(lang Lang) string {
	i, ok := codes[c]
	if !ok {
		i = codes[CodeInternal]
	}
	if lang == Chinese {
		return i.zh
	}
	return i.en
}

// Message is how every answer words a failure: the code's text in lang,
// then the detail when there is one, joined by the colon of that language
// ("Invalid IP address format: …", "无效的 IP 地址格式：…"). The detail must be
// in lang too: an answer never mixes the two languages.
func (c ErrorCode) Message(lang Lang, detail string) string {
	text := c.Text(lang)
	switch {
	case detail == "":
		return text
	case lang == Chinese:
		return text + "：" + detail
	}
	return text + ": " + detail
}

// CodeForStatus maps an HTTP status without a usable body back to the
// closest code, for clients that get a non-JSON failure from a proxy.
func CodeForStatus(status int) ErrorCode {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalidRequest
	case http.StatusUnauthorized, http.StatusForbidden:
		return CodeInvalidAPIKey
	case http.StatusPaymentRequired:
		return CodeInsufficientCredits
	case http.StatusTooManyRequests:
		return CodeRateLimitExceeded
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusUnsupportedMediaType:
		return CodeUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return CodeTooManyItems
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusMethodNotAllowed:
		return CodeMethodNotAllowed
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return CodeServiceUnavailable
	}
	return CodeInternal
}

// Error is a failure with a code. Errors compare equal under errors.Is when
// their codes match, so errors.Is(err, ipatlas.ErrPrivateIP) works for any
// private-address error whatever its text.
type Error struct {
	Code       ErrorCode
	Message    string        // human-readable text; the code's default text when empty
	Status     int           // HTTP status, when the error came from a response
	RetryAfter time.Duration // for RateLimitExceeded: how long until the quota resets, when known
	Meta       *Meta         // the response's meta, when there was one
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.Text(English)
	}
	return fmt.Sprintf("ipatlas: %s: %s", e.Code, msg)
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinel errors for errors.Is; they match any *Error with the same code.
var (
	ErrInvalidIP           = &Error{Code: CodeInvalidIP}
	ErrPrivateIP           = &Error{Code: CodePrivateIP}
	ErrRateLimitExceeded   = &Error{Code: CodeRateLimitExceeded}
	ErrInsufficientCredits = &Error{Code: CodeInsufficientCredits}
	ErrInvalidAPIKey       = &Error{Code: CodeInvalidAPIKey}
	ErrInvalidRequest      = &Error{Code: CodeInvalidRequest}
	ErrServiceUnavailable  = &Error{Code: CodeServiceUnavailable}
	ErrInvalidAS           = &Error{Code: CodeInvalidAS}
	ErrUnknownAS           = &Error{Code: CodeUnknownAS}
)
