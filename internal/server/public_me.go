package server

import (
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"golang.org/x/time/rate"
)

// Defaults of Config.MeRate and MeBurst, for `ipatlas serve`'s flags: a
// page load costs one lookup, so
// ten in a burst and then one every six seconds is generous for people and
// useless for harvesting (a caller can only ever learn its own location).
const (
	DefaultMeRate  = 1.0 / 6
	DefaultMeBurst = 10
)

// mePath is GET /api/ip/me; the web page calls it.
const mePath = "/api/ip/me"

// meMeta is the meta of every answer of GET /api/ip/me: an anonymous
// caller, not the API.
var meMeta = ipatlas.Meta{}

// handleMe is GET /api/ip/me: the location record of the caller's own
// address, free and without an API key, as the query's envelope with
// success true, data and meta (isLoggedIn and isApiRequest false, no
// credits). ?lang=zh answers in Chinese.
//
// Failures use the query's codes and statuses: PrivateIP (400) when the
// caller's address is not public (a visitor on the operator's own network),
// RateLimitExceeded (429, with Retry-After) past the per-client limit
// (Config.MeRate), InvalidRequest (400) for an unknown lang,
// ServiceUnavailable (503) when the lookup fails.
func (s *api) handleMe(w *exchange, r *http.Request) error {
	w.Header()["Cache-Control"] = hdrNoStore
	lang, ok := ipatlas.ParseLang(r.URL.Query().Get("lang"))
	if !ok {
		w.setLang(ipatlas.English)
		return &failure{code: ipatlas.CodeInvalidRequest, en: `lang must be "en" or "zh"`, zh: `lang 必须是 "en" 或 "zh"`, meta: meMeta}
	}
	w.setLang(lang)
	addr := w.client
	if !addr.IsValid() {
		s.log.LogAttrs(r.Context(), slog.LevelError, "no client address", slog.String("remote", r.RemoteAddr))
		return &failure{code: ipatlas.CodeInternal, meta: meMeta}
	}
	addr = addr.Unmap().WithZone("")
	if b, special := netaddr.Classify(addr); special {
		return &failure{code: ipatlas.CodePrivateIP, en: ownPrivate(addr, b, lang, "GET /api/lookup/8.8.8.8"), meta: meMeta}
	}
	if d := s.meWait(addr); d > 0 {
		w.Header()["Retry-After"] = []string{strconv.FormatInt(retrySeconds(d), 10)}
		return &failure{code: ipatlas.CodeRateLimitExceeded, meta: meMeta}
	}
	rec, err := s.deps.Geo.Lookup(addr, lang)
	if err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "looking up the caller's address", errAttr(err))
		return &failure{code: ipatlas.CodeServiceUnavailable, meta: meMeta}
	}
	writeJSON(w, http.StatusOK, &ipatlas.Envelope{Success: true, Data: &rec, Meta: meMeta})
	return nil
}

// ownPrivate is the PrivateIP detail of a lookup of the caller's own
// address when it is not public, in lang: why, and what to do instead.
// Such a caller is on the server's own machine or network (a local trial,
// an office behind the same router), not one who asked about a private
// address; try is a lookup of a public address they can make instead.
func ownPrivate(addr netip.Addr, b netaddr.Block, lang ipatlas.Lang, try string) string {
	if lang == ipatlas.Chinese {
		return b.Why(addr, lang) + "。你是从服务器本机或内网访问的，这类地址没有位置；通过互联网访问时，它会定位你的公网地址。现在要试用，请带 API 密钥查询一个公网地址：" + try
	}
	return b.Why(addr, lang) + ". You reach the server from its own machine or network, where addresses have no location; over the internet it locates your public address. To try it now, look up a public one with an API key: " + try
}

// meWait spends a token of the bucket of free lookups of the caller's own
// location (Config.MeRate), which GET /api/ip/me and the echoip shape's
// own-address paths share: 0 when the lookup may go ahead, else how long
// to wait.
func (s *api) meWait(addr netip.Addr) time.Duration {
	if s.me == nil {
		return 0
	}
	lim := s.me.getOrAdd(clientGroup(addr), func() *rate.Limiter { return rate.NewLimiter(s.meRate, s.meBurst) })
	return take(lim, s.now())
}
