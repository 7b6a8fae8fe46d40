package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/server"
)

// The abuse limits are on by default in serve, at the server package's
// defaults, and each can be turned off.
func TestServeLimitDefaults(t *testing.T) {
	c, err := parseServeConfig(nil, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"key-rate", c.KeyRate, float64(server.DefaultKeyRate)},
		{"key-burst", c.KeyBurst, server.DefaultKeyBurst},
		{"key-dns-rate", c.KeyDNSRate, float64(server.DefaultKeyDNSRate)},
		{"key-dns-burst", c.KeyDNSBurst, server.DefaultKeyDNSBurst},
		{"addr-rate", c.AddrRate, float64(server.DefaultAddrRate)},
		{"addr-burst", c.AddrBurst, server.DefaultAddrBurst},
		{"auth-failures", c.AuthFailures, server.DefaultAuthFailures},
		{"auth-failure-window", c.AuthFailureWindow, server.DefaultAuthFailureWindow},
		{"auth-max-backoff", c.AuthMaxBackoff, server.DefaultAuthMaxBackoff},
		{"limit-table-size", c.LimitTableSize, server.DefaultLimitTableSize},
		{"page-ipv4-url", c.PageIPv4URL, ""},
		{"page-ipv6-url", c.PageIPv6URL, ""},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if c.KeyRate <= 0 || c.KeyDNSRate <= 0 || c.AddrRate <= 0 || c.AuthFailures <= 0 {
		t.Errorf("a limit is off by default: key %v DNS %v addr %v auth %v", c.KeyRate, c.KeyDNSRate, c.AddrRate, c.AuthFailures)
	}

	// Off: 0 from each source.
	file := writeConfig(t, "addr-rate = 0\nauth-failure-window = 90s\nauth_max_backoff = 2m\nlimit-table-size = 128\n")
	c, err = parseServeConfig([]string{"--config", file, "--auth-failures=0", "--page-ipv6-url", "https://v6.example.test/"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d", "IPATLAS_KEY_RATE": "0", "IPATLAS_KEY_BURST": "7", "IPATLAS_ADDR_BURST": "3"})))
	if err != nil {
		t.Fatal(err)
	}
	if c.KeyRate != 0 || c.AddrRate != 0 || c.AuthFailures != 0 || c.KeyBurst != 7 || c.AddrBurst != 3 ||
		c.AuthFailureWindow != 90*time.Second || c.AuthMaxBackoff != 2*time.Minute || c.LimitTableSize != 128 ||
		c.PageIPv6URL != "https://v6.example.test/" || c.PageIPv4URL != "" {
		t.Errorf("limits from flag, env and file: %+v", c)
	}
}

// serve --help documents the limit settings (TestServeHelp checks the
// wording of every row of the table; this, that the rows are there).
func TestServeHelpListsLimits(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"ipatlas", "serve", "--help"}, mapEnv(nil), strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"key-rate", "key-burst", "key-dns-rate", "key-dns-burst", "addr-rate", "addr-burst", "auth-failures", "auth-failure-window",
		"auth-max-backoff", "limit-table-size", "page-ipv4-url", "page-ipv6-url"} {
		env := "IPATLAS_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if !strings.Contains(stdout.String(), "--"+name+" ") || !strings.Contains(stdout.String(), env) {
			t.Errorf("serve --help lacks --%s or %s", name, env)
		}
	}
	for _, def := range []string{"default 50\n", "default 100\n", "default 20\n", "default 40\n", "default 15m\n", "default 5m\n", "default 65536\n"} {
		if !strings.Contains(stdout.String(), def) {
			t.Errorf("serve --help lacks %q", def)
		}
	}
}

func TestServeLimitErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--key-rate", "-1"}, "--key-rate: must be a finite number"},
		{[]string{"--addr-rate", "NaN"}, "--addr-rate: must be a finite number"},
		{[]string{"--addr-rate", "+Inf"}, "--addr-rate"},
		{[]string{"--key-rate", "fast"}, "--key-rate: want a number"},
		{[]string{"--key-burst", "0"}, "--key-burst: must be at least 1"},
		{[]string{"--key-dns-rate", "-1"}, "--key-dns-rate: must be a finite number"},
		{[]string{"--key-dns-burst", "0"}, "--key-dns-burst: must be at least 1"},
		{[]string{"--addr-burst", "x"}, "--addr-burst"},
		{[]string{"--auth-failures", "-2"}, "--auth-failures: must be at least 0"},
		{[]string{"--auth-failure-window", "0s"}, "--auth-failure-window: must be positive"},
		{[]string{"--auth-max-backoff", "-1m"}, "--auth-max-backoff: must be positive"},
		{[]string{"--limit-table-size", "0"}, "--limit-table-size: must be at least 1"},
	} {
		_, err := parseServeConfig(tt.args, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one mentioning %q", tt.args, err, tt.want)
			continue
		}
		if exitCode(err) != exitUsage {
			t.Errorf("%q: exit code %d, want %d", tt.args, exitCode(err), exitUsage)
		}
	}
}

// A page endpoint the server cannot admit stops serve with a usage error
// that names the setting and the value.
func TestServeRefusesBadPageURL(t *testing.T) {
	fx := newServeFixture(t)
	for _, tt := range []struct{ flag, url, want string }{
		{"--page-ipv4-url", "ftp://v4.example.test/", "Options.IPv4URL"},
		{"--page-ipv6-url", "//v6.example.test/", "Options.IPv6URL"},
		{"--page-ipv6-url", "https://user@v6.example.test/", "Options.IPv6URL"},
	} {
		storePath := filepath.Join(t.TempDir(), "s.db")
		err := run(context.Background(), append([]string{"ipatlas", "serve"}, serveArgs(fx.dir, storePath, "--admin-token", "test-admin-token-for-the-serve-tests", tt.flag, tt.url)...),
			mapEnv(nil), strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.url) {
			t.Errorf("%s %s: error %v, want one naming %s and the URL", tt.flag, tt.url, err, tt.want)
			continue
		}
		if exitCode(err) != exitUsage {
			t.Errorf("%s %s: exit code %d, want %d", tt.flag, tt.url, exitCode(err), exitUsage)
		}
	}
}

