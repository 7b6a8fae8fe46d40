package main

// -mode soak: a fixed request rate for a fixed time, with a mix of
// successes, client errors and free endpoints, while the server's heap,
// goroutines and open file descriptors are sampled; the run fails when one
// of them keeps growing (the rule is soakRule).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/server"
)

// noAbuseLimits turns off serve's abuse limits, which are on by default:
// a load test from one address with one key would meet them at once.
var noAbuseLimits = []string{"--key-rate", "0", "--addr-rate", "0", "--auth-failures", "0"}

// soakRule is the verdict's rule, as -help and the report state it.
const soakRule = `A series (heap in use, goroutines, open fds) GROWS WITHOUT BOUND, and the soak fails, when both:
  (a) the largest sample of the last third of the run exceeds the largest of the first third
      by more than -max-growth percent of the latter and by more than the series' slack, and
  (b) the least-squares line through the samples of the second half rises, over that half,
      by more than the series' slack.
(a) alone would flag a cache that filled up early; (b) alone, noise around a plateau.
The slacks are -heap-slack MiB, -goroutine-slack and -fd-slack. The run also fails on any
5xx, any answer other than the one each request class expects, any transport error, or
more than 1% of the scheduled requests not sent because -in-flight requests were pending.`

// soakOptions are the flags of -mode soak.
type soakOptions struct {
	fs             *flag.FlagSet
	rate           int
	sample         time.Duration
	inFlight       int
	maxGrowth      float64
	heapSlack      float64 // MiB
	goroutineSlack float64
	fdSlack        float64
	tableSize      int
}

// soakDefaultDuration is -duration in soak mode unless given.
const soakDefaultDuration = 60 * time.Second

func (s *soakOptions) flags(fs *flag.FlagSet) {
	s.fs = fs
	fs.IntVar(&s.rate, "rate", 500, "-mode soak: requests per second, sent on schedule whether or not earlier ones were answered (open loop); -duration defaults to 60s in this mode")
	fs.DurationVar(&s.sample, "sample", 2*time.Second, "-mode soak: interval between samples of the server's heap, goroutines and open fds (from its /metrics)")
	fs.IntVar(&s.inFlight, "in-flight", 256, "-mode soak: most requests pending at once; a request due while that many are pending is not sent and counted as missed")
	fs.Float64Var(&s.maxGrowth, "max-growth", 25, "-mode soak: percent the last third's largest sample may exceed the first third's. Rule:\n"+soakRule)
	fs.Float64Var(&s.heapSlack, "heap-slack", 8, "-mode soak: growth of the heap in use, in MiB, never counted as unbounded")
	fs.Float64Var(&s.goroutineSlack, "goroutine-slack", 50, "-mode soak: growth of the goroutine count never counted as unbounded")
	fs.Float64Var(&s.fdSlack, "fd-slack", 50, "-mode soak: growth of the open file descriptor count never counted as unbounded")
	fs.IntVar(&s.tableSize, "table-size", 1024, "-mode soak: the server's --limit-table-size, small so that the limiter tables fill up and evict during the run")
}

// durationSet reports whether -duration was given.
func (s *soakOptions) durationSet() bool {
	set := false
	if s.fs != nil {
		s.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "duration" })
	}
	return set
}

