package geo_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// TestPrivacy: the privacy object is absent without lists, present with
// the built-in snapshot, and its tor flag is known only while the Tor
// list is fresh; every address of a record, embedded IPv4 included, is
// looked up once in every list.
func TestPrivacy(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	lookup := func(e *geo.Engine, ip string) ipatlas.Record {
		t.Helper()
		r, err := e.Lookup(netip.MustParseAddr(ip), ipatlas.Chinese)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := lookup(e, "8.8.8.8"); r.Privacy != nil || r.Route != netip.MustParsePrefix("8.8.8.0/24") {
		t.Errorf("without privacy lists: %s", show(r))
	}
	if len(e.Privacy()) != 0 {
		t.Errorf("Privacy() = %v without lists", e.Privacy())
	}
	e.Close()

	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := now
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(200, "8.8.4.4", "2001:4860:4860::8844"), now.Add(-time.Hour))
	e, err = geo.Open(dir, geo.Options{BuiltinPrivacy: true, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f, tr := false, true
	for _, c := range []struct {
		ip   string
		want ipatlas.Privacy
	}{
		// Google's ranges: hosting, with the service named as the list
		// does, in Chinese answers too.
		{"8.8.8.8", ipatlas.Privacy{Hosting: true, Tor: &f, Service: "Google"}},
		{"::ffff:8.8.8.8", ipatlas.Privacy{Hosting: true, Tor: &f, Service: "Google"}},
		{"8.8.4.4", ipatlas.Privacy{Hosting: true, Tor: &tr, Service: "Google"}},
		{"2001:4860:4860::8844", ipatlas.Privacy{Hosting: true, Tor: &tr, Service: "Google"}},
		{"185.220.100.7", ipatlas.Privacy{Tor: &tr}},
		// Apple's relay egress and an AWS range.
		{"104.28.28.1", ipatlas.Privacy{Relay: true, Tor: &f, Service: "iCloud Private Relay"}},
		{"3.5.140.1", ipatlas.Privacy{Hosting: true, Tor: &f, Service: "Amazon AWS"}},
		// A residential address on no list.
		{"202.106.0.20", ipatlas.Privacy{Tor: &f}},
	} {
		r := lookup(e, c.ip)
		if r.Privacy == nil || showPrivacy(r.Privacy) != showPrivacy(&c.want) {
			t.Errorf("%s: privacy %s, want %s", c.ip, showPrivacy(r.Privacy), showPrivacy(&c.want))
		}
	}
	// Each record owns its privacy object.
	a, b := lookup(e, "8.8.8.8"), lookup(e, "8.8.8.8")
	a.Privacy.Service = "changed"
	*a.Privacy.Tor = true
	if b.Privacy.Service != "Google" || *b.Privacy.Tor {
		t.Error("two records share their privacy object")
	}
	// Hosting by the AS: Hetzner's AS is on the datacenter AS list.
	if r := lookup(e, geotest.Nuremberg.IP); !r.Privacy.Hosting {
		t.Errorf("%s (AS24940): %s", geotest.Nuremberg.IP, showPrivacy(r.Privacy))
	}

	// A Tor list older than the limit: tor is unknown, the rest stays.
	clock = now.Add(geo.DefaultTorMaxAge - time.Hour)
	if r := lookup(e, "8.8.4.4"); r.Privacy.Tor == nil || !*r.Privacy.Tor {
		t.Errorf("Tor list exactly at the limit: %s", showPrivacy(r.Privacy))
	}
	clock = now.Add(geo.DefaultTorMaxAge - time.Hour + time.Second)
	if r := lookup(e, "8.8.4.4"); r.Privacy.Tor != nil || !r.Privacy.Hosting {
		t.Errorf("stale Tor list: %s", showPrivacy(r.Privacy))
	}
	// A fresh list put in place is read by ReloadPrivacy.
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(200, "8.8.8.8"), clock)
	if err := e.ReloadPrivacy(); err != nil {
		t.Fatal(err)
	}
	if r := lookup(e, "8.8.8.8"); r.Privacy.Tor == nil || !*r.Privacy.Tor {
		t.Errorf("after ReloadPrivacy: %s", showPrivacy(r.Privacy))
	}
	if r := lookup(e, "8.8.4.4"); r.Privacy.Tor == nil || *r.Privacy.Tor {
		t.Errorf("after ReloadPrivacy: %s", showPrivacy(r.Privacy))
	}

	// The lists are in Datasets, with their source, date and size.
	var tor, snap *geo.SourceInfo
	ds := e.Datasets()
	for i, d := range ds {
		switch {
		case d.Kind == "privacy" && d.DatabaseType == privacy.TorList:
			tor = &ds[i]
		case d.Kind == "privacy" && d.DatabaseType == "x4bnet-vpn-ipv4":
			snap = &ds[i]
		}
	}
	if tor == nil || tor.File != "privacy-tor-exits.txt" || tor.URL != privacy.TorExitURL || tor.BuildTime != clock.Format(time.RFC3339) ||
		tor.Bytes == 0 || tor.Networks != 201 {
		t.Errorf("the Tor list in Datasets: %+v", tor)
	}
	if snap == nil || snap.File != "builtin:privacy-x4bnet-vpn-ipv4.txt" || snap.BuildTime != "2026-08-22T00:00:00Z" || snap.Networks < 2000 {
		t.Errorf("a built-in list in Datasets: %+v", snap)
	}

	// A broken list in the data dir fails the reload and keeps the lists
	// in service.
	geotest.WritePrivacyList(t, dir, privacy.TorList, "not an address\n", clock)
	if err := e.ReloadPrivacy(); err == nil {
		t.Error("ReloadPrivacy accepted a malformed list")
	}
	if err := e.Reload(); err == nil {
		t.Error("Reload accepted a malformed list")
	}
	if r := lookup(e, "8.8.8.8"); r.Privacy.Tor == nil || !*r.Privacy.Tor {
		t.Errorf("after failed reloads: %s", showPrivacy(r.Privacy))
	}
}

// TestPrivacyAllocs: a full record with privacy costs the same two
// allocations as one without (the address text, and one block for the
// coordinates and the privacy object).
func TestPrivacyAllocs(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(200), time.Now())
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a := netip.MustParseAddr(geotest.MountainView.IP)
	if _, err := e.Lookup(a, ipatlas.English); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		r, _ := e.Lookup(a, ipatlas.English)
		if r.Privacy == nil || r.Privacy.Tor == nil || r.Latitude == nil {
			t.Fatal("incomplete record")
		}
	})
	if n != 2 {
		t.Errorf("%v allocations per record, want 2", n)
	}
}
