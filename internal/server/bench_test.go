package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// benchBodies are query bodies over the fixture: covered IPv4 and IPv6
// addresses in both languages, and an uncovered one.
var benchBodies = func() [][]byte {
	var out [][]byte
	for _, k := range geotest.Places {
		out = append(out, []byte(`{"ip":"`+k.IP+`"}`), []byte(`{"ip":"`+k.IP+`","lang":"zh"}`))
	}
	return append(out, []byte(`{"ip":"`+geotest.UncoveredIP+`"}`))
}()

// benchRequest is a reusable request: the handler does not keep it, so one
// per goroutine avoids measuring httptest.NewRequest.
func benchRequest(method, path, key string) (*http.Request, *bytes.Reader) {
	body := bytes.NewReader(nil)
	r := &http.Request{
		Method:     method,
		URL:        &url.URL{Path: path},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1, ProtoMinor: 1,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Host:       "example.com",
		RemoteAddr: testPeer,
		Body:       io.NopCloser(body),
	}
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	return r, body
}

func benchEnv(b *testing.B) (*env, account.NewKey) {
	e := newEnv(b, func(c *Config) { c.Logger = slog.New(slog.DiscardHandler) })
	// The production meter delay, not the tests' shorter one.
	e.meter.Close(b.Context())
	e.meter = account.NewMeter(e.store, account.MeterOptions{Now: func() time.Time { return testNow }})
	b.Cleanup(func() { e.meter.Close(b.Context()) })
	e.srv.deps.Meter = e.meter
	_, k := e.customer(b, account.Enterprise, 1e12, 1e15)
	// Warm up outside the timer: the key cache, and the geo engine's
	// lazily built time zone finder (a one-time cost of about a second).
	for _, body := range benchBodies {
		if r := e.query(b, k.Secret, string(body)); r.Code != http.StatusOK {
			b.Fatalf("warm-up: %d %s", r.Code, r.Body)
		}
	}
	b.ResetTimer()
	return e, k
}

// BenchmarkQuery is the metered location query through the whole public
// handler, SQLite store and group commit included, at 64 concurrent
// requests (as the load harness drives it).
func BenchmarkQuery(b *testing.B) {
	e, k := benchEnv(b)
	benchParallelQueries(b, e, k.Secret, benchBodies)
}

// benchParallelQueries sends bodies round-robin to POST /api/ip-query
// from 64 goroutines, failing the benchmark if any answer is not a 200.
func benchParallelQueries(b *testing.B, e *env, key string, bodies [][]byte) {
	benchParallel(b, e, func() (*http.Request, func(i int)) {
		r, body := benchRequest("POST", "/api/ip-query", key)
		return r, func(i int) {
			payload := bodies[i%len(bodies)]
			body.Reset(payload)
			r.ContentLength = int64(len(payload))
		}
	})
}

// benchParallel serves requests from 64 goroutines, each with a reusable
// request of its own from newReq, pointed at its i-th query by the
// function that comes with it, failing the benchmark if any answer is not
// a 200.
func benchParallel(b *testing.B, e *env, newReq func() (*http.Request, func(i int))) {
	var failed atomic.Int64
	b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r, next := newReq()
		for i := 0; pb.Next(); i++ {
			next(i)
			w := httptest.NewRecorder()
			e.pub.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d queries failed", n)
	}
}

// BenchmarkQuerySerial is one query at a time: its time per operation is
// the latency of a lone request, mostly the meter's batch delay and the
// commit.
func BenchmarkQuerySerial(b *testing.B) {
	e, k := benchEnv(b)
	r, body := benchRequest("POST", "/api/ip-query", k.Secret)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		payload := benchBodies[i%len(benchBodies)]
		body.Reset(payload)
		r.ContentLength = int64(len(payload))
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkQueryRefused is a query refused before the meter (a private
// address): the cost of the handler, authentication and the two store
// reads of a failure's standing.
func BenchmarkQueryRefused(b *testing.B) {
	e, k := benchEnv(b)
	r, body := benchRequest("POST", "/api/ip-query", k.Secret)
	payload := []byte(`{"ip":"10.1.2.3"}`)
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(payload)
		r.ContentLength = int64(len(payload))
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkMinimalHandler is the load harness's baseline, in process: a
// net/http handler that decodes the same JSON body and writes a fixed
// JSON answer of the size of a query's answer.
func BenchmarkMinimalHandler(b *testing.B) {
	answer := bytes.Repeat([]byte("x"), 420)
	answer = append(append([]byte(`{"s":"`), answer...), `"}`...)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q ipatlas.QueryRequest
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})
	b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r, body := benchRequest("POST", "/api/ip-query", "")
		i := 0
		for pb.Next() {
			body.Reset(benchBodies[i%len(benchBodies)])
			i++
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
	})
}

// BenchmarkMyIP is GET /api/ip/myip through the whole public handler.
func BenchmarkMyIP(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.Logger = slog.New(slog.DiscardHandler) })
	r, _ := benchRequest("GET", "/api/ip/myip", "")
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}