func runSoak(ctx context.Context, o options, stdout, stderr io.Writer) error {
	so := o.soak
	if !so.durationSet() {
		o.duration = soakDefaultDuration
	}
	if so.rate < 1 || so.sample <= 0 || so.inFlight < 1 || so.tableSize < 1 {
		return errors.New("-rate, -in-flight and -table-size must be at least 1, -sample positive")
	}
	if n := int(o.duration / so.sample); n < 6 {
		return fmt.Errorf("-duration %v holds %d samples of -sample %v; the rule needs at least 6", o.duration, n, so.sample)
	}
	ws, cleanup, err := newWorkspace(o, "ipatlas-soak-", stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := ws.prepare(ctx, o); err != nil {
		return err
	}
	tmp, dataDesc, inside, logf := ws.tmp, ws.dataDesc, ws.inside, ws.logf

	token := ws.token
	// Every request comes "through" a trusted proxy on 127.0.0.1 from an
	// address of its own, so that the per-address tables fill up and
	// evict. The per-key burst is off (one key carries most of the
	// traffic); the per-address limit and the key-guessing backoff stay on
	// at their defaults and, each address being new, never refuse.
	srv, err := ws.startServer(ctx, "ipatlas.log", "sqlite:"+filepath.Join(tmp, "ipatlas.db"),
		"--trusted-proxy", "127.0.0.1/32", "--key-rate", "0", "--limit-table-size", fmt.Sprint(so.tableSize))
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.stop(30 * time.Second); err != nil {
			logf("stopping ipatlas: %v", err)
		}
	}()
	client := newClient(so.inFlight)
	adminBase, base := "http://"+srv.admin, "http://"+srv.public
	mix, err := soakMix(ctx, client, o, inside, base, adminBase, token)
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "ipatlas-load -mode soak: %d req/s for %v, open loop (at most %d pending), a sample every %v\n",
		so.rate, o.duration, so.inFlight, so.sample)
	fmt.Fprintf(stdout, "machine: %s\n", machine())
	fmt.Fprintf(stdout, "data: %s; server: --limit-table-size %d, every request from its own address via X-Forwarded-For\n\n", dataDesc, so.tableSize)

	// The series start from a collected heap and after -warmup of the
	// same traffic, so that start-up garbage and first-use allocations
	// are not taken for growth, nor hide it.
	if err := collectGarbage(ctx, client, adminBase, token); err != nil {
		return err
	}
	metricsURL := adminBase + "/metrics"
	baseline, err := takeSample(ctx, client, metricsURL, 0)
	if err != nil {
		return err
	}
	var warm *soakTraffic
	if o.warmup > 0 {
		warm = soakDrive(ctx, client, mix, so.rate, so.inFlight, o.warmup, o.seed+1)
	}
	start := time.Now()
	var samples []sample
	sampleErr := make(chan error, 1)
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		t := time.NewTicker(so.sample)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
			s, err := takeSample(ctx, client, metricsURL, time.Since(start))
			if err != nil {
				select {
				case sampleErr <- err:
				default:
				}
				continue
			}
			samples = append(samples, s)
		}
	})
	tr := soakDrive(ctx, client, mix, so.rate, so.inFlight, o.duration, o.seed)
	close(stopSampling)
	sampling.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	select {
	case err := <-sampleErr:
		return fmt.Errorf("sampling the server's metrics: %w", err)
	default:
	}
	// Once the load has stopped and the client's connections are closed,
	// what the server still holds is what it keeps.
	client.CloseIdleConnections()
	time.Sleep(so.sample)
	after, err := takeSample(ctx, client, metricsURL, time.Since(start))
	if err != nil {
		return err
	}

	var failed []string
	if warm != nil {
		wf := warm.report(io.Discard, mix, o.warmup)
		fmt.Fprintf(stdout, "warm-up (not sampled): %d requests over %v, problems: %d\n", warm.sent, o.warmup, len(wf))
		for _, f := range wf {
			failed = append(failed, "warm-up: "+f)
		}
	}
	failed = append(failed, tr.report(stdout, mix, o.duration)...)
	fmt.Fprintln(stdout)
	verdicts := judge(samples, so)
	printSeries(stdout, baseline, after, samples, verdicts)
	fmt.Fprintf(stdout, "\nrule: %s\n\n", strings.ReplaceAll(soakRule, "\n", "\n      "))
	var problems []string
	for _, v := range verdicts {
		if v.unbounded {
			problems = append(problems, v.name+" grows without bound")
		}
	}
	problems = append(problems, failed...)
	if len(problems) > 0 {
		fmt.Fprintf(stdout, "verdict: FAIL: %s\n", strings.Join(problems, "; "))
		return errors.New("soak failed: " + strings.Join(problems, "; "))
	}
	fmt.Fprintln(stdout, "verdict: PASS (no series grows without bound; every answer as expected)")
	return nil
}

