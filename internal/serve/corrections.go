package serve

// The corrections in service: the overrides file, read at start and
// again whenever it changes, and the published feeds, read from their
// copies in the data dir at start and fetched at start and on a schedule.

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/outbound"
)

// overridesPoll is how often the overrides file is looked at besides the
// file system's notices, which a file on a network file system or behind
// a replaced mount never sends.
const overridesPoll = 5 * time.Second

// overridesQuiet is how long the overrides file must stay unchanged
// before it is read: an editor writes it in several steps.
const overridesQuiet = 300 * time.Millisecond

// corrections keeps the engine's corrections current.
type corrections struct {
	engine    *geo.Engine
	log       *slog.Logger
	dataDir   string
	overrides string // "" when none is configured
	sources   []geofeed.Source
	interval  time.Duration // 0: fetch the feeds at start only
	client    *http.Client
	now       func() time.Time

	mu    sync.Mutex
	feeds []geo.FeedInput
}

func newCorrections(cfg *Config, engine *geo.Engine, log *slog.Logger) *corrections {
	return &corrections{engine: engine, log: log, dataDir: cfg.DataDir, overrides: cfg.Overrides, sources: cfg.Geofeeds,
		interval: cfg.GeofeedInterval, client: outbound.NewClient(outbound.Options{Timeout: 2 * time.Minute}), now: time.Now}
}

// loadCopies puts the feeds' copies in the data dir in service: a restart
// without the network still has them.
func (c *corrections) loadCopies() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.feeds = make([]geo.FeedInput, len(c.sources))
	for i, s := range c.sources {
		c.feeds[i].Source = s
		cp, err := geofeed.Load(c.dataDir, s)
		if err != nil {
			c.log.Warn("ignoring the copy of a geofeed in the data dir; fetching it again", "feed", s.Name, "err", err)
			continue
		}
		c.feeds[i].Copy = cp
	}
	c.engine.SetFeeds(c.feeds)
}

// readOverrides reads the overrides file and puts it in service. A file
// that cannot be read leaves the previous one in service; a missing file
// is no corrections.
func (c *corrections) readOverrides() {
	f, err := geofeed.LoadFile(c.overrides)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.log.Warn("the overrides file does not exist (yet): no overrides until it does", "file", c.overrides)
		c.engine.SetOverrides(nil)
		return
	case err != nil:
		c.log.Error("reading the overrides file; the previous overrides stay in service", "file", c.overrides, "err", err)
		return
	}
	c.engine.SetOverrides(&geo.Overrides{File: c.overrides, Feed: f, Loaded: c.now()})
	c.log.Info("overrides in service", "file", c.overrides, "entries", f.Len(), "skipped_lines", f.Skipped)
}

// run puts the overrides file and the feeds' copies in service, then
// watches the file and refreshes the feeds until ctx is done. The server
// answers from the dataset meanwhile: building the corrections takes
// seconds on a large dataset, and waiting for it would delay every answer,
// not only the corrected ones. Each layer logs when it is in service.
func (c *corrections) run(ctx context.Context) {
	var wg sync.WaitGroup
	if c.overrides != "" {
		wg.Go(func() {
			// The version read is the one the watch starts from: an edit
			// made while it is read is read again.
			last, _ := sigOf(c.overrides)
			c.readOverrides()
			c.watchOverrides(ctx, last)
		})
	}
	if len(c.sources) > 0 {
		wg.Go(func() {
			c.loadCopies()
			c.refreshFeeds(ctx)
		})
	}
	wg.Wait()
}

// fileSig is what tells one version of a file from the next.
type fileSig struct {
	size  int64
	mtime time.Time
	ino   os.FileInfo
}

func sigOf(path string) (fileSig, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileSig{}, false
	}
	return fileSig{size: fi.Size(), mtime: fi.ModTime(), ino: fi}, true
}

func (a fileSig) same(b fileSig) bool {
	if a.ino == nil || b.ino == nil {
		return a.ino == nil && b.ino == nil
	}
	return a.size == b.size && a.mtime.Equal(b.mtime) && os.SameFile(a.ino, b.ino)
}

// watchOverrides reads the overrides file again once it has changed and
// stayed unchanged for overridesQuiet: on the file system's notice of a
// write, create, rename or removal in its directory (editors and
// configuration tools replace files by renaming), and at the latest at the
// next poll.
func (c *corrections) watchOverrides(ctx context.Context, last fileSig) {
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if err := w.Add(filepath.Dir(c.overrides)); err == nil {
			events = w.Events
		} else {
			c.log.Warn("not watching the overrides file's directory; looking at the file every few seconds", "file", c.overrides, "err", err)
		}
	}
	poll := time.NewTicker(overridesPoll)
	defer poll.Stop()
	quiet := time.NewTimer(overridesQuiet)
	quiet.Stop()
	defer quiet.Stop()
	base := filepath.Base(c.overrides)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if filepath.Base(ev.Name) == base {
				quiet.Reset(overridesQuiet)
			}
		case <-poll.C:
			if sig, _ := sigOf(c.overrides); !sig.same(last) {
				quiet.Reset(overridesQuiet)
			}
		case <-quiet.C:
			sig, _ := sigOf(c.overrides)
			if sig.same(last) {
				continue
			}
			last = sig
			c.readOverrides()
		}
	}
}

// refreshFeeds fetches every feed at once, then every interval (jittered
// by 10%), and puts the good copies in service. A feed that fails keeps
// its previous copy.
func (c *corrections) refreshFeeds(ctx context.Context) {
	for {
		c.fetchFeeds(ctx)
		if c.interval <= 0 {
			return
		}
		wait := c.interval + time.Duration((rand.Float64()*0.2-0.1)*float64(c.interval))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// fetchFeeds fetches every feed and puts each one in service as soon as
// it is fetched: a slow feed holds up only itself.
func (c *corrections) fetchFeeds(ctx context.Context) {
	c.mu.Lock()
	sources := make([]geofeed.Source, len(c.feeds))
	for i, f := range c.feeds {
		sources[i] = f.Source
	}
	c.mu.Unlock()
	geofeed.FetchEach(ctx, c.client, c.dataDir, sources, c.now, func(i int, cp *geofeed.Copy, err error) {
		if err != nil && ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		f := &c.feeds[i]
		if err != nil {
			c.log.Warn("fetching a geofeed failed; its previous copy, if any, stays in service", "feed", f.Source.Name, "url", f.Source.URL, "err", err)
			f.Error = err.Error()
		} else {
			c.log.Info("geofeed fetched", "feed", f.Source.Name, "entries", cp.Entries, "skipped_lines", cp.Problems)
			f.Copy, f.Error = cp, ""
		}
		// Put in service even when nothing changed: the dates and errors
		// that db info and the admin API show are new.
		c.engine.SetFeeds(c.feeds)
	})
}
