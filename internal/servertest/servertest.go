// Package servertest builds the real parts of an ipatlas server for tests:
// an SQLite store in a temporary directory, the geo engine over the geotest
// fixture (warmed up), the account Service and the Meter, all closed when
// the test ends. Tests of the server, the client, the CLI and the web page
// start their server from these parts instead of each assembling its own.
//
// It does not import internal/server, so that package's own tests can use
// it too; callers pass Parts.Deps() to server.New.
package servertest

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// Parts are a server's collaborators on real storage and real data.
type Parts struct {
	Dir      string // the temporary directory holding the store and the data dir
	Store    *sqlite.Store
	Geo      *geo.Engine
	Accounts *account.Service
	Meter    *account.Meter
	Now      func() time.Time
}

// New builds the parts. now is the clock of the service and the meter
// (time.Now when nil). The engine is warmed with a lookup of every geotest
// place in both languages, so its lazily built time-zone finder (slow
// under the race detector) is not paid inside a test's timeout.
func New(tb testing.TB, now func() time.Time) *Parts {
	tb.Helper()
	if now == nil {
		now = time.Now
	}
	dir := tb.TempDir()
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "ipatlas.db"), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })

	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	geotest.WriteFixture(tb, dataDir)
	engine, err := geo.Open(dataDir, geo.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { engine.Close() })
	for _, k := range geotest.Places {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			if _, err := engine.Lookup(netip.MustParseAddr(k.IP), lang); err != nil {
				tb.Fatal(err)
			}
		}
	}

	// Built as serve builds it, with the default settings.
	opts := account.DefaultOptions()
	opts.Now = now
	svc, err := account.NewService(store, opts)
	if err != nil {
		tb.Fatal(err)
	}
	meter := account.NewMeter(store, account.MeterOptions{Now: now, MaxDelay: time.Millisecond})
	tb.Cleanup(func() { meter.Close(context.Background()) })
	return &Parts{Dir: dir, Store: store, Geo: engine, Accounts: svc, Meter: meter, Now: now}
}
