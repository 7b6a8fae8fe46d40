package main

// serve's side of the corrections: the overrides file, read at start and
// again whenever it changes, and the published feeds, read from their
// copies in the data dir at start and fetched at start and on a schedule.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

func newCorrections(cfg *serveConfig, engine *geo.Engine, log *slog.Logger) *corrections {
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
	fetchEachFeed(ctx, c.client, c.dataDir, sources, c.now, func(i int, cp *geofeed.Copy, err error) {
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

// Fetching the feeds: a few at once, each within its own deadline, so
// that a feed that trickles a byte now and then holds up one slot for
// feedTimeout at most, never the feeds behind it.
const (
	feedTimeout     = 2 * time.Minute
	feedConcurrency = 4
)

// fetchEachFeed fetches sources side by side and calls done with each
// one's result (its index in sources) as it comes, one call at a time.
// It returns when every fetch has ended; a feed not started when ctx ends
// is not reported.
func fetchEachFeed(ctx context.Context, client *http.Client, dataDir string, sources []geofeed.Source, now func() time.Time,
	done func(i int, cp *geofeed.Copy, err error)) {
	slots := make(chan struct{}, feedConcurrency)
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
			fctx, cancel := context.WithTimeout(ctx, feedTimeout)
			defer cancel()
			cp, err := geofeed.Fetch(fctx, client, dataDir, s, now())
			mu.Lock()
			defer mu.Unlock()
			done(i, cp, err)
		})
	}
	wg.Wait()
}

// feedFlag collects the repeatable --geofeed of the db commands.
type feedFlag []string

func (f *feedFlag) String() string { return strings.Join(*f, ", ") }
func (f *feedFlag) Set(v string) error {
	*f = append(*f, splitList(v)...)
	if *f == nil {
		*f = []string{}
	}
	return nil
}

// correctionSettings resolves --overrides and --geofeed for the db
// commands by serve's precedence rule: the flag, its environment
// variable, the config file, the default (no overrides, the built-in
// feeds).
func correctionSettings(ls localSettings, getenv func(string) string, overridesFlag string, feeds feedFlag) (string, []geofeed.Source, error) {
	overrides := ls.file.value(getenv, overridesFlag, "overrides", "")
	vals := []string(feeds)
	if vals == nil {
		if v := getenv(envName("geofeed")); v != "" {
			vals = splitList(v)
		} else if v, ok := ls.file.values["geofeed"]; ok {
			vals = v
		}
	}
	sources, err := geofeed.ParseSources(vals)
	return overrides, sources, err
}

// describeCorrections opens the data dir's dataset with the corrections
// put in service as serve would (the overrides file, the feeds' copies)
// and describes them; maxShare is geo.Options.MaxFeedShare.
func describeCorrections(dir, overrides string, sources []geofeed.Source, maxShare float64) ([]geo.CorrectionInfo, error) {
	if overrides == "" && len(sources) == 0 {
		return []geo.CorrectionInfo{}, nil
	}
	e, err := geo.Open(dir, geo.Options{MaxFeedShare: maxShare})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if overrides != "" {
		f, err := geofeed.LoadFile(overrides)
		if err != nil {
			return nil, fmt.Errorf("overrides: %w", err)
		}
		e.SetOverrides(&geo.Overrides{File: overrides, Feed: f})
	}
	feeds := make([]geo.FeedInput, len(sources))
	for i, s := range sources {
		feeds[i].Source = s
		cp, err := geofeed.Load(dir, s)
		if err != nil {
			feeds[i].Error = err.Error()
		}
		feeds[i].Copy = cp
		// The last try of a server or of db fetch, when it failed.
		if f, err := geofeed.LastFailure(dir, s); err != nil && feeds[i].Error == "" {
			feeds[i].Error = err.Error()
		} else if f != nil && feeds[i].Error == "" {
			feeds[i].Error = f.At.Format(time.RFC3339) + ": " + f.Error
		}
	}
	e.SetFeeds(feeds)
	return e.Corrections(), nil
}

// printCorrections writes the corrections section of db info.
func printCorrections(w io.Writer, infos []geo.CorrectionInfo) {
	if len(infos) == 0 {
		return
	}
	fmt.Fprintf(w, "\ncorrections (they win over the dataset: the overrides file, then each feed; within each the most specific prefix)\n")
	for _, c := range infos {
		if c.Kind == "override" {
			fmt.Fprintf(w, "  overrides %s: %s in service, %s skipped\n", c.File, plural(c.Applied, "entry", "entries"), plural(c.Skipped, "line", "lines"))
		} else {
			ases := "any announced address"
			if len(c.ASes) > 0 {
				var b strings.Builder
				for i, n := range c.ASes {
					if i > 0 {
						b.WriteString(" ")
					}
					fmt.Fprintf(&b, "AS%d", n)
				}
				ases = b.String()
			}
			fmt.Fprintf(w, "  geofeed %s (%s) for %s\n", c.Name, c.URL, ases)
			switch {
			case c.File == "" && c.Error != "":
				fmt.Fprintf(w, "      no copy: every try failed ('ipatlas db fetch' or a running server tries again)\n")
			case c.File == "":
				fmt.Fprintf(w, "      not fetched yet ('ipatlas db fetch' or a running server fetches it)\n")
			default:
				fmt.Fprintf(w, "      fetched %s: %s, %d in service, %s skipped\n", c.FetchedAt.UTC().Format(time.RFC3339), plural(c.Entries, "entry", "entries"), c.Applied, plural(c.Skipped, "line", "lines"))
			}
			if len(c.Refused) > 0 {
				keys := make([]string, 0, len(c.Refused))
				for k := range c.Refused {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				var parts []string
				for _, k := range keys {
					parts = append(parts, fmt.Sprintf("%s %d", k, c.Refused[k]))
				}
				fmt.Fprintf(w, "      refused entries: %s\n", strings.Join(parts, ", "))
			}
			if c.Partial > 0 {
				fmt.Fprintf(w, "      %s only partly announced by its ASes: only that part is placed\n", plural(c.Partial, "entry", "entries"))
			}
			if c.FeedRefused != "" {
				fmt.Fprintf(w, "      REFUSED: %s\n", c.FeedRefused)
			}
			if c.Error != "" {
				fmt.Fprintf(w, "      last fetch failed: %s\n", c.Error)
			}
		}
		if c.RegionsDropped > 0 {
			parts := make([]string, len(c.DroppedRegions))
			listed := 0
			for i, d := range c.DroppedRegions {
				parts[i] = fmt.Sprintf("%s (%s, first line %d)", d.Region, plural(d.Lines, "line", "lines"), d.FirstLine)
				listed += d.Lines
			}
			if more := c.RegionsDropped - listed; more > 0 {
				parts = append(parts, plural(more, "more line", "more lines")+" of other regions")
			}
			fmt.Fprintf(w, "      %s read without its region, no ISO 3166-2 code of the country: %s\n",
				plural(c.RegionsDropped, "line", "lines"), strings.Join(parts, ", "))
		}
		if c.Unlocated > 0 {
			fmt.Fprintf(w, "      %s a city no data places: they answer without coordinates\n", plural(c.Unlocated, "entry names", "entries name"))
		}
		for _, p := range c.Problems {
			fmt.Fprintf(w, "      %s\n", p)
		}
		if c.Skipped > len(c.Problems) {
			fmt.Fprintf(w, "      ... and %s\n", plural(c.Skipped-len(c.Problems), "more skipped line", "more skipped lines"))
		}
	}
}
