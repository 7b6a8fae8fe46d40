package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestPing(t *testing.T) {
	s := startCLIService(t)
	r := runCLI(t, newCLIEnv(t, "IPATLAS_URL", s.url), "", "ping", "-c", "3", "-i", "0")
	if r.err != nil {
		t.Fatal(r.err)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 7 || lines[0] != "PING "+s.url+"/api/ping" {
		t.Fatalf("output:\n%s", r.stdout)
	}
	reply := regexp.MustCompile(`^reply seq=(\d) time=\d+\.\d{3} ms server_time=2026-11-15T12:00:00Z ip=127\.0\.0\.1$`)
	for i, l := range lines[1:4] {
		m := reply.FindStringSubmatch(l)
		if m == nil || m[1] != string(rune('1'+i)) {
			t.Errorf("line %q", l)
		}
	}
	if lines[5] != "3 requests, 3 replies, 0% loss" || !regexp.MustCompile(`^rtt min/avg/max = [\d.]+/[\d.]+/[\d.]+ ms$`).MatchString(lines[6]) {
		t.Errorf("summary:\n%s", strings.Join(lines[4:], "\n"))
	}
	if n := s.hits.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestPingOne(t *testing.T) {
	s := startCLIService(t)
	r := runCLI(t, newCLIEnv(t, "IPATLAS_URL", s.url), "", "ping", "-c", "1")
	if r.err != nil || !strings.Contains(r.stdout, "\n1 request, 1 reply, 0% loss\n") {
		t.Fatalf("%v\n%s", r.err, r.stdout)
	}
	r = runCLI(t, newCLIEnv(t, "IPATLAS_URL", closedURL(t)), "", "ping", "-c", "1")
	if !strings.Contains(r.stdout, "\n1 request, 0 replies, 100% loss\n") {
		t.Fatalf("%v\n%s", r.err, r.stdout)
	}
}

func TestPingFailures(t *testing.T) {
	r := runCLI(t, newCLIEnv(t, "IPATLAS_URL", closedURL(t)), "", "ping", "-c", "2", "-i", "0")
	if r.code != exitNetwork || !strings.Contains(r.stdout, "2 requests, 0 replies, 100% loss") || strings.Count(r.stdout, " error: ") != 2 {
		t.Fatalf("exit %d (%v)\n%s", r.code, r.err, r.stdout)
	}
	for _, args := range [][]string{{"ping", "-c", "-1"}, {"ping", "-c", "x"}, {"ping", "-i", "-1s"}} {
		if r := runCLI(t, newCLIEnv(t), "", args...); r.code != exitUsage {
			t.Errorf("%q: exit %d", args, r.code)
		}
	}
}
