package server

import (
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

// GET /admin/datasets lists the engine's files with their build times and
// ages, and what the data dir's manifest and the updater report.
func TestAdminDatasets(t *testing.T) {
	p := servertest.New(t, func() time.Time { return testNow })
	built := time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC)
	last := testNow.Add(-time.Hour)
	status := &dataset.UpdateStatus{Source: dataset.SourceDBIP, IntervalSeconds: 86400, Checks: 3, Failures: 1, LastCheck: &last, LastError: "GET x: 503"}
	pkgs := []dataset.Package{{Source: dataset.SourceDBIP, Name: "dbip-city-lite", Kind: dataset.KindCity, Version: "2026-06",
		BuildDate: built, License: "CC-BY-4.0", Attribution: dataset.DBIPCityAttribution,
		Files: []dataset.File{{Name: "dbip-city-lite.mmdb", Size: 10, SHA256: "00"}}}}
	srv := mustNew(t, Config{AdminToken: testAdminToken, Logger: slog.New(slog.DiscardHandler), Now: p.Now}, Deps{
		Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter, Registry: prometheus.NewRegistry(),
		DatasetSources: func() ([]dataset.Package, *dataset.UpdateStatus) { return pkgs, status },
	})
	e := &env{admin: srv.AdminHandler()}

	r := e.adminCall(t, "GET", "/admin/datasets", "")
	if r.Code != http.StatusOK {
		t.Fatalf("status %d: %s", r.Code, r.Body)
	}
	got := decode[Datasets](t, r)
	want := p.Geo.Datasets()
	if len(got.Files) != len(want) || len(want) == 0 {
		t.Fatalf("files %+v, want the engine's %+v", got.Files, want)
	}
	for i, f := range got.Files {
		if f.File != want[i].File || f.DatabaseType != want[i].DatabaseType || f.BuildTime.Format(time.RFC3339) != want[i].BuildTime {
			t.Errorf("file %d: %+v, engine says %+v", i, f, want[i])
		}
		if age := testNow.Sub(f.BuildTime); f.AgeSeconds != int64(age/time.Second) {
			t.Errorf("%s: age %d s, want %d", f.File, f.AgeSeconds, int64(age/time.Second))
		}
	}
	if len(got.Packages) != 1 || !got.Packages[0].BuildDate.Equal(built) || got.Packages[0].Source != dataset.SourceDBIP {
		t.Errorf("packages %+v", got.Packages)
	}
	if got.Update == nil || got.Update.Checks != 3 || got.Update.LastError != status.LastError || !got.Update.LastCheck.Equal(last) {
		t.Errorf("update %+v", got.Update)
	}

	// Without the manifest and updater: empty lists and a null update.
	e = &env{admin: mustNew(t, Config{AdminToken: testAdminToken, Logger: slog.New(slog.DiscardHandler), Now: p.Now},
		Deps{Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter, Registry: prometheus.NewRegistry()}).AdminHandler()}
	r = e.adminCall(t, "GET", "/admin/datasets", "")
	if body := r.Body.String(); r.Code != http.StatusOK || !strings.Contains(body, `"packages":[]`) || !strings.Contains(body, `"update":null`) {
		t.Errorf("without sources: %d %s", r.Code, body)
	}
	// The token is required.
	r = e.doAdmin(t, req{method: "GET", path: "/admin/datasets"})
	wantAdminError(t, r, http.StatusUnauthorized, CodeUnauthorized)
}

// GET /admin/datasets shows each privacy list's source URL, date, size and
// entries.
func TestAdminDatasetsPrivacy(t *testing.T) {
	e := newPrivacyEnv(t)
	r := e.adminCall(t, "GET", "/admin/datasets", "")
	if r.Code != http.StatusOK {
		t.Fatalf("status %d: %s", r.Code, r.Body)
	}
	got := decode[Datasets](t, r)
	lists := 0
	for _, f := range got.Files {
		if f.Kind != "privacy" {
			continue
		}
		lists++
		if f.URL == "" || f.Bytes <= 0 || f.Networks <= 0 || f.BuildTime.IsZero() {
			t.Errorf("privacy list without its source, size, entries or date: %+v", f)
		}
		if f.File == "tor-exits.txt" || strings.Contains(f.URL, "torproject") {
			if !f.BuildTime.Equal(testNow.Add(-time.Hour)) || f.Networks != 201 {
				t.Errorf("the Tor list: %+v, want dated an hour ago with 201 entries (200 and 8.8.8.8)", f)
			}
		}
	}
	if lists < 2 {
		t.Errorf("%d privacy lists in %+v", lists, got.Files)
	}
	// Vultr's own IPv6 list names documentation and 6to4 space, which
	// its bounds refuse and the listing shows.
	vultr := false
	for _, f := range got.Files {
		if f.Kind == "privacy" && f.DatabaseType == "ipranges-vultr-ipv6" {
			vultr = true
			if f.RefusedEntries == nil || f.RefusedEntries.Count != 4 || !slices.Contains(f.RefusedEntries.Examples, "2002::/16: wider than /24") {
				t.Errorf("Vultr's IPv6 list: refused %+v", f.RefusedEntries)
			}
		}
	}
	if !vultr || got.RefusedLists == nil || len(got.RefusedLists) != 0 {
		t.Errorf("Vultr's list listed %v, refused lists %#v (want [])", vultr, got.RefusedLists)
	}
}

// GET /admin/datasets names a privacy list refused whole, and why: here a
// padded Tor list in the data dir, which is not served.
func TestAdminDatasetsRefusedList(t *testing.T) {
	p := servertest.New(t, func() time.Time { return testNow })
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(200, "8.8.8.8")+strings.Repeat("8.8.4.4\n", 5000), testNow.Add(-time.Hour))
	eng, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	srv := mustNew(t, Config{AdminToken: testAdminToken, Logger: slog.New(slog.DiscardHandler), Now: p.Now},
		Deps{Geo: eng, Accounts: p.Accounts, Meter: p.Meter, Registry: prometheus.NewRegistry()})
	e := &env{admin: srv.AdminHandler()}
	r := e.adminCall(t, "GET", "/admin/datasets", "")
	if r.Code != http.StatusOK {
		t.Fatalf("status %d: %s", r.Code, r.Body)
	}
	got := decode[Datasets](t, r)
	if len(got.RefusedLists) != 1 || got.RefusedLists[0].Name != privacy.TorList ||
		!strings.Contains(got.RefusedLists[0].Reason, "5201 entries, more than the 5000") {
		t.Errorf("refused lists %+v", got.RefusedLists)
	}
	for _, f := range got.Files {
		if f.DatabaseType == privacy.TorList {
			t.Errorf("the padded Tor list is in service: %+v", f)
		}
	}
}
