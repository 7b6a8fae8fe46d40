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
	"net/url"
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

// lookupRoute is the metered query as a GET, the request shape echoip's
// GET /json?ip= has.
const lookupRoute = "GET /api/lookup/{ip}"

// hugeQuota is the monthly limit and the credit balance of the harness's
// key: far more than any run can use.
const hugeQuota = 100_000_000_000

// runCompare measures ipatlas against the reference servers, at each
// concurrency and endpoint: throughput, latency and CPU per answer, and
// after each concurrency the memory of every process. The references are
// the project's own (-reference: the same engine unmetered, or fixed
// answers) and echoip, when its source is at hand.
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

	// echoip first: building it and writing its data take the longest, and
	// a missing source is said before any server starts.
	var echoip *echoipRun
	src, why := echoipSource(o.echoip, os.Getenv)
	if src == "" {
		fmt.Fprintf(stdout, "echoip: not in this run: %s\n", why)
	} else {
		echoip, err = prepareEchoip(ctx, o, src, ws)
		if err != nil {
			return err
		}
	}

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
	setup := newClient(1)
	base := "http://" + srv.public
	key, err := makeKey(ctx, setup, "http://"+srv.admin, token)
	if err != nil {
		return err
	}

	addrs, err := queryAddrs(o, inside)
	if err != nil {
		return err
	}
	bodies, err := encodeQueries(addrs, o.lang)
	if err != nil {
		return err
	}
	queryHeader := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + key}}
	answer, err := sampleAnswer(ctx, setup, base, queryHeader, bodies)
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
		// A copy of its own: two processes mapping the same files share
		// their pages, and PSS would charge each only half of them.
		refData := filepath.Join(tmp, "reference-data")
		if err := copyTree(ws.dataDir, refData); err != nil {
			return fmt.Errorf("copying the dataset for the reference: %w", err)
		}
		refArgs = []string{minimalCommand, "-addr-file", refAddrFile, "-data-dir", refData}
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

	var charged int // 2xx answers to the metered query: what the usage counter must show
	charged += sampleCount
	servers := []*measured{
		{name: "ipatlas", pid: srv.cmd.Process.Pid},
		{name: o.reference, pid: minProc.cmd.Process.Pid},
	}
	if echoip != nil {
		p, addr, err := startEchoip(ctx, echoip.bin, echoip.data, filepath.Join(tmp, "echoip.log"))
		if err != nil {
			return err
		}
		defer p.stop(10 * time.Second)
		echoipBase := "http://" + addr
		servers = append(servers, &measured{name: "echoip", pid: p.cmd.Process.Pid})
		sample := addrs[:min(len(addrs), 200)]
		found, ours, err := sampleCountries(ctx, setup, echoipBase, base, queryHeader, sample, o.lang)
		charged += len(sample)
		if err != nil {
			return err
		}
		if found == 0 {
			return fmt.Errorf("echoip placed none of %d sample addresses in a country (ipatlas: %d): its data is not the queried one", len(sample), ours)
		}
		echoip.sample = fmt.Sprintf("of %d queried addresses, echoip placed %d in a country, ipatlas %d", len(sample), found, ours)
		echoip.query = &target{method: http.MethodGet, urls: echoipURLs(echoipBase, addrs)}
	}

	fmt.Fprintf(stdout, "ipatlas-load -mode compare: %s connections, %v per server, endpoint and concurrency in %d rounds, each after %v of warm-up\n",
		joinInts(o.conns), o.duration, o.rounds, o.warmup)
	fmt.Fprintf(stdout, "machine: %s\n", machine())
	fmt.Fprintf(stdout, "data: %s; query answer %d bytes\n", dataDesc, len(answer))
	fmt.Fprintf(stdout, "reference: %s\n", referenceDesc[o.reference])
	if echoip != nil {
		fmt.Fprintf(stdout, "echoip: %s, GET /json?ip= for the same addresses, GeoLite2-schema files written from the same data (%s); %s\n",
			echoip.src, echoip.data, echoip.sample)
	}
	fmt.Fprintf(stdout, "cpu/req: CPU time of the server process per answered request, from /proc/PID/stat (less sensitive to other load on the machine);\n")
	fmt.Fprintf(stdout, "client: the same for this harness, which sends the requests and reads the answers\n\n")
	fmt.Fprintf(stdout, "%-20s %5s %-8s %10s %10s %9s %9s %9s %9s  %s\n", "endpoint", "conns", "server", "requests", "req/s", "p50", "p99", "cpu/req", "client", "failures")

	var summary []echoipRatios
	for _, conns := range o.conns {
		client := newClient(conns)
		for _, ep := range strings.Split(o.endpoints, ",") {
			var name string
			var goal float64
			var targets []*target // per server; nil: not measured on this endpoint
			switch strings.TrimSpace(ep) {
			case "query":
				name = queryRoute
				targets = []*target{
					{method: http.MethodPost, url: base + "/api/ip-query", header: queryHeader, bodies: bodies},
					{method: http.MethodPost, url: minBase + "/api/ip-query", header: queryHeader, bodies: bodies},
				}
				if echoip != nil {
					targets = append(targets, echoip.query)
				}
			case "lookup":
				name = lookupRoute
				getHeader := http.Header{"Authorization": queryHeader["Authorization"]}
				targets = []*target{
					{method: http.MethodGet, header: getHeader, urls: lookupURLs(base, addrs, o.lang)},
					{method: http.MethodGet, urls: lookupURLs(minBase, addrs, o.lang)},
				}
				if echoip != nil {
					targets = append(targets, echoip.query)
				}
			case "myip":
				name, goal = "GET /api/ip/myip", 0.80
				targets = []*target{
					{method: http.MethodGet, url: base + "/api/ip/myip"},
					{method: http.MethodGet, url: minBase + "/api/ip/myip"},
				}
			default:
				return fmt.Errorf("unknown endpoint %q in -endpoints", ep)
			}
			// The measured time is split into rounds that rotate which
			// server goes first, so that a change in the machine's other
			// load weighs on all alike.
			n := len(targets)
			res := make([]result, n)
			cpu := make([]time.Duration, n)
			selfCPU := make([]time.Duration, n)
			roundRatios := make([][]float64, n) // ipatlas over server i, per round
			for round := range o.rounds {
				rps := make([]float64, n)
				for j := range n {
					i := (j + round) % n
					t := *targets[i]
					w := drive(ctx, client, t, conns, o.warmup, o.seed+100+uint64(round))
					d := o.duration / time.Duration(o.rounds)
					var profiled chan error
					if o.profileDir != "" && i == 0 && round == 0 {
						profiled = make(chan error, 1)
						path := filepath.Join(o.profileDir, fmt.Sprintf("ipatlas-%s-c%d.pprof", strings.TrimSpace(ep), conns))
						go func() { profiled <- fetchPprof(ctx, "http://"+srv.admin, token, "profile", d, path) }()
					}
					c0, _ := processCPU(servers[i].pid)
					s0, _ := processCPU(os.Getpid())
					r := drive(ctx, client, t, conns, d, o.seed+uint64(round))
					s1, _ := processCPU(os.Getpid())
					c1, _ := processCPU(servers[i].pid)
					if profiled != nil {
						if err := <-profiled; err != nil {
							logf("profile: %v", err)
						}
					}
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if i == 0 && (name == queryRoute || name == lookupRoute) {
						charged += w.ok + r.ok
					}
					res[i] = res[i].merge(r)
					rps[i] = r.rps()
					cpu[i] += c1 - c0
					selfCPU[i] += s1 - s0
				}
				for i := 1; i < n; i++ {
					if rps[i] > 0 {
						roundRatios[i] = append(roundRatios[i], rps[0]/rps[i])
					}
				}
			}
			for i, r := range res {
				fmt.Fprintf(stdout, "%-20s %5d %-8s %10d %10.0f %9s %9s %9s %9s  %s\n", name, conns, servers[i].name,
					r.ok, r.rps(), round(r.percentile(0.50)), round(r.percentile(0.99)), perRequest(cpu[i], r.ok), perRequest(selfCPU[i], r.ok), r.failures())
			}
			ratio := res[0].rps() / res[1].rps()
			fmt.Fprintf(stdout, "%-20s %5s ratio %.1f%% of the %s reference's req/s", "", "", 100*ratio, o.reference)
			if goal > 0 {
				fmt.Fprintf(stdout, " (goal >= %.0f%%)", 100*goal)
			}
			if len(roundRatios[1]) > 1 {
				// The spread says how far to trust a difference between
				// runs: on a shared machine it is often several points.
				fmt.Fprintf(stdout, ", rounds %.1f-%.1f%%", 100*slices.Min(roundRatios[1]), 100*slices.Max(roundRatios[1]))
			}
			fmt.Fprintln(stdout)
			if n > 2 {
				e := echoipRatios{
					route:      name,
					conns:      conns,
					throughput: res[0].rps() / res[2].rps(),
					rounds:     roundRatios[2],
					cpu:        cpuRatio(cpu[0], res[0].ok, cpu[2], res[2].ok),
					p99:        float64(res[0].percentile(0.99)) / float64(res[2].percentile(0.99)),
				}
				fmt.Fprintf(stdout, "%-20s %5s against echoip: %s\n", "", "", e.String())
				summary = append(summary, e)
			}
		}

		// Memory after the load at this concurrency: every process has
		// served the same requests.
		mem := make([]procMemory, len(servers))
		for i, s := range servers {
			mem[i], err = processMemory(s.pid)
			if err != nil {
				logf("memory of %s (%d): %v", s.name, s.pid, err)
			}
		}
		fmt.Fprintf(stdout, "memory after the runs at %d connections:", conns)
		for i, s := range servers {
			fmt.Fprintf(stdout, " %s PSS %s (RSS %s, anonymous %s);", s.name, mib(mem[i].pss), mib(mem[i].rss), mib(mem[i].anon))
		}
		for i := 1; i < len(servers); i++ {
			if mem[0].pss > 0 && mem[i].pss > 0 {
				fmt.Fprintf(stdout, " PSS ratio to %s %.2f;", servers[i].name, float64(mem[0].pss)/float64(mem[i].pss))
				if servers[i].name == "echoip" {
					for k := range summary {
						if summary[k].conns == conns {
							summary[k].pss = float64(mem[0].pss) / float64(mem[i].pss)
						}
					}
				}
			}
		}
		fmt.Fprintln(stdout)
		// Where each process's PSS goes, and ipatlas's Go heap: what
		// memory there is to cut is read here.
		for _, s := range servers {
			if parts, err := processPSSParts(s.pid); err == nil {
				fmt.Fprintf(stdout, "  %-8s PSS: %s\n", s.name, parts)
			}
		}
		if o.profileDir != "" {
			path := filepath.Join(o.profileDir, fmt.Sprintf("ipatlas-heap-c%d.pprof", conns))
			if err := fetchPprof(ctx, "http://"+srv.admin, token, "heap", 0, path); err != nil {
				logf("heap profile: %v", err)
			}
		}
		if hs, err := heapStats(ctx, setup, "http://"+srv.admin, token); err == nil {
			fmt.Fprintf(stdout, "  ipatlas  Go heap: %s\n", hs)
		} else {
			logf("heap stats: %v", err)
		}
		fmt.Fprintln(stdout)
	}

	if len(summary) > 0 {
		fmt.Fprintf(stdout, "ipatlas / echoip, the metered query against GET /json?ip= (throughput above 1 is better, the rest below 1):\n")
		fmt.Fprintf(stdout, "%-20s %5s %10s %14s %10s %8s %8s\n", "ipatlas", "conns", "req/s", "rounds", "cpu/req", "p99", "PSS")
		for _, e := range summary {
			fmt.Fprintf(stdout, "%-20s %5d %9.3fx %14s %9.3fx %7.2fx %7.2fx\n", e.route, e.conns, e.throughput, e.spread(), e.cpu, e.p99, e.pss)
		}
	}

	if strings.Contains(o.endpoints, "query") || strings.Contains(o.endpoints, "lookup") {
		used, err := usageCounter(ctx, setup, base, key)
		if err != nil {
			return err
		}
		sc, err := readStoreCounts(ctx, filepath.Join(tmp, "ipatlas.db"), key)
		if err != nil {
			return err
		}
		exact := func(n int64) string {
			if n != int64(charged) {
				return "MISMATCH"
			}
			return "exact"
		}
		fmt.Fprintf(stdout, "\nmetering: %d successful queries answered, usage counter %d (%s), daily counters %d (%s), ledger %d queries in %d usage entries (%s)",
			charged, used, exact(used), sc.daily, exact(sc.daily), sc.ledgerQueries, sc.ledgerEntries, exact(sc.ledgerQueries))
		if m, err := scrape(ctx, setup, "http://"+srv.admin+"/metrics"); err == nil && m["ipatlas_meter_batches_total"] > 0 {
			charges, batches := m["ipatlas_meter_charges_total"], m["ipatlas_meter_batches_total"]
			fmt.Fprintf(stdout, "; group commit: %.0f charges in %.0f batches, %.1f per batch; a charge waited %.2f ms for its batch, a commit took %.2f ms",
				charges, batches, charges/batches,
				1e3*m["ipatlas_meter_queue_seconds_total"]/charges, 1e3*m["ipatlas_meter_commit_seconds_total"]/batches)
		}
		fmt.Fprintln(stdout)
		if used != int64(charged) {
			return errors.New("the usage counter does not match the successes answered")
		}
		if sc.daily != int64(charged) {
			return errors.New("the daily usage counters do not match the successes answered")
		}
		if sc.ledgerQueries != int64(charged) {
			return errors.New("the ledger's usage entries do not match the successes answered")
		}
	}
	return nil
}

