package client_test

// These tests drive the client against small httptest handlers for what the
// real server never does (a proxy's HTML 502, a missing IPVersion, an answer
// over the wrong family, a dropped connection). internal/e2e runs
// the client against the real server.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

// counting wraps h and counts the requests that reached it.
type counting struct {
	n atomic.Int64
	h http.Handler
}

func (c *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.n.Add(1)
	c.h.ServeHTTP(w, r)
}

func serve(t testing.TB, h http.HandlerFunc) (*httptest.Server, *counting) {
	t.Helper()
	c := &counting{h: h}
	s := httptest.NewServer(c)
	t.Cleanup(s.Close)
	return s, c
}

func newClient(t *testing.T, cfg client.Config) *client.Client {
	t.Helper()
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// record is a record as the ipatlas server writes it.
const recordJSON = `{"ip":"8.8.8.8","continent":"North America","continent_code":"NA","country":"United States","country_code":"US","province":"California","city":"Mountain View","district":"","isp":"Google LLC","asn":"AS15169","latitude":37.4,"longitude":-122.1,"time_zone":"America/Los_Angeles","currency":"USD","zip_code":"","area_code":"1"}`

func okQuery(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("RateLimit-Limit", "1000")
	w.Header().Set("RateLimit-Remaining", "990")
	w.Header().Set("RateLimit-Reset", "3600")
	fmt.Fprintf(w, `{"success":true,"data":%s,"meta":{"isLoggedIn":true,"isApiRequest":true,"currentCredits":41}}`, recordJSON)
}

func TestNewChecksConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  client.Config
		ok   bool
	}{
		{"zero", client.Config{}, true},
		{"ttl 24h", client.Config{CacheTTL: 24 * time.Hour}, true},
		{"ttl 36h", client.Config{CacheTTL: 36 * time.Hour}, true},
		{"ttl 48h", client.Config{CacheTTL: 48 * time.Hour}, true},
		{"ttl 23h59m", client.Config{CacheTTL: 24*time.Hour - time.Minute}, false},
		{"ttl 49h", client.Config{CacheTTL: 49 * time.Hour}, false},
		{"ttl negative", client.Config{CacheTTL: -time.Hour}, false},
		{"ttl ignored when off", client.Config{CacheTTL: time.Hour, DisableCache: true}, true},
		{"no scheme", client.Config{URL: "localhost:8080"}, false},
		{"ftp", client.Config{URL: "ftp://example.net"}, false},
		{"no host", client.Config{URL: "http://"}, false},
		{"bad ipv6 url", client.Config{IPv6URL: "::1"}, false},
		{"query in url", client.Config{TestURL: "http://example.net/?x=1"}, false},
		{"separate hosts", client.Config{URL: "https://api.example.net", IPv4URL: "https://v4.example.net", IPv6URL: "https://v6.example.net", TestURL: "https://test.example.net"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.New(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New: err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestLookupValidatesLocally(t *testing.T) {
	s, hits := serve(t, okQuery)
	c := newClient(t, client.Config{URL: s.URL, APIKey: "k"})
	for _, tc := range []struct {
		ip   string
		want error
		code ipatlas.ErrorCode
	}{
		{"", ipatlas.ErrInvalidIP, ipatlas.CodeInvalidIP},
		{"8.8.8", ipatlas.ErrInvalidIP, ipatlas.CodeInvalidIP},
		{"08.8.8.8", ipatlas.ErrInvalidIP, ipatlas.CodeInvalidIP},
		{"fe80::1%eth0", ipatlas.ErrInvalidIP, ipatlas.CodeInvalidIP},
		{"8.8.8.8:53", ipatlas.ErrInvalidIP, ipatlas.CodeInvalidIP},
		{"8.8.8.0/24", ipatlas.ErrInvalidIP, ipatlas.CodeInvalidIP},
		{"example.com", ipatlas.ErrInvalidIP, ipatlas.CodeInvalidIP},
		{"127.0.0.1", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
		{"10.1.2.3", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
		{"192.168.0.1", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
		{"100.64.0.1", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
		{"::1", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
		{"fd00::1", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
		{"2001:db8::1", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
		{"::ffff:192.168.1.1", ipatlas.ErrPrivateIP, ipatlas.CodePrivateIP},
	} {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			_, _, err := c.Lookup(context.Background(), tc.ip, lang)
			if !errors.Is(err, tc.want) {
				t.Errorf("Lookup(%q, %v) = %v, want %v", tc.ip, lang, err, tc.want)
				continue
			}
			var e *ipatlas.Error
			if !errors.As(err, &e) || e.Code != tc.code || e.Status != 0 || e.Meta != nil {
				t.Errorf("Lookup(%q): %#v, want a local %s error (no status, no meta)", tc.ip, e, tc.code)
			}
			if !strings.Contains(e.Message, tc.code.Text(lang)) {
				t.Errorf("Lookup(%q, %v) message %q lacks %q", tc.ip, lang, e.Message, tc.code.Text(lang))
			}
		}
	}
	if n := hits.n.Load(); n != 0 {
		t.Fatalf("%d requests reached the server; local validation must make none", n)
	}
}

// A refusal names the rule in the language asked for, and only in it.
func TestCheckAddressSpeaksOneLanguage(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		lang ipatlas.Lang
		code ipatlas.ErrorCode
		want string
	}{
		{"garbage", ipatlas.English, ipatlas.CodeInvalidIP, `Invalid IP address format: "garbage": unexpected character 'g'`},
		{"garbage", ipatlas.Chinese, ipatlas.CodeInvalidIP, `无效的 IP 地址格式："garbage"：含有不应出现的字符 'g'`},
		{"08.8.8.8", ipatlas.Chinese, ipatlas.CodeInvalidIP, `无效的 IP 地址格式："08.8.8.8"：IPv4 地址的各段不允许有前导零`},
		{"10.0.0.1", ipatlas.English, ipatlas.CodePrivateIP, "Private IP address not supported: 10.0.0.1 is a private-use address (RFC 1918)"},
		{"10.0.0.1", ipatlas.Chinese, ipatlas.CodePrivateIP, "不支持私有 IP 地址：10.0.0.1 是私有地址（RFC 1918）"},
	} {
		_, err := client.CheckAddress(tc.ip, tc.lang)
		var e *ipatlas.Error
		if !errors.As(err, &e) || e.Code != tc.code || e.Message != tc.want {
			t.Errorf("CheckAddress(%q, %v) = %v, want %s %q", tc.ip, tc.lang, err, tc.code, tc.want)
		}
	}
}

func TestErrorsFromAnswers(t *testing.T) {
	type answer struct {
		status int
		ctype  string
		body   string
		header map[string]string
	}
	for _, tc := range []struct {
		name       string
		a          answer
		code       ipatlas.ErrorCode
		status     int
		retryAfter time.Duration
		credits    int64 // -1: no meta
		msg        string
	}{
		{"proxy HTML 502", answer{502, "text/html", "<html><body>Bad Gateway</body></html>", nil}, ipatlas.CodeServiceUnavailable, 502, 0, -1, "HTTP 502 Bad Gateway"},
		{"plain 503 with Retry-After", answer{503, "text/plain", "down for maintenance", map[string]string{"Retry-After": "120"}}, ipatlas.CodeServiceUnavailable, 503, 2 * time.Minute, -1, "down for maintenance"},
		{"gateway timeout", answer{504, "", "", nil}, ipatlas.CodeServiceUnavailable, 504, 0, -1, "HTTP 504"},
		{"bare 401", answer{401, "text/plain", "unauthorized", nil}, ipatlas.CodeInvalidAPIKey, 401, 0, -1, "unauthorized"},
		{"bare 403", answer{403, "", "", nil}, ipatlas.CodeInvalidAPIKey, 403, 0, -1, "HTTP 403"},
		{"bare 429 with date", answer{429, "text/plain", "slow down", map[string]string{"Retry-After": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}}, ipatlas.CodeRateLimitExceeded, 429, time.Hour, -1, "slow down"},
		{"bare 402", answer{402, "", "", nil}, ipatlas.CodeInsufficientCredits, 402, 0, -1, "HTTP 402"},
		{"teapot", answer{418, "", "", nil}, ipatlas.CodeInternal, 418, 0, -1, "HTTP 418"},
		{"2xx success false with code", answer{200, "application/json", `{"success":false,"error":"nope","code":"InsufficientCredits","meta":{"isLoggedIn":true,"isApiRequest":true,"currentCredits":0}}`, nil}, ipatlas.CodeInsufficientCredits, 200, 0, 0, "nope"},
		{"2xx success false, spec text only", answer{200, "application/json", `{"success":false,"error":"Invalid IP address format","meta":{"isLoggedIn":true,"isApiRequest":true,"currentCredits":7}}`, nil}, ipatlas.CodeInvalidIP, 200, 0, 7, "Invalid IP address format"},
		{"2xx success false, Chinese text only", answer{200, "application/json", `{"success":false,"error":"不支持私有 IP 地址","meta":{"currentCredits":7}}`, nil}, ipatlas.CodePrivateIP, 200, 0, 7, "不支持私有 IP 地址"},
		{"2xx success false, Chinese text without spaces", answer{200, "application/json", `{"success":false,"error":"无效的IP地址格式","meta":{"currentCredits":7}}`, nil}, ipatlas.CodeInvalidIP, 200, 0, 7, "无效的IP地址格式"},
		{"2xx success false, nothing", answer{200, "application/json", `{"success":false}`, nil}, ipatlas.CodeInternal, 200, 0, -1, ""},
		{"2xx HTML captive portal", answer{200, "text/html", "<html>log in to the wifi</html>", nil}, ipatlas.CodeInternal, 200, 0, -1, "not JSON"},
		{"2xx success without data", answer{200, "application/json", `{"success":true,"meta":{}}`, nil}, ipatlas.CodeInternal, 200, 0, -1, "without \"data\""},
		{"2xx record without ip", answer{200, "application/json", `{"success":true,"data":{"city":"x"},"meta":{}}`, nil}, ipatlas.CodeInternal, 200, 0, -1, "no \"ip\""},
		{"JSON 400 unknown code kept", answer{400, "application/json", `{"success":false,"error":"new thing","code":"SomethingNew","meta":{}}`, nil}, "SomethingNew", 400, 0, 0, "new thing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.a.header {
					w.Header().Set(k, v)
				}
				if tc.a.ctype != "" {
					w.Header().Set("Content-Type", tc.a.ctype)
				}
				w.WriteHeader(tc.a.status)
				io.WriteString(w, tc.a.body)
			})
			c := newClient(t, client.Config{URL: s.URL, APIKey: "k"})
			_, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
			var e *ipatlas.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *ipatlas.Error", err, err)
			}
			if e.Code != tc.code || e.Status != tc.status {
				t.Errorf("code, status = %s, %d; want %s, %d", e.Code, e.Status, tc.code, tc.status)
			}
			if !errors.Is(err, &ipatlas.Error{Code: tc.code}) {
				t.Errorf("errors.Is(err, %s) is false", tc.code)
			}
			if d := e.RetryAfter - tc.retryAfter; d < -2*time.Second || d > 2*time.Second {
				t.Errorf("RetryAfter = %v, want about %v", e.RetryAfter, tc.retryAfter)
			}
			switch {
			case tc.credits < 0 && e.Meta != nil:
				t.Errorf("Meta = %+v, want none", e.Meta)
			case tc.credits >= 0 && (e.Meta == nil || e.Meta.CurrentCredits != tc.credits):
				t.Errorf("Meta = %+v, want credits %d", e.Meta, tc.credits)
			}
			if !strings.Contains(e.Message, tc.msg) {
				t.Errorf("Message = %q, want it to contain %q", e.Message, tc.msg)
			}
		})
	}
}

// TestEveryCodeDecodes renders every code of the table as the server does
// (the shared Envelope, the table's status and texts) and checks the client
// gives it back with errors.Is and errors.As.
func TestEveryCodeDecodes(t *testing.T) {
	sentinels := map[ipatlas.ErrorCode]error{
		ipatlas.CodeInvalidIP: ipatlas.ErrInvalidIP, ipatlas.CodePrivateIP: ipatlas.ErrPrivateIP,
		ipatlas.CodeRateLimitExceeded: ipatlas.ErrRateLimitExceeded, ipatlas.CodeInsufficientCredits: ipatlas.ErrInsufficientCredits,
		ipatlas.CodeInvalidAPIKey: ipatlas.ErrInvalidAPIKey, ipatlas.CodeInvalidRequest: ipatlas.ErrInvalidRequest,
		ipatlas.CodeServiceUnavailable: ipatlas.ErrServiceUnavailable,
	}
	for _, code := range ipatlas.Codes() {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if code == ipatlas.CodeRateLimitExceeded {
					w.Header().Set("Retry-After", "86400")
				}
				w.WriteHeader(code.HTTPStatus())
				json.NewEncoder(w).Encode(ipatlas.Envelope{Error: code.Text(lang), Code: code, Meta: ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 3}})
			})
			c := newClient(t, client.Config{URL: s.URL, APIKey: "k"})
			_, _, err := c.Lookup(context.Background(), "1.1.1.1", lang)
			var e *ipatlas.Error
			if !errors.As(err, &e) || e.Code != code || e.Status != code.HTTPStatus() || e.Message != code.Text(lang) {
				t.Errorf("%s/%v: got %#v", code, lang, err)
				continue
			}
			if e.Meta == nil || e.Meta.CurrentCredits != 3 {
				t.Errorf("%s: Meta = %+v", code, e.Meta)
			}
			if sen, ok := sentinels[code]; ok && !errors.Is(err, sen) {
				t.Errorf("%s: errors.Is with its sentinel is false", code)
			}
			if code != ipatlas.CodeInvalidIP && errors.Is(err, ipatlas.ErrInvalidIP) {
				t.Errorf("%s matches ErrInvalidIP", code)
			}
			if code == ipatlas.CodeRateLimitExceeded && e.RetryAfter != 24*time.Hour {
				t.Errorf("RetryAfter = %v, want 24h", e.RetryAfter)
			}
		}
	}
}

