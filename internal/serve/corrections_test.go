package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/outbound"
)

// A feed that sends a byte a second holds up only itself: a good feed
// after it in the list is in service while the slow one still trickles.
func TestFetchFeedsSlowFeedHoldsUpOnlyItself(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	const line = "8.8.8.0/24,DE,DE-BY,Nuremberg,\n"
	release := make(chan struct{})
	var slowEnded atomic.Bool
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer slowEnded.Store(true)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
			fmt.Fprint(w, line[i%len(line):i%len(line)+1])
			w.(http.Flusher).Flush()
			select {
			case <-release:
				return
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	}))
	defer slow.Close()
	defer close(release)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, line) }))
	defer good.Close()

	sources, err := geofeed.ParseSources([]string{"none", slow.URL + "/feed.csv", good.URL + "/feed.csv"})
	if err != nil {
		t.Fatal(err)
	}
	c := &corrections{engine: e, log: slog.New(slog.DiscardHandler), dataDir: dir, sources: sources,
		client: outbound.NewClient(outbound.Options{Timeout: 2 * time.Minute}), now: time.Now}
	c.loadCopies()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.fetchFeeds(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	for !slowEnded.Load() {
		for _, ci := range e.Corrections() {
			if ci.URL == good.URL+"/feed.csv" && ci.File != "" && ci.Entries == 1 {
				return // in service, and the slow feed is still sending
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the good feed was not in service before the slow one ended: %+v", e.Corrections())
}
