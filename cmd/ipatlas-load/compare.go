package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

const queryRoute = "POST /api/ip-query"

// hugeQuota is the monthly limit and the credit balance of the harness's
// key: far more than any run can use.
const hugeQuota = 100_000_000_000

// runCompare measures ipatlas against a reference server, endpoint by
// endpoint: throughput, latency, CPU per request, and at the end the
// memory of both processes.
func runCompare(ctx context.Context, o options, stdout, stderr io.Writer) error {
	ws, cleanup, err := newWorkspace(o, "ipatlas-load-", stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := ws.prepare(ctx, o); err != nil {
		return err
	}
	tmp, dataDesc, inside, logf := ws.tmp, ws.dataDesc, ws.inside, ws.logf

	srv, err := ws.startServer(ctx, "ipatlas.log", "sqlite:"+filepath.Join(tmp, "ipatlas.db"), noAbuseLimits...)
	if err != nil {
		return err
	}
	defer func() {
		if err := srv.stop(30 * time.Second); err != nil {
			logf("stopping ipatlas: %v", err)
		}
	}()
	token := ws.token
	client := newClient(o.concurrency)
	base := "http://" + srv.public
	key, err := makeKey(ctx, client, "http://"+srv.admin, token)
	if err != nil {
		return err
	}

	bodies, err := queryBodies(o, inside)
	if err != nil {
		return err
	}
	queryHeader := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + key}}
	answer, err := sampleAnswer(ctx, client, base, queryHeader, bodies)
	if err != nil {
		return err
	}
	answerFile := filepath.Join(tmp, "answer.json")
	if err := os.WriteFile(answerFile, answer, 0o600); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	refAddrFile := filepath.Join(tmp, "reference.addrs.json")
	refArgs := []string{minimalCommand, "-addr-file", refAddrFile, "-query-answer", answerFile}
	switch o.reference {
	case refLookup:
		refArgs = []string{minimalCommand, "-addr-file", refAddrFile, "-data-dir", ws.dataDir}
	case refMinimal:
	default:
		return fmt.Errorf("unknown -reference %q: lookup or minimal", o.reference)
	}
	minProc, err := startProc(filepath.Join(tmp, "reference.log"), nil, self, refArgs...)
	if err != nil {
		return err
	}
	defer minProc.stop(10 * time.Second)
	maddrs, err := minProc.waitAddrs(10*time.Second, refAddrFile)
	if err != nil {
		return err
	}
	minBase := "http://" + maddrs.Public

	fmt.Fprintf(stdout, "ipatlas-load -mode compare: %d connections, %v per server and endpoint in %d rounds, each after %v of warm-up\n",
		o.concurrency, o.duration, o.rounds, o.warmup)
	fmt.Fprintf(stdout, "machine: %s\n", machine())
	fmt.Fprintf(stdout, "data: %s; query answer %d bytes\n", dataDesc, len(answer))
	fmt.Fprintf(stdout, "reference: %s\n", referenceDesc[o.reference])
	fmt.Fprintf(stdout, "cpu/req: CPU time of the server process per answered request (less sensitive to other load on the machine);\n")
	fmt.Fprintf(stdout, "client: the same for this harness, which sends the requests and reads the answers\n\n")
	fmt.Fprintf(stdout, "%-20s %-8s %10s %10s %9s %9s %9s %9s  %s\n", "endpoint", "server", "requests", "req/s", "p50", "p99", "cpu/req", "client", "failures")

	var charged int // 2xx answers to the metered query: what the usage counter must show
	charged += sampleCount
	for _, ep := range strings.Split(o.endpoints, ",") {
		var ours, minimal target
		var name string
		var goal float64
		switch strings.TrimSpace(ep) {
		case "query":
			name = queryRoute
			ours = target{method: http.MethodPost, url: base + "/api/ip-query", header: queryHeader, bodies: bodies}
			minimal = target{method: http.MethodPost, url: minBase + "/api/ip-query", header: queryHeader, bodies: bodies}
		case "myip":
			name, goal = "GET /api/ip/myip", 0.80
			ours = target{method: http.MethodGet, url: base + "/api/ip/myip"}
			minimal = target{method: http.MethodGet, url: minBase + "/api/ip/myip"}
		default:
			return fmt.Errorf("unknown endpoint %q in -endpoints", ep)
		}
		// The measured time is split into rounds that alternate which server
		// goes first, so that a change in the machine's other load weighs
		// on both alike.
		var res [2]result
		var cpu, self [2]time.Duration
		var roundRatios []float64 // ipatlas over minimal, per round
		pids := [2]int{srv.cmd.Process.Pid, minProc.cmd.Process.Pid}
		for round := range o.rounds {
			var rps [2]float64
			for j := range 2 {
				i := (j + round) % 2
				t := []target{ours, minimal}[i]
				w := drive(ctx, client, t, o.concurrency, o.warmup, o.seed+100+uint64(round))
				d := o.duration / time.Duration(o.rounds)
				var profiled chan error
				if o.profileDir != "" && i == 0 && round == 0 {
					profiled = make(chan error, 1)
					path := filepath.Join(o.profileDir, "ipatlas-"+strings.TrimSpace(ep)+".pprof")
					go func() { profiled <- fetchProfile(ctx, "http://"+srv.admin, token, d, path) }()
				}
				c0, _ := processCPU(pids[i])
				s0, _ := processCPU(os.Getpid())
				r := drive(ctx, client, t, o.concurrency, d, o.seed+uint64(round))
				s1, _ := processCPU(os.Getpid())
				c1, _ := processCPU(pids[i])
				if profiled != nil {
					if err := <-profiled; err != nil {
						logf("profile: %v", err)
					}
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if i == 0 && name == queryRoute {
					charged += w.ok + r.ok
				}
				res[i] = res[i].merge(r)
				rps[i] = r.rps()
				cpu[i] += c1 - c0
				self[i] += s1 - s0
			}
			if rps[1] > 0 {
				roundRatios = append(roundRatios, rps[0]/rps[1])
			}
		}
		for i, r := range res {
			fmt.Fprintf(stdout, "%-20s %-8s %10d %10.0f %9s %9s %9s %9s  %s\n", name, []string{"ipatlas", o.reference}[i],
				r.ok, r.rps(), round(r.percentile(0.50)), round(r.percentile(0.99)), perRequest(cpu[i], r.ok), perRequest(self[i], r.ok), r.failures())
		}
		ratio := res[0].rps() / res[1].rps()
		fmt.Fprintf(stdout, "%-20s ratio %.1f%% of the %s reference's req/s", "", 100*ratio, o.reference)
		if goal > 0 {
			fmt.Fprintf(stdout, " (goal >= %.0f%%)", 100*goal)
		}
		if len(roundRatios) > 1 {
			// The spread says how far to trust a difference between runs:
			// on a shared machine it is often several points.
			fmt.Fprintf(stdout, ", rounds %.1f-%.1f%%", 100*slices.Min(roundRatios), 100*slices.Max(roundRatios))
		}
		fmt.Fprintln(stdout)
	}

	// Memory after the load: both processes have served the same requests.
	var mem [2]procMemory
	for i, pid := range [2]int{srv.cmd.Process.Pid, minProc.cmd.Process.Pid} {
		mem[i], err = processMemory(pid)
		if err != nil {
			logf("memory of %d: %v", pid, err)
		}
	}
	if mem[0].pss > 0 && mem[1].pss > 0 {
		fmt.Fprintf(stdout, "\nmemory after the runs: ipatlas PSS %s (RSS %s, anonymous %s), %s PSS %s (RSS %s, anonymous %s); PSS ratio %.2f\n",
			mib(mem[0].pss), mib(mem[0].rss), mib(mem[0].anon), o.reference, mib(mem[1].pss), mib(mem[1].rss), mib(mem[1].anon),
			float64(mem[0].pss)/float64(mem[1].pss))
	}

	if strings.Contains(o.endpoints, "query") {
		used, err := usageCounter(ctx, client, base, key)
		if err != nil {
			return err
		}
		daily, err := dailyCounters(ctx, filepath.Join(tmp, "ipatlas.db"), key)
		if err != nil {
			return err
		}
		verdict, dverdict := "exact", "exact"
		if used != int64(charged) {
			verdict = "MISMATCH"
		}
		if daily != int64(charged) {
			dverdict = "MISMATCH"
		}
		fmt.Fprintf(stdout, "\nmetering: %d successful queries answered, usage counter %d (%s), daily counters %d (%s)", charged, used, verdict, daily, dverdict)
		if m, err := scrape(ctx, client, "http://"+srv.admin+"/metrics"); err == nil && m["ipatlas_meter_batches_total"] > 0 {
			charges, batches := m["ipatlas_meter_charges_total"], m["ipatlas_meter_batches_total"]
			fmt.Fprintf(stdout, "; group commit: %.0f charges in %.0f batches, %.1f per batch; a charge waited %.2f ms for its batch, a commit took %.2f ms",
				charges, batches, charges/batches,
				1e3*m["ipatlas_meter_queue_seconds_total"]/charges, 1e3*m["ipatlas_meter_commit_seconds_total"]/batches)
		}
		fmt.Fprintln(stdout)
		if used != int64(charged) {
			return errors.New("the usage counter does not match the successes answered")
		}
		if daily != int64(charged) {
			return errors.New("the daily usage counters do not match the successes answered")
		}
	}
	return nil
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// makeKey creates, with the admin API, an enterprise account with a huge
// quota and balance, and one key.
func makeKey(ctx context.Context, client *http.Client, adminBase, token string) (string, error) {
	credits := int64(hugeQuota)
	var acct account.Account
	err := adminPost(ctx, client, adminBase+"/admin/accounts", token,
		server.CreateAccountRequest{Name: "load", Tier: string(account.Enterprise), MonthlyLimit: hugeQuota, Credits: &credits}, &acct)
	if err != nil {
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

func adminPost(ctx context.Context, client *http.Client, url, token string, body, v any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, out)
	}
	return json.Unmarshal(out, v)
}

// queryBodies pre-encodes the location queries: random public addresses,
// drawn inside the given networks when there are some.
func queryBodies(o options, inside []netip.Prefix) ([][]byte, error) {
	r := mrand.New(mrand.NewPCG(o.seed, 42))
	var v4, v6 []netip.Prefix
	for _, p := range inside {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	bodies := make([][]byte, 0, 1<<16)
	for len(bodies) < cap(bodies) {
		var a netip.Addr
		if r.Float64() < o.v6Share {
			a = randomAddr(r, v6, 16)
		} else {
			a = randomAddr(r, v4, 4)
		}
		if _, special := netaddr.Classify(a); special {
			continue
		}
		b, err := json.Marshal(ipatlas.QueryRequest{IP: a.String(), Lang: o.lang})
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, b)
	}
	return bodies, nil
}

func randomAddr(r *mrand.Rand, in []netip.Prefix, size int) netip.Addr {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if len(in) == 0 {
		if size == 4 {
			return netip.AddrFrom4([4]byte(b[:4]))
		}
		b[0] = 0x20 | b[0]&0x1f // global unicast, 2000::/3
		return netip.AddrFrom16(b)
	}
	p := in[r.IntN(len(in))]
	base := p.Addr().AsSlice()
	for i := range base {
		bits := p.Bits() - 8*i // network bits in this byte
		switch {
		case bits >= 8:
			b[i] = base[i]
		case bits > 0:
			mask := byte(0xff << (8 - bits))
			b[i] = base[i]&mask | b[i]&^mask
		}
	}
	a, _ := netip.AddrFromSlice(b[:len(base)])
	return a
}

const sampleCount = 500

// sampleAnswer sends sampleCount queries, checks that they succeed, and
// returns the answer whose size is closest to the mean: the minimal
// handler's fixed answer.
func sampleAnswer(ctx context.Context, client *http.Client, base string, h http.Header, bodies [][]byte) ([]byte, error) {
	t := target{method: http.MethodPost, url: base + "/api/ip-query", header: h, bodies: bodies}
	r := mrand.New(mrand.NewPCG(7, 7))
	answers := make([][]byte, 0, sampleCount)
	total := 0
	for range sampleCount {
		req, err := t.request(ctx, r)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var env ipatlas.Envelope
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &env) != nil || !env.Success {
			return nil, fmt.Errorf("a sample query failed: %s %s", resp.Status, b)
		}
		answers = append(answers, b)
		total += len(b)
	}
	mean := float64(total) / float64(len(answers))
	best := answers[0]
	for _, a := range answers {
		if math.Abs(float64(len(a))-mean) < math.Abs(float64(len(best))-mean) {
			best = a
		}
	}
	return best, nil
}

