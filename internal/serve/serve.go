// Package serve runs the ipatlas service, as `ipatlas serve` starts it:
// it assembles the dataset's engine, the account store, the meter and
// the HTTP server from a resolved Config, keeps the dataset, the privacy
// lists, the corrections and the TLS certificate current while it runs,
// and shuts down in the order that loses no charge.
package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/accountstore"
	"github.com/ipatlas/ipatlas/internal/addrfile"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/rdns"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// AdminTokenFile, in the data dir, holds the generated admin token when
// none is configured, so that it survives restarts and never has to be
// printed or logged.
const AdminTokenFile = "admin-token"

// Options are what the service gets from the program that runs it,
// besides its configuration.
type Options struct {
	// Logger logs the service's lines; NewLogger makes the one the
	// configuration asks for.
	Logger *slog.Logger
	// Stdout shows the first run's key, once.
	Stdout io.Writer
	// Progress, when a person watches (a terminal), shows a first run's
	// fetch as progress bars instead of log lines.
	Progress io.Writer
	// Self is how a printed hint runs the program again ("ipatlas").
	Self string
	// Version is the program's version, logged at start and sent by the
	// admin API.
	Version string
}

// A SettingError is a setting the service cannot use, found as it
// starts: the program's usage mistake rather than a failure.
type SettingError struct{ Err error }

func (e *SettingError) Error() string { return e.Err.Error() }
func (e *SettingError) Unwrap() error { return e.Err }

func settingError(err error) error { return &SettingError{err} }

