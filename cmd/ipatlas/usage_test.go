package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

func TestUsage(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Enterprise, 40, 25)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	if r := runCLI(t, e, "", "lookup", "--json", geotest.Beijing.IP, geotest.Shenzhen.IP); r.err != nil {
		t.Fatal(r.err)
	}
	r := runCLI(t, e, "", "usage", "--json")
	var u ipatlas.Usage
	if err := json.Unmarshal([]byte(r.stdout), &u); err != nil || r.err != nil {
		t.Fatalf("%v %v: %q", err, r.err, r.stdout)
	}
	if u.Tier != "enterprise" || u.Used != 2 || u.Limit != 40 || u.Remaining != 38 || u.Credits != 23 || u.Period != "2026-11" {
		t.Fatalf("usage %+v", u)
	}
	r = runCLI(t, e, "", "usage")
	for _, want := range []string{"account  ", "(enterprise tier)", "used     2 of 40 (38 remaining)", "resets   2026-12-01T00:00:00Z", "credits  23"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("missing %q in\n%s", want, r.stdout)
		}
	}
}

func TestUsageAuth(t *testing.T) {
	s := startCLIService(t)
	r := runCLI(t, newCLIEnv(t, "IPATLAS_URL", s.url), "", "usage")
	if r.code != exitAuth || s.hits.Load() != 0 {
		t.Fatalf("no key: exit %d (%v), %d requests", r.code, r.err, s.hits.Load())
	}
	r = runCLI(t, newCLIEnv(t, "IPATLAS_URL", s.url), "", "usage", "--key", "ipa_wrong_key")
	if r.code != exitAuth {
		t.Fatalf("wrong key: exit %d (%v)", r.code, r.err)
	}
	r = runCLI(t, newCLIEnv(t, "IPATLAS_URL", closedURL(t), "IPATLAS_API_KEY", "k"), "", "usage")
	if r.code != exitNetwork {
		t.Fatalf("unreachable: exit %d (%v)", r.code, r.err)
	}
}
