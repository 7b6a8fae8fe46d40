package main

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/server"
)

// mapEnv is an environment of m's variables, and of the local mirrors
// of the privacy lists (fixtureEnv) where m does not name them.
func mapEnv(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok || k == "IPATLAS_POSTAL_URL" {
			return v
		}
		v, _ := fixtureEnv(k)
		return v
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ipatlas.conf")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeConfigDefaults(t *testing.T) {
	c, err := parseServeConfig(nil, testEnv(mapEnv(map[string]string{"XDG_DATA_HOME": "/xdg"})))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":8080" || c.AdminListen != "127.0.0.1:8081" {
		t.Errorf("listen %q admin %q", c.Listen, c.AdminListen)
	}
	if c.DataDir != "/xdg/ipatlas" || c.Store != "sqlite:/xdg/ipatlas/ipatlas.db" {
		t.Errorf("data dir %q store %q", c.DataDir, c.Store)
	}
	if c.QueryCost != 1 || c.NoFetch || c.AdminToken != "" || len(c.TrustedProxies) != 0 {
		t.Errorf("cost %d no-fetch %v token %q proxies %v", c.QueryCost, c.NoFetch, c.AdminToken, c.TrustedProxies)
	}
	if c.ReadHeaderTimeout != 5*time.Second || c.ReadTimeout != 10*time.Second || c.WriteTimeout != 15*time.Second ||
		c.IdleTimeout != 2*time.Minute || c.ShutdownTimeout != 15*time.Second || c.MaxHeaderBytes != 16384 {
		t.Errorf("timeouts %+v", c)
	}
	if c.LogLevel != slog.LevelInfo || c.LogFormat != "text" || c.Registry != "https://registry.npmjs.org" {
		t.Errorf("log %v %q registry %q", c.LogLevel, c.LogFormat, c.Registry)
	}
	if c.OwnerSessions != account.DefaultOwnerSessions || c.OperatorSessions != account.DefaultOperatorSessions ||
		c.SigninFailures != server.DefaultSigninFailures || c.SigninWindow != server.DefaultSigninWindow {
		t.Errorf("sessions %+v %+v, sign-in limit %d per %v", c.OwnerSessions, c.OperatorSessions, c.SigninFailures, c.SigninWindow)
	}
	// Every limit's default is set here, explicitly: server.Config and
	// account.Options read 0 as off.
	if c.MeRate != server.DefaultMeRate || c.MeBurst != server.DefaultMeBurst || c.KeyCacheTTL != account.DefaultKeyCacheTTL ||
		c.KeyRate != server.DefaultKeyRate || c.AddrRate != server.DefaultAddrRate || c.AuthFailures != server.DefaultAuthFailures ||
		c.LimitTableSize != server.DefaultLimitTableSize {
		t.Errorf("limits %+v", c)
	}
}