// NewLogger is the logger cfg asks for (its level and format), writing
// to w.
func NewLogger(cfg *Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Run runs the service until ctx is done, then shuts down in the order
// that loses nothing: stop accepting, drain in-flight requests (their
// charges are committed before they answer), flush the meter, close the
// store and the engine.
func Run(ctx context.Context, cfg *Config, o Options) (err error) {
	log := o.Logger
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := ensureDataset(ctx, o, cfg, log); err != nil {
		return err
	}
	log.Info("ipatlas starting", "version", o.Version, "data_dir", cfg.DataDir, "store", accountstore.Redact(cfg.Store))
	engine, err := geo.Open(cfg.DataDir, geo.Options{Logger: log, BuiltinPrivacy: true, MaxFeedShare: cfg.MaxFeedShare})
	if err != nil {
		return fmt.Errorf("dataset in %s: %w", cfg.DataDir, err)
	}
	logLoaded(log, engine)
	fresh := newFreshness(cfg, engine, log)
	fresh.warnOld()
	corr := newCorrections(cfg, engine, log)
	defer func() {
		if cerr := engine.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing dataset: %w", cerr))
		}
	}()

	// The certificate before listening: a pair that cannot be read stops
	// the start at once.
	var certs *certReloader
	if cfg.TLSCert != "" {
		if certs, err = newCertReloader(cfg.TLSCert, cfg.TLSKey, log); err != nil {
			return err
		}
	}

	// Listen before touching the store, so that a port in use fails before
	// a first run creates an account and prints a key nobody can use yet.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close() // after a shutdown, already closed
	adminLn, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("admin listen: %w", err)
	}
	defer adminLn.Close()
	if cfg.AddrFile != "" {
		if err := addrfile.Write(cfg.AddrFile, addrfile.Addrs{Public: ln.Addr().String(), Admin: adminLn.Addr().String()}); err != nil {
			return fmt.Errorf("addr file: %w", err)
		}
		defer os.Remove(cfg.AddrFile)
	}

	// The admin token before the store too: a token file to fix stops the
	// start before a first run creates an account.
	adminToken, err := resolveAdminToken(cfg, log)
	if err != nil {
		return err
	}

	store, err := accountstore.Open(ctx, cfg.Store, accountstore.Options{
		RequireMigrated:  !cfg.StoreMigrate,
		MaxConns:         cfg.StoreMaxConns,
		Timeout:          cfg.StoreTimeout,
		StatementTimeout: cfg.StoreStatementTimeout,
		Journal:          true,
		Logger:           log,
	})
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("closing store: %w", cerr))
		}
	}()
	svc, err := account.NewService(store, account.Options{
		Now:              time.Now,
		KeyCacheTTL:      cfg.KeyCacheTTL,
		KeyCacheSize:     account.DefaultKeyCacheSize,
		OwnerSessions:    cfg.OwnerSessions,
		OperatorSessions: cfg.OperatorSessions,
		AuditFailed: func(e account.AuditEntry, err error) {
			log.Error("audit: an entry could not be written after its change was made",
				"action", e.Action, "actor", e.Actor, "account_id", e.AccountID, "target", e.Target, "detail", e.Detail, "err", err.Error())
		},
	})
	if err != nil {
		return settingError(err)
	}
	if err := firstRunAccount(ctx, svc, cfg, o, log); err != nil {
		return err
	}
	meter := account.NewMeter(store, account.MeterOptions{
		Cost:     cfg.QueryCost,
		MaxDelay: cfg.MeterMaxDelay,
		MaxBatch: cfg.MeterMaxBatch,
		Now:      time.Now,
		// Never shorter than the store's own bound, which would cut off
		// the store's retry of a dead pooled connection.
		Timeout: max(account.DefaultChargeTimeout, cfg.StoreTimeout),
		// A store that cannot take charges (a full disk, a lost
		// database) is logged once a minute, not once per query; /readyz
		// says not ready meanwhile (Meter.Ready).
		Logger: log,
	})
	var draining atomic.Bool
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerMeterMetrics(registry, meter)
	fresh.register(registry)
	if certs != nil {
		certs.register(registry)
	}
	resolver, err := newResolver(cfg)
	if err != nil {
		return settingError(err)
	}
	if resolver != nil {
		log.Info("host names", "resolvers", resolver.Servers(), "timeout", resolver.Timeout())
	}
	srv, err := server.New(server.Config{
		TrustedProxies:  cfg.TrustedProxies,
		ForwardedHeader: cfg.ForwardedBy,
		AccessLogLevel:  accessLogLevel(cfg.AccessLog),
		IPv4Host:        cfg.IPv4Host,
		IPv6Host:        cfg.IPv6Host,
		EchoIPRoot:      cfg.EchoIPRoot,
		HSTSMaxAge:      cfg.HSTSMaxAge, // sent on answers over TLS only
		AdminToken:      adminToken,
		Version:         o.Version,
		Logger:          log,
		Now:             time.Now,

		PageIPv4URL:       cfg.PageIPv4URL,
		PublicURL:         cfg.PublicURL,
		SigninFailures:    cfg.SigninFailures,
		SigninWindow:      cfg.SigninWindow,
		PageIPv6URL:       cfg.PageIPv6URL,
		KeyRate:           cfg.KeyRate,
		KeyBurst:          cfg.KeyBurst,
		KeyDNSRate:        cfg.KeyDNSRate,
		KeyDNSBurst:       cfg.KeyDNSBurst,
		AddrRate:          cfg.AddrRate,
		AddrBurst:         cfg.AddrBurst,
		AuthFailures:      cfg.AuthFailures,
		AuthFailureWindow: cfg.AuthFailureWindow,
		AuthMaxBackoff:    cfg.AuthMaxBackoff,
		MeRate:            cfg.MeRate,
		MeBurst:           cfg.MeBurst,
		LimitTableSize:    cfg.LimitTableSize,
	}, server.Deps{
		Geo:      engine,
		Accounts: svc,
		Meter:    meter,
		Registry: registry,
		Resolver: resolver,
		// The manifest and the update schedule, for GET /admin/datasets.
		DatasetSources: fresh.sources,
		Ready: func() error {
			if draining.Load() {
				return errors.New("shutting down")
			}
			return nil
		},
	})
	if err != nil {
		return settingError(err) // a setting the server cannot use
	}

	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	public := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          errLog,
	}
	admin := &http.Server{
		Handler:           srv.AdminHandler(),
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		// pprof's CPU profile streams for 30 s by default.
		WriteTimeout:   max(cfg.WriteTimeout, 2*time.Minute),
		IdleTimeout:    cfg.IdleTimeout,
		MaxHeaderBytes: cfg.MaxHeaderBytes,
		ErrorLog:       errLog,
	}

	// Both listeners cap their connections (server.LimitConns), counted
	// as TCP connections, and refuse requests whose body length is
	// ambiguous, closing their connections (request smuggling; see
	// server.GuardFraming).
	publicLn := srv.LimitConns(public, ln, cfg.MaxConns, "public")
	if certs != nil {
		// TLS inside the framing guard: the guard reads the requests'
		// heads in the clear.
		publicLn = certs.listener(publicLn)
	}
	guarded := server.GuardFraming(public, publicLn)
	adminGuarded := server.GuardFraming(admin, srv.LimitConns(admin, adminLn, cfg.MaxConns, "admin"))
	// The address lines come before the first answer, so that whoever
	// waits for an answer finds them in the log.
	log.Info("listening on "+ln.Addr().String(), "addr", ln.Addr().String())
	log.Info("admin on "+adminLn.Addr().String(), "addr", adminLn.Addr().String())
	page := cfg.PublicURL
	if page == "" {
		page = listenerURL(ln.Addr())
		if certs != nil {
			page = "https" + strings.TrimPrefix(page, "http")
		}
	}
	log.Info("the page: "+page+"/", "url", page+"/")
	log.Info("the account portal: "+page+"/account", "url", page+"/account")
	log.Info("the operator console: "+listenerURL(adminLn.Addr())+"/console", "url", listenerURL(adminLn.Addr())+"/console")
	serveErr := make(chan error, 2)
	go func() { serveErr <- public.Serve(guarded) }()
	go func() { serveErr <- admin.Serve(adminGuarded) }()
	// Serving first: the AS index is then built in the background, so
	// that the first AS query does not wait for it.
	engine.IndexASAhead()

	bgCtx, stopBg := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() {
		if err := engine.Watch(bgCtx); err != nil && bgCtx.Err() == nil {
			log.Warn("not watching the data dir for new datasets", "dir", cfg.DataDir, "err", err)
		}
	})
	bg.Go(func() { fresh.run(bgCtx) })
	bg.Go(func() { corr.run(bgCtx) })
	bg.Go(func() { purgeEnded(bgCtx, svc, log, time.Hour) })
	if certs != nil {
		bg.Go(func() { certs.watch(bgCtx) })
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	bg.Go(func() {
		for {
			select {
			case <-bgCtx.Done():
				return
			case <-hup:
				if certs != nil {
					certs.reload("SIGHUP")
				}
				if err := engine.Reload(); err != nil {
					log.Error("reloading the dataset on SIGHUP; still serving the previous one", "err", err)
					continue
				}
				log.Info("dataset reloaded on SIGHUP")
			}
		}
	})
	defer func() {
		signal.Stop(hup)
		stopBg()
		bg.Wait()
	}()

	select {
	case <-ctx.Done():
		log.Info("shutting down: draining requests", "timeout", cfg.ShutdownTimeout)
	case err := <-serveErr:
		// A listener failed on its own: stop the other and flush anyway.
		log.Error("server stopped", "err", err)
		serveErr <- err
	}
	draining.Store(true)

	var shutdownErr error
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	// The public API drains first; the admin listener stays up meanwhile,
	// so that /readyz says "shutting down" and /metrics can be scraped
	// until the last request is answered.
	for _, s := range []*http.Server{public, admin} {
		if err := s.Shutdown(sctx); err != nil {
			// Requests still running past the timeout are cut off; their
			// charges, if committed, are in the store already.
			log.Warn("requests still in flight at the shutdown timeout were cut off", "err", err)
			s.Close()
		}
	}
	cancel()
	for range 2 { // both Serve calls return promptly once shut down
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			shutdownErr = errors.Join(shutdownErr, err)
		}
	}

	// The meter gets its own deadline: a slow drain must not leave pending
	// charges unflushed.
	mctx, cancel := context.WithTimeout(context.Background(), max(cfg.ShutdownTimeout, 5*time.Second))
	defer cancel()
	if err := meter.Close(mctx); err != nil {
		shutdownErr = errors.Join(shutdownErr, fmt.Errorf("flushing charges: %w", err))
	} else {
		log.Info("pending charges flushed")
	}
	if shutdownErr == nil {
		log.Info("stopped")
	}
	return shutdownErr
}