// soakClass is one kind of request of the mix, with the status it must get.
type soakClass struct {
	name   string
	weight int
	want   int
	make   func(r *mrand.Rand) (*http.Request, error)
}

// soakMix creates the keys the mix needs and returns the mix.
func soakMix(ctx context.Context, client *http.Client, o options, inside []netip.Prefix, base, adminBase, token string) ([]soakClass, error) {
	good, err := makeKey(ctx, client, adminBase, token)
	if err != nil {
		return nil, err
	}
	// A key whose month is used up: a quota of 1, spent here.
	overQuota, err := makeAccountKey(ctx, client, adminBase, token,
		server.CreateAccountRequest{Name: "soak-over-quota", Tier: string(account.Enterprise), MonthlyLimit: 1, Credits: ptr(int64(hugeQuota))})
	if err != nil {
		return nil, err
	}
	// A key of an account without credits.
	broke, err := makeAccountKey(ctx, client, adminBase, token,
		server.CreateAccountRequest{Name: "soak-no-credits", Tier: string(account.Free), Credits: ptr(int64(0))})
	if err != nil {
		return nil, err
	}
	bodies, err := queryBodies(o, inside)
	if err != nil {
		return nil, err
	}
	req := func(method, path string, body []byte, key string, r *mrand.Rand, v6 bool) (*http.Request, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		q, err := http.NewRequestWithContext(ctx, method, base+path, rd)
		if err != nil {
			return nil, err
		}
		if body != nil {
			q.Header["Content-Type"] = []string{"application/json"}
		}
		if key != "" {
			q.Header["Authorization"] = []string{"Bearer " + key}
		}
		q.Header["X-Forwarded-For"] = []string{clientAddress(r, v6).String()}
		// Some connections are closed after their request, so that the
		// server keeps opening and closing them too.
		q.Close = r.IntN(20) == 0
		return q, nil
	}
	pick := func(r *mrand.Rand, list []string) string { return list[r.IntN(len(list))] }
	queryBody := func(ip string) []byte {
		b, _ := json.Marshal(ipatlas.QueryRequest{IP: ip})
		return b
	}
	invalid := []string{"999.1.1.1", "not an ip", "1.2.3", "2001:db8::g", "", "1.2.3.4/24", "[::1]", "01.2.3.4"}
	private := []string{"10.1.2.3", "192.168.0.1", "127.0.0.1", "fd00::1", "::ffff:192.168.0.1", "64:ff9b::a00:1", "169.254.1.1", "::1"}
	batch := func(r *mrand.Rand) []byte {
		var ips []string
		for range 10 {
			var q ipatlas.QueryRequest
			json.Unmarshal(bodies[r.IntN(len(bodies))], &q)
			ips = append(ips, q.IP)
		}
		b, _ := json.Marshal(ipatlas.BatchRequest{IPs: ips})
		return b
	}
	// Sanity: the over-quota key's one query is spent now.
	q, _ := req(http.MethodPost, "/api/ip-query", bodies[0], overQuota, mrand.New(mrand.NewPCG(1, 1)), false)
	resp, err := client.Do(q)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the over-quota key's first query: %s", resp.Status)
	}

	return []soakClass{
		{"query", 30, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query", bodies[r.IntN(len(bodies))], good, r, r.IntN(2) == 0)
		}},
		{"query batch of 10", 3, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query/batch", batch(r), good, r, false)
		}},
		{"query invalid ip", 8, http.StatusBadRequest, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query", queryBody(pick(r, invalid)), good, r, false)
		}},
		{"query private ip", 8, http.StatusBadRequest, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query", queryBody(pick(r, private)), good, r, false)
		}},
		{"query malformed json", 2, http.StatusBadRequest, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query", []byte(`{"ip": "8.8.8.8"`), good, r, false)
		}},
		{"query bad key", 5, http.StatusUnauthorized, func(r *mrand.Rand) (*http.Request, error) {
			var b [32]byte
			for i := range b {
				b[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[r.IntN(62)]
			}
			return req(http.MethodPost, "/api/ip-query", bodies[r.IntN(len(bodies))], "ipa_AAAAAAAAAAAA_"+string(b[:])+"BBBBBBBBBBB", r, false)
		}},
		{"query no key", 2, http.StatusUnauthorized, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query", bodies[r.IntN(len(bodies))], "", r, false)
		}},
		{"query over quota", 4, http.StatusTooManyRequests, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query", bodies[r.IntN(len(bodies))], overQuota, r, false)
		}},
		{"query no credits", 3, http.StatusPaymentRequired, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodPost, "/api/ip-query", bodies[r.IntN(len(bodies))], broke, r, false)
		}},
		{"usage", 2, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodGet, "/api/usage", nil, good, r, false)
		}},
		{"myip", 12, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodGet, "/api/ip/myip", nil, "", r, r.IntN(2) == 0)
		}},
		{"ipv4", 6, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodGet, "/ipv4", nil, "", r, false)
		}},
		{"ping", 5, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodGet, "/api/ping", nil, "", r, false)
		}},
		{"web page", 4, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			q, err := req(http.MethodGet, "/", nil, "", r, r.IntN(2) == 0)
			if err == nil {
				q.Header["Accept"] = []string{"text/html"}
			}
			return q, err
		}},
		{"own record", 3, http.StatusOK, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodGet, "/api/ip/me", nil, "", r, r.IntN(2) == 0)
		}},
		{"unknown path", 1, http.StatusNotFound, func(r *mrand.Rand) (*http.Request, error) {
			return req(http.MethodGet, "/api/nope", nil, "", r, false)
		}},
	}, nil
}

