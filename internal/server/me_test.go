package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/servertest"
)

// newMe is the whole public handler, over the real geo engine of the
// geotest fixture, with the settings of GET /api/ip/me in cfg.
func newMe(t testing.TB, cfg Config) (*Server, http.Handler) {
	t.Helper()
	p := servertest.New(t, nil)
	if cfg.Now == nil {
		cfg.Now = p.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LimitTableSize == 0 {
		cfg.LimitTableSize = DefaultLimitTableSize
	}
	s := mustNew(t, cfg, Deps{Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter})
	return s, s.Handler()
}

func meRequest(h http.Handler, remote, query string) (*httptest.ResponseRecorder, ipatlas.Envelope) {
	r := httptest.NewRequest("GET", mePath+query, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var env ipatlas.Envelope
	json.Unmarshal(w.Body.Bytes(), &env)
	return w, env
}

func hostPort(ip string) string { return netip.AddrPortFrom(netip.MustParseAddr(ip), 40000).String() }

func TestMeAnswersTheCallersRecord(t *testing.T) {
	_, h := newMe(t, Config{})
	for _, c := range []struct {
		place geotest.Known
		query string
		lang  ipatlas.Lang
	}{
		{geotest.Beijing, "", ipatlas.English},
		{geotest.Beijing, "?lang=zh", ipatlas.Chinese},
		{geotest.MountainView, "?lang=en", ipatlas.English},
		{geotest.Nuremberg, "", ipatlas.English},
		{geotest.Singapore, "", ipatlas.English}, // no coordinates: success without a location
	} {
		t.Run(c.place.Label+c.query, func(t *testing.T) {
			w, env := meRequest(h, hostPort(c.place.IP), c.query)
			if w.Code != http.StatusOK || !env.Success || env.Data == nil {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			if want := c.place.Want(c.lang); !reflect.DeepEqual(*env.Data, want) {
				t.Errorf("record\n got %+v\nwant %+v", *env.Data, want)
			}
			if env.Meta != (ipatlas.Meta{}) {
				t.Errorf("meta %+v: the caller is anonymous and nothing is charged", env.Meta)
			}
			if w.Header().Get("Cache-Control") != "no-store" {
				t.Error("a per-caller answer must not be cached")
			}
		})
	}
}

func TestMeRefusals(t *testing.T) {
	_, h := newMe(t, Config{})
	for _, c := range []struct {
		name, remote, query string
		status              int
		code                ipatlas.ErrorCode
		text                string
	}{
		{"loopback", "127.0.0.1:1", "", 400, ipatlas.CodePrivateIP, "Private IP address not supported: 127.0.0.1 is a loopback address (RFC 1122). You reach the server from its own machine or network, where addresses have no location; over the internet it locates your public address. To try it now, look up a public one with an API key: GET /api/lookup/8.8.8.8"},
		{"private v6", "[fd00::1]:1", "", 400, ipatlas.CodePrivateIP, ""},
		{"private in chinese", "10.1.2.3:1", "?lang=zh", 400, ipatlas.CodePrivateIP, "不支持私有 IP 地址：10.1.2.3 是私有地址（RFC 1918）。你是从服务器本机或内网访问的，这类地址没有位置；通过互联网访问时，它会定位你的公网地址。现在要试用，请带 API 密钥查询一个公网地址：GET /api/lookup/8.8.8.8"},
		{"unix socket", "@", "", 500, ipatlas.CodeInternal, ""},
		{"bad lang", hostPort(geotest.Beijing.IP), "?lang=fr", 400, ipatlas.CodeInvalidRequest, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, env := meRequest(h, c.remote, c.query)
			if w.Code != c.status || env.Success || env.Code != c.code {
				t.Fatalf("%d %s, want %d %s", w.Code, w.Body, c.status, c.code)
			}
			if c.text != "" && env.Error != c.text {
				t.Errorf("error %q, want %q", env.Error, c.text)
			}
		})
	}
	_, env := meRequest(h, "10.1.2.3:1", "?lang=zh")
	if want := ipatlas.CodePrivateIP.Text(ipatlas.Chinese); len(env.Error) < len(want) || env.Error[:len(want)] != want {
		t.Errorf("Chinese error %q", env.Error)
	}
}

func TestMeRateLimitPerClient(t *testing.T) {
	clk := newClock()
	_, h := newMe(t, Config{MeRate: 0.1, MeBurst: 2, Now: clk.Now})

	beijing := hostPort(geotest.Beijing.IP)
	for i := range 2 {
		if w, _ := meRequest(h, beijing, ""); w.Code != 200 {
			t.Fatalf("request %d within the burst: %d", i, w.Code)
		}
	}
	w, env := meRequest(h, beijing, "")
	if w.Code != http.StatusTooManyRequests || env.Code != ipatlas.CodeRateLimitExceeded {
		t.Fatalf("past the burst: %d %s", w.Code, w.Body)
	}
	if ra := w.Header().Get("Retry-After"); ra != "10" {
		t.Errorf("Retry-After %q, want 10 (one token every 10 s)", ra)
	}
	// Another client is not affected.
	if w, _ := meRequest(h, hostPort(geotest.MountainView.IP), ""); w.Code != 200 {
		t.Errorf("another IPv4 client: %d", w.Code)
	}
	// A refused request spends nothing: after one interval exactly one more.
	clk.Advance(10 * time.Second)
	if w, _ := meRequest(h, beijing, ""); w.Code != 200 {
		t.Errorf("after refilling: %d", w.Code)
	}
	if w, _ := meRequest(h, beijing, ""); w.Code != 429 {
		t.Errorf("the refill gave more than one token: %d", w.Code)
	}

	// IPv6 clients are limited by /64: another address of the same /64
	// shares the limit, another /64 does not.
	v6 := func(s string) string { return netip.AddrPortFrom(netip.MustParseAddr(s), 1).String() }
	for i := range 2 {
		if w, _ := meRequest(h, v6(fmt.Sprintf("2a01:4f8:c0c:1234::%x", i+1)), ""); w.Code != 200 {
			t.Fatalf("v6 request %d: %d", i, w.Code)
		}
	}
	if w, _ := meRequest(h, v6("2a01:4f8:c0c:1234:ffff::9"), ""); w.Code != 429 {
		t.Errorf("same /64: %d, want 429", w.Code)
	}
	if w, _ := meRequest(h, v6("2a01:4f8:c0c:1235::1"), ""); w.Code != 200 {
		t.Errorf("another /64: %d, want 200", w.Code)
	}
}

// The general per-address limit of the free endpoints does not cover
// GET /api/ip/me, which has its own: one is not spent by the other.
func TestMeLimitIsItsOwn(t *testing.T) {
	clk := newClock()
	_, h := newMe(t, Config{MeRate: 0.1, MeBurst: 1, AddrRate: 0.1, AddrBurst: 1, Now: clk.Now})
	beijing := hostPort(geotest.Beijing.IP)
	if w, _ := meRequest(h, beijing, ""); w.Code != 200 {
		t.Fatalf("first lookup: %d", w.Code)
	}
	r := httptest.NewRequest("GET", "/api/ip/myip", nil)
	r.RemoteAddr = beijing
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("GET /api/ip/myip after a lookup: %d, want 200", w.Code)
	}
	if w, _ := meRequest(h, beijing, ""); w.Code != 429 {
		t.Errorf("second lookup: %d, want 429", w.Code)
	}
}

func TestMeTableIsBounded(t *testing.T) {
	s, h := newMe(t, Config{LimitTableSize: 64, MeRate: DefaultMeRate, MeBurst: DefaultMeBurst})
	for i := range 1000 {
		// Addresses of the fixture's Hetzner /32, each in its own /64.
		a := netip.AddrFrom16([16]byte{0x2a, 0x01, 0x04, 0xf8, 0, 0, byte(i >> 8), byte(i), 15: 1})
		if w, _ := meRequest(h, netip.AddrPortFrom(a, 1).String(), ""); w.Code != 200 {
			t.Fatalf("client %d: %d", i, w.Code)
		}
	}
	if n := s.api.me.len(); n > 64 {
		t.Errorf("%d limiters kept, bound 64", n)
	}
}

func TestMeConcurrent(t *testing.T) {
	_, h := newMe(t, Config{MeRate: math.MaxFloat64, MeBurst: 1 << 30})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				place := geotest.Places[i%2] // MountainView, Beijing
				if w, env := meRequest(h, hostPort(place.IP), ""); w.Code != 200 || env.Data.City != place.City {
					t.Errorf("%d %s", w.Code, w.Body)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkMe(b *testing.B) {
	_, h := newMe(b, Config{MeRate: math.MaxFloat64, MeBurst: 1 << 30})
	r := httptest.NewRequest("GET", mePath, nil)
	r.RemoteAddr = hostPort(geotest.Beijing.IP)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body)
		}
	}
}