// registerMeterMetrics exports the group commit's counters: charges per
// batch is how much the batching saves, failed batches are queries
// answered ServiceUnavailable, and commit time is the store's latency as
// every metered query feels it, after its wait in the queue.
func registerMeterMetrics(reg *prometheus.Registry, m *account.Meter) {
	counter := func(name, help string, v func(account.MeterStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "ipatlas", Subsystem: "meter", Name: name, Help: help},
			func() float64 { return float64(v(m.Stats())) })
	}
	reg.MustRegister(
		counter("charges_total", "Charges taken into a group commit.", func(s account.MeterStats) uint64 { return s.Charges }),
		counter("batches_total", "Group commits sent to the store.", func(s account.MeterStats) uint64 { return s.Batches }),
		counter("failed_batches_total", "Group commits the store failed.", func(s account.MeterStats) uint64 { return s.Failed }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "ipatlas", Subsystem: "meter", Name: "commit_seconds_total",
			Help: "Time group commits spent in the store. Divided by batches_total: the mean commit time; its rate near 1: the committer is always busy, and charges wait for the commit before theirs."},
			func() float64 { return m.Stats().CommitTime.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "ipatlas", Subsystem: "meter", Name: "queue_seconds_total",
			Help: "Time charges waited for their group commit to start, all charges together. Divided by charges_total: the mean wait."},
			func() float64 { return m.Stats().QueueTime.Seconds() }),
	)
}

