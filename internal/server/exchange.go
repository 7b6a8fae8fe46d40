package server

import (
	"net/http"
	"net/netip"
	"sync"

	"github.com/ipatlas/ipatlas"
)

// exchange is one request's answer in progress and the state that the
// layers of the server share about the request: the status and size for
// the log line and the metrics, the client address, the language of its
// errors, the error code answered, and, on the routes that take a key, the
// key as the router authenticated it. instrument makes it; the router
// hands it to every route's handler as a typed argument (router.go), and
// handlers pass it on, so no layer finds it by asserting a
// ResponseWriter's type. Foreign handlers (the web page, pprof) see it as
// their http.ResponseWriter. A context value would cost a copy of the
// request per request.
type exchange struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
	client      netip.Addr        // after trusted-proxy resolution
	code        ipatlas.ErrorCode // the public error code answered, if any
	metered     bool              // a metered query: its outcome is counted (query.go)
	success     bool              // the metered query succeeded
	counted     bool              // a batch counted its items' outcomes itself
	outage      bool              // a 503 whose cause is logged elsewhere (the meter's, once per interval), or /readyz's report
	lang        ipatlas.Lang      // the request's language, once a handler knows it
	langKnown   bool
	keyed       keyed // the caller of a keyed route, once authenticate accepted its key (auth.go)
}

var exchangePool = sync.Pool{New: func() any { return new(exchange) }}

func (w *exchange) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *exchange) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *exchange) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush keeps streaming handlers (pprof's trace) working through the wrapper.
func (w *exchange) Flush() {
	if !w.wroteHeader {
		w.status, w.wroteHeader = http.StatusOK, true
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// setLang records the language a handler has found (for a 500 after a
// panic, and for the errors its surface renders).
func (w *exchange) setLang(l ipatlas.Lang) { w.lang, w.langKnown = l, true }

// langOf is the language of r's errors: the one a handler found, else
// Accept-Language's.
func (w *exchange) langOf(r *http.Request) ipatlas.Lang {
	if w.langKnown {
		return w.lang
	}
	return requestLang(r)
}
