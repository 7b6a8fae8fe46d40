// Command ipatlas-load is the load harness of ipatlas, a development tool.
// It starts the real server (the ipatlas binary, on an SQLite store in a
// temporary directory, with a generated or a real dataset and one key with a
// huge quota) and, in the same run, a reference server: by default an
// unmetered lookup service on the same engine and data (no key, no store),
// or with -reference minimal a net/http handler that writes a fixed answer
// of the same size. It drives both with the same client at the same
// concurrency for the same time and prints requests/s, p50 and p99 of each,
// their ratio, and both processes' memory after the runs.
//
// Only 127.0.0.1 is ever contacted, and every run is bounded in time.
//
//	go run ./cmd/ipatlas-load                    # generated dataset, 64 connections, 10 s per run
//	go run ./cmd/ipatlas-load -data-dir ~/.local/share/ipatlas
//	go run ./cmd/ipatlas-load -mode soak         # 500 req/s for 60 s; fails if heap, goroutines or fds keep growing
//
// Modes (-mode) name what is measured; "compare" is the only one so far.
// Later modes (replicas on PostgreSQL, soak) add a case to runMode.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type options struct {
	mode        string
	duration    time.Duration
	warmup      time.Duration
	concurrency int   // the first of conns: the concurrency of the modes that use one
	conns       []int // -c: the concurrencies -mode compare measures at
	dataDir     string
	networks    int
	binary      string
	v6Share     float64
	lang        string
	endpoints   string
	seed        uint64
	rounds      int
	profileDir  string
	keep        bool
	serverArgs  string
	serverEnv   string
	reference   string
	echoip      string
	echoipBin   string
	short       bool

	replicas replicaOptions // -mode replicas
	soak     soakOptions    // -mode soak
}

func main() {
	// The harness re-executes itself to run the minimal server in its own
	// process, so that it is measured in the same arrangement as ipatlas.
	if len(os.Args) > 1 && os.Args[1] == minimalCommand {
		if err := runMinimal(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "ipatlas-load minimal server:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "ipatlas-load:", err)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("ipatlas-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mode, "mode", "compare", "what to measure: compare (ipatlas against a minimal net/http handler); soak (-rate requests per second for -duration, failing when the server's heap, goroutines or open fds grow without bound: see -max-growth)")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each measured run")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each run")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds the measured time is split into, alternating which server goes first")
	conns := "64,256"
	fs.StringVar(&conns, "c", conns, "concurrent connections, comma-separated: compare measures at each; the other modes use the first")
	fs.StringVar(&o.dataDir, "data-dir", "", "real dataset to serve (read only); default: a generated one")
	fs.IntVar(&o.networks, "networks", 50000, "networks per address family in the generated dataset")
	fs.StringVar(&o.binary, "ipatlas", "", "ipatlas binary to run; default: go build ./cmd/ipatlas (run from the repository)")
	fs.Float64Var(&o.v6Share, "v6", 0.5, "share of IPv6 addresses among the queried ones")
	fs.StringVar(&o.lang, "lang", "en", "lang of the queries: en or zh")
	fs.StringVar(&o.endpoints, "endpoints", "query,lookup,myip", "endpoints to measure, comma-separated: query (the metered POST), lookup (the metered GET /api/lookup/{ip}), myip")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the random addresses")
	fs.StringVar(&o.profileDir, "profile", "", "directory to save CPU profiles of ipatlas in (first round of each endpoint), for go tool pprof")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary directory (store, dataset, server log)")
	fs.StringVar(&o.serverArgs, "server-args", "", "extra flags for ipatlas serve, space-separated")
	fs.StringVar(&o.serverEnv, "server-env", "", "extra environment for ipatlas serve only, space-separated NAME=value (e.g. GOGC=50)")
	fs.StringVar(&o.reference, "reference", refLookup, "what -mode compare measures ipatlas against: lookup (the same engine and data, unmetered) or minimal (fixed answers)")
	fs.StringVar(&o.echoip, "echoip", "", "echoip's source tree, built and measured beside the reference in -mode compare (default $IPATLAS_ECHOIP_SRC, else "+defaultEchoipSource+"); off leaves it out")
	fs.StringVar(&o.echoipBin, "echoip-bin", "", "an echoip binary to run instead of building one from -echoip")
	fs.BoolVar(&o.short, "short", false, "a run of a few seconds that checks the harness end to end, figures and metering (CI): sets -duration 1s -rounds 2 -warmup 200ms -c 4,16 -networks 2000 unless given")
	o.replicas.flags(fs)
	o.soak.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.short {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]string{"duration": "1s", "rounds": "2", "warmup": "200ms", "c": "4,16", "networks": "2000"} {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range strings.Split(conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-c %q: want positive numbers, comma-separated", conns)
		}
		o.conns = append(o.conns, n)
	}
	o.concurrency = o.conns[0]
	if o.duration <= 0 || o.rounds < 1 || o.v6Share < 0 || o.v6Share > 1 {
		return errors.New("-rounds must be at least 1, -duration positive, -v6 in [0,1]")
	}
	switch o.mode {
	case "compare":
		return runCompare(ctx, o, stdout, stderr)
	case "replicas":
		return runReplicas(ctx, o, stdout, stderr)
	case "soak":
		return runSoak(ctx, o, stdout, stderr)
	}
	return fmt.Errorf("unknown -mode %q", o.mode)
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return string(b[:len(b)-1])
}

func machine() string {
	return fmt.Sprintf("%s/%s, %d CPUs, GOMAXPROCS %d, %s, load average %s",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), loadAverage())
}
