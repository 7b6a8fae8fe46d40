package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// spread sends requests round-robin over the hosts, each with one of the
// keys, and leaves the caller's request as it was.
func TestSpread(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]map[string]int{} // host -> Authorization -> count
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if seen[r.Host] == nil {
			seen[r.Host] = map[string]int{}
		}
		seen[r.Host][r.Header.Get("Authorization")]++
	})
	a, b := httptest.NewServer(h), httptest.NewServer(h)
	defer a.Close()
	defer b.Close()
	hosts := []string{strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")}
	auth := []string{"Bearer k1", "Bearer k2", "Bearer k3"}
	c := &http.Client{Transport: &spread{base: http.DefaultTransport, hosts: hosts, auth: auth}}
	for range 300 {
		req, _ := http.NewRequest(http.MethodPost, "http://replicas/api/ip-query", strings.NewReader("{}"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.URL.Host != "replicas" || req.Header.Get("Authorization") != "" {
			t.Fatalf("spread changed the caller's request: %s %v", req.URL, req.Header)
		}
	}
	for _, host := range hosts {
		n := 0
		for key, c := range seen[host] {
			if !strings.HasPrefix(key, "Bearer k") || c == 0 {
				t.Errorf("%s got %d requests with %q", host, c, key)
			}
			n += c
		}
		if n != 150 || len(seen[host]) != len(auth) {
			t.Errorf("%s got %d requests with %d keys, want 150 with all %d", host, n, len(seen[host]), len(auth))
		}
	}
}

func TestParseCountsAndSearchPath(t *testing.T) {
	if got, err := parseCounts("1, 2,3"); err != nil || len(got) != 3 || got[2] != 3 {
		t.Errorf("parseCounts: %v %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,x", "17"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) succeeded", bad)
		}
	}
	for in, want := range map[string]string{
		"postgres://u@h/db?sslmode=disable": "postgres://u@h/db?search_path=s1&sslmode=disable",
		"host=h dbname=db":                  "host=h dbname=db search_path=s1",
	} {
		if got, err := withSearchPath(in, "s1"); err != nil || got != want {
			t.Errorf("withSearchPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// A short -mode replicas run on the test PostgreSQL: every case is
// measured, the metering is exact, and the schema is gone afterwards.
func TestReplicasSmoke(t *testing.T) {
	dsn := os.Getenv("IPATLAS_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("IPATLAS_TEST_POSTGRES is not set: -mode replicas needs a PostgreSQL server (CI exports it)")
	}
	if testing.Short() {
		t.Skip("-short: the replicas smoke test builds and runs the ipatlas binary")
	}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := run(ctx, []string{"-mode", "replicas", "-postgres", dsn, "-replicas", "1,2", "-keys", "4", "-c", "8",
		"-duration", "500ms", "-warmup", "100ms", "-rounds", "1", "-networks", "300"}, &stdout, &stderr)
	out := stdout.String()
	if err != nil {
		t.Fatalf("replicas: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	for _, row := range []string{"sqlite, 1 node", "postgres, 1 replica ", "postgres, 2 replicas"} {
		for _, keys := range []string{"hot", "many"} {
			if !regexp.MustCompile(regexp.QuoteMeta(row) + `\s+` + keys + `\s+[1-9]\d*\s`).MatchString(out) {
				t.Errorf("no %s %s row with requests:\n%s", row, keys, out)
			}
		}
	}
	if strings.Count(out, "hot/many") != 3 || !strings.Contains(out, "metering: exact") {
		t.Errorf("the report lacks the ratios or the metering verdict:\n%s", out)
	}
	m := regexp.MustCompile(`schema (ipatlas_load_[0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the report names no schema:\n%s", out)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", m[1]).Scan(&left); err != nil || left {
		t.Errorf("schema %s still exists after the run (%v)", m[1], err)
	}
	t.Logf("\n%s", out)
}
