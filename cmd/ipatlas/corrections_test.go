package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/server"
)

// meRecord asks the server where addr is, as a client behind the trusted
// proxy 127.0.0.1 (the free /api/ip/me, so that the test needs no quota).
func meRecord(c *http.Client, base, addr string) (ipatlas.Record, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"/api/ip/me", nil)
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := c.Do(req)
	if err != nil {
		return ipatlas.Record{}, err
	}
	defer resp.Body.Close()
	var env ipatlas.Envelope
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return ipatlas.Record{}, fmt.Errorf("%s: %v", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || env.Data == nil {
		return ipatlas.Record{}, fmt.Errorf("%s: %+v", resp.Status, env)
	}
	return *env.Data, nil
}

// An edit of the overrides file applies within 15 s, while requests keep
// coming, and none of them fails or answers anything but the old or the
// new override; a bad line is skipped, logged as FILE:LINE: reason and
// listed by the admin API, and the other lines apply.
func TestServeOverridesReload(t *testing.T) {
	fx := newServeFixture(t)
	file := filepath.Join(t.TempDir(), "overrides.csv")
	if err := os.WriteFile(file, []byte("8.8.8.0/24,DE,DE-BY,Nuremberg,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "test-admin-token-for-the-overrides-test"
	s := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "ipatlas.db"), "--overrides", file, "--geofeed", "none",
		"--trusted-proxy", "127.0.0.1", "--me-rate", "0", "--admin-token", token)...)
	base := "http://" + s.public
	c := &http.Client{Timeout: 10 * time.Second}
	// The server answers from the dataset while it builds the overrides,
	// and puts them in service soon after, saying so.
	var rec ipatlas.Record
	var err error
	waitUntil(t, "the overrides in service at start", func() bool {
		rec, err = meRecord(c, base, geotest.MountainView.IP)
		return err == nil && rec.LocationSource == "override"
	})
	if rec.CountryCode != "DE" || rec.City != "Nuremberg" || rec.TimeZone != "Europe/Berlin" {
		t.Fatalf("override at start: %+v %v\n%s", rec, err, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "overrides in service") {
		t.Errorf("the log does not say the overrides are in service:\n%s", s.stderr)
	}

	var stop atomic.Bool
	var requests, failures atomic.Int64
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				rec, err := meRecord(c, base, geotest.MountainView.IP)
				requests.Add(1)
				ok := err == nil && rec.LocationSource == "override" && (rec.CountryCode == "DE" && rec.City == "Nuremberg" || rec.CountryCode == "CN" && rec.City == "Beijing")
				if !ok {
					failures.Add(1)
					mu.Lock()
					bad = append(bad, fmt.Sprintf("%+v %v", rec, err))
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	edited := time.Now()
	if err := os.WriteFile(file, []byte("8.8.8.0/24,CN,CN-11,Beijing,\nnot a prefix,US,,,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	for {
		rec, err := meRecord(c, base, geotest.MountainView.IP)
		if err == nil && rec.CountryCode == "CN" {
			took = time.Since(edited)
			break
		}
		if time.Since(edited) > 15*time.Second {
			t.Fatalf("the edit did not apply within 15 s: %+v %v\n%s", rec, err, s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("the edit applied %s after the write; %d requests meanwhile, %d failed", took.Round(time.Millisecond), requests.Load(), failures.Load())
	if failures.Load() > 0 {
		t.Errorf("%d of %d requests failed or answered neither override: %q", failures.Load(), requests.Load(), bad[:min(len(bad), 5)])
	}
	if !strings.Contains(s.stderr.String(), file+":2: ") {
		t.Errorf("the bad line is not logged as FILE:LINE: reason:\n%s", s.stderr)
	}
	var ds server.Datasets
	if code := getJSON(t, c, "http://"+s.admin+"/admin/datasets", token, &ds); code != http.StatusOK {
		t.Fatalf("/admin/datasets: %d", code)
	}
	if len(ds.Corrections) != 1 || ds.Corrections[0].Kind != "override" || ds.Corrections[0].Applied != 1 || len(ds.Corrections[0].Problems) != 1 ||
		ds.Corrections[0].Problems[0].String() != file+":2: \"not a prefix\" is not an IP prefix" {
		t.Errorf("/admin/datasets corrections: %+v", ds.Corrections)
	}
}

// --geofeed adds an operator's feed, fetched at start even with
// --no-fetch and kept in the data dir: a restart that cannot reach it
// still answers from the copy.
func TestServeGeofeed(t *testing.T) {
	fx := newServeFixture(t)
	var up atomic.Bool
	up.Store(true)
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "# an operator's feed\n8.8.8.0/24,DE,DE-BY,Nuremberg,\n202.106.0.0/20,US,US-CA,Mountain View,\n")
	}))
	defer feed.Close()
	store := filepath.Join(t.TempDir(), "ipatlas.db")
	// The fixture's ASN data announces little: the feed is a large share
	// of it, so the bound on a feed's share is not what this test is
	// about. Its AS list keeps it to Google's addresses.
	e := testEnv(withTestSource(nil))
	e.maxFeedShare = 1
	args := serveArgs(fx.dir, store, "--geofeed", "none", "--geofeed", feed.URL+"/feed.csv AS15169", "--trusted-proxy", "127.0.0.1", "--me-rate", "0")
	check := func(s *serveRun) {
		t.Helper()
		c := &http.Client{Timeout: 10 * time.Second}
		deadline := time.Now().Add(30 * time.Second)
		for {
			rec, err := meRecord(c, "http://"+s.public, geotest.MountainView.IP)
			if err == nil && rec.LocationSource == "geofeed:127.0.0.1" && rec.City == "Nuremberg" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the feed did not apply: %+v %v\n%s", rec, err, s.stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
		rec, err := meRecord(c, "http://"+s.public, geotest.Beijing.IP)
		if err != nil || rec.LocationSource != "dataset" || rec.City != "Beijing" {
			t.Errorf("an entry outside the feed's AS applied: %+v %v", rec, err)
		}
	}
	s := startServeIn(t, e, args...)
	check(s)
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	up.Store(false)
	s = startServeIn(t, e, args...)
	check(s)
}

// db info describes the corrections as a server with the same settings
// answers from them: the overrides file's bad lines as FILE:LINE: reason,
// each feed's copy, refused entries and why; db fetch fetches the feeds
// after the dataset.
func TestDBInfoCorrections(t *testing.T) {
	fx := newServeFixture(t)
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "8.8.8.0/24,DE,DE-BY,Nuremberg,\n202.106.0.0/20,US,US-CA,Mountain View,\n2.0.0.0/7,US,,,\n8.8.4.0/24,US,US-ZZ,Nowhere,\n")
	}))
	defer feed.Close()
	overrides := filepath.Join(t.TempDir(), "o.csv")
	os.WriteFile(overrides, []byte("8.8.8.8/32,CN,CN-11,Beijing,\n8.8.8.9/32,ZZ,,,\n"), 0o644)
	src := feed.URL + "/feed.csv AS15169"
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "2.3.2026052009")...)
	fetched := t.TempDir()
	out, _, err := runDBTest(t, nil, "db", "fetch", "-v", "--data-dir", fetched, "--registry", reg.URL, "--privacy-lists=false", "--geofeed", "none", "--geofeed", src)
	if err != nil || !strings.Contains(out, "geofeed 127.0.0.1: 4 entries, 0 lines skipped") {
		t.Fatalf("db fetch: %v\n%s", err, out)
	}
	// The feed's copy, described against the geotest dataset (whose ASN
	// data announces Google's 8.8.8.0/24).
	if err := os.CopyFS(filepath.Join(fx.dir, geofeed.Dir), os.DirFS(filepath.Join(fetched, geofeed.Dir))); err != nil {
		t.Fatal(err)
	}
	// As in the server's test above, the bound on a feed's share is
	// raised for the small fixture.
	var infoOut, infoErr bytes.Buffer
	e := env{getenv: newCLIEnv(t).getenv, stdin: strings.NewReader(""), stdout: &infoOut, stderr: &infoErr, maxFeedShare: 1}
	err = e.run(t.Context(), []string{"ipatlas", "db", "info", "--data-dir", fx.dir, "--overrides", overrides, "--geofeed", "none", "--geofeed", src})
	r := cliResult{stdout: infoOut.String(), stderr: infoErr.String(), err: err}
	if r.err != nil {
		t.Fatalf("db info: %v\n%s", r.err, r.stderr)
	}
	for _, want := range []string{overrides + ":2: unknown country code \"ZZ\"", "overrides " + overrides + ": 1 entry in service, 1 line skipped",
		"geofeed 127.0.0.1", "for AS15169", "4 entries, 1 in service", "refused entries: not_announced 2, too_broad 1",
		"1 line read without its region, no ISO 3166-2 code of the country: US-ZZ (1 line, first line 4)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("db info lacks %q:\n%s", want, r.stdout)
		}
	}
}

