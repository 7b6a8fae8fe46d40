package web

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/hashicorp/golang-lru/v2"
	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"golang.org/x/time/rate"
)

// MePath is where MeHandler is meant to be mounted (GET); the page calls it.
const MePath = "/api/ip/me"

// Defaults of MeOptions: a page load costs one lookup, so ten in a burst
// and then one every six seconds is generous for people and useless for
// harvesting (a caller can only ever learn its own location).
const (
	DefaultMeRate      = rate.Limit(1.0 / 6)
	DefaultMeBurst     = 10
	DefaultMeAddresses = 1 << 15
)

// MeOptions configures MeHandler.
type MeOptions struct {
	// ClientAddr returns the caller's address as the server established
	// it; the same function as Options.ClientAddr. Required.
	ClientAddr func(*http.Request) netip.Addr
	// Locator looks the address up. Required.
	Locator geo.Locator
	// Rate and Burst limit the lookups per client: per IPv4 address, and
	// per IPv6 /64, the block one subscriber usually gets whole (limiting
	// single IPv6 addresses would limit nothing). 0 means the defaults.
	Rate  rate.Limit
	Burst int
	// Addresses bounds the table of limiters; the least recently seen
	// client is forgotten first, and a forgotten client starts again with
	// a full burst. About 250 bytes an entry; 0 means DefaultMeAddresses.
	Addresses int
	// Now is the limiters' clock; nil means time.Now.
	Now func() time.Time
	// Logger receives lookup failures; nil discards them.
	Logger *slog.Logger
}

// MeHandler serves GET /api/ip/me: the location record of the caller's own
// address, free and without an API key, as the query's envelope with
// success true, data and meta (isLoggedIn and isApiRequest false, no
// credits). ?lang=zh answers in Chinese.
//
// Failures use the query's codes and statuses: PrivateIP (400) when the
// caller's address is not public (a visitor on the operator's own network),
// RateLimitExceeded (429, with Retry-After) past the per-client limit,
// InvalidRequest (400) for an unknown lang, ServiceUnavailable (503) when
// the lookup fails.
func MeHandler(opts MeOptions) (http.Handler, error) {
	if opts.ClientAddr == nil {
		return nil, errors.New("web: MeOptions.ClientAddr is required")
	}
	if opts.Locator == nil {
		return nil, errors.New("web: MeOptions.Locator is required")
	}
	if opts.Rate == 0 {
		opts.Rate = DefaultMeRate
	}
	if opts.Rate < 0 {
		return nil, fmt.Errorf("web: MeOptions.Rate %v is negative", opts.Rate)
	}
	if opts.Burst == 0 {
		opts.Burst = DefaultMeBurst
	}
	if opts.Burst < 0 {
		return nil, fmt.Errorf("web: MeOptions.Burst %d is negative", opts.Burst)
	}
	if opts.Addresses == 0 {
		opts.Addresses = DefaultMeAddresses
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	table, err := lru.New[netip.Prefix, *rate.Limiter](opts.Addresses)
	if err != nil {
		return nil, fmt.Errorf("web: MeOptions.Addresses: %w", err)
	}
	return &meHandler{opts: opts, limiters: table}, nil
}

type meHandler struct {
	opts     MeOptions
	limiters *lru.Cache[netip.Prefix, *rate.Limiter]
}

// meMeta is the meta of every answer: an anonymous caller, not the API.
var meMeta = ipatlas.Meta{}

func (h *meHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()["Cache-Control"] = hdrNoStore
	lang, ok := ipatlas.ParseLang(r.URL.Query().Get("lang"))
	if !ok {
		writeError(w, ipatlas.English, ipatlas.CodeInvalidRequest, `lang must be "en" or "zh"`, meMeta, 0)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = hdrAllow
		writeError(w, lang, ipatlas.CodeMethodNotAllowed, "", meMeta, 0)
		return
	}
	addr := h.opts.ClientAddr(r)
	if !addr.IsValid() {
		h.opts.Logger.LogAttrs(r.Context(), slog.LevelError, "no client address", slog.String("remote", r.RemoteAddr))
		writeError(w, lang, ipatlas.CodeInternal, "", meMeta, 0)
		return
	}
	addr = addr.Unmap().WithZone("")
	if b, special := netaddr.Classify(addr); special {
		name := b.Name
		if lang == ipatlas.Chinese {
			name = b.NameZh
		}
		writeError(w, lang, ipatlas.CodePrivateIP, fmt.Sprintf("%s (%s)", addr, name), meMeta, 0)
		return
	}
	if wait := h.take(addr); wait > 0 {
		writeError(w, lang, ipatlas.CodeRateLimitExceeded, "", meMeta, wait)
		return
	}
	rec, err := h.opts.Locator.Lookup(addr, lang)
	if err != nil {
		h.opts.Logger.LogAttrs(r.Context(), slog.LevelWarn, "looking up the caller's address", slog.String("err", err.Error()))
		writeError(w, lang, ipatlas.CodeServiceUnavailable, "", meMeta, 0)
		return
	}
	writeJSON(w, http.StatusOK, &ipatlas.Envelope{Success: true, Data: &rec, Meta: meMeta})
}

// clientKey is what a client is limited by: an IPv4 address, or the /64
// of an IPv6 address.
func clientKey(a netip.Addr) netip.Prefix {
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// take spends one token of a's limiter; when there is none it returns how
// long until there is, and spends nothing.
func (h *meHandler) take(a netip.Addr) time.Duration {
	key := clientKey(a)
	lim, ok := h.limiters.Get(key)
	if !ok {
		fresh := rate.NewLimiter(h.opts.Rate, h.opts.Burst)
		// Another request of the same client may have added one meanwhile.
		if prev, found, _ := h.limiters.PeekOrAdd(key, fresh); found {
			lim = prev
		} else {
			lim = fresh
		}
	}
	now := h.opts.Now()
	res := lim.ReserveN(now, 1)
	if !res.OK() {
		return time.Hour // Burst 0 would get here: nothing is ever allowed
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}