// The session policies and the sign-in limit come from flags, env and
// file like every setting; 0 sign-in failures turns the limit off, as 0
// does in server.Config.
func TestServeSessionSettings(t *testing.T) {
	env := map[string]string{"IPATLAS_DATA_DIR": "/d", "IPATLAS_SIGNIN_WINDOW": "5m",
		"IPATLAS_CONFIG": writeConfig(t, "console-session-max = 2h\nsession-max = 720h\n")}
	c, err := parseServeConfig([]string{"--session-idle", "1h", "--console-session-idle=10m", "--signin-failures", "0"}, testEnv(mapEnv(env)))
	if err != nil {
		t.Fatal(err)
	}
	if want := (account.SessionPolicy{Idle: time.Hour, Max: 720 * time.Hour}); c.OwnerSessions != want {
		t.Errorf("portal sessions %+v, want %+v", c.OwnerSessions, want)
	}
	if want := (account.SessionPolicy{Idle: 10 * time.Minute, Max: 2 * time.Hour}); c.OperatorSessions != want {
		t.Errorf("console sessions %+v, want %+v", c.OperatorSessions, want)
	}
	if c.SigninWindow != 5*time.Minute || c.SigninFailures != 0 {
		t.Errorf("sign-in limit %d per %v, want off", c.SigninFailures, c.SigninWindow)
	}
	if _, err := parseServeConfig([]string{"--session-idle", "0s"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"}))); err == nil || !strings.Contains(err.Error(), "--session-idle") {
		t.Errorf("--session-idle 0s: %v, want a refusal naming the flag", err)
	}
}

// Each setting is resolved flag > env > file > default, independently of
// the others.
func TestServeConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `
# a comment
listen = 127.0.0.1:1111
admin_listen = "127.0.0.1:2222"
query-cost = 3
log-format = json
trusted-proxy = 10.0.0.0/8
trusted-proxy = 192.168.1.1, fd00::/8
read-timeout = 7s
`)
	env := map[string]string{
		"IPATLAS_CONFIG":       file,
		"IPATLAS_ADMIN_LISTEN": "127.0.0.1:3333",
		"IPATLAS_QUERY_COST":   "4",
		"IPATLAS_NO_FETCH":     "true",
		"IPATLAS_DATA_DIR":     "/env/data",
	}
	c, err := parseServeConfig([]string{"--query-cost", "5", "--ipv4-host=v4.example"}, testEnv(mapEnv(env)))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen (file)", c.Listen, "127.0.0.1:1111"},
		{"admin-listen (env over file)", c.AdminListen, "127.0.0.1:3333"},
		{"query-cost (flag over env over file)", c.QueryCost, int64(5)},
		{"no-fetch (env)", c.NoFetch, true},
		{"log-format (file)", c.LogFormat, "json"},
		{"read-timeout (file)", c.ReadTimeout, 7 * time.Second},
		{"write-timeout (default)", c.WriteTimeout, 15 * time.Second},
		{"ipv4-host (flag)", c.IPv4Host, "v4.example"},
		{"forwarded-header (default)", c.ForwardedBy, server.HeaderAuto},
		{"access-log (default)", c.AccessLog, false},
		{"data-dir (env)", c.DataDir, "/env/data"},
		{"store (derived from data-dir)", c.Store, "sqlite:/env/data/ipatlas.db"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.1.1/32"),
		netip.MustParsePrefix("fd00::/8"),
	}
	if !slices.Equal(c.TrustedProxies, want) {
		t.Errorf("trusted proxies %v, want %v", c.TrustedProxies, want)
	}

	// A repeatable flag replaces the file's list rather than adding to it.
	c, err = parseServeConfig([]string{"--config", file, "--trusted-proxy", "2001:db8::1/64", "--trusted-proxy=127.0.0.1",
		"--forwarded-header", "Forwarded", "--access-log"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
	if err != nil {
		t.Fatal(err)
	}
	want = []netip.Prefix{netip.MustParsePrefix("2001:db8::/64"), netip.MustParsePrefix("127.0.0.1/32")}
	if !slices.Equal(c.TrustedProxies, want) {
		t.Errorf("trusted proxies %v, want %v", c.TrustedProxies, want)
	}
	if c.QueryCost != 3 {
		t.Errorf("query-cost from --config file = %d, want 3", c.QueryCost)
	}
	if c.ForwardedBy != server.HeaderForwarded || !c.AccessLog {
		t.Errorf("forwarded-header %q access-log %v", c.ForwardedBy, c.AccessLog)
	}

	// An empty repeatable flag clears the list the environment would set.
	c, err = parseServeConfig([]string{"--trusted-proxy="}, testEnv(mapEnv(map[string]string{"IPATLAS_TRUSTED_PROXY": "10.0.0.0/8"})))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.TrustedProxies) != 0 {
		t.Errorf("--trusted-proxy= left %v", c.TrustedProxies)
	}
}

func TestServeConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		file string
		want string // part of the error
	}{
		{"unknown flag", []string{"--nope"}, nil, "", "nope"},
		{"argument", []string{"extra"}, nil, "", "no arguments"},
		{"bad duration flag", []string{"--read-timeout", "soon"}, nil, "", "--read-timeout"},
		{"negative duration", []string{"--idle-timeout", "-1s"}, nil, "", "negative"},
		{"bad env", nil, map[string]string{"IPATLAS_QUERY_COST": "many"}, "", "IPATLAS_QUERY_COST"},
		{"zero cost", []string{"--query-cost=0"}, nil, "", "at least 1"},
		{"zero meter delay", []string{"--meter-max-delay=0s"}, nil, "", "positive"},
		{"bad proxy", []string{"--trusted-proxy", "example.com"}, nil, "", "neither a CIDR"},
		{"bad listen", []string{"--listen", "8080"}, nil, "", "--listen"},
		{"bad log format", nil, map[string]string{"IPATLAS_LOG_FORMAT": "xml"}, "", "IPATLAS_LOG_FORMAT"},
		{"bad log level", []string{"--log-level", "loud"}, nil, "", "--log-level"},
		{"bad forwarded header", []string{"--forwarded-header", "x-real-ip"}, nil, "", "want auto"},
		{"bad bool", nil, map[string]string{"IPATLAS_ACCESS_LOG": "sometimes"}, "", "IPATLAS_ACCESS_LOG"},
		{"small header limit", []string{"--max-header-bytes", "10"}, nil, "", "at least"},
		{"public url with a path", []string{"--public-url", "https://ip.example.com/portal"}, nil, "", "--public-url"},
		{"public url without scheme", nil, map[string]string{"IPATLAS_PUBLIC_URL": "ip.example.com"}, "", "IPATLAS_PUBLIC_URL"},
		{"file: unknown key", nil, nil, "lisen = :1\n", ":1: unknown setting \"lisen\""},
		{"file: no equals", nil, nil, "\n\nlisten :1\n", ":3: want key = value"},
		{"file: twice", nil, nil, "listen = :1\nlisten = :2\n", "set twice"},
		{"file: bad value", nil, nil, "query-cost = x\n", "query-cost"},
		{"missing file", []string{"--config", "/nonexistent/ipatlas.conf"}, nil, "", "config file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"IPATLAS_DATA_DIR": "/d"}
			for k, v := range tt.env {
				env[k] = v
			}
			if tt.file != "" {
				env["IPATLAS_CONFIG"] = writeConfig(t, tt.file)
			}
			_, err := parseServeConfig(tt.args, testEnv(mapEnv(env)))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if exitCode(err) != exitUsage {
				t.Errorf("exit code %d, want %d", exitCode(err), exitUsage)
			}
		})
	}
}

// serve --help documents every setting with its environment variable and
// default, and exits 0 without starting anything.
func TestServeHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"ipatlas", "serve", "--help"}, mapEnv(nil), strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	help := stdout.String()
	for _, s := range serveSettings {
		for _, want := range []string{"--" + s.name, s.env(), s.usage} {
			if !strings.Contains(help, want) {
				t.Errorf("help lacks %q", want)
			}
		}
		if s.def != "" && !strings.Contains(help, "default "+s.def) {
			t.Errorf("help lacks the default of %s (%q)", s.name, s.def)
		}
	}
	for _, want := range []string{"--config", "IPATLAS_CONFIG", "key = value"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("help wrote to stderr: %q", stderr.String())
	}
}

