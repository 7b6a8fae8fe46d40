package geofeed

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Fetching the feeds: a few at once, each within its own deadline, so
// that a feed that trickles a byte now and then holds up one slot for
// fetchTimeout at most, never the feeds behind it.
const (
	fetchTimeout     = 2 * time.Minute
	fetchConcurrency = 4
)

// FetchEach fetches sources side by side and calls done with each
// one's result (its index in sources) as it comes, one call at a time.
// It returns when every fetch has ended; a feed not started when ctx ends
// is not reported.
func FetchEach(ctx context.Context, client *http.Client, dataDir string, sources []Source, now func() time.Time,
	done func(i int, cp *Copy, err error)) {
	slots := make(chan struct{}, fetchConcurrency)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, s := range sources {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
			defer cancel()
			cp, err := Fetch(fctx, client, dataDir, s, now())
			mu.Lock()
			defer mu.Unlock()
			done(i, cp, err)
		})
	}
	wg.Wait()
}