func ptr[T any](v T) *T { return &v }

// makeAccountKey creates an account and a key with the admin API.
func makeAccountKey(ctx context.Context, client *http.Client, adminBase, token string, a server.CreateAccountRequest) (string, error) {
	var acct account.Account
	if err := adminPost(ctx, client, adminBase+"/admin/accounts", token, a, &acct); err != nil {
		return "", err
	}
	var key account.NewKey
	if err := adminPost(ctx, client, fmt.Sprintf("%s/admin/accounts/%d/keys", adminBase, acct.ID), token, struct{}{}, &key); err != nil {
		return "", err
	}
	if key.Secret == "" {
		return "", errors.New("POST /admin/accounts/{id}/keys answered no key")
	}
	return key.Secret, nil
}

// clientAddress is a random public address, the client a request claims
// to come from.
func clientAddress(r *mrand.Rand, v6 bool) netip.Addr {
	for {
		var a netip.Addr
		if v6 {
			a = randomAddr(r, nil, 16)
		} else {
			a = randomAddr(r, nil, 4)
		}
		if _, special := netaddr.Classify(a); !special {
			return a
		}
	}
}

// soakTraffic is what the open-loop client saw.
type soakTraffic struct {
	scheduled, sent, missed int
	elapsed                 time.Duration
	byClass                 []map[string]int // per class: "HTTP 200", transport errors...
	unexpected              []int            // per class
	serverErrors            int              // 5xx
	transport               int
	latencies               []time.Duration
}

