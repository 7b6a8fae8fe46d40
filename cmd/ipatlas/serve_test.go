package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/accountstore"
	"github.com/ipatlas/ipatlas/internal/addrfile"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/serve"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// serveFixture is a data dir holding the geotest dataset, with one covered
// address of each family.
type serveFixture struct {
	dir    string
	v4, v6 string
}

func newServeFixture(t *testing.T) serveFixture {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	// Places whose time zone needs no polygon search (slow under -race).
	return serveFixture{dir: dir, v4: geotest.MountainView.IP, v6: geotest.Nuremberg.IP}
}

// syncBuffer is a bytes.Buffer that the server writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var (
	keyRe = regexp.MustCompile(`ipa_[0-9A-Za-z]{12}_[0-9A-Za-z]{43}`)
)

// serveRun is an in-process `ipatlas serve` started with run().
type serveRun struct {
	public, admin  string // host:port
	addrFile       string // --addr-file
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	done           chan error
}

// startServe runs `ipatlas serve args...` in-process with only env as its
// environment, learns its addresses from --addr-file, and waits until both
// listeners answer.
func startServe(t *testing.T, env map[string]string, args ...string) *serveRun {
	t.Helper()
	return startServeIn(t, testEnv(withTestSource(env)), args...)
}

// startServeIn is startServe in e, whose output streams it replaces with
// its own.
func startServeIn(t *testing.T, e env, args ...string) *serveRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serveRun{stdout: &syncBuffer{}, stderr: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	e.stdin, e.stdout, e.stderr = strings.NewReader(""), s.stdout, s.stderr
	addrFile := filepath.Join(t.TempDir(), "addrs.json")
	s.addrFile = addrFile
	go func() {
		s.done <- e.run(ctx, append([]string{"ipatlas", "serve", "--addr-file", addrFile}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of its context's end")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for s.public == "" || s.admin == "" {
		select {
		case err := <-s.done:
			t.Fatalf("serve returned before listening: %v\nstderr:\n%s", err, s.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not report its addresses within 30s\nstderr:\n%s", s.stderr)
		}
		if a, err := addrfile.Read(addrFile); err == nil {
			s.public, s.admin = a.Public, a.Admin
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	waitOK(t, "http://"+s.admin+"/healthz")
	return s
}

// stop ends serve's context and returns what run returned.
func (s *serveRun) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s")
		return nil
	}
}

func waitOK(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered 200: %v", url, errOrStatus(err, resp))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func errOrStatus(err error, resp *http.Response) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// postQuery sends one location query.
func postQuery(t *testing.T, c *http.Client, base, key, body string) (int, ipatlas.Envelope) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/ip-query", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env ipatlas.Envelope
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("query %s: %s: body %q is not an envelope: %v", body, resp.Status, b, err)
	}
	return resp.StatusCode, env
}

func getJSON(t *testing.T, c *http.Client, url, key string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %q: %v", url, b, err)
		}
	}
	return resp.StatusCode
}

// serveArgs are the flags of a test server on fresh loopback ports.
func serveArgs(dataDir, storePath string, extra ...string) []string {
	return append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--data-dir", dataDir, "--store", "sqlite:" + storePath, "--no-fetch"}, extra...)
}

