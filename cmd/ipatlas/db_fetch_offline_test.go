package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
)

// unreachable is a URL of a port that nothing listens on: what a machine
// without the network gets from every upstream.
func unreachable(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// db fetch on a machine without the network, with a dataset installed,
// succeeds and says so in a few lines: one line per group of what failed
// (the privacy lists, the geofeeds) with the count and the first reason,
// not one per list or feed; -v prints every one.
func TestDBFetchOfflineIsBrief(t *testing.T) {
	now := time.Now().UTC()
	d := datasettest.NewDBIP(t)
	month := now.Format("2006-01")
	d.Publish(t, "dbip-city-lite", month, datasettest.GeoIP2CityMMDB(t, "DBIP-City-Lite", now.Add(-time.Hour), datasettest.CityIPv4))
	d.Publish(t, "dbip-asn-lite", month, datasettest.ASNMMDB(t, "DBIP-ASN-Lite (compat=GeoLite2-ASN)", now.Add(-time.Hour), datasettest.ASNRows))
	dir := t.TempDir()
	auto := map[string]string{"IPATLAS_SOURCE": "auto"}
	if out, errOut, err := runDBTest(t, auto, "db", "fetch", "--data-dir", dir, "--dbip-url", d.URL, "--privacy-lists=false", "--geofeed", "none"); err != nil {
		t.Fatalf("the first fetch: %v\n%s\n%s", err, out, errOut)
	}
	off := unreachable(t)
	args := []string{"db", "fetch", "--data-dir", dir, "--registry", off, "--dbip-url", off, "--postal-url", off + "/zip",
		"--x4bnet-url", off + "/x4bnet/", "--ipranges-url", off + "/ipranges/", "--tor-exit-url", off + "/tor", "--geofeed", "none"}
	for i := range 5 {
		args = append(args, "--geofeed", off+"/feed"+string(rune('a'+i))+".csv")
	}
	out, errOut, err := runDBTest(t, auto, args...)
	if err != nil {
		t.Fatalf("offline with a dataset installed: %v\n%s\n%s", err, out, errOut)
	}
	all := out + errOut
	lines := strings.Split(strings.TrimSpace(all), "\n")
	t.Logf("%d lines:\n%s", len(lines), all)
	if !strings.Contains(errOut, "-v shows every one") {
		t.Errorf("the warnings do not say that -v shows every failure")
	}
	// The dataset is up to date without the network; the lists and the
	// feeds give their reason once each.
	if n := strings.Count(all, "connection refused"); n != 2 {
		t.Errorf("the reason is given %d times, want 2 (the privacy lists, the geofeeds)", n)
	}
	// Where, two lines per dataset file, a heading and a line per group,
	// and how long it took.
	if len(lines) > 10 {
		t.Errorf("%d lines, want at most 10", len(lines))
	}
	for _, want := range []string{"of 5 geofeeds could not be fetched", "privacy lists could not be fetched"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no %q in the warnings:\n%s", want, errOut)
		}
	}

	out, errOut, err = runDBTest(t, auto, append(args, "-v")...)
	if err != nil {
		t.Fatalf("-v: %v\n%s\n%s", err, out, errOut)
	}
	for _, feed := range []string{"feeda.csv", "feede.csv"} {
		if !strings.Contains(out, feed) {
			t.Errorf("-v does not name %s:\n%s", feed, out)
		}
	}
	if n := strings.Count(out, "tor-exits: failed"); n != 1 {
		t.Errorf("-v names the Tor list's failure %d times:\n%s", n, out)
	}
}
