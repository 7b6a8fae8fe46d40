package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// recorder wraps the ResponseWriter of one request. Besides the status and
// size for the log line and the metrics, it carries the request's state
// (the client address, the query outcome) from the outer middleware to the
// handlers: a context value would cost a copy of the request per request.
type recorder struct {
	http.ResponseWriter
	status      int
	bytes       int64
	wroteHeader bool
	client      netip.Addr
	code        ipatlas.ErrorCode // the error code answered, if any
	success     bool              // a location query succeeded
	lang        ipatlas.Lang      // the request's language, once a handler knows it
	langKnown   bool
}

var recorderPool = sync.Pool{New: func() any { return new(recorder) }}

func (w *recorder) WriteHeader(status int) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = status, true
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.status, w.wroteHeader = http.StatusOK, true
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush keeps streaming handlers (pprof's trace) working through the wrapper.
func (w *recorder) Flush() {
	if !w.wroteHeader {
		w.status, w.wroteHeader = http.StatusOK, true
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// clientOf returns the client address computed by the outer middleware,
// or computes it when a handler runs outside it.
func (s *Server) clientOf(w http.ResponseWriter, r *http.Request) netip.Addr {
	if rec, ok := w.(*recorder); ok {
		return rec.client
	}
	return clientAddr(r, s.trusted, s.cfg.ForwardedHeader)
}

// instrument is the outer middleware of both handlers, in one piece so that
// the request is not copied: it finds the client address, sets the
// security headers (security.go), refuses a request whose framing cannot be
// trusted (framing.go), turns a panic into a 500 envelope, and
// logs and counts the request by the route template the mux matched (the
// mux sets r.Pattern on this very request).
//
// admin selects the admin API's headers and error body.
func (s *Server) instrument(next http.Handler, admin bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := recorderPool.Get().(*recorder)
		*rec = recorder{ResponseWriter: w, client: clientAddr(r, s.trusted, s.cfg.ForwardedHeader)}
		securityHeaders(w.Header(), r, admin)
		s.metrics.inflight.Inc()
		defer func() {
			p := recover()
			if p != nil {
				s.recovered(rec, r, p, admin)
			}
			s.metrics.inflight.Dec()
			s.observe(rec, r, time.Since(start))
			if p == http.ErrAbortHandler {
				panic(p) // net/http's way to abort a response: let it do so
			}
			*rec = recorder{}
			recorderPool.Put(rec)
		}()
		if refuse, mustClose := framing(r); mustClose {
			w.Header()["Connection"] = hdrClose // net/http closes after the answer
			if refuse != nil {
				if admin {
					adminFail(rec, http.StatusBadRequest, adminInvalidRequest, refuse.en)
				} else {
					lang := requestLang(r)
					writeError(rec, lang, refuse.code, refuse.detail(lang), ipatlas.Meta{IsAPIRequest: true})
				}
				return
			}
		}
		next.ServeHTTP(rec, r)
	})
}

// recovered logs a panic and answers 500 when nothing was sent yet.
func (s *Server) recovered(rec *recorder, r *http.Request, p any, admin bool) {
	if p == http.ErrAbortHandler {
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
		slog.String("method", r.Method),
		slog.String("path", logPath(r.URL.Path)),
		slog.String("route", r.Pattern),
		slog.String("panic", fmt.Sprint(p)),
		slog.String("stack", string(debug.Stack())))
	if !rec.wroteHeader {
		// The handler may have set headers for a response it never sent;
		// a connection that must close still must.
		conn := rec.Header()["Connection"]
		clear(rec.Header())
		if conn != nil {
			rec.Header()["Connection"] = conn
		}
		securityHeaders(rec.Header(), r, admin)
		if admin {
			adminFail(rec, http.StatusInternalServerError, adminInternal, "internal error; see the server log")
			return
		}
		lang := rec.lang
		if !rec.langKnown {
			lang = requestLang(r)
		}
		writeError(rec, lang, ipatlas.CodeInternal, "", ipatlas.Meta{IsAPIRequest: true})
	}
}

func (s *Server) observe(rec *recorder, r *http.Request, d time.Duration) {
	status := rec.status
	if !rec.wroteHeader {
		status = http.StatusOK // net/http sends 200 for a handler that wrote nothing
	}
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	s.metrics.requests.WithLabelValues(route, methodLabel(r.Method), statusLabel(status)).Inc()
	s.metrics.duration.WithLabelValues(route).Observe(d.Seconds())
	if rec.success {
		s.metrics.queries.WithLabelValues("success").Inc()
	} else if rec.code != "" && route == routeQuery {
		s.metrics.queries.WithLabelValues(string(rec.code)).Inc()
	}

	level := s.cfg.AccessLogLevel
	if status >= 500 {
		level = slog.LevelError
	}
	ctx := r.Context()
	if !s.log.Enabled(ctx, level) {
		return
	}
	// Never the Authorization header, the query string or the body: they
	// may carry an API key.
	attrs := [...]slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", logPath(r.URL.Path)),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Duration("duration", d),
		slog.String("client", addrString(rec.client)),
		slog.Int64("bytes", rec.bytes),
		slog.String("code", string(rec.code)),
	}
	n := len(attrs)
	if rec.code == "" {
		n--
	}
	s.log.LogAttrs(ctx, level, "request", attrs[:n]...)
}

// logPath is a request path as the log shows it: with the secret part of
// anything shaped like an API key cut off ("ipa_<id>_..."), for clients
// that put their key in the URL. The ID stays: it is what listings show,
// and it tells the operator whose key leaked.
func logPath(p string) string {
	const tag = "ipa_"
	if !strings.Contains(p, tag) {
		return p
	}
	var b strings.Builder
	for {
		i := strings.Index(p, tag)
		if i < 0 {
			b.WriteString(p)
			return b.String()
		}
		j := i + len(tag)
		for j < len(p) && isKeyByte(p[j]) {
			j++
		}
		keep := min(j, i+len(tag)+account.KeyIDLen)
		b.WriteString(p[:keep])
		if j > keep {
			b.WriteString("_REDACTED")
		}
		p = p[j:]
	}
}

func isKeyByte(c byte) bool {
	return '0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == '%'
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func errAttr(err error) slog.Attr { return slog.String("err", err.Error()) }
