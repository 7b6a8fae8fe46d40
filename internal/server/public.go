package server

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/api"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/web"
)

var (
	publicDoc = api.OpenAPI
	adminDoc  = api.AdminOpenAPI
)

// handleMyIP is GET /api/ip/myip: the caller's address, either family.
func (s *Server) handleMyIP(w http.ResponseWriter, r *http.Request) {
	a := s.clientOf(w, r)
	freeHeaders(w)
	if !a.IsValid() {
		s.noAddress(w, r)
		return
	}
	writeJSON(w, http.StatusOK, &ipatlas.MyIPResponse{
		Result:    true,
		Code:      ipatlas.MyIPCodeSuccess,
		Message:   ipatlas.MyIPMessageSuccess,
		IP:        a.String(),
		IPVersion: netaddr.Family(a),
	})
}

// freeHeaders are the headers of the free, unauthenticated answers: never
// cached (they depend on the caller), and readable by web pages of any
// origin, which is what a "what is my IP" endpoint is for. No credentials
// are involved, so "*" is safe.
func freeHeaders(w http.ResponseWriter) {
	h := w.Header()
	h["Cache-Control"] = hdrNoStore
	h["Access-Control-Allow-Origin"] = hdrAnyOrig
}

// noAddress answers when the connection has no IP peer (a Unix socket
// without a trusted proxy in front): a deployment fault, not the client's.
func (s *Server) noAddress(w http.ResponseWriter, r *http.Request) {
	s.log.LogAttrs(r.Context(), slog.LevelError, "no client address", slog.String("remote", r.RemoteAddr))
	writeError(w, requestLang(r), ipatlas.CodeInternal, "", ipatlas.Meta{IsAPIRequest: true})
}

// handleFamily is GET /ipv4 and GET /ipv6.
func (s *Server) handleFamily(family string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.answerFamily(w, r, family) }
}

// answerFamily answers the caller's address as plain text when it is of
// family. Otherwise it refuses with 421 Misdirected Request and a reason
// that never contains the other family's address: a client that trims
// the body and takes it as its IPv4 address must not get an IPv6 one.
func (s *Server) answerFamily(w http.ResponseWriter, r *http.Request, family string) {
	freeHeaders(w)
	a := s.clientOf(w, r)
	got := netaddr.Family(a)
	switch {
	case got == family:
		writeText(w, http.StatusOK, a.String()+"\n")
	case got == "":
		writeText(w, http.StatusInternalServerError, "error: the server cannot see the client's address\n")
	default:
		writeText(w, http.StatusMisdirectedRequest,
			"error: this endpoint answers "+family+" clients only; this request arrived over "+got+"\n")
	}
}

// handleRoot is GET / : on the configured IPv4 and IPv6 hosts it is the
// plain-text Get my IP of that family. Elsewhere it is negotiated
// (web.Wants): the caller's address in plain text for curl, wget and
// HTTPie, the auto-detection body of GET /api/ip/myip for JSON clients,
// and the web page for browsers.
func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	if s.ipv4 != "" || s.ipv6 != "" {
		switch host := normalizeHost(r.Host); {
		case host == s.ipv4 && host != "":
			s.answerFamily(w, r, ipatlas.IPv4)
			return
		case host == s.ipv6 && host != "":
			s.answerFamily(w, r, ipatlas.IPv6)
			return
		}
	}
	w.Header()["Vary"] = hdrVaryRoot
	switch web.Wants(r) {
	case web.FormatText:
		freeHeaders(w)
		if a := s.clientOf(w, r); a.IsValid() {
			writeText(w, http.StatusOK, a.String()+"\n")
		} else {
			writeText(w, http.StatusInternalServerError, "error: the server cannot see the client's address\n")
		}
	case web.FormatJSON:
		s.handleMyIP(w, r)
	default:
		s.page.ServeHTTP(w, r)
	}
}

// hdrVaryRoot is the Vary of GET /: caches must not mix its formats.
var hdrVaryRoot = []string{"Accept, User-Agent"}

// handlePing is GET and HEAD /api/ping.
func (s *Server) handlePing(w http.ResponseWriter, r *http.Request) {
	freeHeaders(w)
	writeJSON(w, http.StatusOK, &ipatlas.PingResponse{
		Code:    ipatlas.PingCode,
		Time:    s.now().UTC().Format(time.RFC3339Nano),
		IP:      addrString(s.clientOf(w, r)),
		Version: s.cfg.Version,
	})
}

// handleUsage is GET /api/usage: free, and read fresh from the store.
func (s *Server) handleUsage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lang := requestLang(r)
	w.Header()["Cache-Control"] = hdrNoStore
	c := s.authenticate(ctx, r)
	if !c.identified() {
		s.keyError(w, r, lang, c.err)
		return
	}
	u, err := s.deps.Accounts.Usage(ctx, c.key.ID)
	if errors.Is(err, account.ErrNotFound) {
		s.keyError(w, r, lang, account.ErrBadKey) // deleted since authentication
		return
	}
	if err != nil {
		s.keyError(w, r, lang, err)
		return
	}
	s.rateHeaders(w, u.Limit, u.Remaining, u.Reset)
	writeJSON(w, http.StatusOK, s.wireUsage(u))
}

// wireUsage is the public form of a key's usage.
func (s *Server) wireUsage(u account.Usage) *ipatlas.Usage {
	cost := int64(1)
	if s.deps.Meter != nil {
		cost = s.deps.Meter.Cost()
	}
	return &ipatlas.Usage{
		AccountID: u.AccountID,
		KeyID:     u.KeyID,
		Tier:      string(u.Tier),
		Period:    u.Period,
		Used:      u.Used,
		Limit:     u.Limit,
		Remaining: u.Remaining,
		Reset:     u.Reset.UTC(),
		Credits:   u.Credits,
		QueryCost: cost,
	}
}

// notFound answers an unknown path with the JSON envelope.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, requestLang(r), ipatlas.CodeNotFound, "", ipatlas.Meta{IsAPIRequest: true})
}

// methodNotAllowed answers a known path asked with another method, in
// the portal API's error body under /account/api/ and in the public
// API's envelope elsewhere.
func (s *Server) methodNotAllowed(allow string) http.HandlerFunc {
	hdr := []string{allow}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Allow"] = hdr
		if strings.HasPrefix(r.URL.Path, "/account/api/") {
			adminFail(w, http.StatusMethodNotAllowed, adminNotAllowed, r.Method+" is not allowed here; allowed: "+allow)
			return
		}
		writeError(w, requestLang(r), ipatlas.CodeMethodNotAllowed, "", ipatlas.Meta{IsAPIRequest: true})
	}
}

// serveDoc serves an embedded OpenAPI document.
func serveDoc(doc []byte) http.HandlerFunc {
	ctype := []string{"application/yaml"}
	length := []string{strconv.Itoa(len(doc))}
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Content-Type"] = ctype
		h["Content-Length"] = length
		w.Write(doc)
	}
}