func TestLookupDetailFieldsAndRoundTrip(t *testing.T) {
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		var q ipatlas.QueryRequest
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&q) != nil {
			http.Error(w, "bad", 400)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sekrit" {
			w.WriteHeader(401)
			return
		}
		// No coordinates, no city, an empty district, an extra field.
		fmt.Fprintf(w, `{"success":true,"data":{"ip":%q,"country":"Germany","district":"","asn":"AS3320","future":"x"},"meta":{"isLoggedIn":true,"isApiRequest":true,"currentCredits":5}}`, q.IP+"/"+q.Lang)
	})
	c := newClient(t, client.Config{URL: s.URL, APIKey: "sekrit"})
	res, err := c.LookupDetail(context.Background(), " 2a01:4f8::1 ", ipatlas.Chinese)
	if err != nil {
		t.Fatal(err)
	}
	// The address is sent trimmed and canonical, with the language.
	if res.Record.IP != "2a01:4f8::1/zh" {
		t.Fatalf("server saw %q", res.Record.IP)
	}
	if res.Record.Latitude != nil || res.Record.Longitude != nil {
		t.Errorf("coordinates = %v,%v; absent must stay nil", res.Record.Latitude, res.Record.Longitude)
	}
	for key, want := range map[string]bool{"ip": true, "country": true, "district": true, "asn": true, "city": false, "latitude": false, "zip_code": false, "future": false, "nonsense": false} {
		if got := res.Has(key); got != want {
			t.Errorf("Has(%q) = %v, want %v", key, got, want)
		}
	}
	if !strings.Contains(string(res.Raw()), `"future":"x"`) {
		t.Errorf("Raw() = %s, want the unknown field kept", res.Raw())
	}
	if res.Meta.CurrentCredits != 5 || res.Cached {
		t.Errorf("Meta, Cached = %+v, %v", res.Meta, res.Cached)
	}

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back client.LookupResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Record != res.Record || back.Meta != res.Meta || !back.FetchedAt.Equal(res.FetchedAt) {
		t.Errorf("round trip: %+v, want %+v", back, res)
	}
	if !back.Has("district") || back.Has("city") {
		t.Error("round trip lost field presence")
	}
}

