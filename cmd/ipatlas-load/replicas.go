package main

// -mode replicas: N `ipatlas serve` replicas on one PostgreSQL schema,
// with all traffic on one hot key and then spread over many keys, beside
// one node on SQLite, in one run.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// replicaOptions are the flags of -mode replicas.
type replicaOptions struct {
	postgres string
	counts   string
	keys     int
	hotGoal  float64
}

func (r *replicaOptions) flags(fs *flag.FlagSet) {
	fs.StringVar(&r.postgres, "postgres", "", "-mode replicas: PostgreSQL connection string (default $IPATLAS_TEST_POSTGRES); the harness creates a schema of its own in it and drops it at the end")
	fs.StringVar(&r.counts, "replicas", "1,2,3", "-mode replicas: numbers of replicas to measure, comma-separated")
	fs.IntVar(&r.keys, "keys", 64, "-mode replicas: keys the spread traffic goes over, each of its own account")
	r.hotGoal = 0.80
}

// cluster is the replicas of one store, and the keys made on it.
type cluster struct {
	name     string
	replicas []*serverProc
	hot      string   // the secret of the one key of the hot runs
	many     []string // the secrets of the spread runs, one account each
}

// caseResult is one (store, replicas, keys) measurement.
type caseResult struct {
	res      result
	answered int     // 2xx, warm-up included: what the usage counters must show
	perBatch float64 // charges per group commit, over the replicas
}