// accessLogLevel is the level of the per-request log lines. They are off
// by default, as in Caddy and Traefik: one line per request costs as much
// CPU as the whole of a Get-my-IP answer, and the metrics already count
// requests by route and status. Off, they are still there at debug level.
func accessLogLevel(on bool) slog.Level {
	if on {
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// hasDataset reports whether dir holds any MMDB: whatever it holds (the
// default dataset or an operator's MaxMind files) is the engine's to judge.
func hasDataset(dir string) (bool, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*.mmdb"))
	return len(m) > 0, err
}

// ensureDataset fetches the default dataset into an empty data dir.
func ensureDataset(ctx context.Context, o Options, cfg *Config, log *slog.Logger) error {
	ok, err := hasDataset(cfg.DataDir)
	if err != nil || ok {
		return err
	}
	if cfg.NoFetch {
		return fmt.Errorf("no dataset in %s and --no-fetch is set: run '%s db fetch --data-dir %s' or drop --no-fetch", cfg.DataDir, o.Self, cfg.DataDir)
	}
	log.Info("no dataset in the data dir: fetching one", "dir", cfg.DataDir, "source", cfg.Source)
	opts := cfg.FetchOptions()
	if o.Progress != nil {
		// A person is watching: progress bars rather than log lines.
		opts.Progress, opts.Terminal = o.Progress, true
	} else {
		opts.Logger = log
	}
	_, err = dataset.Fetch(ctx, opts)
	if err != nil {
		return fmt.Errorf("fetching a dataset from %s: %w", cfg.Source, err)
	}
	return nil
}

// listenerURL is the http URL (without a trailing slash) a browser on
// this machine reaches a listener at: a wildcard address becomes
// localhost, which a browser cannot open as 0.0.0.0 or [::].
func listenerURL(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return "http://" + a.String()
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// firstRunAccount creates the "default" account and a key when the store
// has no account at all, and prints the key once.
func firstRunAccount(ctx context.Context, svc *account.Service, cfg *Config, o Options, log *slog.Logger) error {
	accounts, err := svc.Store.ListAccounts(ctx)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if len(accounts) > 0 {
		return nil
	}
	ctx = account.WithActor(ctx, "serve") // the audit log's name for it
	// One month of free-tier queries at the configured cost.
	credits := account.Limit(account.Free, 0) * max(cfg.QueryCost, 1)
	a, err := svc.CreateAccount(ctx, account.AccountParams{Name: "default", Tier: account.Free, Credits: &credits})
	if err != nil {
		return fmt.Errorf("creating the default account: %w", err)
	}
	k, err := svc.CreateKey(ctx, a.ID)
	if err != nil {
		return fmt.Errorf("creating the default account's key: %w", err)
	}
	log.Info("first run: created the default account and a key", "account", a.ID, "key_id", k.ID)
	bar := strings.Repeat("=", 72)
	fmt.Fprintf(o.Stdout, `%s
ipatlas: first run. Created account %d "default" (free tier: %d queries
a month per key, %d credits) with this API key:

    %s

It is shown only this once: store it now. Make more keys with
    %s keys create --account %d --store %s
%s
`, bar, a.ID, account.Limit(account.Free, 0), credits, k.Secret, o.Self, a.ID, accountstore.Redact(cfg.Store), bar)
	return nil
}

// resolveAdminToken returns the configured admin token, or the one kept in
// the data dir, generating it on first use (or when the file is empty). The
// token is never logged. Like ssh with a private key, it refuses a token
// file that its group or others may read or write: the token is the admin
// API's only secret.
func resolveAdminToken(cfg *Config, log *slog.Logger) (string, error) {
	if cfg.AdminToken != "" {
		return cfg.AdminToken, nil
	}
	path := filepath.Join(cfg.DataDir, AdminTokenFile)
	tok, err := readAdminToken(path)
	if err != nil {
		return "", err
	}
	if tok != "" {
		log.Info("admin token read from file", "path", path)
		return tok, nil
	}
	buf := make([]byte, 32)
	rand.Read(buf)
	tok = hex.EncodeToString(buf)
	if err := writeAdminToken(path, tok); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	log.Info("admin token generated (set --admin-token or IPATLAS_ADMIN_TOKEN to choose one)", "path", path)
	return tok, nil
}

// readAdminToken returns the token in path, or "" when the file is
// missing or empty. The mode is read from the open file, so that it is the
// mode of the file read. A token in the file meets the rule of one given
// by flag (CheckAdminToken).
func readAdminToken(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("admin token: %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", nil // replaced by a new file, whatever its mode
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return "", fmt.Errorf("admin token file %s has mode %04o: its group or others can read or change it; "+
			"run 'chmod 600 %s' (and consider the token leaked: empty the file to have a new one generated)", path, perm, path)
	}
	if err := CheckAdminToken(tok); err != nil {
		return "", fmt.Errorf("admin token file %s: %v: empty or delete the file to have a new one generated at the next start, "+
			"as on the first run, or write a random one of at least %d characters in it ('openssl rand -hex 32')", path, err, MinAdminToken)
	}
	return tok, nil
}

// writeAdminToken writes tok to path as a new file of mode 0600, whatever
// was there: a temporary file in the same directory, renamed over path, so
// that the token is never in a file others can read, nor half written.
func writeAdminToken(path, tok string) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// purgeEnded deletes ended sessions and one-time links (see
// account.EndedRetention) at start and then every interval, until ctx
// ends. Replicas on one store may each do it: deleting twice is harmless.
func purgeEnded(ctx context.Context, svc *account.Service, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sessions, links, err := svc.PurgeEnded(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("purging ended sessions and links; will try again", "err", err, "in", interval)
		case sessions+links > 0:
			log.Info("purged ended sessions and links", "sessions", sessions, "links", links)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// newResolver is the DNS resolver of host names and domain queries; nil
// when --resolver is off.
func newResolver(cfg *Config) (*rdns.Resolver, error) {
	if cfg.Resolver == "off" {
		return nil, nil
	}
	r, err := rdns.New(rdns.Config{Server: cfg.Resolver, Timeout: cfg.ResolverTimeout})
	if err != nil {
		return nil, fmt.Errorf("--resolver: %w", err)
	}
	return r, nil
}
