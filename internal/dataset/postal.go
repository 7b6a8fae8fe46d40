package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/postal"
)

// Every city file is installed with its postal index (geo.PostalIndexFile),
// which gives each record its place's postal code from GeoNames' postal
// codes, so that the serving process never holds GeoNames' 1.2 million
// codes. The codes come from, in order:
//
//   - GeoNames' download (FetchOptions.PostalURL), when the copy in the
//     data dir (PostalFile) is missing or older than PostalMaxAge, or on
//     Force; a good download replaces the copy;
//   - the copy in the data dir, however old, when GeoNames cannot be had;
//   - FetchOptions.PostalFile, a copy in GeoNames' format that the
//     operator keeps (a machine that reaches no one), copied into the
//     data dir;
//   - the snapshot built into the binary (postal.Builtin).
//
// Like the zone index, the postal index is derived data: not in the
// manifest; a city file whose index cannot be built is still installed
// (its records then answer no postal code), and a fetch that finds the
// files up to date writes the index of a file that lacks one, or whose
// index was built from other postal data.

// Names of the postal data's files in the data dir.
const (
	// PostalFile is the copy of GeoNames' postal codes, as fetched (the
	// zip GeoNames publishes, or the operator's copy).
	PostalFile = "postal-codes.geonames"
	// PostalManifestFile describes it.
	PostalManifestFile = "postal.json"
)

// PostalMaxAge is how old the copy of the postal codes may grow before a
// fetch downloads GeoNames' again. GeoNames rebuilds its file daily, but
// postal codes change little: a month keeps the download (about 16 MB)
// rare.
const PostalMaxAge = 30 * 24 * time.Hour

// PostalOff, as FetchOptions.PostalURL, downloads nothing: the copy in
// the data dir, PostalFile or the built-in snapshot serve.
const PostalOff = "off"

// maxPostalDownload bounds the download: GeoNames' zip is about 16 MB.
const maxPostalDownload = 512 << 20

