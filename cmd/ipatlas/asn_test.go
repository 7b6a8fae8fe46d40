package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// TestASN shows an AS through the real server: aligned lines, --json in
// both languages, and the failures with their exit codes, uncharged.
func TestASN(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)

	r := runCLI(t, e, "", "asn", "AS15169")
	if r.err != nil {
		t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.stderr)
	}
	want := "" +
		"AS              AS15169\n" +
		"name            Google LLC\n" +
		"country         United States (US)\n" +
		"hosting         no\n" +
		"IPv4 addresses  256\n" +
		"prefixes (1)    8.8.8.0/24      256\n" +
		"prefixes6 (1)   2001:4860::/32  79228162514264337593543950336\n"
	if r.stdout != want {
		t.Errorf("got:\n%s\nwant:\n%s", r.stdout, want)
	}

	r = runCLI(t, e, "", "asn", "--json", "--lang", "zh", "15169", "as24940")
	if r.err != nil {
		t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), r.stdout)
	}
	var g, h ipatlas.AS
	if err := json.Unmarshal([]byte(lines[0]), &g); err != nil || g.ASN != "AS15169" || g.Country != "美国" || g.NumIPs != 256 {
		t.Errorf("line 1: %v %+v", err, g)
	}
	if err := json.Unmarshal([]byte(lines[1]), &h); err != nil || h.ASN != "AS24940" || h.Country != "德国" ||
		len(h.Prefixes) != 0 || len(h.Prefixes6) != 1 || !strings.Contains(lines[1], `"prefixes":[]`) {
		t.Errorf("line 2: %v %+v", err, h)
	}

	before := s.hits.Load()
	r = runCLI(t, e, "", "asn", "ASx")
	if r.code != exitInput || !strings.Contains(r.stderr, `Invalid AS number: "ASx" is not an AS number`) || r.stdout != "AS     ASx\nerror  Invalid AS number: \"ASx\" is not an AS number; write \"AS\" and a number up to 4294967295, e.g. AS15169\n" {
		t.Errorf("ASx: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
	if n := s.hits.Load() - before; n != 0 {
		t.Errorf("a malformed AS sent %d requests", n)
	}
	r = runCLI(t, e, "", "asn", "--json", "AS64512", "AS15169")
	lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	var fail map[string]any
	if r.code != exitNotFound || len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &fail) != nil ||
		!reflect.DeepEqual(fail["code"], "UnknownAS") || fail["asn"] != "AS64512" || !strings.Contains(r.stderr, "1 of 2 AS numbers failed") {
		t.Errorf("unknown AS: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}

	// Charged: the four answers, not the two failures.
	u := runCLI(t, e, "", "usage", "--json")
	var usage ipatlas.Usage
	if err := json.Unmarshal([]byte(u.stdout), &usage); err != nil || usage.Used != 4 || usage.Credits != 96 {
		t.Errorf("usage %+v (%v), want 4 queries charged", usage, err)
	}

	r = runCLI(t, newCLIEnv(t, "IPATLAS_URL", s.url), "", "asn", "AS15169")
	if r.code != exitAuth {
		t.Errorf("no key: exit %d, %s", r.code, r.stderr)
	}
	r = runCLI(t, e, "", "asn")
	if r.code != exitUsage {
		t.Errorf("no AS: exit %d, %s", r.code, r.stderr)
	}
}