// measured is one server process of a compare run.
type measured struct {
	name string
	pid  int
}

// echoipRun is echoip, built and with its data, for one compare run.
type echoipRun struct {
	src, bin, data string
	sample         string  // how many sample addresses each server found
	query          *target // GET /json?ip= for the queried addresses
}

func prepareEchoip(ctx context.Context, o options, src string, ws *workspace) (*echoipRun, error) {
	e := &echoipRun{src: src, bin: o.echoipBin}
	if e.bin == "" {
		ws.logf("building echoip from %s", src)
		var err error
		if e.bin, err = buildEchoip(ctx, src, ws.tmp); err != nil {
			return nil, err
		}
	}
	var err error
	e.data, err = echoipData(ctx, ws.dataDir, ws.tmp, ws.inside != nil, ws.logf)
	return e, err
}

// echoipRatios are ipatlas's figures over echoip's at one concurrency.
type echoipRatios struct {
	route                     string // ipatlas's request
	conns                     int
	throughput, cpu, p99, pss float64
	rounds                    []float64
}

func (e echoipRatios) spread() string {
	if len(e.rounds) < 2 {
		return "-"
	}
	return fmt.Sprintf("%.3f-%.3f", slices.Min(e.rounds), slices.Max(e.rounds))
}

func (e echoipRatios) String() string {
	return fmt.Sprintf("req/s %.3fx (rounds %s), cpu/req %.3fx, p99 %.2fx", e.throughput, e.spread(), e.cpu, e.p99)
}