// soakDrive sends requests of the mix at rate per second for d, each at
// its scheduled time whatever the state of the earlier ones (open loop),
// and waits for the last answers.
func soakDrive(ctx context.Context, client *http.Client, mix []soakClass, rate, inFlight int, d time.Duration, seed uint64) *soakTraffic {
	total := 0
	for _, c := range mix {
		total += c.weight
	}
	tr := &soakTraffic{byClass: make([]map[string]int, len(mix)), unexpected: make([]int, len(mix))}
	for i := range tr.byClass {
		tr.byClass[i] = map[string]int{}
	}
	var mu sync.Mutex
	slots := make(chan struct{}, inFlight)
	var wg sync.WaitGroup
	r := mrand.New(mrand.NewPCG(seed, 99))
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		tr.scheduled++
		n := r.IntN(total)
		ci := 0
		for n >= mix[ci].weight {
			n -= mix[ci].weight
			ci++
		}
		req, err := mix[ci].make(r)
		if err != nil {
			mu.Lock()
			tr.byClass[ci]["request: "+err.Error()]++
			tr.unexpected[ci]++
			mu.Unlock()
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			tr.missed++
			continue
		}
		tr.sent++
		wg.Go(func() {
			defer func() { <-slots }()
			t0 := time.Now()
			resp, err := client.Do(req)
			var status string
			ok, fiveXX, transport := false, false, false
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			lat := time.Since(t0)
			if err != nil {
				status, transport = shortError(err), true
			} else {
				status = fmt.Sprintf("HTTP %d", resp.StatusCode)
				ok, fiveXX = resp.StatusCode == mix[ci].want, resp.StatusCode >= 500
			}
			mu.Lock()
			defer mu.Unlock()
			tr.byClass[ci][status]++
			if !ok {
				tr.unexpected[ci]++
			}
			if fiveXX {
				tr.serverErrors++
			}
			if transport {
				tr.transport++
			} else {
				tr.latencies = append(tr.latencies, lat)
			}
		})
	}
	wg.Wait()
	tr.elapsed = time.Since(start)
	slices.Sort(tr.latencies)
	return tr
}

// report prints the traffic and returns its failures.
func (tr *soakTraffic) report(w io.Writer, mix []soakClass, d time.Duration) (failures []string) {
	lat := result{latencies: tr.latencies}
	fmt.Fprintf(w, "traffic: %d requests scheduled over %v, %d sent (%.1f/s), %d missed; latency p50 %v p99 %v max %v\n",
		tr.scheduled, d, tr.sent, float64(tr.sent)/d.Seconds(), tr.missed,
		round(lat.percentile(0.5)), round(lat.percentile(0.99)), round(lat.percentile(1)))
	fmt.Fprintf(w, "%-22s %8s %6s  %s\n", "class", "sent", "want", "answers")
	unexpected := 0
	for i, c := range mix {
		var parts []string
		n := 0
		for k, v := range tr.byClass[i] {
			parts = append(parts, fmt.Sprintf("%d x %s", v, k))
			n += v
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "%-22s %8d %6d  %s\n", c.name, n, c.want, strings.Join(parts, ", "))
		unexpected += tr.unexpected[i]
	}
	if tr.serverErrors > 0 {
		failures = append(failures, fmt.Sprintf("%d answers with a 5xx status", tr.serverErrors))
	}
	if unexpected > 0 {
		failures = append(failures, fmt.Sprintf("%d answers other than the class's expected one", unexpected))
	}
	if tr.transport > 0 {
		failures = append(failures, fmt.Sprintf("%d transport errors", tr.transport))
	}
	if tr.missed*100 > tr.scheduled {
		failures = append(failures, fmt.Sprintf("%d of %d scheduled requests missed: the rate was not held", tr.missed, tr.scheduled))
	}
	return failures
}

// collectGarbage makes the server run a garbage collection, through the
// admin API's pprof (a heap profile with gc=1 runs one first).
func collectGarbage(ctx context.Context, client *http.Client, adminBase, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminBase+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /debug/pprof/heap?gc=1: %s", resp.Status)
	}
	return nil
}

// sample is one reading of the server's metrics.
type sample struct {
	at                         time.Duration // since the load started
	heap, goroutines, fds, rss float64
}

func takeSample(ctx context.Context, client *http.Client, url string, at time.Duration) (sample, error) {
	m, err := scrape(ctx, client, url)
	if err != nil {
		return sample{}, err
	}
	s := sample{at: at, heap: m["go_memstats_heap_inuse_bytes"], goroutines: m["go_goroutines"],
		fds: m["process_open_fds"], rss: m["process_resident_memory_bytes"]}
	for name, v := range map[string]float64{"go_memstats_heap_inuse_bytes": s.heap, "go_goroutines": s.goroutines} {
		if v <= 0 {
			return sample{}, fmt.Errorf("%s has no %s", url, name)
		}
	}
	return s, nil
}

// series names the judged readings of a sample, with their slack.
type series struct {
	name  string
	unit  float64 // divides the values for printing
	get   func(sample) float64
	slack float64 // in the printed unit
}

