package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"golang.org/x/time/rate"
)

// openEngine is the real geo engine over the geotest fixture.
func openEngine(t testing.TB) *geo.Engine {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// clock is a settable clock for the limiters.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newMe(t testing.TB, opts MeOptions) *meHandler {
	t.Helper()
	if opts.ClientAddr == nil {
		opts.ClientAddr = peer
	}
	h, err := MeHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h.(*meHandler)
}

func meRequest(h http.Handler, remote, query string) (*httptest.ResponseRecorder, ipatlas.Envelope) {
	r := httptest.NewRequest("GET", MePath+query, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var env ipatlas.Envelope
	json.Unmarshal(w.Body.Bytes(), &env)
	return w, env
}

func hostPort(ip string) string { return netip.AddrPortFrom(netip.MustParseAddr(ip), 40000).String() }

func TestMeAnswersTheCallersRecord(t *testing.T) {
	h := newMe(t, MeOptions{Locator: openEngine(t)})
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
	h := newMe(t, MeOptions{Locator: openEngine(t)})
	for _, c := range []struct {
		name, remote, query string
		status              int
		code                ipatlas.ErrorCode
		text                string
	}{
		{"loopback", "127.0.0.1:1", "", 400, ipatlas.CodePrivateIP, "Private IP address not supported: 127.0.0.1 (loopback)"},
		{"private v6", "[fd00::1]:1", "", 400, ipatlas.CodePrivateIP, ""},
		{"private in chinese", "10.1.2.3:1", "?lang=zh", 400, ipatlas.CodePrivateIP, ""},
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
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	h := newMe(t, MeOptions{Locator: openEngine(t), Rate: rate.Every(10 * time.Second), Burst: 2, Now: clk.now})

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
	clk.advance(10 * time.Second)
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

func TestMeTableIsBounded(t *testing.T) {
	h := newMe(t, MeOptions{Locator: openEngine(t), Addresses: 64})
	for i := range 1000 {
		// Addresses of the fixture's Hetzner /32, each in its own /64.
		a := netip.AddrFrom16([16]byte{0x2a, 0x01, 0x04, 0xf8, 0, 0, byte(i >> 8), byte(i), 15: 1})
		if w, _ := meRequest(h, netip.AddrPortFrom(a, 1).String(), ""); w.Code != 200 {
			t.Fatalf("client %d: %d", i, w.Code)
		}
	}
	if n := h.limiters.Len(); n > 64 {
		t.Errorf("%d limiters kept, bound 64", n)
	}
}

func TestMeOptions(t *testing.T) {
	e := openEngine(t)
	for name, o := range map[string]MeOptions{
		"no ClientAddr":  {Locator: e},
		"no Locator":     {ClientAddr: peer},
		"negative rate":  {ClientAddr: peer, Locator: e, Rate: -1},
		"negative burst": {ClientAddr: peer, Locator: e, Burst: -1},
		"negative table": {ClientAddr: peer, Locator: e, Addresses: -1},
	} {
		if _, err := MeHandler(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMeConcurrent(t *testing.T) {
	h := newMe(t, MeOptions{Locator: openEngine(t), Rate: rate.Inf})
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
	h := newMe(b, MeOptions{Locator: openEngine(b), Rate: rate.Inf})
	r := httptest.NewRequest("GET", MePath, nil)
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