func cpuRatio(a time.Duration, an int, b time.Duration, bn int) float64 {
	if an == 0 || bn == 0 || b == 0 {
		return math.NaN()
	}
	return (float64(a) / float64(an)) / (float64(b) / float64(bn))
}

// sampleCountries asks echoip and ipatlas about the same addresses and
// counts those each places in a country: a check that echoip was fed the
// same data. Every address is a metered query to ipatlas, answered 200.
func sampleCountries(ctx context.Context, client *http.Client, echoipBase, base string, h http.Header, addrs []netip.Addr, lang string) (echoipFound, oursFound int, err error) {
	for i, u := range echoipURLs(echoipBase, addrs) {
		var v struct {
			Country string `json:"country_iso"`
		}
		if err := getJSON(ctx, client, u, &v); err != nil {
			return 0, 0, fmt.Errorf("echoip: %w", err)
		}
		if v.Country != "" {
			echoipFound++
		}
		body, err := json.Marshal(ipatlas.QueryRequest{IP: addrs[i].String(), Lang: lang})
		if err != nil {
			return 0, 0, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/ip-query", bytes.NewReader(body))
		if err != nil {
			return 0, 0, err
		}
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, err
		}
		var env ipatlas.Envelope
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(b, &env) != nil || !env.Success {
			return 0, 0, fmt.Errorf("a sample query failed: %s %s %v", resp.Status, b, err)
		}
		if env.Data != nil && env.Data.CountryCode != "" {
			oursFound++
		}
	}
	return echoipFound, oursFound, nil
}