func soakSeries(so soakOptions) []series {
	return []series{
		{"heap in use (MiB)", 1 << 20, func(s sample) float64 { return s.heap }, so.heapSlack},
		{"goroutines", 1, func(s sample) float64 { return s.goroutines }, so.goroutineSlack},
		{"open fds", 1, func(s sample) float64 { return s.fds }, so.fdSlack},
	}
}

// verdict is the rule applied to one series.
type verdict struct {
	series
	first, last, min, max  float64 // over the load's samples, in the unit
	maxFirst, maxLast      float64 // largest of the first and of the last third
	rise                   float64 // of the fitted line over the second half
	growthOK, slopeOK      bool
	unbounded, unavailable bool
}

// judge applies soakRule to the samples taken under load.
func judge(samples []sample, so soakOptions) []verdict {
	var out []verdict
	for _, s := range soakSeries(so) {
		v := verdict{series: s}
		vals := make([]float64, len(samples))
		xs := make([]float64, len(samples))
		for i, smp := range samples {
			vals[i] = s.get(smp) / s.unit
			xs[i] = smp.at.Seconds()
		}
		if len(vals) < 6 || slices.Max(vals) <= 0 {
			// process_open_fds exists only where /proc does.
			v.unavailable = true
			out = append(out, v)
			continue
		}
		third := len(vals) / 3
		v.first, v.last = vals[0], vals[len(vals)-1]
		v.min, v.max = slices.Min(vals), slices.Max(vals)
		v.maxFirst, v.maxLast = slices.Max(vals[:third]), slices.Max(vals[len(vals)-third:])
		half := len(vals) / 2
		slope := leastSquaresSlope(xs[half:], vals[half:])
		v.rise = slope * (xs[len(xs)-1] - xs[half])
		v.growthOK = v.maxLast-v.maxFirst <= max(v.maxFirst*so.maxGrowth/100, s.slack)
		v.slopeOK = v.rise <= s.slack
		v.unbounded = !v.growthOK && !v.slopeOK
		out = append(out, v)
	}
	return out
}

// leastSquaresSlope is the slope of the least-squares line through the
// points.
func leastSquaresSlope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

func printSeries(w io.Writer, baseline, after sample, samples []sample, verdicts []verdict) {
	fmt.Fprintf(w, "%d samples under load, from %v to %v\n", len(samples), samples[0].at.Round(100*time.Millisecond), samples[len(samples)-1].at.Round(100*time.Millisecond))
	fmt.Fprintf(w, "%-18s %9s %9s %9s %9s %9s %12s %12s %13s %9s  %s\n",
		"series", "idle", "first", "last", "min", "max", "max 1st 3rd", "max last 3rd", "rise 2nd half", "after", "verdict")
	for _, v := range verdicts {
		if v.unavailable {
			fmt.Fprintf(w, "%-18s not available from this server's /metrics\n", v.name)
			continue
		}
		word := "bounded"
		switch {
		case v.unbounded:
			word = "GROWS WITHOUT BOUND"
		case !v.growthOK:
			word = "bounded (grew, but flat in the second half)"
		case !v.slopeOK:
			word = "bounded (rising in the second half, within the growth allowed)"
		}
		fmt.Fprintf(w, "%-18s %9.1f %9.1f %9.1f %9.1f %9.1f %12.1f %12.1f %13.1f %9.1f  %s\n", v.name,
			v.get(baseline)/v.unit, v.first, v.last, v.min, v.max, v.maxFirst, v.maxLast, v.rise, v.get(after)/v.unit, word)
	}
	var rss []float64
	for _, s := range samples {
		rss = append(rss, s.rss/(1<<20))
	}
	if len(rss) > 0 && slices.Max(rss) > 0 {
		fmt.Fprintf(w, "%-18s %9.1f %9.1f %9.1f %9.1f %9.1f %12s %12s %13s %9.1f  (reported, not judged)\n", "RSS (MiB)",
			baseline.rss/(1<<20), rss[0], rss[len(rss)-1], slices.Min(rss), slices.Max(rss), "", "", "", after.rss/(1<<20))
	}
}