func runReplicas(ctx context.Context, o options, stdout, stderr io.Writer) error {
	ro := o.replicas
	counts, err := parseCounts(ro.counts)
	if err != nil {
		return err
	}
	if ro.keys < 2 {
		return errors.New("-keys must be at least 2")
	}
	dsn := ro.postgres
	if dsn == "" {
		dsn = os.Getenv("IPATLAS_TEST_POSTGRES")
	}
	if dsn == "" {
		return errors.New("-mode replicas needs PostgreSQL: pass -postgres postgres://USER@HOST/DB or set IPATLAS_TEST_POSTGRES")
	}
	ws, cleanup, err := newWorkspace(o, "ipatlas-load-", stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	tmp, logf := ws.tmp, ws.logf

	// The schema first: a database that does not answer fails the run
	// before anything is built.
	var b [6]byte
	rand.Read(b[:])
	schema := "ipatlas_load_" + hex.EncodeToString(b[:])
	pgVersion, err := createSchema(ctx, dsn, schema)
	if err != nil {
		return fmt.Errorf("PostgreSQL: %w", err)
	}
	defer func() {
		if err := dropSchema(dsn, schema); err != nil {
			logf("dropping schema %s: %v", schema, err)
		}
	}()
	schemaDSN, err := withSearchPath(dsn, schema)
	if err != nil {
		return err
	}

	if err := ws.prepare(ctx, o); err != nil {
		return err
	}
	dataDesc, inside := ws.dataDesc, ws.inside
	bodies, err := queryBodies(o, inside)
	if err != nil {
		return err
	}
	token := ws.token
	client := newClient(o.concurrency)

	// start runs n replicas on store, one after the other (the first
	// migrates and makes the default account), with keys for the runs.
	start := func(name, store string, n int) (*cluster, func(), error) {
		c := &cluster{name: name}
		stop := func() {
			for _, r := range c.replicas {
				if err := r.stop(30 * time.Second); err != nil {
					logf("stopping %s: %v", name, err)
				}
			}
		}
		for i := range n {
			r, err := ws.startServer(ctx, fmt.Sprintf("%s-%d.log", name, i), store, noAbuseLimits...)
			if err != nil {
				stop()
				return nil, nil, err
			}
			c.replicas = append(c.replicas, r)
		}
		return c, stop, nil
	}
	// keys makes fresh accounts and keys for one set of runs, so that
	// each set's metering is checked on counters of its own.
	keys := func(c *cluster) error {
		admin := "http://" + c.replicas[0].admin
		var err error
		if c.hot, err = makeKey(ctx, client, admin, token); err != nil {
			return err
		}
		c.many = make([]string, ro.keys)
		for i := range c.many {
			if c.many[i], err = makeKey(ctx, client, admin, token); err != nil {
				return err
			}
		}
		return nil
	}

	fmt.Fprintf(stdout, "ipatlas-load -mode replicas: %d connections, %v per case in %d rounds, each after %v of warm-up\n",
		o.concurrency, o.duration, o.rounds, o.warmup)
	fmt.Fprintf(stdout, "machine: %s\n", machine())
	fmt.Fprintf(stdout, "data: %s\n", dataDesc)
	fmt.Fprintf(stdout, "stores: SQLite in a temporary directory; PostgreSQL %s, schema %s (dropped at the end)\n", pgVersion, schema)
	fmt.Fprintf(stdout, "keys: hot = every query on one key; many = spread over %d keys of %d accounts; requests round-robin over the replicas\n\n", ro.keys, ro.keys)
	fmt.Fprintf(stdout, "%-22s %-5s %10s %10s %9s %9s %10s  %s\n", "store", "keys", "requests", "req/s", "p50", "p99", "per batch", "failures")

	exact := true
	measureSet := func(c *cluster, label string, replicas []*serverProc) error {
		if err := keys(c); err != nil {
			return err
		}
		var hot, many caseResult
		for round := range o.rounds {
			for j := range 2 {
				// Alternate which goes first, so that a change in the
				// machine's other load weighs on both alike.
				isHot := (j+round)%2 == 0
				secrets := c.many
				if isHot {
					secrets = []string{c.hot}
				}
				cr, err := measureCase(ctx, o, client, replicas, secrets, bodies, o.seed+uint64(round))
				if err != nil {
					return err
				}
				if isHot {
					hot = hot.merge(cr)
				} else {
					many = many.merge(cr)
				}
			}
		}
		for _, k := range []struct {
			name    string
			cr      caseResult
			secrets []string
		}{{"hot", hot, []string{c.hot}}, {"many", many, c.many}} {
			line := fmt.Sprintf("%-22s %-5s %10d %10.0f %9s %9s %10.1f  %s", label, k.name,
				k.cr.res.ok, k.cr.res.rps(), round(k.cr.res.percentile(0.50)), round(k.cr.res.percentile(0.99)), k.cr.perBatch, k.cr.res.failures())
			fmt.Fprintln(stdout, strings.TrimRight(line, " "))
			var used int64
			for _, s := range k.secrets {
				u, err := usageCounter(ctx, client, "http://"+replicas[0].public, s)
				if err != nil {
					return err
				}
				used += u
			}
			if used != int64(k.cr.answered) {
				exact = false
				fmt.Fprintf(stdout, "%-22s %-5s METERING MISMATCH: %d successful answers, usage counters %d\n", label, k.name, k.cr.answered, used)
			}
		}
		ratio := hot.res.rps() / many.res.rps()
		fmt.Fprintf(stdout, "%-22s hot/many %.0f%% (goal >= %.0f%%)\n", "", 100*ratio, 100*ro.hotGoal)
		return nil
	}

	logf("measuring one node on SQLite")
	sq, stopSQ, err := start("sqlite", "sqlite:"+filepath.Join(tmp, "ipatlas.db"), 1)
	if err != nil {
		return err
	}
	err = measureSet(sq, "sqlite, 1 node", sq.replicas)
	stopSQ()
	if err != nil {
		return err
	}

	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	logf("starting %d replicas on PostgreSQL", most)
	pg, stopPG, err := start("postgres", schemaDSN, most)
	if err != nil {
		return err
	}
	defer stopPG()
	for _, n := range counts {
		logf("measuring %d replica(s) on PostgreSQL", n)
		label := fmt.Sprintf("postgres, %d replica", n)
		if n > 1 {
			label += "s"
		}
		if err := measureSet(pg, label, pg.replicas[:n]); err != nil {
			return err
		}
	}

	if !exact {
		return errors.New("a usage counter does not match the successes answered")
	}
	fmt.Fprintf(stdout, "\nmetering: exact in every case (each key's usage counter == the 2xx answers it got, warm-up included)\n")
	return nil
}

// measureCase drives POST /api/ip-query over replicas, round-robin, each
// request with one of secrets at random: a warm-up, then the measured run.
func measureCase(ctx context.Context, o options, client *http.Client, replicas []*serverProc, secrets []string, bodies [][]byte, seed uint64) (caseResult, error) {
	hosts := make([]string, len(replicas))
	for i, r := range replicas {
		hosts[i] = r.public
	}
	auth := make([]string, len(secrets))
	for i, s := range secrets {
		auth[i] = "Bearer " + s
	}
	sc := &http.Client{Transport: &spread{base: client.Transport, hosts: hosts, auth: auth}, Timeout: client.Timeout}
	t := target{method: http.MethodPost, url: "http://replicas/api/ip-query",
		header: http.Header{"Content-Type": {"application/json"}}, bodies: bodies}

	before, err := meterTotals(ctx, client, replicas)
	if err != nil {
		return caseResult{}, err
	}
	w := drive(ctx, sc, t, o.concurrency, o.warmup, seed+100)
	r := drive(ctx, sc, t, o.concurrency, o.duration/time.Duration(o.rounds), seed)
	if err := ctx.Err(); err != nil {
		return caseResult{}, err
	}
	after, err := meterTotals(ctx, client, replicas)
	if err != nil {
		return caseResult{}, err
	}
	cr := caseResult{res: r, answered: w.ok + r.ok}
	if n := after[1] - before[1]; n > 0 {
		cr.perBatch = (after[0] - before[0]) / n
	}
	return cr, nil
}

func (c caseResult) merge(o caseResult) caseResult {
	// Charges per batch, weighted by the answers of each part.
	if n := c.answered + o.answered; n > 0 {
		c.perBatch = (c.perBatch*float64(c.answered) + o.perBatch*float64(o.answered)) / float64(n)
	}
	c.res = c.res.merge(o.res)
	c.answered += o.answered
	return c
}

// meterTotals sums the replicas' group-commit counters: charges, batches.
func meterTotals(ctx context.Context, client *http.Client, replicas []*serverProc) ([2]float64, error) {
	var t [2]float64
	for _, r := range replicas {
		m, err := scrape(ctx, client, "http://"+r.admin+"/metrics")
		if err != nil {
			return t, err
		}
		t[0] += m["ipatlas_meter_charges_total"]
		t[1] += m["ipatlas_meter_batches_total"]
	}
	return t, nil
}

// spread sends each request to the next of hosts, as a round-robin load
// balancer would, with one of auth as its Authorization at random.
type spread struct {
	base  http.RoundTripper
	hosts []string
	auth  []string
	next  atomic.Uint64
}

func (s *spread) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context()) // a RoundTripper must not change its request
	r.URL.Host = s.hosts[s.next.Add(1)%uint64(len(s.hosts))]
	r.Host = r.URL.Host
	r.Header.Set("Authorization", s.auth[mrand.IntN(len(s.auth))])
	return s.base.RoundTrip(r)
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 16 {
			return nil, fmt.Errorf("-replicas: %q is not a number of replicas from 1 to 16", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// withSearchPath points a connection string at schema, as an operator
// does in --store.
func withSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", errors.New("-postgres: not a valid URL")
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return strings.TrimSpace(dsn) + " search_path=" + schema, nil
}

// createSchema creates schema, an empty one the first replica migrates,
// and returns the server's version.
func createSchema(ctx context.Context, dsn, schema string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return "", err
	}
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	return version, err
}

// dropSchema drops what the run left in the database, even after the
// run's context was cancelled.
func dropSchema(dsn, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}