func TestLookupCoordinatesZeroZero(t *testing.T) {
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"success":true,"data":{"ip":"1.1.1.1","latitude":0,"longitude":0},"meta":{}}`)
	})
	c := newClient(t, client.Config{URL: s.URL})
	rec, _, err := c.Lookup(context.Background(), "1.1.1.1", ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Latitude == nil || rec.Longitude == nil || *rec.Latitude != 0 || *rec.Longitude != 0 {
		t.Fatalf("0,0 is a real place; got %v,%v", rec.Latitude, rec.Longitude)
	}
}

// clock is a settable clock for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestCacheHitAndExpiry(t *testing.T) {
	for _, ttl := range []time.Duration{0, 36 * time.Hour, 48 * time.Hour} {
		want := ttl
		if want == 0 {
			want = client.DefaultCacheTTL
		}
		s, hits := serve(t, okQuery)
		clk := &clock{t: time.Date(2026, 11, 3, 12, 0, 0, 0, time.UTC)}
		c := newClient(t, client.Config{URL: s.URL, CacheTTL: ttl, Now: clk.Now})
		ctx := context.Background()

		first, err := c.LookupDetail(ctx, "8.8.8.8", ipatlas.English)
		if err != nil || first.Cached {
			t.Fatalf("first: %v, cached %v", err, first.Cached)
		}
		// The same address, written differently: one key.
		clk.Add(want - time.Second)
		hit, err := c.LookupDetail(ctx, "8.8.8.8\n", ipatlas.English)
		if err != nil || !hit.Cached || hit.Record != first.Record || hit.Meta != first.Meta {
			t.Fatalf("second lookup inside the TTL: %+v, %v; want a cache hit", hit, err)
		}
		if hits.n.Load() != 1 {
			t.Fatalf("ttl %v: %d requests, want 1 (cache hit)", ttl, hits.n.Load())
		}
		// Another language is another key.
		if _, _, err := c.Lookup(ctx, "8.8.8.8", ipatlas.Chinese); err != nil {
			t.Fatal(err)
		}
		if hits.n.Load() != 2 {
			t.Fatalf("zh after en: %d requests, want 2", hits.n.Load())
		}
		clk.Add(time.Second)
		again, err := c.LookupDetail(ctx, "8.8.8.8", ipatlas.English)
		if err != nil || again.Cached {
			t.Fatalf("lookup at the TTL: cached=%v err=%v; want a new request", again.Cached, err)
		}
		if hits.n.Load() != 3 {
			t.Fatalf("ttl %v: %d requests after expiry, want 3", ttl, hits.n.Load())
		}
	}
}

func TestCacheDisabledAndBounded(t *testing.T) {
	s, hits := serve(t, okQuery)
	c := newClient(t, client.Config{URL: s.URL, DisableCache: true})
	for range 3 {
		if _, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English); err != nil {
			t.Fatal(err)
		}
	}
	if hits.n.Load() != 3 {
		t.Fatalf("cache off: %d requests, want 3", hits.n.Load())
	}

	s2, hits2 := serve(t, okQuery)
	c = newClient(t, client.Config{URL: s2.URL, CacheSize: 2})
	for _, ip := range []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "1.1.1.1"} {
		if _, _, err := c.Lookup(context.Background(), ip, ipatlas.English); err != nil {
			t.Fatal(err)
		}
	}
	// 1.1.1.1 was the least recently used when 9.9.9.9 came in.
	if hits2.n.Load() != 4 {
		t.Fatalf("size-2 cache: %d requests, want 4", hits2.n.Load())
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	s, hits := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		okQuery(w, r)
	})
	c := newClient(t, client.Config{URL: s.URL})
	if _, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English); !errors.Is(err, ipatlas.ErrServiceUnavailable) {
		t.Fatalf("err = %v", err)
	}
	fail.Store(false)
	if _, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English); err != nil {
		t.Fatalf("after the failure: %v", err)
	}
	if hits.n.Load() != 2 {
		t.Fatalf("%d requests, want 2: the failure must not be cached", hits.n.Load())
	}
}

func TestSingleFlight(t *testing.T) {
	const n = 16
	release := make(chan struct{})
	s, hits := serve(t, func(w http.ResponseWriter, r *http.Request) {
		<-release
		okQuery(w, r)
	})
	c := newClient(t, client.Config{URL: s.URL})
	var missed sync.WaitGroup
	missed.Add(n)
	client.SetBeforeFlight(c, missed.Done)
	go func() {
		missed.Wait() // every caller has missed the cache
		close(release)
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			rec, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
			if err == nil && rec.City != "Mountain View" {
				err = fmt.Errorf("record %+v", rec)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := hits.n.Load(); got != 1 {
		t.Fatalf("%d concurrent lookups that all missed the cache made %d requests, want 1", n, got)
	}
}

// A caller that gives up does not cancel the request others share, and the
// answer still fills the cache.
func TestSingleFlightSurvivesCallerCancel(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{})
	s, hits := serve(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		okQuery(w, r)
	})
	c := newClient(t, client.Config{URL: s.URL})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, _, err := c.Lookup(ctx, "8.8.8.8", ipatlas.English)
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled caller: %v", err)
	}
	second := make(chan error)
	go func() {
		_, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
		second <- err
	}()
	close(release)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if hits.n.Load() != 1 {
		t.Fatalf("%d requests, want 1", hits.n.Load())
	}
}

func TestLookupTimeout(t *testing.T) {
	release := make(chan struct{})
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	defer close(release)
	c := newClient(t, client.Config{URL: s.URL, Timeout: 50 * time.Millisecond, Retry: client.RetryPolicy{Unavailable: true, RateLimited: true}})
	_, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	var e *ipatlas.Error
	if errors.As(err, &e) {
		t.Fatalf("a timeout is a transport failure, not a service error: %v", e)
	}
}

// freeAddr returns an address nothing listens on (a port just released).
func freeAddr(t *testing.T, network, host string) string {
	t.Helper()
	l, err := net.Listen(network, net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s %s (%v); this test needs a loopback address of that family", network, host, err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestRetryDialFailure(t *testing.T) {
	addr := freeAddr(t, "tcp4", "127.0.0.1")
	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); okQuery(w, r) })}
	t.Cleanup(func() { srv.Close() })
	c := newClient(t, client.Config{URL: "http://" + addr})
	var waits []time.Duration
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		if len(waits) == 2 {
			// The service comes up after the second refused attempt.
			l, err := net.Listen("tcp4", addr)
			if err != nil {
				return err
			}
			go srv.Serve(l)
		}
		return nil
	})
	rec, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
	if err != nil {
		t.Fatalf("after two refused connections: %v", err)
	}
	if rec.IP != "8.8.8.8" || hits.Load() != 1 || len(waits) != 2 || waits[1] <= waits[0] {
		t.Fatalf("record %q, %d requests, waits %v; want one request after two growing waits", rec.IP, hits.Load(), waits)
	}

	// Refused every time: bounded by Attempts, and the cause is visible.
	c = newClient(t, client.Config{URL: "http://" + freeAddr(t, "tcp4", "127.0.0.1"), Retry: client.RetryPolicy{Attempts: 4}})
	n := 0
	client.SetSleep(c, func(context.Context, time.Duration) error { n++; return nil })
	_, _, err = c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || n != 3 {
		t.Fatalf("err = %v after %d waits; want a dial error after 3 waits", err, n)
	}
}

// A request that may have reached the server is never repeated: here the
// server reads it and hangs up without answering.
func TestNoRetryOnceSent(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns atomic.Int64
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			buf := make([]byte, 4096)
			conn.Read(buf)
			conn.Close()
		}
	}()
	c := newClient(t, client.Config{URL: "http://" + l.Addr().String(), Retry: client.RetryPolicy{Attempts: 5, Unavailable: true, RateLimited: true}})
	client.SetSleep(c, func(context.Context, time.Duration) error { t.Error("slept before a retry"); return nil })
	_, _, err = c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
	if err == nil {
		t.Fatal("no error from a server that hung up")
	}
	if conns.Load() != 1 {
		t.Fatalf("%d connections, want 1: a sent query must not be repeated", conns.Load())
	}
}

func TestRetryStatus(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		policy     client.RetryPolicy
		wantHits   int64
		wantWaits  []time.Duration
		wantErr    error
	}{
		{"429 not asked", 429, "1", client.RetryPolicy{}, 1, nil, ipatlas.ErrRateLimitExceeded},
		{"429 asked", 429, "2", client.RetryPolicy{RateLimited: true}, 2, []time.Duration{2 * time.Second}, nil},
		{"429 beyond MaxWait", 429, "3600", client.RetryPolicy{RateLimited: true, MaxWait: time.Minute}, 1, nil, ipatlas.ErrRateLimitExceeded},
		{"503 not asked", 503, "1", client.RetryPolicy{RateLimited: true}, 1, nil, ipatlas.ErrServiceUnavailable},
		{"503 asked", 503, "", client.RetryPolicy{Unavailable: true}, 2, []time.Duration{100 * time.Millisecond}, nil},
		{"503 asked, one attempt", 503, "", client.RetryPolicy{Unavailable: true, Attempts: 1}, 1, nil, ipatlas.ErrServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			s, hits := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					if tc.retryAfter != "" {
						w.Header().Set("Retry-After", tc.retryAfter)
					}
					w.WriteHeader(tc.status)
					return
				}
				okQuery(w, r)
			})
			c := newClient(t, client.Config{URL: s.URL, Retry: tc.policy})
			var waits []time.Duration
			client.SetSleep(c, func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil })
			_, _, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if hits.n.Load() != tc.wantHits || fmt.Sprint(waits) != fmt.Sprint(tc.wantWaits) {
				t.Fatalf("%d requests, waits %v; want %d, %v", hits.n.Load(), waits, tc.wantHits, tc.wantWaits)
			}
		})
	}
}

func TestMyIPDefaultsIPVersion(t *testing.T) {
	for _, tc := range []struct{ body, ip, version string }{
		{`{"result":true,"code":"querySuccess","message":"Query Success","IP":"203.0.113.9"}`, "203.0.113.9", "IPv4"},
		{`{"result":true,"code":"querySuccess","message":"Query Success","IP":"203.0.113.9","IPVersion":""}`, "203.0.113.9", "IPv4"},
		{`{"result":true,"code":"querySuccess","message":"Query Success","IP":"2001:db8::9","IPVersion":"IPv6"}`, "2001:db8::9", "IPv6"},
	} {
		s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/ip/myip" {
				http.NotFound(w, r)
				return
			}
			io.WriteString(w, tc.body)
		})
		c := newClient(t, client.Config{URL: "http://127.0.0.1:1", TestURL: s.URL + "/"})
		m, err := c.MyIP(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m.IP != tc.ip || m.IPVersion != tc.version || !m.Result {
			t.Errorf("MyIP = %+v, want %s %s", m, tc.ip, tc.version)
		}
	}
}

func TestMyIPFailures(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		code       ipatlas.ErrorCode
	}{
		{"result false", `{"result":false,"code":"queryFailed","message":"no idea"}`, 200, ipatlas.CodeInternal},
		{"no IP", `{"result":true,"code":"querySuccess"}`, 200, ipatlas.CodeInternal},
		{"not JSON", `203.0.113.9`, 200, ipatlas.CodeInternal},
		{"proxy 502", `<html>bad gateway</html>`, 502, ipatlas.CodeServiceUnavailable},
	} {
		s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		})
		c := newClient(t, client.Config{URL: s.URL})
		_, err := c.MyIP(context.Background())
		var e *ipatlas.Error
		if !errors.As(err, &e) || e.Code != tc.code {
			t.Errorf("%s: err = %v, want %s", tc.name, err, tc.code)
		}
	}
}

// familyServer answers the plain-text endpoints with the peer address, as
// a server that does not check the family would, on separate paths.
func familyHandler(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "  %s\n", host)
}

func listen(t *testing.T, network, addr string, h http.Handler) string {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s %s (%v); this test needs IPv4 and IPv6 loopback", network, addr, err)
	}
	s := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	s.Start()
	t.Cleanup(s.Close)
	return s.URL
}

func TestMyIPv4AndIPv6(t *testing.T) {
	u4 := listen(t, "tcp4", "127.0.0.1:0", http.HandlerFunc(familyHandler))
	u6 := listen(t, "tcp6", "[::1]:0", http.HandlerFunc(familyHandler))
	// Separate hosts answering GET /, as the spec deploys them.
	c := newClient(t, client.Config{IPv4URL: u4, IPv6URL: u6})
	a4, err := c.MyIPv4(context.Background())
	if err != nil || a4 != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("MyIPv4 = %v, %v", a4, err)
	}
	a6, err := c.MyIPv6(context.Background())
	if err != nil || a6 != netip.IPv6Loopback() {
		t.Fatalf("MyIPv6 = %v, %v", a6, err)
	}
	both, err := c.MyIPs(context.Background())
	if err != nil || both.IPv4 != a4 || both.IPv6 != a6 || both.IPv4Err != nil || both.IPv6Err != nil {
		t.Fatalf("MyIPs = %+v, %v", both, err)
	}
}

func TestFamilyUnavailable(t *testing.T) {
	u4 := listen(t, "tcp4", "127.0.0.1:0", http.HandlerFunc(familyHandler))
	port := u4[strings.LastIndexByte(u4, ':')+1:]
	closed6 := freeAddr(t, "tcp6", "::1")
	for _, tc := range []struct {
		name   string
		cfg    client.Config
		family string
	}{
		// Nothing listens on ::1 at that port: connection refused.
		{"refused", client.Config{IPv4URL: u4, IPv6URL: "http://" + closed6 + "/ipv6"}, ipatlas.IPv6},
		// The listener is IPv4-only: an IPv6 dial to its address has no
		// IPv6 address to use, like a host name without AAAA records.
		{"no address of the family", client.Config{IPv4URL: u4, IPv6URL: "http://127.0.0.1:" + port + "/ipv6"}, ipatlas.IPv6},
		{"no IPv4 address", client.Config{IPv4URL: "http://" + closed6, IPv6URL: "http://[::1]:1/"}, ipatlas.IPv4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.cfg)
			var err error
			if tc.family == ipatlas.IPv6 {
				_, err = c.MyIPv6(context.Background())
			} else {
				_, err = c.MyIPv4(context.Background())
			}
			if !errors.Is(err, client.ErrFamilyUnavailable) {
				t.Fatalf("err = %v, want ErrFamilyUnavailable", err)
			}
			var fe *client.FamilyError
			if !errors.As(err, &fe) || fe.Family != tc.family || fe.Err == nil {
				t.Fatalf("FamilyError = %+v", fe)
			}
			var e *ipatlas.Error
			if errors.As(err, &e) {
				t.Fatalf("an unavailable family is not a service error: %v", e)
			}
			if tc.family == ipatlas.IPv6 {
				both, err := c.MyIPs(context.Background())
				if err != nil || both.IPv4 != netip.MustParseAddr("127.0.0.1") || !errors.Is(both.IPv6Err, client.ErrFamilyUnavailable) || both.IPv6.IsValid() {
					t.Fatalf("MyIPs = %+v, %v; want IPv4 only", both, err)
				}
			}
		})
	}
	c := newClient(t, client.Config{IPv4URL: "http://" + freeAddr(t, "tcp4", "127.0.0.1"), IPv6URL: "http://" + closed6})
	both, err := c.MyIPs(context.Background())
	if err == nil || !errors.Is(err, client.ErrFamilyUnavailable) || both.IPv4.IsValid() || both.IPv6.IsValid() {
		t.Fatalf("MyIPs with neither family = %+v, %v", both, err)
	}
}

// roundTripper is a transport that is not an *http.Transport, so the
// client cannot pin the dialled family: the server's view decides.
type roundTripper struct{ http.RoundTripper }

func TestFamilyUnavailableWhenServerSeesOtherFamily(t *testing.T) {
	u4 := listen(t, "tcp4", "127.0.0.1:0", http.HandlerFunc(familyHandler))
	c := newClient(t, client.Config{IPv4URL: u4, IPv6URL: u4 + "/ipv6", HTTPClient: &http.Client{Transport: roundTripper{http.DefaultTransport}}})
	_, err := c.MyIPv6(context.Background())
	var fe *client.FamilyError
	if !errors.As(err, &fe) || !errors.Is(err, client.ErrFamilyUnavailable) || fe.Family != ipatlas.IPv6 || !strings.Contains(fe.Reason, "over IPv4") {
		t.Fatalf("err = %v, want IPv6 unavailable because the request came over IPv4", err)
	}
	a, err := c.MyIPv4(context.Background())
	if err != nil || a != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("MyIPv4 = %v, %v", a, err)
	}
}

func TestMyIPv4Failures(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		family     bool
		code       ipatlas.ErrorCode
	}{
		{"not an address", "<html>captive portal</html>", 200, false, ipatlas.CodeInternal},
		{"zone", "fe80::1%eth0", 200, false, ipatlas.CodeInternal},
		{"misconfigured path", "404 page not found", 404, false, ipatlas.CodeNotFound},
		{"proxy 502", "bad gateway", 502, false, ipatlas.CodeServiceUnavailable},
		{"wrong family refusal", "error: this endpoint answers IPv4 clients only", 421, true, ""},
		{"other client error", "bad request", 400, false, ipatlas.CodeInvalidRequest},
		{"mapped address is IPv4", "::ffff:198.51.100.7", 200, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			c := newClient(t, client.Config{IPv4URL: s.URL})
			a, err := c.MyIPv4(context.Background())
			switch {
			case tc.family:
				if !errors.Is(err, client.ErrFamilyUnavailable) {
					t.Fatalf("err = %v, want ErrFamilyUnavailable", err)
				}
			case tc.code == "":
				if err != nil || a != netip.MustParseAddr("198.51.100.7") {
					t.Fatalf("MyIPv4 = %v, %v", a, err)
				}
			default:
				var e *ipatlas.Error
				if !errors.As(err, &e) || e.Code != tc.code || errors.Is(err, client.ErrFamilyUnavailable) {
					t.Fatalf("err = %v, want %s", err, tc.code)
				}
			}
		})
	}
}

// A slow server is not an unavailable family: the connection was made.
func TestMyIPv4SlowIsNotUnavailable(t *testing.T) {
	release := make(chan struct{})
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	defer close(release)
	c := newClient(t, client.Config{IPv4URL: s.URL, MyIPTimeout: 50 * time.Millisecond})
	_, err := c.MyIPv4(context.Background())
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, client.ErrFamilyUnavailable) {
		t.Fatalf("err = %v, want a plain timeout", err)
	}
}

func TestPingAndUsageAnswers(t *testing.T) {
	serverTime := time.Date(2026, 11, 3, 12, 0, 0, 123456789, time.UTC)
	s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/ping":
			json.NewEncoder(w).Encode(ipatlas.PingResponse{Code: "pong", Time: serverTime.Format(time.RFC3339Nano), IP: "127.0.0.1", Version: "v9"})
		case "/api/usage":
			if r.Header.Get("Authorization") != "Bearer k" {
				w.WriteHeader(401)
				json.NewEncoder(w).Encode(ipatlas.Envelope{Code: ipatlas.CodeInvalidAPIKey, Error: "no"})
				return
			}
			json.NewEncoder(w).Encode(ipatlas.Usage{Tier: "pro", Used: 3, Limit: 10000, Remaining: 9997, Credits: 50})
		}
	})
	c := newClient(t, client.Config{URL: s.URL, APIKey: "k"})
	p, err := c.Ping(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !p.ServerTime.Equal(serverTime) || p.IP != "127.0.0.1" || p.Version != "v9" || p.RTT <= 0 {
		t.Fatalf("Ping = %+v", p)
	}
	u, err := c.Usage(context.Background())
	if err != nil || u.Tier != "pro" || u.Remaining != 9997 || u.Credits != 50 {
		t.Fatalf("Usage = %+v, %v", u, err)
	}
	c = newClient(t, client.Config{URL: s.URL})
	if _, err := c.Usage(context.Background()); !errors.Is(err, ipatlas.ErrInvalidAPIKey) {
		t.Fatalf("Usage without key: %v", err)
	}
}

func TestPingBadAnswers(t *testing.T) {
	for _, body := range []string{`{"code":"ping"}`, `{"code":"pong","time":"yesterday"}`, `pong`} {
		s, _ := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
		c := newClient(t, client.Config{URL: s.URL})
		if _, err := c.Ping(context.Background()); !errors.Is(err, &ipatlas.Error{Code: ipatlas.CodeInternal}) {
			t.Errorf("Ping with %s: %v", body, err)
		}
	}
}

func TestRateLimitHeaders(t *testing.T) {
	s, _ := serve(t, okQuery)
	c := newClient(t, client.Config{URL: s.URL})
	r, err := c.LookupDetail(context.Background(), "8.8.8.8", ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	if r.RateLimit != (client.RateLimit{Limit: 1000, Remaining: 990, Reset: time.Hour}) {
		t.Fatalf("RateLimit = %+v", r.RateLimit)
	}
}

// localhostPair listens on 127.0.0.1 and ::1 at one port, as a server on
// ":PORT" does, and returns the port and the two servers.
func localhostPair(t *testing.T, h http.Handler) (string, *httptest.Server, *httptest.Server) {
	t.Helper()
	for range 20 {
		l4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Skipf("no IPv4 loopback: %v", err)
		}
		_, port, _ := net.SplitHostPort(l4.Addr().String())
		l6, err := net.Listen("tcp6", "[::1]:"+port)
		if err != nil {
			l4.Close()
			if _, err6 := net.Listen("tcp6", "[::1]:0"); err6 != nil {
				t.Skipf("no IPv6 loopback: %v", err6)
			}
			continue // the port is taken on ::1: another
		}
		s4 := &httptest.Server{Listener: l4, Config: &http.Server{Handler: h}}
		s6 := &httptest.Server{Listener: l6, Config: &http.Server{Handler: h}}
		s4.Start()
		s6.Start()
		t.Cleanup(s4.Close)
		t.Cleanup(s6.Close)
		return port, s4, s6
	}
	t.Skip("no port free on both 127.0.0.1 and ::1")
	return "", nil, nil
}

// A service at localhost is reached as curl reaches it, whatever the
// resolver says of the name (here often 127.0.0.1 alone): the IPv6
// endpoint at ::1, the IPv4 one at 127.0.0.1, and the auto-detection at
// ::1 first, then 127.0.0.1 when nothing listens on ::1.
func TestMyIPLocalhost(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/ip/myip" {
			familyHandler(w, r)
			return
		}
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		a := netip.MustParseAddr(host)
		v := "IPv4"
		if a.Is6() {
			v = "IPv6"
		}
		fmt.Fprintf(w, `{"result":true,"code":"querySuccess","message":"Query Success","IP":%q,"IPVersion":%q}`, a.String(), v)
	})
	port, _, s6 := localhostPair(t, h)
	for _, host := range []string{"localhost", "LocalHost.", "api.localhost"} {
		c := newClient(t, client.Config{URL: "http://" + net.JoinHostPort(host, port)})
		both, err := c.MyIPs(context.Background())
		if err != nil || both.IPv4 != netip.MustParseAddr("127.0.0.1") || both.IPv6 != netip.IPv6Loopback() {
			t.Errorf("%s: MyIPs = %+v, %v; want 127.0.0.1 and ::1", host, both, err)
		}
		if m, err := c.MyIP(context.Background()); err != nil || m.IP != "::1" || m.IPVersion != "IPv6" {
			t.Errorf("%s: MyIP = %+v, %v; want ::1 first, as curl", host, m, err)
		}
	}
	s6.Close()
	c := newClient(t, client.Config{URL: "http://localhost:" + port})
	if m, err := c.MyIP(context.Background()); err != nil || m.IP != "127.0.0.1" {
		t.Errorf("nothing on ::1: MyIP = %+v, %v; want 127.0.0.1", m, err)
	}
	_, err := c.MyIPv6(context.Background())
	var fe *client.FamilyError
	if !errors.As(err, &fe) || fe.Family != ipatlas.IPv6 || !strings.Contains(err.Error(), "[::1]:"+port) {
		t.Errorf("nothing on ::1: MyIPv6 = %v; want IPv6 unavailable, naming [::1]:%s", err, port)
	}
}
