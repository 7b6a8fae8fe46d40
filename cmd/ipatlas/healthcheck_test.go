package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// healthcheck finds the admin listener by serve's own settings (the
// environment, the config file) and succeeds while the server is ready;
// once the server has stopped, or when /readyz answers otherwise, it exits
// 1 with the reason on stderr, which a container runtime counts as
// unhealthy.
func TestHealthcheck(t *testing.T) {
	fix := newServeFixture(t)
	s := startServe(t, nil, serveArgs(fix.dir, filepath.Join(t.TempDir(), "ipatlas.db"))...)

	r := runCLI(t, newCLIEnv(t, "IPATLAS_ADMIN_LISTEN", s.admin), "", "healthcheck")
	if r.code != 0 || r.stdout != "ready (http://"+s.admin+"/readyz)\n" {
		t.Fatalf("from the environment: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	e := newCLIEnv(t)
	conf := filepath.Join(t.TempDir(), "config")
	_, port, _ := net.SplitHostPort(s.admin)
	if err := os.WriteFile(conf, []byte("admin_listen = 0.0.0.0:"+port+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, e, "", "healthcheck", "--config", conf); r.code != 0 || !strings.Contains(r.stdout, "http://127.0.0.1:"+port+"/readyz") {
		t.Fatalf("from the config file, all interfaces: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, newCLIEnv(t, "IPATLAS_ADMIN_LISTEN", s.admin), "", "healthcheck")
	if r.code != 1 || !strings.Contains(r.stderr, "healthcheck: not ready") || r.stdout != "" {
		t.Fatalf("stopped server: exit %d, stdout %q, stderr %q; want exit 1, not ready", r.code, r.stdout, r.stderr)
	}

	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "store: database is locked", http.StatusServiceUnavailable)
	}))
	defer unready.Close()
	r = runCLI(t, newCLIEnv(t), "", "healthcheck", "--url", unready.URL+"/readyz")
	if r.code != 1 || !strings.Contains(r.stderr, "503 Service Unavailable: store: database is locked") {
		t.Fatalf("503: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestReadyzURL(t *testing.T) {
	for in, want := range map[string]string{
		":8081":          "http://127.0.0.1:8081/readyz",
		"0.0.0.0:8081":   "http://127.0.0.1:8081/readyz",
		"[::]:8081":      "http://[::1]:8081/readyz",
		"10.0.0.11:8081": "http://10.0.0.11:8081/readyz",
		"[fd00::1]:9":    "http://[fd00::1]:9/readyz",
		"localhost:8081": "http://localhost:8081/readyz",
		"127.0.0.1:0":    "",
		"8081":           "",
	} {
		got, err := readyzURL(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("readyzURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