func mustSource(t *testing.T, v string) geofeed.Source {
	t.Helper()
	s, err := geofeed.ParseSource(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A published feed is optional like the privacy lists: when one cannot be
// fetched (a machine without the internet, its host down), db fetch still
// installs the dataset and the other feeds and succeeds, with one warning
// that names --geofeed none.
func TestDBFetchGeofeedFailureWarns(t *testing.T) {
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "8.8.8.0/24,DE,DE-BY,Nuremberg,\n")
	}))
	defer good.Close()
	var back atomic.Bool // the feed that is down comes back
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if back.Load() {
			fmt.Fprint(w, "202.106.0.0/20,CN,CN-BJ,Beijing,\n")
			return
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "2.3.2026052009")...)
	dir := t.TempDir()
	out, errOut, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL, "--privacy-lists=false",
		"--geofeed", "none", "--geofeed", down.URL+"/feed.csv", "--geofeed", good.URL+"/feed.csv")
	if err != nil {
		t.Fatalf("db fetch with one feed down: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "geofeeds: 1 of 2 fetched, 1 entry") {
		t.Errorf("the good feed was not fetched:\n%s", out)
	}
	if n := strings.Count(errOut, "warning"); n != 1 || !strings.Contains(errOut, "1 of 2 geofeeds could not be fetched") || !strings.Contains(errOut, "--geofeed none") {
		t.Errorf("want one warning naming the failure and --geofeed none, got:\n%s", errOut)
	}
	// db info tells the feed whose tries failed from one never tried, with
	// the last failure's time and reason.
	info := func() string {
		t.Helper()
		r := runCLI(t, newCLIEnv(t), "", "db", "info", "--data-dir", dir, "--geofeed", "none",
			"--geofeed", down.URL+"/feed.csv", "--geofeed", good.URL+"/feed.csv")
		if r.err != nil {
			t.Fatalf("db info: %v\n%s", r.err, r.stderr)
		}
		return r.stdout
	}
	out = info()
	for _, want := range []string{"no copy: every try failed", "last fetch failed: 20", "503 Service Unavailable"} {
		if !strings.Contains(out, want) {
			t.Errorf("db info after a failed fetch lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not fetched yet ('ipatlas db fetch'") {
		t.Errorf("db info calls a feed whose fetch failed not fetched yet:\n%s", out)
	}
	// A good fetch clears the failure.
	back.Store(true)
	if _, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL, "--privacy-lists=false",
		"--geofeed", "none", "--geofeed", down.URL+"/feed.csv", "--geofeed", good.URL+"/feed.csv"); err != nil {
		t.Fatal(err)
	}
	if out = info(); strings.Contains(out, "last fetch failed") || strings.Contains(out, "every try failed") {
		t.Errorf("db info after a good fetch still shows the failure:\n%s", out)
	}
}

// db info reads the corrections' settings as serve does: from the config
// file named by --config or IPATLAS_CONFIG (here the repository's example
// with three of its lines filled in), or from the environment alone. The
// overrides file and the feed given there show in db info, with the
// overrides' refused region, and are the ones serve would put in service.
func TestDBInfoReadsServeSettings(t *testing.T) {
	fx := newServeFixture(t)
	overrides := filepath.Join(t.TempDir(), "overrides.csv")
	if err := os.WriteFile(overrides, []byte("8.8.4.0/24,US,US-ZZ,Nowhere\n8.8.8.0/24,GB,GB-BST,Bristol\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const feed = "https://feeds.example.net/geo.csv AS64500"
	example, err := os.ReadFile(configExample)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(example)
	for _, r := range [][2]string{
		{"\n#data_dir = /var/lib/ipatlas\n", "\ndata_dir = " + fx.dir + "\n"},
		{"\n#overrides = /etc/ipatlas/overrides.csv\n", "\noverrides = " + overrides + "\n"},
		{"\n#geofeed = \"https://example.net/geofeed.csv AS64500\"\n", "\ngeofeed = \"" + feed + "\"\n"},
	} {
		if !strings.Contains(conf, r[0]) {
			t.Fatalf("%s lacks %q", configExample, r[0])
		}
		conf = strings.Replace(conf, r[0], r[1], 1)
	}
	confFile := writeConfig(t, conf)

	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"--config", nil, []string{"--config", confFile}},
		{"IPATLAS_CONFIG", []string{"IPATLAS_CONFIG", confFile}, nil},
		{"environment", []string{"IPATLAS_DATA_DIR", fx.dir, "IPATLAS_OVERRIDES", overrides, "IPATLAS_GEOFEED", feed}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t, tc.env...)
			c, err := parseServeConfig(tc.args, testEnv(e.getenv))
			if err != nil {
				t.Fatal(err)
			}
			if c.DataDir != fx.dir || c.Overrides != overrides || len(c.Geofeeds) != len(geofeed.Builtin)+1 {
				t.Fatalf("serve reads data dir %q, overrides %q, %d feeds", c.DataDir, c.Overrides, len(c.Geofeeds))
			}
			r := runCLI(t, e, "", append([]string{"db", "info"}, tc.args...)...)
			if r.err != nil {
				t.Fatalf("db info: %v\n%s", r.err, r.stderr)
			}
			want := []string{
				"overrides " + overrides + ": 1 entry in service, 1 line skipped",
				overrides + `:1: region "US-ZZ" is not an ISO 3166-2 code of US`,
			}
			for _, s := range c.Geofeeds {
				want = append(want, fmt.Sprintf("geofeed %s (%s)", s.Name, s.URL))
			}
			for _, w := range want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("db info lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}