// The limit settings reach the running server from each source: the
// per-address limit from the config file, the per-key limit from the
// environment, the key-guessing backoff and the page's endpoint from
// flags. Rates of one request per 1000 s make "quick" requests quick
// whatever the machine's speed.
func TestServeLimitsEndToEnd(t *testing.T) {
	fx := newServeFixture(t)
	storePath := filepath.Join(t.TempDir(), "s.db")
	conf := writeConfig(t, "addr-rate = 0.001\naddr_burst = 3\n")
	s := startServe(t, map[string]string{"IPATLAS_KEY_RATE": "0.001", "IPATLAS_KEY_BURST": "1"},
		serveArgs(fx.dir, storePath, "--config", conf, "--auth-failures", "2", "--page-ipv4-url", "https://v4.example.test/ip")...)
	keys := keyRe.FindAllString(s.stdout.String(), -1)
	if len(keys) != 1 {
		t.Fatalf("first run printed %d keys", len(keys))
	}
	base := "http://" + s.public
	c := &http.Client{Timeout: 10 * time.Second}

	get := func(path string, h map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}

	// The web page is a free endpoint: it spends the first of the three,
	// and names the configured IPv4 endpoint (and admits its origin).
	resp, page := get("/", map[string]string{"Accept": "text/html"})
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("https://v4.example.test/ip")) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "https://v4.example.test") {
		t.Errorf("GET / with --page-ipv4-url: %s, CSP %q, page names the endpoint: %v",
			resp.Status, resp.Header.Get("Content-Security-Policy"), bytes.Contains(page, []byte("https://v4.example.test/ip")))
	}
	for i := 2; i <= 3; i++ {
		if resp, b := get("/api/ip/myip", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("free request %d of a burst of 3: %s %s", i, resp.Status, b)
		}
	}
	resp, b := get("/api/ip/myip", nil)
	var env ipatlas.Envelope
	json.Unmarshal(b, &env)
	if resp.StatusCode != http.StatusTooManyRequests || env.Code != ipatlas.CodeRateLimitExceeded {
		t.Errorf("4th quick free request with addr-burst 3: %s %s, want 429 RateLimitExceeded", resp.Status, b)
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || secs < 1 {
		t.Errorf("Retry-After %q on the 429", resp.Header.Get("Retry-After"))
	}
	if resp, _ := get("/ipv4", nil); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("GET /ipv4 over the address limit: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}

	// One query per key at once: the second is refused before it is
	// charged.
	body := fmt.Sprintf(`{"ip": %q}`, fx.v4)
	if st, env := postQuery(t, c, base, keys[0], body); st != http.StatusOK || !env.Success {
		t.Fatalf("first query: %d %+v", st, env)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/ip-query", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+keys[0])
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	env = ipatlas.Envelope{}
	json.Unmarshal(b, &env)
	// (Its meta.currentCredits is the balance cached with the key: the
	// refusal reads no store.)
	if resp.StatusCode != http.StatusTooManyRequests || env.Code != ipatlas.CodeRateLimitExceeded || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second query with key-burst 1: %s Retry-After %q %s", resp.Status, resp.Header.Get("Retry-After"), b)
	}
	checkCredits(t, storePath, 1, account1000-1)

	// Key guessing: two rejected keys, then the address waits (1 s,
	// doubling): within a few more guesses one is refused unanswered.
	guess := "ipa_AAAAAAAAAAAA_" + strings.Repeat("B", 43)
	var codes []string
	refused := false
	for i := 0; i < 12 && !refused; i++ {
		st, env := postQuery(t, c, base, guess, body)
		codes = append(codes, fmt.Sprintf("%d %s", st, env.Code))
		if i < 2 && (st != http.StatusUnauthorized || env.Code != ipatlas.CodeInvalidAPIKey) {
			t.Errorf("guess %d (of the 2 allowed): %d %s, want 401 InvalidAPIKey", i+1, st, env.Code)
		}
		refused = st == http.StatusTooManyRequests && env.Code == ipatlas.CodeRateLimitExceeded
	}
	if !refused {
		t.Errorf("with --auth-failures 2, 12 wrong keys in a row were never refused: %v", codes)
	}
	if strings.Contains(s.stderr.String(), guess) || strings.Contains(s.stderr.String(), keys[0]) {
		t.Error("a key was logged")
	}
}

// serve caps each listener's connections (--max-conns, 4096 by default,
// 0 off): twelve clients that each keep a connection alive, against a cap
// of 4, are all answered, and the public listener holds 4 connections
// afterwards, having closed the 8 longest idle to make room.
func TestServeConnCap(t *testing.T) {
	c, err := parseServeConfig(nil, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
	if err != nil || c.MaxConns != server.DefaultMaxConns || server.DefaultMaxConns != 4096 {
		t.Errorf("default --max-conns %d, %v", c.MaxConns, err)
	}
	if c, err := parseServeConfig([]string{"--max-conns", "0"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"}))); err != nil || c.MaxConns != 0 {
		t.Errorf("--max-conns 0: %d, %v", c.MaxConns, err)
	}

	fx := newServeFixture(t)
	s := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "s.db"), "--admin-token", "test-admin-token-for-the-serve-tests", "--max-conns", "4")...)
	for i := range 12 {
		tr := &http.Transport{MaxIdleConnsPerHost: 1}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("http://" + s.public + "/api/ping")
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("client %d: %s", i, resp.Status)
		}
	}
	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`ipatlas_http_connections{listener="public"} 4`,
		`ipatlas_http_connection_cap_idle_closed_total{listener="public"} 8`,
		`ipatlas_http_connection_cap_waits_total{listener="public"} 8`,
		`ipatlas_http_connections{listener="admin"} 1`,
	} {
		if !strings.Contains(string(b), "\n"+want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(s.stderr.String(), "listener at its connection cap") {
		t.Error("no warning of the cap in the log")
	}
}