// PostalManifest describes the copy of the postal codes in a data dir.
type PostalManifest struct {
	// Source is where the copy came from: a URL, or the path of the
	// operator's copy.
	Source      string    `json:"source"`
	FetchedAt   time.Time `json:"fetched_at"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	Codes       int       `json:"codes"`
	Countries   int       `json:"countries"`
	License     string    `json:"license"`
	LicenseURL  string    `json:"license_url"`
	Attribution string    `json:"attribution"`
}

// ReadPostalManifest reads the description of the data dir's copy of the
// postal codes; an error matching fs.ErrNotExist when there is none.
func ReadPostalManifest(dir string) (PostalManifest, error) {
	var m PostalManifest
	b, err := os.ReadFile(filepath.Join(dir, PostalManifestFile))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("reading %s: %w", PostalManifestFile, err)
	}
	return m, nil
}

// postalData is the postal data a fetch gives the city files: its id and
// how to load it, loaded at most once.
type postalData struct {
	id     uint64
	source string
	load   func() (*postal.Index, error)
	ix     *postal.Index
	err    error
	loaded bool
}

func (p *postalData) index() (*postal.Index, error) {
	if !p.loaded {
		p.ix, p.err = p.load()
		p.loaded = true
	}
	return p.ix, p.err
}

// orBuiltin is p, or where p cannot be loaded (a copy damaged since it
// was checked), the built-in snapshot.
func (f *fetcher) orBuiltin(ctx context.Context, p *postalData) *postalData {
	if p.source == postal.BuiltinSource {
		return p
	}
	if _, err := p.index(); err != nil && ctx.Err() == nil {
		f.rep.warn("postal", fmt.Sprintf("the postal codes of %s cannot be read: %v; using the built-in snapshot", p.source, err))
		f.postal = f.builtinPostal()
		return f.postal
	}
	return p
}

// postalData resolves, once per fetch, the postal data of this fetch
// (see the rules above).
func (f *fetcher) postalData(ctx context.Context) *postalData {
	if f.postal != nil {
		return f.postal
	}
	path := filepath.Join(f.dir, PostalFile)
	m, merr := ReadPostalManifest(f.dir)
	_, serr := os.Stat(path)
	have := merr == nil && serr == nil
	fromCopy := func(why string) *postalData {
		id, err := fileID(path)
		if err != nil {
			f.rep.warn("postal", fmt.Sprintf("reading %s: %v; using the built-in snapshot", PostalFile, err))
			return f.builtinPostal()
		}
		if why != "" {
			f.rep.info("postal", why)
		}
		return &postalData{id: id, source: m.Source, load: func() (*postal.Index, error) { return loadPostalFile(path) }}
	}
	switch {
	case have && !f.force && f.now().Sub(m.FetchedAt) < PostalMaxAge:
		f.postal = fromCopy("")
		return f.postal
	case f.postalURL != PostalOff:
		p, err := f.downloadPostal(ctx, m, have)
		if err == nil {
			f.postal = p
			return p
		}
		if ctx.Err() != nil {
			f.postal = &postalData{load: func() (*postal.Index, error) { return nil, ctx.Err() }}
			return f.postal
		}
		f.rep.warn("postal", fmt.Sprintf("GeoNames' postal codes could not be had from %s: %v", f.postalURL, err))
	}
	switch {
	case have:
		f.postal = fromCopy(fmt.Sprintf("using the copy of the postal codes fetched %s from %s", m.FetchedAt.UTC().Format(time.DateOnly), m.Source))
	case f.postalFile != "":
		p, err := f.copyPostal(f.postalFile)
		if err != nil {
			f.rep.warn("postal", fmt.Sprintf("the postal codes of %s: %v; using the built-in snapshot", f.postalFile, err))
			p = f.builtinPostal()
		}
		f.postal = p
	default:
		f.postal = f.builtinPostal()
	}
	return f.postal
}

func (f *fetcher) builtinPostal() *postalData {
	f.rep.info("postal", "using the postal codes of the snapshot built in (the codes of the places with the most codes)")
	return &postalData{id: postal.BuiltinID(), source: postal.BuiltinSource, load: postal.Builtin}
}

// downloadPostal downloads GeoNames' postal codes, checks that they are
// whole (every row in GeoNames' format, and at least half as many codes
// as the copy they replace) and installs them as the data dir's copy.
func (f *fetcher) downloadPostal(ctx context.Context, old PostalManifest, have bool) (*postalData, error) {
	start := f.now()
	t, err := createTemp(f.dir, PostalFile)
	if err != nil {
		return nil, err
	}
	f.rep.info("postal", "downloading "+f.postalURL, "url", f.postalURL)
	n, err := download(ctx, f.client, f.postalURL, nil, t, maxPostalDownload, f.stall, f.rep.bar("postal"))
	if err != nil {
		t.abort()
		return nil, err
	}
	s, err := t.finish()
	if err != nil {
		return nil, err
	}
	return f.installPostal(s, f.postalURL, old, have, n, start)
}

// copyPostal installs the operator's copy at path as the data dir's.
func (f *fetcher) copyPostal(path string) (*postalData, error) {
	start := f.now()
	src, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	t, err := createTemp(f.dir, PostalFile)
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(t, io.LimitReader(src, maxPostalDownload+1))
	if err == nil && n > maxPostalDownload {
		err = fmt.Errorf("larger than %d bytes", maxPostalDownload)
	}
	if err != nil {
		t.abort()
		return nil, err
	}
	s, err := t.finish()
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	return f.installPostal(s, abs, PostalManifest{}, false, n, start)
}

// installPostal checks the staged copy s and renames it into place.
func (f *fetcher) installPostal(s stagedFile, source string, old PostalManifest, have bool, n int64, start time.Time) (*postalData, error) {
	ix, err := loadPostalFile(s.tmp)
	if err == nil && have && ix.Len() < old.Codes/2 {
		err = fmt.Errorf("%w: %d codes, fewer than half of the %d of the copy in service", postal.ErrFormat, ix.Len(), old.Codes)
	}
	if err != nil {
		removeStaged([]stagedFile{s})
		return nil, err
	}
	if err := install(f.dir, []stagedFile{s}); err != nil {
		return nil, err
	}
	m := PostalManifest{Source: source, FetchedAt: f.now().UTC().Truncate(time.Second), Size: s.size, SHA256: s.sum,
		Codes: ix.Len(), Countries: len(ix.Countries()), License: license, LicenseURL: licenseURL, Attribution: postal.Attribution}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(f.dir, PostalManifestFile, append(b, '\n')); err != nil {
		return nil, err
	}
	took := f.now().Sub(start)
	f.rep.info("postal", fmt.Sprintf("installed %d postal codes of %d countries from %s (%s) in %s", m.Codes, m.Countries, source,
		mib(n), took.Round(time.Millisecond)), "codes", m.Codes, "duration", took)
	return &postalData{id: ix.ID, source: source, ix: ix, loaded: true}, nil
}

func loadPostalFile(path string) (*postal.Index, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	return postal.Load(fh, st.Size())
}

func fileID(path string) (uint64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	return postal.FileID(fh)
}

// stagePostalIndex builds the postal index of the MMDB file at path, to
// be installed beside name; ok is false when it takes none or the index
// could not be built (a warning). The error is a cancelled fetch's.
func (f *fetcher) stagePostalIndex(ctx context.Context, path, name string) (idx stagedFile, ok bool, err error) {
	if need, err := geo.NeedsPostalIndex(path, 0); err != nil || !need {
		return stagedFile{}, false, nil // not a city file
	}
	start := f.now()
	pd := f.orBuiltin(ctx, f.postalData(ctx))
	ix, err := pd.index()
	var b []byte
	var st geo.PostalIndexStats
	if err == nil {
		b, st, err = geo.BuildPostalIndex(ctx, path, ix)
	}
	if cerr := ctx.Err(); cerr != nil {
		return stagedFile{}, false, cerr
	}
	if err == nil && b != nil {
		var t *tempFile
		if t, err = createTemp(f.dir, geo.PostalIndexFile(name)); err == nil {
			if _, err = t.Write(b); err != nil {
				t.abort()
			} else {
				idx, err = t.finish()
			}
		}
	}
	if err != nil {
		f.rep.warn(name, fmt.Sprintf("installing %s without a postal index: its records answer no postal code: %v", name, err), "file", name)
		return stagedFile{}, false, nil
	}
	if b == nil {
		return stagedFile{}, false, nil
	}
	took := f.now().Sub(start)
	f.rep.info(name, fmt.Sprintf("gave %d of its %d records a postal code (%d by their place's name, %d codes) in %s (%s)",
		st.Indexed, st.Records, st.ByName, st.Codes, took.Round(time.Millisecond), mib(int64(st.Bytes))),
		"file", name, "indexed", st.Indexed, "duration", took)
	return idx, true, nil
}

// ensurePostalIndexes writes the postal index of each city file of the
// manifest that lacks one, or whose index was built from other postal
// data than this fetch's (a refreshed copy).
func (f *fetcher) ensurePostalIndexes(ctx context.Context, m Manifest) error {
	pd := f.postalData(ctx)
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, p := range m.Packages {
		for _, file := range p.Files {
			path := filepath.Join(f.dir, file.Name)
			if need, err := geo.NeedsPostalIndex(path, pd.id); err != nil || !need {
				continue
			}
			idx, ok, err := f.stagePostalIndex(ctx, path, file.Name)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if err := install(f.dir, []stagedFile{idx}); err != nil {
				f.rep.warn(file.Name, fmt.Sprintf("installing the postal index of %s: %v", file.Name, err), "file", file.Name)
			}
		}
	}
	return nil
}

// releasePostal lets the postal data of a fetch go: a server that fetches
// on a schedule gives the memory of its 1.2 million codes back at once.
func (f *fetcher) releasePostal() {
	if f.postal != nil && f.postal.ix != nil {
		f.postal = nil
		debug.FreeOSMemory()
	}
}

// LoadPostal loads the postal codes a data dir's city files were given:
// its copy of GeoNames' codes, else the snapshot built in. It is for code
// that needs the postal code of a named place beyond the records' (see
// postal.Index.Code); the Index holds every code, tens of megabytes, so
// let it go once done.
func LoadPostal(dir string) (*postal.Index, error) {
	ix, err := loadPostalFile(filepath.Join(dir, PostalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return postal.Builtin()
	}
	return ix, err
}