func BenchmarkDecodeQuery(b *testing.B) {
	data := []byte(`{"ip":"2001:4860:4860::8888","lang":"zh"}`)
	b.ReportAllocs()
	for b.Loop() {
		var q ipatlas.QueryRequest
		if err := decodeJSON(data, &q, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeQueryFast is BenchmarkDecodeQuery's body read the way the
// query route reads it (decodeQuery).
func BenchmarkDecodeQueryFast(b *testing.B) {
	data := []byte(`{"ip":"2001:4860:4860::8888","lang":"zh"}`)
	b.ReportAllocs()
	for b.Loop() {
		var q ipatlas.QueryRequest
		if err := decodeQuery(data, &q); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClientAddrForwarded(b *testing.B) {
	trusted := newProxies([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "10.0.0.1:1234"
	r.Header.Set("X-Forwarded-For", "203.0.113.1, 198.51.100.7, 10.0.0.9")
	b.ReportAllocs()
	for b.Loop() {
		if a := clientAddr(r, trusted, HeaderAuto); !a.IsValid() {
			b.Fatal("no address")
		}
	}
}

// BenchmarkQueryLimited is BenchmarkQuery's request, serially, with every
// limit of serve's defaults on (but rates no request reaches): the key is
// authenticated for the limits and used by the handler.
func BenchmarkQueryLimited(b *testing.B) {
	e := newEnv(b, func(c *Config) {
		c.Logger = slog.New(slog.DiscardHandler)
		c.KeyRate, c.KeyBurst = 1e12, 1e9
		c.AddrRate, c.AddrBurst = 1e12, 1e9
		c.AuthFailures, c.AuthFailureWindow, c.AuthMaxBackoff = DefaultAuthFailures, DefaultAuthFailureWindow, DefaultAuthMaxBackoff
		c.LimitTableSize = DefaultLimitTableSize
	})
	e.meter.Close(b.Context())
	e.meter = account.NewMeter(e.store, account.MeterOptions{Now: func() time.Time { return testNow }, MaxDelay: time.Microsecond})
	b.Cleanup(func() { e.meter.Close(b.Context()) })
	e.srv.deps.Meter = e.meter
	_, k := e.customer(b, account.Enterprise, 1e12, 1e15)
	payload := []byte(`{"ip":"8.8.8.8"}`)
	r, body := benchRequest("POST", "/api/ip-query", k.Secret)
	for range 3 {
		body.Reset(payload)
		r.ContentLength = int64(len(payload))
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("warm-up: %d %s", w.Code, w.Body)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(payload)
		r.ContentLength = int64(len(payload))
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkQueryHTTP is BenchmarkQuery over a real net/http server on
// loopback, so that what net/http does with the answer's headers (the copy
// at WriteHeader, the sorted write) is measured too; the client's own
// allocations are in its figures.
func BenchmarkQueryHTTP(b *testing.B) {
	e, k := benchEnv(b)
	srv := httptest.NewServer(e.pub)
	b.Cleanup(srv.Close)
	tr := srv.Client().Transport.(*http.Transport)
	tr.MaxIdleConnsPerHost = 64
	var failed atomic.Int64
	b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		body := bytes.NewReader(nil)
		i := 0
		for pb.Next() {
			payload := benchBodies[i%len(benchBodies)]
			i++
			body.Reset(payload)
			r, _ := http.NewRequest("POST", srv.URL+"/api/ip-query", body)
			r.Header["Content-Type"] = []string{"application/json"}
			r.Header["Authorization"] = []string{"Bearer " + k.Secret}
			res, err := srv.Client().Do(r)
			if err != nil {
				failed.Add(1)
				continue
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				failed.Add(1)
			}
		}
	})
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d queries failed", n)
	}
}

// BenchmarkLookupGETHeader is the metered query as a GET (/api/lookup/{ip}, the
// request echoip's GET /json?ip= is) through the whole public handler, at
// 64 concurrent requests like BenchmarkQuery.
func BenchmarkLookupGETHeader(b *testing.B) {
	e, k := benchEnv(b)
	var paths []string
	for _, p := range geotest.Places {
		paths = append(paths, "/api/lookup/"+p.IP, "/api/lookup/"+p.IP+"?lang=zh")
	}
	benchParallel(b, e, func() (*http.Request, func(i int)) {
		r, _ := benchRequest("GET", "/", k.Secret)
		delete(r.Header, "Content-Type")
		urls := make([]*url.URL, len(paths))
		for i, p := range paths {
			urls[i], _ = url.Parse(p)
		}
		return r, func(i int) { r.URL = urls[i%len(urls)] }
	})
}

// BenchmarkLookupGETSerial is one GET /api/lookup/{ip} at a time, the key
// in the header: under callgrind, its instructions per query are the
// GET's CPU without the machine's noise (BenchmarkQuerySerial's for the
// POST).
func BenchmarkLookupGETSerial(b *testing.B) {
	e, k := benchEnv(b)
	r, _ := benchRequest("GET", "/", k.Secret)
	delete(r.Header, "Content-Type")
	var urls []*url.URL
	for _, p := range geotest.Places {
		for _, q := range []string{"/api/lookup/" + p.IP, "/api/lookup/" + p.IP + "?lang=zh"} {
			u, _ := url.Parse(q)
			urls = append(urls, u)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		r.URL = urls[i%len(urls)]
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
