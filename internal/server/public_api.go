package server

import (
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/ipatlas/ipatlas"
	apidoc "github.com/ipatlas/ipatlas/api"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/web"
	"golang.org/x/time/rate"
)

var (
	publicDoc = apidoc.OpenAPI
	adminDoc  = apidoc.AdminOpenAPI
)

// api is the public API's surface: the metered query (query.go) in its
// shapes (shape_*.go), Get my IP, ping, usage, the page's own record
// (public_me.go) and the web page. Its failures are the envelope
// (renderAPI), or the format of the shape.
type api struct {
	*Server
	ipv4, ipv6 string                            // Config.IPv4Host and IPv6Host, lower case, without a port
	page       http.Handler                      // GET / for browsers, curl and JSON clients, and the page's assets
	me         *table[netip.Addr, *rate.Limiter] // GET /api/ip/me's limiters by client group; nil when off
	meRate     rate.Limit
	meBurst    int
}

// handleMyIP is GET /api/ip/myip: the caller's address, either family.
func (s *api) handleMyIP(w *exchange, r *http.Request) error {
	freeHeaders(w)
	a := w.client
	if !a.IsValid() {
		return s.noAddress(r)
	}
	writeJSON(w, http.StatusOK, &ipatlas.MyIPResponse{
		Result:    true,
		Code:      ipatlas.MyIPCodeSuccess,
		Message:   ipatlas.MyIPMessageSuccess,
		IP:        a.String(),
		IPVersion: netaddr.Family(a),
	})
	return nil
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

// noAddress is the failure of a connection without an IP peer (a Unix
// socket without a trusted proxy in front): a deployment fault, not the
// client's.
func (s *api) noAddress(r *http.Request) error {
	s.log.LogAttrs(r.Context(), slog.LevelError, "no client address", slog.String("remote", r.RemoteAddr))
	return errInternal
}

// errNoAddressText is noAddress on the plain-text endpoints.
var errNoAddressText = textFail(http.StatusInternalServerError, "", "error: the server cannot see the client's address\n")

// family is GET /ipv4 and GET /ipv6.
func (s *api) family(family string) handler {
	return func(w *exchange, r *http.Request) error { return answerFamily(w, family) }
}

// answerFamily answers the caller's address as plain text when it is of
// family. Otherwise it refuses with 421 Misdirected Request and a reason
// that never contains the other family's address: a client that trims
// the body and takes it as its IPv4 address must not get an IPv6 one.
func answerFamily(w *exchange, family string) error {
	freeHeaders(w)
	a := w.client
	got := netaddr.Family(a)
	switch {
	case got == family:
		writeText(w, http.StatusOK, a.String()+"\n")
		return nil
	case got == "":
		return errNoAddressText
	}
	return textFail(http.StatusMisdirectedRequest, "",
		"error: this endpoint answers "+family+" clients only; this request arrived over "+got+"\n")
}

// handleRoot is GET / : on the configured IPv4 and IPv6 hosts it is the
// plain-text Get my IP of that family. Elsewhere it is negotiated
// (web.Wants): the caller's address in plain text for curl, wget and
// HTTPie, the auto-detection body of GET /api/ip/myip for JSON clients,
// and the web page for browsers.
func (s *api) handleRoot(w *exchange, r *http.Request) error {
	if s.ipv4 != "" || s.ipv6 != "" {
		switch host := normalizeHost(r.Host); {
		case host == s.ipv4 && host != "":
			return answerFamily(w, ipatlas.IPv4)
		case host == s.ipv6 && host != "":
			return answerFamily(w, ipatlas.IPv6)
		}
	}
	w.Header()["Vary"] = hdrVaryRoot
	switch web.Wants(r) {
	case web.FormatText:
		freeHeaders(w)
		if !w.client.IsValid() {
			return errNoAddressText
		}
		writeText(w, http.StatusOK, w.client.String()+"\n")
	case web.FormatJSON:
		return s.handleMyIP(w, r)
	default:
		s.page.ServeHTTP(w, r)
	}
	return nil
}

// hdrVaryRoot is the Vary of GET /: caches must not mix its formats.
var hdrVaryRoot = []string{"Accept, User-Agent"}

// handlePing is GET and HEAD /api/ping.
func (s *api) handlePing(w *exchange, r *http.Request) error {
	freeHeaders(w)
	writeJSON(w, http.StatusOK, &ipatlas.PingResponse{
		Code:    ipatlas.PingCode,
		Time:    s.now().UTC().Format(time.RFC3339Nano),
		IP:      addrString(w.client),
		Version: s.cfg.Version,
	})
	return nil
}

// handleUsage is GET /api/usage: free, and read fresh from the store.
func (s *api) handleUsage(w *exchange, r *http.Request, cr credential) error {
	w.Header()["Cache-Control"] = hdrNoStore
	c := cr.c
	if c == nil {
		return s.keyError(w, r, cr.err)
	}
	u, err := s.deps.Accounts.Usage(r.Context(), c.key.ID)
	if errors.Is(err, account.ErrNotFound) {
		return s.keyError(w, r, account.ErrBadKey) // deleted since authentication
	}
	if err != nil {
		return s.keyError(w, r, err)
	}
	s.rateHeaders(w, u.Limit, u.Remaining, u.Reset)
	writeJSON(w, http.StatusOK, s.wireUsage(u))
	return nil
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

// serveDoc serves an embedded OpenAPI document.
func serveDoc(doc []byte) handler {
	ctype := []string{"application/yaml"}
	length := []string{strconv.Itoa(len(doc))}
	return func(w *exchange, r *http.Request) error {
		h := w.Header()
		h["Content-Type"] = ctype
		h["Content-Length"] = length
		w.Write(doc)
		return nil
	}
}