func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
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

// queryAddrs draws the queried addresses: random public ones, inside the
// given networks when there are some.
func queryAddrs(o options, inside []netip.Prefix) ([]netip.Addr, error) {
	r := mrand.New(mrand.NewPCG(o.seed, 42))
	var v4, v6 []netip.Prefix
	for _, p := range inside {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	addrs := make([]netip.Addr, 0, 1<<16)
	for len(addrs) < cap(addrs) {
		var a netip.Addr
		if r.Float64() < o.v6Share {
			a = randomAddr(r, v6, 16)
		} else {
			a = randomAddr(r, v4, 4)
		}
		if _, special := netaddr.Classify(a); special {
			continue
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// queryBodies pre-encodes the location queries of random public
// addresses, drawn inside the given networks when there are some.
func queryBodies(o options, inside []netip.Prefix) ([][]byte, error) {
	addrs, err := queryAddrs(o, inside)
	if err != nil {
		return nil, err
	}
	return encodeQueries(addrs, o.lang)
}

// lookupURLs are GET /api/lookup/{ip} for each queried address.
func lookupURLs(base string, addrs []netip.Addr, lang string) []string {
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = base + "/api/lookup/" + a.String() + "?lang=" + url.QueryEscape(lang)
	}
	return urls
}

// encodeQueries pre-encodes the location queries of addrs.
func encodeQueries(addrs []netip.Addr, lang string) ([][]byte, error) {
	bodies := make([][]byte, len(addrs))
	for i, a := range addrs {
		b, err := json.Marshal(ipatlas.QueryRequest{IP: a.String(), Lang: lang})
		if err != nil {
			return nil, err
		}
		bodies[i] = b
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

// storeCounts is what the charging transactions kept for a key beside
// its monthly counter.
type storeCounts struct {
	daily         int64 // its daily counters of yesterday and today (UTC)
	ledgerQueries int64 // the queries of its usage entries in the ledger
	ledgerEntries int   // those entries
}

// readStoreCounts reads them from the server's SQLite file, as the CLI
// does while a server runs on it.
func readStoreCounts(ctx context.Context, dbPath, key string) (storeCounts, error) {
	var c storeCounts
	id, ok := account.ParseSecret(key)
	if !ok {
		return c, errors.New("store counters: not an API key")
	}
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{RequireMigrated: true})
	if err != nil {
		return c, fmt.Errorf("store counters: %w", err)
	}
	defer st.Close()
	k, err := st.Key(ctx, id)
	if err != nil {
		return c, fmt.Errorf("store counters: %w", err)
	}
	now := time.Now()
	days, err := st.DailyUsage(ctx, k.AccountID, account.Day(now.Add(-24*time.Hour)), account.Day(now))
	if err != nil {
		return c, fmt.Errorf("store counters: %w", err)
	}
	for _, d := range days {
		if d.KeyID == id {
			c.daily += d.Queries
		}
	}
	entries, err := st.Ledger(ctx, k.AccountID, 0)
	if err != nil {
		return c, fmt.Errorf("store counters: %w", err)
	}
	for _, e := range entries {
		if e.Reason == account.ReasonUsage && e.KeyID == id {
			c.ledgerQueries += e.Queries
			c.ledgerEntries++
		}
	}
	return c, nil
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

// fetchPprof saves a profile of the server taken through the admin API's
// pprof: "profile" (CPU) over d, or "heap" now.
func fetchPprof(ctx context.Context, adminBase, token, kind string, d time.Duration, path string) error {
	u := fmt.Sprintf("%s/debug/pprof/%s", adminBase, kind)
	if kind == "profile" {
		u += fmt.Sprintf("?seconds=%d", max(1, int(d.Seconds())))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
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

// heapStats reads the Go runtime's memory statistics that the admin
// API's heap profile carries (debug=1): the live heap, what the heap
// holds from the OS, the next GC's goal, and all the runtime's memory.
func heapStats(ctx context.Context, client *http.Client, adminBase, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminBase+"/debug/pprof/heap?debug=1", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}
	v := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(strings.TrimPrefix(line, "# "), " = ")
		if !ok || !strings.HasPrefix(line, "# ") {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64); err == nil {
			v[name] = n
		}
	}
	if v["Sys"] == 0 {
		return "", errors.New("no runtime statistics in the heap profile")
	}
	return fmt.Sprintf("live %s (HeapAlloc), in use %s, held from the OS %s (released %s), next GC at %s, runtime total %s, %d GCs",
		mib(v["HeapAlloc"]), mib(v["HeapInuse"]), mib(v["HeapSys"]-v["HeapReleased"]), mib(v["HeapReleased"]), mib(v["NextGC"]), mib(v["Sys"]), v["NumGC"]), nil
}
