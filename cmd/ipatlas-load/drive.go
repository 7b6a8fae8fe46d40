package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// newClient is the one client every run uses: keep-alive, enough idle
// connections that none is ever closed between requests, no compression.
func newClient(concurrency int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        2 * concurrency,
			MaxIdleConnsPerHost: 2 * concurrency,
			MaxConnsPerHost:     concurrency,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
		Timeout: 10 * time.Second,
	}
}

// maxRequestsPerRun bounds the requests of one measured run (drive).
const maxRequestsPerRun = 10_000_000

// target is one endpoint of one server.
type target struct {
	method string
	url    string
	header http.Header
	bodies [][]byte // a random one per request; nil for GET
	urls   []string // when set, a random one per request instead of url
}

func (t target) request(ctx context.Context, r *rand.Rand) (*http.Request, error) {
	var body io.Reader
	if len(t.bodies) > 0 {
		body = bytes.NewReader(t.bodies[r.IntN(len(t.bodies))])
	}
	u := t.url
	if len(t.urls) > 0 {
		u = t.urls[r.IntN(len(t.urls))]
	}
	req, err := http.NewRequestWithContext(ctx, t.method, u, body)
	if err != nil {
		return nil, err
	}
	for k, v := range t.header {
		req.Header[k] = v
	}
	return req, nil
}

// result is what one measured run saw.
type result struct {
	elapsed   time.Duration
	ok        int            // 2xx answers
	statuses  map[int]int    // non-2xx answers by status
	errs      map[string]int // transport errors by text
	latencies []time.Duration
	bytes     int64 // response bodies read
}

func (r result) rps() float64 { return float64(r.ok) / r.elapsed.Seconds() }

// merge adds another run's figures, as if the two were one run.
func (r result) merge(o result) result {
	if r.statuses == nil {
		r.statuses, r.errs = map[int]int{}, map[string]int{}
	}
	r.elapsed += o.elapsed
	r.ok += o.ok
	r.bytes += o.bytes
	for k, v := range o.statuses {
		r.statuses[k] += v
	}
	for k, v := range o.errs {
		r.errs[k] += v
	}
	r.latencies = append(r.latencies, o.latencies...)
	slices.Sort(r.latencies)
	return r
}

func (r result) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := int(float64(len(r.latencies))*p+0.5) - 1
	return r.latencies[max(0, min(i, len(r.latencies)-1))]
}

func (r result) failures() string {
	var parts []string
	for s, n := range r.statuses {
		parts = append(parts, fmt.Sprintf("%d x HTTP %d", n, s))
	}
	for e, n := range r.errs {
		parts = append(parts, fmt.Sprintf("%d x %s", n, e))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// drive sends requests to t from concurrency workers, each one request at
// a time, for d. Requests in flight at the end are waited for, not cut off,
// so that every request sent has its answer counted (the metering check
// depends on it). Latency is measured around the whole exchange, body read
// included, for answered requests only.
//
// A run is bounded in count as well as in time: it sends at most
// maxRequestsPerRun requests, far more than any run of this harness
// reaches on loopback, so that a mistake in its timing cannot flood.
func drive(ctx context.Context, client *http.Client, t target, concurrency int, d time.Duration, seed uint64) result {
	type worker struct {
		ok        int
		statuses  map[int]int
		errs      map[string]int
		latencies []time.Duration
		bytes     int64
	}
	workers := make([]worker, concurrency)
	start := time.Now()
	end := start.Add(d)
	var sent atomic.Int64
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		w.statuses, w.errs = map[int]int{}, map[string]int{}
		w.latencies = make([]time.Duration, 0, 1<<14)
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(end) && sent.Add(1) <= maxRequestsPerRun {
				req, err := t.request(ctx, r)
				if err != nil {
					w.errs[err.Error()]++
					return
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						w.errs[shortError(err)]++
					}
					continue
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat := time.Since(t0)
				if err != nil {
					if ctx.Err() == nil {
						w.errs[shortError(err)]++
					}
					continue
				}
				w.bytes += n
				if resp.StatusCode/100 != 2 {
					w.statuses[resp.StatusCode]++
					continue
				}
				w.ok++
				w.latencies = append(w.latencies, lat)
			}
		})
	}
	wg.Wait()
	res := result{elapsed: time.Since(start), statuses: map[int]int{}, errs: map[string]int{}}
	for _, w := range workers {
		res.ok += w.ok
		res.bytes += w.bytes
		res.latencies = append(res.latencies, w.latencies...)
		for k, v := range w.statuses {
			res.statuses[k] += v
		}
		for k, v := range w.errs {
			res.errs[k] += v
		}
	}
	slices.Sort(res.latencies)
	return res
}

func shortError(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}