// dailyCounters sums the key's daily usage counters of yesterday and
// today (UTC), which the charging transactions keep beside the monthly
// one: read from the server's SQLite file, as the CLI does while a
// server runs on it.
func dailyCounters(ctx context.Context, dbPath, key string) (int64, error) {
	id, ok := account.ParseSecret(key)
	if !ok {
		return 0, errors.New("daily counters: not an API key")
	}
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{RequireMigrated: true})
	if err != nil {
		return 0, fmt.Errorf("daily counters: %w", err)
	}
	defer st.Close()
	k, err := st.Key(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("daily counters: %w", err)
	}
	now := time.Now()
	days, err := st.DailyUsage(ctx, k.AccountID, account.Day(now.Add(-24*time.Hour)), account.Day(now))
	if err != nil {
		return 0, fmt.Errorf("daily counters: %w", err)
	}
	var n int64
	for _, d := range days {
		if d.KeyID == id {
			n += d.Queries
		}
	}
	return n, nil
}

func usageCounter(ctx context.Context, client *http.Client, base, key string) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/usage", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var u ipatlas.Usage
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("GET /api/usage: %s %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&u); err != nil {
		return 0, fmt.Errorf("GET /api/usage: %w", err)
	}
	return u.Used, nil
}

// fetchProfile saves a CPU profile of the server over d, taken through the
// admin API's pprof.
func fetchProfile(ctx context.Context, adminBase, token string, d time.Duration, path string) error {
	secs := max(1, int(d.Seconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", adminBase, secs), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: d + 30*time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scrape reads the unlabelled samples of a Prometheus text exposition.
func scrape(ctx context.Context, client *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out, nil
}

// perRequest is CPU time per answered request, for the table.
func perRequest(cpu time.Duration, n int) string {
	if cpu <= 0 || n <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0fµs", float64(cpu.Microseconds())/float64(n))
}
