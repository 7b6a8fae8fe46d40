package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// instrument is the outer middleware of both handlers, in one piece so that
// the request is not copied: it finds the client address, sets the
// security headers (security.go), refuses a request whose framing cannot be
// trusted (framing.go), turns a panic into a 500 (both in the format of
// the path's area, router.renderFor), and
// logs and counts the request by the route template the mux matched (the
// mux sets r.Pattern on this very request).
//
// admin selects the admin API's security headers.
func (s *Server) instrument(rt *router, admin bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := exchangePool.Get().(*exchange)
		*rec = exchange{ResponseWriter: w, client: clientAddr(r, s.trusted, s.cfg.ForwardedHeader)}
		connTLS(r) // before the headers: HSTS goes on answers over TLS
		s.securityHeaders(w.Header(), r, admin)
		s.metrics.inflight.Inc()
		defer func() {
			p := recover()
			if p != nil {
				s.recovered(rt, rec, r, p, admin)
			}
			s.metrics.inflight.Dec()
			s.observe(rec, r, time.Since(start))
			if p == http.ErrAbortHandler {
				panic(p) // net/http's way to abort a response: let it do so
			}
			*rec = exchange{}
			exchangePool.Put(rec)
		}()
		if refuse, mustClose := framing(r); mustClose {
			w.Header()["Connection"] = hdrClose // net/http closes after the answer
			if refuse != nil {
				rt.renderFor(r.URL.Path)(rec, r, refuse)
				return
			}
		}
		rt.serve(rec, r)
	})
}

// recovered logs a panic and answers 500 when nothing was sent yet.
func (s *Server) recovered(rt *router, rec *exchange, r *http.Request, p any, admin bool) {
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
		s.securityHeaders(rec.Header(), r, admin)
		rt.renderFor(r.URL.Path)(rec, r, errInternal)
	}
}

func (s *Server) observe(rec *exchange, r *http.Request, d time.Duration) {
	status := rec.status
	if !rec.wroteHeader {
		status = http.StatusOK // net/http sends 200 for a handler that wrote nothing
	}
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	s.metrics.request(route, methodLabel(r.Method), status, d.Seconds())
	// A metered request counts its outcome once, whatever its shape; a
	// batch has counted its items itself.
	if rec.metered && !rec.counted {
		if rec.success {
			s.metrics.success.Inc()
		} else if rec.code != "" {
			s.metrics.queries.WithLabelValues(string(rec.code)).Inc()
		}
	}

	level := s.cfg.AccessLogLevel
	if status >= 500 && !rec.outage {
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
