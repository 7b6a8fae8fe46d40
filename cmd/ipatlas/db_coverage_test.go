package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

func TestDBCoverage(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	out, _, err := runDBTest(t, nil, "db", "coverage", "--data-dir", dir, "--n", "50", "--n6", "10")
	if err != nil {
		t.Fatalf("db coverage: %v\n%s", err, out)
	}
	for _, want := range []string{"60 addresses (50 IPv4, 10 IPv6)", geotest.ASNFile, geo.MeasureLocated, geo.MeasureProvinceZh,
		geo.MeasureChinaAreaCode, geo.MeasureCityPlain, "60/60"} {
		if !strings.Contains(out, want) {
			t.Errorf("db coverage lacks %q:\n%s", want, out)
		}
	}
	// A new seed each run, printed; --seed repeats the run.
	m := regexp.MustCompile(`--seed (\d+)\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("db coverage prints no seed:\n%s", out)
	}
	again, _, err := runDBTest(t, map[string]string{"IPATLAS_DATA_DIR": dir}, "db", "coverage", "--n", "50", "--n6", "10", "--seed", m[1])
	if err != nil || again != out {
		t.Errorf("--seed %s: %v\n%s\nfirst run:\n%s", m[1], err, again, out)
	}

	js, _, err := runDBTest(t, nil, "db", "coverage", "--data-dir", dir, "--n", "20", "--n6", "0", "--seed", "5", "--json")
	if err != nil {
		t.Fatalf("db coverage --json: %v", err)
	}
	var rep geo.CoverageReport
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatalf("db coverage --json: %v\n%s", err, js)
	}
	if rep.Seed != 5 || rep.IPv4 != 20 || rep.IPv6 != 0 || rep.Measure(geo.MeasureLocated) == nil || rep.Measure(geo.MeasureLocated).Of != 20 {
		t.Errorf("db coverage --json: %+v", rep)
	}
}

func TestDBCoverageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"db", "coverage", "--n", "-1"},
		{"db", "coverage", "--n", "0", "--n6", "0"},
		{"db", "coverage", "--n", "99999999999"},
		{"db", "coverage", "--seed", "-3"},
		{"db", "coverage", "extra"},
	} {
		_, stderr, err := runDBTest(t, nil, args...)
		if exitCode(err) != exitUsage || usageHint(err) != "ipatlas db coverage" {
			t.Errorf("%q: %v (exit %d), stderr %q; want a usage error", args, err, exitCode(err), stderr)
		}
	}
	_, _, err := runDBTest(t, nil, "db", "coverage", "--data-dir", t.TempDir())
	if err == nil || exitCode(err) != exitFailure || !strings.Contains(err.Error(), "db fetch") {
		t.Errorf("db coverage on an empty dir: %v, want a hint to run db fetch", err)
	}
	stdout, _, err := runDBTest(t, nil, "db", "coverage", "--help")
	if err != nil || !strings.Contains(stdout, "usage: ipatlas db coverage") {
		t.Errorf("--help: %v %q", err, stdout)
	}
}