func TestServePublicURL(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		file string
		want string
	}{
		{nil, nil, "", ""},
		{[]string{"--public-url", "https://ip.example.com/"}, nil, "", "https://ip.example.com"},
		{nil, map[string]string{"IPATLAS_PUBLIC_URL": "http://127.0.0.1:8080"}, "", "http://127.0.0.1:8080"},
		{nil, nil, "public-url = https://from.file.example\n", "https://from.file.example"},
	} {
		env := map[string]string{"IPATLAS_DATA_DIR": "/d"}
		for k, v := range tc.env {
			env[k] = v
		}
		if tc.file != "" {
			env["IPATLAS_CONFIG"] = writeConfig(t, tc.file)
		}
		cfg, err := parseServeConfig(tc.args, testEnv(mapEnv(env)))
		if err != nil {
			t.Fatalf("%v %v: %v", tc.args, tc.env, err)
		}
		if cfg.PublicURL != tc.want {
			t.Errorf("%v %v %q: PublicURL %q, want %q", tc.args, tc.env, tc.file, cfg.PublicURL, tc.want)
		}
	}
}

// --resolver takes HOST:PORT, system (the default) or off, from the flag,
// the environment or the file; --resolver-timeout is positive.
func TestServeResolver(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		file    string
		want    string
		timeout time.Duration
	}{
		{nil, nil, "", "", time.Second},
		{[]string{"--resolver", "127.0.0.1:5353", "--resolver-timeout", "250ms"}, nil, "", "127.0.0.1:5353", 250 * time.Millisecond},
		{[]string{"--resolver", "system"}, map[string]string{"IPATLAS_RESOLVER": "[::1]:53"}, "", "", time.Second},
		{nil, map[string]string{"IPATLAS_RESOLVER": "[::1]:53"}, "resolver = off\n", "[::1]:53", time.Second},
		{nil, nil, "resolver = off\nresolver-timeout = 2s\n", "off", 2 * time.Second},
	} {
		env := map[string]string{"IPATLAS_DATA_DIR": "/d"}
		for k, v := range tc.env {
			env[k] = v
		}
		if tc.file != "" {
			env["IPATLAS_CONFIG"] = writeConfig(t, tc.file)
		}
		cfg, err := parseServeConfig(tc.args, testEnv(mapEnv(env)))
		if err != nil {
			t.Fatalf("%v %v: %v", tc.args, tc.env, err)
		}
		if cfg.Resolver != tc.want || cfg.ResolverTimeout != tc.timeout {
			t.Errorf("%v %v %q: %q %v, want %q %v", tc.args, tc.env, tc.file, cfg.Resolver, cfg.ResolverTimeout, tc.want, tc.timeout)
		}
	}
	for _, bad := range [][]string{{"--resolver", "127.0.0.1"}, {"--resolver", "nonsense"}, {"--resolver-timeout", "0"}, {"--resolver-timeout", "-1s"}} {
		if _, err := parseServeConfig(bad, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"}))); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// --echoip-root is off by default and comes from the flag, the
// environment or the file like every setting.
func TestServeEchoIPRoot(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		file string
		want bool
	}{
		{nil, nil, "", false},
		{[]string{"--echoip-root"}, nil, "", true},
		{nil, map[string]string{"IPATLAS_ECHOIP_ROOT": "true"}, "", true},
		{nil, nil, "echoip-root = true\n", true},
		{[]string{"--echoip-root=false"}, map[string]string{"IPATLAS_ECHOIP_ROOT": "true"}, "", false},
	} {
		env := map[string]string{"IPATLAS_DATA_DIR": "/d"}
		for k, v := range tc.env {
			env[k] = v
		}
		if tc.file != "" {
			env["IPATLAS_CONFIG"] = writeConfig(t, tc.file)
		}
		c, err := parseServeConfig(tc.args, testEnv(mapEnv(env)))
		if err != nil {
			t.Fatalf("%v %v %q: %v", tc.args, tc.env, tc.file, err)
		}
		if c.EchoIPRoot != tc.want {
			t.Errorf("%v %v %q: %v, want %v", tc.args, tc.env, tc.file, c.EchoIPRoot, tc.want)
		}
	}
	if _, err := parseServeConfig([]string{"--echoip-root=maybe"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"}))); err == nil {
		t.Error("--echoip-root=maybe: no error")
	}
}
