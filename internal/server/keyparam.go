package server

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/ipatlas/ipatlas"
)

// keyParams are the query parameters that may carry a key, for tools that
// cannot set a header: "key" (ip-api's name) and "token" (ipinfo's).
var keyParams = [...]string{"key", "token"}

// requestKey finds the key of a request to a route that takes one: the
// bearer key of the Authorization header, or a key in the URL's query
// ("?key=" or "?token="). One request names one key: the same key given
// in several places is accepted, different ones are refused (which one
// counts would be a guess that a proxy in front may make differently).
//
// A key in the URL is a secret in a place that proxies and browsers log.
// The server's own log never holds it (the access log writes the path,
// never the query), no metric is labelled with it and no error text
// repeats it; the answer is no-store, so that no cache keeps it either.
func requestKey(w *exchange, r *http.Request) (token string, ok bool, err error) {
	token, ok = bearer(r)
	if r.URL.RawQuery == "" || !strings.Contains(r.URL.RawQuery, "key=") && !strings.Contains(r.URL.RawQuery, "token=") {
		return token, ok, nil // the common case costs no parsing
	}
	// ParseQuery keeps the pairs it could read: a malformed pair
	// elsewhere in the query does not hide a well-formed key.
	q, _ := url.ParseQuery(r.URL.RawQuery)
	inURL := false
	for _, name := range keyParams {
		for _, v := range q[name] {
			v = strings.TrimSpace(v)
			if v == "" {
				continue
			}
			switch {
			case !ok:
				token, ok, inURL = v, true, true
			case v != token:
				w.Header()["Www-Authenticate"] = hdrBearer
				detail := "send one API key: this request names two different keys (header or URL)"
				if w.langOf(r) == ipatlas.Chinese {
					detail = "只能发送一个 API 密钥：此请求（请求头或 URL 中）含有两个不同的密钥"
				}
				return "", false, apiFail(ipatlas.CodeInvalidAPIKey, detail)
			default:
				inURL = true
			}
		}
	}
	if inURL {
		w.Header()["Cache-Control"] = hdrNoStore
	}
	return token, ok, nil
}