// The whole service through run(): first run on a store without accounts,
// a metered query, the free endpoints, the admin listener, and a graceful
// shutdown that lets an in-flight query finish and keeps its charge.
func TestServeEndToEnd(t *testing.T) {
	fx := newServeFixture(t)
	storePath := filepath.Join(t.TempDir(), "ipatlas.db")
	s := startServe(t, nil, serveArgs(fx.dir, storePath, "--admin-token", "test-admin-token-for-the-serve-tests", "--access-log")...)
	base := "http://" + s.public
	c := &http.Client{Timeout: 10 * time.Second}

	// First run: a default account with one key, printed once on stdout.
	keys := keyRe.FindAllString(s.stdout.String(), -1)
	if len(keys) != 1 {
		t.Fatalf("first run printed %d keys, want 1; stdout:\n%s", len(keys), s.stdout)
	}
	key := keys[0]
	for _, want := range []string{"default", "ipatlas keys create --account", "only this once"} {
		if !strings.Contains(s.stdout.String(), want) {
			t.Errorf("first-run banner lacks %q:\n%s", want, s.stdout)
		}
	}
	// The audit log names serve as the maker of the account and its key.
	if st, err := sqlite.Open(t.Context(), storePath, sqlite.Options{RequireMigrated: true}); err != nil {
		t.Error(err)
	} else {
		es, err := st.Audit(t.Context(), 0, 0, 10)
		st.Close()
		if err != nil || len(es) != 2 || es[0].Actor != "serve" || es[1].Actor != "serve" {
			t.Errorf("the first run's audit entries: %+v, %v; want account.create and key.create by serve", es, err)
		}
	}

	status, env := postQuery(t, c, base, key, fmt.Sprintf(`{"ip": %q}`, fx.v4))
	if status != http.StatusOK || !env.Success || env.Data == nil || env.Data.IP != fx.v4 {
		t.Fatalf("query %s: %d %+v", fx.v4, status, env)
	}
	if env.Data.Country == "" {
		t.Errorf("query %s: no country in %+v", fx.v4, env.Data)
	}
	if !env.Meta.IsLoggedIn || env.Meta.CurrentCredits != account1000-1 {
		t.Errorf("meta %+v, want logged in with %d credits", env.Meta, account1000-1)
	}
	status, env = postQuery(t, c, base, key, `{"ip": "10.1.2.3", "lang": "zh"}`)
	if status != http.StatusBadRequest || env.Code != ipatlas.CodePrivateIP || env.Meta.CurrentCredits != account1000-1 {
		t.Errorf("private address: %d %+v", status, env)
	}
	status, env = postQuery(t, c, base, "ipa_nope", `{"ip": "8.8.8.8"}`)
	if status != http.StatusUnauthorized || env.Code != ipatlas.CodeInvalidAPIKey || env.Meta.IsLoggedIn {
		t.Errorf("bad key: %d %+v", status, env)
	}

	var my ipatlas.MyIPResponse
	if st := getJSON(t, c, base+"/api/ip/myip", "", &my); st != http.StatusOK || my.IP != "127.0.0.1" || my.IPVersion != ipatlas.IPv4 {
		t.Errorf("myip: %d %+v", st, my)
	}
	var u ipatlas.Usage
	if st := getJSON(t, c, base+"/api/usage", key, &u); st != http.StatusOK || u.Used != 1 || u.Credits != account1000-1 {
		t.Errorf("usage: %d %+v", st, u)
	}

	// The admin listener: open probes, token-guarded API.
	adminBase := "http://" + s.admin
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := c.Get(adminBase + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", p, resp.Status)
		}
		if p != "/metrics" {
			continue
		}
		// The process, Go runtime and group-commit metrics serve adds.
		for _, want := range []string{"\nipatlas_meter_charges_total 1\n", "\nipatlas_meter_batches_total 1\n", "\ngo_goroutines ", "\nprocess_cpu_seconds_total "} {
			if !strings.Contains(string(b), want) {
				t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
			}
		}
		// The one commit took some time (an SQLite transaction with an
		// fsync), and so did the clock between the charge's arrival and
		// its batch being taken.
		for _, name := range []string{"ipatlas_meter_commit_seconds_total", "ipatlas_meter_queue_seconds_total"} {
			if m := regexp.MustCompile(`\n` + name + ` (\S+)\n`).FindSubmatch(b); m == nil {
				t.Errorf("/metrics lacks %s", name)
			} else if v, err := strconv.ParseFloat(string(m[1]), 64); err != nil || v <= 0 {
				t.Errorf("%s %s, want > 0", name, m[1])
			}
		}
	}
	var accts struct {
		Accounts []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"accounts"`
	}
	if st := getJSON(t, c, adminBase+"/admin/accounts", "wrong-token", &accts); st != http.StatusUnauthorized {
		t.Errorf("admin API with a wrong token: %d", st)
	}
	if st := getJSON(t, c, adminBase+"/admin/accounts", "test-admin-token-for-the-serve-tests", &accts); st != http.StatusOK || len(accts.Accounts) != 1 || accts.Accounts[0].Name != "default" {
		t.Errorf("admin accounts: %d %+v", st, accts)
	}

	// Graceful shutdown: a query whose body is still arriving when the
	// context ends is answered, and then run returns nil.
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, base+"/api/ip-query", pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Expect", "100-continue") // the 100 says the handler is reading the body
	inHandler := make(chan struct{})
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		Got100Continue: func() { close(inHandler) },
	}))
	slow := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: 30 * time.Second}}
	type answer struct {
		status int
		env    ipatlas.Envelope
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := slow.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var a answer
		a.status = resp.StatusCode
		a.err = json.NewDecoder(resp.Body).Decode(&a.env)
		answered <- a
	}()
	select {
	case <-inHandler:
	case a := <-answered:
		t.Fatalf("the slow query was answered before its body was sent: %+v", a)
	case <-time.After(10 * time.Second):
		t.Fatal("no 100 Continue within 10s")
	}
	stopped := make(chan error, 1)
	s.cancel()
	go func() {
		err := <-s.done
		s.done <- err // for the cleanup
		stopped <- err
	}()
	// Once the listener is closed, new connections are refused.
	for deadline := time.Now().Add(10 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", s.public, time.Second)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the public listener still accepts 10s after the shutdown began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("serve returned (%v) while a request was in flight", err)
	default:
	}
	// While draining, the admin listener is still up and not ready.
	if resp, err := c.Get(adminBase + "/readyz"); err != nil {
		t.Errorf("readyz while draining: %v", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("readyz while draining: %s, want 503", resp.Status)
		}
	}
	fmt.Fprintf(pw, `{"ip": %q, "lang": "zh"}`, fx.v6)
	pw.Close()
	a := <-answered
	if a.err != nil || a.status != http.StatusOK || !a.env.Success || a.env.Meta.CurrentCredits != account1000-2 {
		t.Fatalf("in-flight query during shutdown: %+v", a)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("serve returned %v after a graceful shutdown", err)
	}
	for _, want := range []string{"shutting down", "pending charges flushed", "stopped"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}

	// The store has both charges, and the ledger agrees with the balance.
	checkCredits(t, storePath, 1, account1000-2)

	// Requests were logged, but neither the key nor the admin token.
	logs := s.stderr.String()
	if !strings.Contains(logs, "route=\"POST /api/ip-query\"") {
		t.Errorf("--access-log: no request line for the location query in\n%s", logs)
	}
	for _, secret := range []string{key, "test-admin-token-for-the-serve-tests", "Bearer"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains %q", secret)
		}
	}
}

// account1000 is the balance of the account created on the first run with
// the default query cost: a month of free-tier queries.
const account1000 = 1000

// checkCredits reads an account's balance and ledger from the store on
// disk, as the CLI does, and checks that the ledger adds up to it. A
// running server applies its charge journal to the tables every second:
// the balance is read again until it is want, for at most 10 s.
func checkCredits(t *testing.T, storePath string, accountID int64, want int64) {
	t.Helper()
	ctx := context.Background()
	st, err := accountstore.Open(ctx, "sqlite:"+storePath, accountstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var a struct{ Credits int64 }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := st.Account(ctx, accountID)
		if err != nil {
			t.Fatal(err)
		}
		a.Credits = got.Credits
		if a.Credits == want || time.Now().After(deadline) {
			break
		}
	}
	if a.Credits != want {
		t.Errorf("account %d has %d credits, want %d", accountID, a.Credits, want)
	}
	entries, err := st.Ledger(ctx, accountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, e := range entries {
		sum += e.Delta
	}
	if len(entries) == 0 || sum != a.Credits || entries[0].Balance != a.Credits {
		t.Errorf("the ledger (%d entries, deltas summing to %d) does not agree with the balance %d", len(entries), sum, a.Credits)
	}
}

// A second start on the same store creates no account and prints no key;
// a generated admin token is kept in the data dir, readable only by its
// owner, and reused.
func TestServeRestartAndAdminTokenFile(t *testing.T) {
	fx := newServeFixture(t)
	storePath := filepath.Join(t.TempDir(), "ipatlas.db")
	s := startServe(t, nil, serveArgs(fx.dir, storePath)...)
	if n := len(keyRe.FindAllString(s.stdout.String(), -1)); n != 1 {
		t.Fatalf("first run printed %d keys", n)
	}
	tokPath := filepath.Join(fx.dir, serve.AdminTokenFile)
	fi, err := os.Stat(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("admin token file mode %v, want 0600", fi.Mode().Perm())
	}
	tok, _ := os.ReadFile(tokPath)
	token := strings.TrimSpace(string(tok))
	if len(token) < 32 {
		t.Errorf("generated admin token %q is short", token)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	var v any
	if st := getJSON(t, c, "http://"+s.admin+"/admin/accounts", token, &v); st != http.StatusOK {
		t.Errorf("admin API with the generated token: %d", st)
	}
	if strings.Contains(s.stderr.String()+s.stdout.String(), token) {
		t.Error("the generated admin token was printed")
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	s = startServe(t, nil, serveArgs(fx.dir, storePath, "--log-format", "json")...)
	if strings.Contains(s.stdout.String(), "ipa_") {
		t.Errorf("second run printed a key:\n%s", s.stdout)
	}
	if st := getJSON(t, c, "http://"+s.public+"/api/ip/myip", "", &v); st != http.StatusOK {
		t.Errorf("myip: %d", st)
	}
	for _, line := range strings.Split(strings.TrimSpace(s.stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["msg"] == nil || rec["level"] == nil {
			t.Errorf("--log-format json wrote %q", line)
		}
	}
	tok2, _ := os.ReadFile(tokPath)
	if string(tok2) != string(tok) {
		t.Error("the admin token changed on restart")
	}
	if st := getJSON(t, c, "http://"+s.admin+"/admin/accounts", token, &v); st != http.StatusOK {
		t.Errorf("admin API with the kept token after restart: %d", st)
	}
}

func TestServeNoDataset(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr syncBuffer
	err := run(context.Background(), []string{"ipatlas", "serve", "--data-dir", dir, "--no-fetch", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"},
		mapEnv(nil), strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "no dataset") || !strings.Contains(err.Error(), "db fetch") {
		t.Fatalf("serve --no-fetch on an empty data dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipatlas.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a store was created although serve could not start: %v", err)
	}
}

func TestServePortInUse(t *testing.T) {
	fx := newServeFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr syncBuffer
	storePath := filepath.Join(t.TempDir(), "s.db")
	args := []string{"ipatlas", "serve", "--listen", ln.Addr().String(), "--admin-listen", "127.0.0.1:0",
		"--data-dir", fx.dir, "--store", "sqlite:" + storePath, "--no-fetch"}
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), args, mapEnv(nil), strings.NewReader(""), &stdout, &stderr) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "listen") {
			t.Errorf("serve on a port in use: %v", err)
		}
		// Nothing was created: a first run that cannot serve prints no key.
		if _, err := os.Stat(storePath); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a store was created although serve could not listen: %v", err)
		}
		if stdout.String() != "" {
			t.Errorf("serve printed %q although it could not listen", stdout.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve on a port in use did not fail")
	}
}

// One dual-stack listener answers IPv4 peers (as ::ffff:a.b.c.d on the
// socket) as IPv4 and IPv6 peers as IPv6; the plain-text endpoints never
// answer with the other family's address.
func TestServeDualStack(t *testing.T) {
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback on this machine (%v): CI needs ::1 for the dual-stack test", err)
	} else {
		ln.Close()
	}
	fx := newServeFixture(t)
	// At warn level, the addresses still reach --addr-file.
	s := startServe(t, nil, "--listen", "[::]:0", "--admin-listen", "127.0.0.1:0", "--log-level", "warn",
		"--data-dir", fx.dir, "--store", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "--no-fetch",
		"--ipv4-host", "v4.example.test", "--ipv6-host", "v6.example.test")
	_, port, err := net.SplitHostPort(s.public)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	get := func(base, path, host string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	families := []struct {
		base, ip, version, own, other, ownHost, otherHost string
	}{
		{"http://127.0.0.1:" + port, "127.0.0.1", ipatlas.IPv4, "/ipv4", "/ipv6", "v4.example.test", "v6.example.test"},
		{"http://[::1]:" + port, "::1", ipatlas.IPv6, "/ipv6", "/ipv4", "v6.example.test", "v4.example.test"},
	}
	for _, f := range families {
		t.Run(f.version, func(t *testing.T) {
			var my ipatlas.MyIPResponse
			if st := getJSON(t, c, f.base+"/api/ip/myip", "", &my); st != http.StatusOK || my.IP != f.ip || my.IPVersion != f.version || !my.Result {
				t.Errorf("myip over %s: %d %+v", f.version, st, my)
			}
			for _, p := range []struct{ path, host string }{{f.own, ""}, {"/", f.ownHost}} {
				st, body, h := get(f.base, p.path, p.host)
				if st != http.StatusOK || strings.TrimSpace(body) != f.ip {
					t.Errorf("GET %s (Host %q) over %s: %d %q", p.path, p.host, f.version, st, body)
				}
				if h.Get("Cache-Control") != "no-store" {
					t.Errorf("GET %s: Cache-Control %q", p.path, h.Get("Cache-Control"))
				}
			}
			for _, p := range []struct{ path, host string }{{f.other, ""}, {"/", f.otherHost}} {
				st, body, _ := get(f.base, p.path, p.host)
				if st < 400 || st > 499 || strings.Contains(body, f.ip) || strings.TrimSpace(body) == "" {
					t.Errorf("GET %s (Host %q) over %s: %d %q, want a 4xx with a reason", p.path, p.host, f.version, st, body)
				}
			}
		})
	}
}

// The first run on an empty data dir fetches the default dataset from the
// registry (here an emulated one on 127.0.0.1), creates the store and the
// default account, and serves the fresh data; the next start fetches
// nothing.
func TestServeFirstRunFetches(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "1.0.2026010100")...)
	dir := filepath.Join(t.TempDir(), "not", "yet")
	args := []string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", dir, "--registry", reg.URL}
	s := startServe(t, nil, args...)
	keys := keyRe.FindAllString(s.stdout.String(), -1)
	if len(keys) != 1 {
		t.Fatalf("first run printed %d keys:\n%s", len(keys), s.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, dataset.ManifestFile)); err != nil {
		t.Errorf("no manifest after the first-run fetch: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ipatlas.db")); err != nil {
		t.Errorf("no store in the data dir: %v", err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	status, env := postQuery(t, c, "http://"+s.public, keys[0], `{"ip": "81.2.69.1"}`)
	if status != http.StatusOK || env.Data == nil || env.Data.City != "London" || env.Data.ASN != "AS20712" {
		t.Errorf("query on the fetched data: %d %+v", status, env.Data)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	n := reg.TarballRequests(dataset.CityPackage)

	s = startServe(t, nil, args...)
	if got := reg.TarballRequests(dataset.CityPackage); got != n {
		t.Errorf("the second start downloaded the city package again (%d downloads, then %d)", n, got)
	}
	if strings.Contains(s.stdout.String(), "ipa_") {
		t.Errorf("the second start printed a key:\n%s", s.stdout)
	}
}

// Slow or oversized request headers are refused by the HTTP server's limits
// before any handler runs.
func TestServeHeaderLimits(t *testing.T) {
	fx := newServeFixture(t)
	s := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "s.db"),
		"--read-header-timeout", "100ms", "--max-header-bytes", "1024")...)

	// A client that never finishes its headers is disconnected.
	conn, err := net.Dial("tcp", s.public)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /api/ip/myip HTTP/1.1\r\nHost: x\r\n")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("a connection with unfinished headers was still open after 10s (read-header-timeout 100ms)")
	}
	if strings.Contains(string(b), "200 OK") {
		t.Errorf("unfinished headers were answered: %q", b)
	}

	// Headers beyond the limit get 431.
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.public+"/api/ip/myip", nil)
	req.Header.Set("X-Padding", strings.Repeat("a", 16<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("16 KiB of headers with --max-header-bytes 1024: %s, want 431", resp.Status)
	}
}

// --trusted-proxy is believed, and only for peers inside it; access lines
// are off by default.
func TestServeTrustedProxy(t *testing.T) {
	fx := newServeFixture(t)
	c := &http.Client{Timeout: 10 * time.Second}
	myip := func(s *serveRun) string {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.public+"/api/ip/myip", nil)
		req.Header.Set("X-Forwarded-For", "8.8.4.4")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var my ipatlas.MyIPResponse
		if err := json.NewDecoder(resp.Body).Decode(&my); err != nil {
			t.Fatal(err)
		}
		return my.IP
	}
	// The echoip shape's own address is the same client address; with
	// --echoip-root (here from the environment) its paths answer at the
	// root too.
	country := func(s *serveRun, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+s.public+path, nil)
		req.Header.Set("X-Forwarded-For", fx.v4)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	trusting := startServe(t, map[string]string{"IPATLAS_TRUSTED_PROXY": "10.0.0.0/8, 127.0.0.0/8", "IPATLAS_ECHOIP_ROOT": "true"},
		serveArgs(fx.dir, filepath.Join(t.TempDir(), "a.db"))...)
	if got := myip(trusting); got != "8.8.4.4" {
		t.Errorf("behind a trusted proxy: myip %q, want the forwarded 8.8.4.4", got)
	}
	for _, path := range []string{"/country", "/echoip/country"} {
		if st, body := country(trusting, path); st != http.StatusOK || body != "United States\n" {
			t.Errorf("GET %s behind a trusted proxy, --echoip-root: %d %q", path, st, body)
		}
	}
	other := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "b.db"), "--trusted-proxy", "10.0.0.0/8")...)
	if got := myip(other); got != "127.0.0.1" {
		t.Errorf("from an untrusted peer: myip %q, want the peer 127.0.0.1", got)
	}
	if st, _ := country(other, "/country"); st != http.StatusNotFound {
		t.Errorf("GET /country without --echoip-root: %d, want 404", st)
	}
	if st, body := country(other, "/echoip/country"); st != http.StatusBadRequest || !strings.Contains(body, "(PrivateIP)") {
		t.Errorf("GET /echoip/country from the untrusted loopback peer: %d %q, want its PrivateIP", st, body)
	}
	for _, s := range []*serveRun{trusting, other} {
		if strings.Contains(s.stderr.String(), "/api/ip/myip") {
			t.Errorf("a request was logged without --access-log:\n%s", s.stderr)
		}
	}
}

// --addr-file holds the bound addresses of both listeners as JSON while
// serve runs, and is gone after it stops; the address lines stay in the
// info log.
func TestServeAddrFile(t *testing.T) {
	fx := newServeFixture(t)
	s := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "s.db"))...)
	b, err := os.ReadFile(s.addrFile)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]string
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%s: %v: %q", s.addrFile, err, b)
	}
	if raw["public"] != s.public || raw["admin"] != s.admin || len(raw) != 2 {
		t.Errorf("addr file holds %q, want public and admin", b)
	}
	for _, a := range []string{s.public, s.admin} {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Errorf("address %q: want 127.0.0.1 and the bound port (%v)", a, err)
		}
	}
	if s.public == s.admin {
		t.Errorf("public and admin on the same address %s", s.public)
	}
	for _, want := range []string{"listening on " + s.public, "admin on " + s.admin,
		"the page: http://" + s.public + "/", "the account portal: http://" + s.public + "/account",
		"the operator console: http://" + s.admin + "/console"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, s.stderr)
		}
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.addrFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after stop, the addr file: %v; want it removed", err)
	}
}

// A hint printed under go run must work under go run: its binary is a
// temporary file, and "ipatlas" need not be on the PATH.
func TestSelfCommand(t *testing.T) {
	for arg0, want := range map[string]string{
		"ipatlas":                               "ipatlas",
		"/usr/local/bin/ipatlas":                "ipatlas",
		"/tmp/go-build2937461/b001/exe/ipatlas": "go run ./cmd/ipatlas",
		"/home/u/.cache/go-build/x/exe/ipatlas": "go run ./cmd/ipatlas",
		"/home/u/exe/ipatlas":                   "ipatlas",
	} {
		if got := (env{arg0: arg0}).selfCommand(); got != want {
			t.Errorf("selfCommand(%q) = %q, want %q", arg0, got, want)
		}
	}
}
