// Package geo answers "where is this address": it loads the MMDB data
// sources in a data directory (the default DB-IP city and compiled ASN
// databases, or an operator's MaxMind GeoIP2/GeoLite2 files, chosen by their
// database_type), composes the location record in English or Chinese, and
// swaps datasets atomically under concurrent lookups.
//
// # Sources and precedence
//
// Every *.mmdb file of the data directory (names starting with "." are
// skipped, so that a download in progress is never read) is classified by
// its metadata database_type, never by its name:
//
//   - "city ipv4", "city ipv6" (DB-IP Lite flat schema, the default dataset)
//     and "country ipv4"/"country ipv6" (the same flat schema, country only);
//   - GeoIP2/GeoLite2/DBIP City, Enterprise and Country (MaxMind's schema,
//     with names in "en" and "zh-CN");
//   - "ipatlas-ASN" (compiled by `db fetch`), GeoLite2-ASN and DBIP-ASN;
//   - GeoIP2-ISP.
//
// Other database types are ignored with a warning.
//
// The city part of a record (continent to district, coordinates, time
// zone, postal code) comes from the first of these that has a record for
// the address: an operator's GeoIP2-schema City or Enterprise file, then the
// default DB-IP flat city files, then GeoIP2-schema Country files, then flat
// country files. The operator's file wins because an operator who installs a
// commercial file has chosen it over the free default. The ASN part comes
// from the first of GeoIP2-ISP, GeoIP2-schema ASN files, ipatlas-ASN. Within
// one rank files are tried in name order.
//
// # Route, privacy flags and the AS
//
// A record's route is the network of the ASN file that answered it. Its
// privacy object comes from the privacy lists of the data directory (or the
// binary's snapshot, with Options.BuiltinPrivacy), compiled by the privacy
// package into one table that each lookup searches once, by the record's
// embedded IPv4 address where it has one, like the rest of the record;
// ReloadPrivacy swaps new lists in without touching the MMDB files. AS
// answers one AS from an index of the ASN data built once per dataset.
//
// # Cost of a lookup
//
// The default city data has millions of networks but only a few hundred
// thousand distinct data records. Each generation of loaded files keeps a
// bounded, lock-free cache of the composed per-record part of the answer
// (both languages, time zone, currency, area code, coordinates) keyed by the
// record's offset in its file, so a lookup is a tree traversal per source
// kind and a struct copy; a reload drops the cache with the generation.
package geo

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/postal"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/oschwald/maxminddb-golang/v2"
)

// Locator is what the server needs of the engine.
type Locator interface {
	// Lookup returns the record of a public address (already validated by
	// netaddr). Record.IP is the address as queried, normalized; the data is
	// looked up by its embedded IPv4 address where it has one. An address the
	// data does not cover yields a record with only IP set, not an error.
	Lookup(addr netip.Addr, lang ipatlas.Lang) (ipatlas.Record, error)
}

// SourceInfo describes one MMDB file of a data directory, for `db info`.
type SourceInfo struct {
	File         string `json:"file"`
	Kind         string `json:"kind"`          // "city", "country", "asn", "isp", "postal", "privacy"; "unsupported" for other types
	DatabaseType string `json:"database_type"` // the file's own metadata
	IPVersion    int    `json:"ip_version"`
	BuildTime    string `json:"build_time"` // RFC 3339
	Networks     int    `json:"networks"`   // number of networks with data; counted by Describe only
	Description  string `json:"description,omitempty"`
	// URL and Bytes describe a privacy list (Kind "privacy"): where its
	// copy came from and its size; BuildTime is then the list's date and
	// Networks its number of entries.
	URL   string `json:"url,omitempty"`
	Bytes int64  `json:"bytes,omitempty"`
	// RefusedEntries are a privacy list's entries its sanity bounds
	// refused (privacy.List.Check): the list answers without them.
	RefusedEntries *privacy.Refusals `json:"refused_entries,omitempty"`
	// Families are the addresses an MMDB file answers: "IPv4", "IPv6" or
	// "IPv4+IPv6" (an IPv6 tree, IPVersion 6, may hold IPv4 data too).
	Families string `json:"families,omitempty"`
}

// Errors of the engine.
var (
	// ErrNoData means the data directory holds no MMDB file of a supported
	// type.
	ErrNoData = errors.New("no supported MMDB file")
	// ErrClosed is returned by an engine after Close.
	ErrClosed = errors.New("geo: engine closed")
)

// Options tunes an Engine. The zero value is the production setting.
type Options struct {
	// Logger receives load, reload and watch events; nil discards them.
	Logger *slog.Logger
	// CacheEntries bounds the cache of composed city records (shared by all
	// city sources of a generation); it is rounded up to a power of two.
	// 0 means DefaultCacheEntries; negative disables the cache. Each entry
	// costs about 200 bytes once filled.
	CacheEntries int
	// ASNCacheEntries does the same for ASN records; 0 means
	// DefaultASNCacheEntries.
	ASNCacheEntries int
	// Debounce is how long Watch waits after the last change in the data
	// directory before reloading; 0 means one second.
	Debounce time.Duration
	// AllowEmpty lets Open succeed on a directory without any usable file;
	// lookups then answer records with only IP set until a reload finds
	// data. Reload never swaps in an empty dataset over a loaded one.
	AllowEmpty bool
	// BuiltinPrivacy answers the privacy flags from the snapshot of the
	// lists built into the binary for every list the data directory has
	// not fetched (privacy.json). Without it, and without fetched lists,
	// records carry no privacy object: the flags are unknown.
	BuiltinPrivacy bool
	// TorMaxAge is how old the Tor exit list may be (by its date) before
	// the tor flag is unknown; 0 means DefaultTorMaxAge.
	TorMaxAge time.Duration
	// Now is the clock the Tor list's age is measured with; nil means
	// time.Now.
	Now func() time.Time
	// Places completes the places that corrections name with data the
	// engine does not hold (see resolvePlace).
	Places PlaceHooks
	// MaxFeedShare is the largest share of the announced space of a
	// family that one published feed may place; 0 means MaxFeedShare.
	MaxFeedShare float64
}

// DefaultTorMaxAge is the default Options.TorMaxAge. The exit list is
// refreshed hourly and exits come and go every hour: after two missed
// refreshes a copy no longer tells a current exit from a former one well
// enough to answer.
const DefaultTorMaxAge = 3 * time.Hour

// Default cache sizes, from the hit rates BenchmarkRealCacheHitRates measures
// on the real default dataset once warm: for a service's clients (90% of
// queries from 100,000 popular addresses by Zipf's law, 10% random public
// addresses) the two-way city cache hits 95.7% of lookups at 2^14
// entries, 97.4% at 2^15 and 98.4% at 2^16; the ASN cache 99.0%, 99.5%
// and 99.6%. For uniformly random public addresses, the worst case, the
// city cache hits 78.7%, 84.7% and 89.7%, the ASN cache 94.2%, 97.0% and
// 98.4%. A composed city record costs about 200 bytes, an ASN record
// about 100, and the collector keeps as much again as headroom: 2^15 city
// and 2^14 ASN entries hold about 8 MB when full, against about 17 MB at
// 2^16 each (the data has 37,000 ASN records that uniform traffic
// reaches), for a point of city hits and half a point of ASN hits on the
// clients' mix.
const (
	DefaultCacheEntries    = 1 << 15
	DefaultASNCacheEntries = 1 << 14
)

// Engine is the geolocation engine over one data directory. It is safe for
// concurrent use; Reload and Watch may run while lookups are in flight.
type Engine struct {
	dir  string
	opts Options
	log  *slog.Logger

	cur    atomic.Pointer[generation]
	priv   atomic.Pointer[privacy.Table] // nil when no privacy list is loaded
	now    func() time.Time
	torAge time.Duration
	mu     sync.Mutex // serializes Reload, ReloadPrivacy and Close
	closed bool
	// asAhead: each generation builds its AS index when it enters
	// service (IndexASAhead).
	asAhead atomic.Bool

	// The corrections above the dataset (correct.go): the overlay in
	// service, nil when there is none, and what it is built from.
	local     atomic.Pointer[overlay]
	localInfo atomic.Pointer[[]CorrectionInfo] // described by the last build
	lmu       sync.Mutex                       // serializes builds of the overlay
	localIn   localState
}

var _ Locator = (*Engine)(nil)

// Open loads every MMDB of dir. A file that cannot be read, or is corrupt or
// truncated, is an error naming the file; no file is left open then.
func Open(dir string, opts Options) (*Engine, error) {
	e := &Engine{dir: dir, opts: opts, log: opts.Logger, now: opts.Now, torAge: opts.TorMaxAge}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.torAge <= 0 {
		e.torAge = DefaultTorMaxAge
	}
	pt, err := privacy.Load(dir, opts.BuiltinPrivacy)
	if err != nil {
		return nil, fmt.Errorf("geo: %w", err)
	}
	e.priv.Store(pt)
	g, err := e.load()
	if err != nil {
		if !opts.AllowEmpty || !errors.Is(err, ErrNoData) {
			return nil, err
		}
		e.log.Warn("no dataset in the data dir yet; answering empty records until one appears", "dir", dir)
		g = newGeneration(opts)
	}
	e.cur.Store(g)
	return e, nil
}

// Dir returns the engine's data directory.
func (e *Engine) Dir() string { return e.dir }

// Lookup implements Locator. It returns an error only for an invalid
// address, a closed engine, or a data record that cannot be decoded (a
// corrupt file, named in the error).
func (e *Engine) Lookup(addr netip.Addr, lang ipatlas.Lang) (ipatlas.Record, error) {
	if !addr.IsValid() {
		return ipatlas.Record{}, errors.New("geo: invalid address")
	}
	g := e.acquire()
	if g == nil {
		return ipatlas.Record{}, ErrClosed
	}
	defer g.release()
	addr = addr.WithZone("")
	rec := ipatlas.Record{IP: addr.String()}
	if lang != ipatlas.Chinese {
		lang = ipatlas.English
	}
	ps, err := e.parts(g, addr)
	if err != nil {
		return ipatlas.Record{}, err
	}
	key, as, route, city := ps.key, ps.as, ps.route, ps.city
	rec.LocationSource = ps.source
	rec.AccuracyRadius, rec.Confidence = accuracyOf(city, ps.source)
	pt := e.priv.Load()
	// The coordinates and the privacy object share one allocation: a
	// record owns them, so no caller can write into a shared table.
	var own *owned
	var coords *[2]float64
	switch {
	case pt != nil:
		own = new(owned)
		coords = &own.coords
	case city != nil && city.hasCoords:
		coords = new([2]float64)
	}
	if city != nil {
		city.fill(&rec, lang, coords)
	}
	var asn uint32
	if as != nil {
		rec.ASN, rec.ISP, asn = as.asn, as.isp, as.number
		rec.Route = route
	}
	bits := ps.bits
	if pt != nil {
		var known bool
		var pbits int
		own.privacy, own.tor, known, pbits = e.privacyOf(pt, key, asn)
		if known {
			own.privacy.Tor = &own.tor
		}
		rec.Privacy = &own.privacy
		bits = max(bits, pbits)
	}
	rec.Network = networkOf(addr, key, bits)
	return rec, nil
}

// parts are what every lookup of addr (without a zone) is made of. Each
// of Lookup, AppendJSON and Answer writes them in its own form.
type parts struct {
	// key is the address the data is searched by: addr's embedded IPv4
	// address where it has one.
	key netip.Addr
	// as is the ASN part and route its network; city is the city part
	// and source where it comes from (cityOf).
	as     *asnData
	route  netip.Prefix
	city   *cityData
	source string
	// bits is the length, in key's family, of the largest network around
	// key within every network the parts were looked up in: the ASN
	// files', the correction layers' and the city files' that answered
	// or were passed over. Every address of it has the same parts; the
	// privacy lists bound it further (privacyOf).
	bits int
}

func (e *Engine) parts(g *generation, addr netip.Addr) (ps parts, err error) {
	ps.key = netaddr.Embedded(addr).Unmap()
	if ps.as, ps.route, ps.bits, err = g.asn(ps.key); err != nil {
		return ps, err
	}
	ps.city, ps.source, ps.bits, err = e.cityOf(g, ps.key, ps.as, ps.bits)
	return ps, err
}

// cityOf returns the city part of addr (in the AS of as, nil when none)
// and where it comes from (Record.LocationSource): the first correction
// layer that places the address, else the dataset; nil and "" when
// neither has it. bits, the length of a network around addr within which
// the AS is the same, comes back bounded by every layer and file
// consulted (parts.bits).
func (e *Engine) cityOf(g *generation, addr netip.Addr, as *asnData, bits int) (*cityData, string, int, error) {
	if o := e.local.Load(); o != nil {
		var asn uint32
		if as != nil {
			asn = as.number
		}
		var v *localValue
		if v, bits = o.lookupNet(addr, asn, bits); v != nil {
			return v.city, v.source, bits, nil
		}
	}
	city, cbits, err := g.city(addr)
	bits = max(bits, cbits)
	if err != nil || city == nil {
		return nil, "", bits, err
	}
	return city, SourceDataset, bits, nil
}

// privacyOf is the privacy object of addr (in AS asn) from the lists pt,
// without its Tor flag, and the flag apart: known only while the exit list
// is fresh enough to tell; and the length of the largest network around
// addr whose addresses the lists answer alike (privacy.Table.LookupNet).
func (e *Engine) privacyOf(pt *privacy.Table, addr netip.Addr, asn uint32) (p ipatlas.Privacy, tor, torKnown bool, bits int) {
	f, service, bits := pt.LookupNet(addr, asn)
	p = ipatlas.Privacy{Hosting: f&privacy.Hosting != 0, VPN: f&privacy.VPN != 0,
		Relay: f&privacy.Relay != 0, Service: service}
	if at := pt.TorFetched(); !at.IsZero() && e.now().Sub(at) <= e.torAge {
		return p, f&privacy.Tor != 0, true, bits
	}
	return p, false, false, bits
}

// networkOf is the network of prefix length bits around key, the address
// addr is looked up by, written in addr's family: an IPv6 address that
// embeds an IPv4 address holds it in its last 32 bits, after a /96.
func networkOf(addr, key netip.Addr, bits int) netip.Prefix {
	if addr.Is6() && key.Is4() {
		bits += 96
		key = addr
	}
	p, _ := key.Prefix(bits)
	return p
}

// owned is the part of a record that its pointers point into.
type owned struct {
	coords  [2]float64
	privacy ipatlas.Privacy
	tor     bool
}

// acquire returns the current generation with a reference held, or nil
// after Close. A generation whose last reference went while we loaded it has
// been replaced, so the loop finds its successor.
func (e *Engine) acquire() *generation {
	for {
		g := e.cur.Load()
		if g == nil {
			return nil
		}
		if g.acquire() {
			return g
		}
	}
}

// Reload reads the data directory again and swaps the new dataset in. On
// any error the previous dataset stays in service and the error names the
// file at fault. Lookups in flight finish on the dataset they started with;
// its files are closed when the last of them returns.
func (e *Engine) Reload() error {
	if err := e.reloadDataset(); err != nil {
		return err
	}
	// The corrections are checked against the ASN data and placed with
	// the city data: both may have changed.
	e.rebuildCorrections()
	return nil
}

func (e *Engine) reloadDataset() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	pt, err := privacy.Load(e.dir, e.opts.BuiltinPrivacy)
	if err != nil {
		return fmt.Errorf("geo: %w", err)
	}
	g, err := e.load()
	if err != nil {
		return err
	}
	e.priv.Store(pt)
	old := e.cur.Swap(g)
	if old != nil {
		old.release()
	}
	e.log.Info("dataset loaded", "dir", e.dir, "files", g.fileNames())
	e.indexASAhead()
	return nil
}

// ReloadPrivacy reads the privacy lists of the data directory again (the
// MMDB files stay as they are, with their caches): the Tor exit list
// changes every hour. On an error the previous lists stay in service.
func (e *Engine) ReloadPrivacy() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	pt, err := privacy.Load(e.dir, e.opts.BuiltinPrivacy)
	if err != nil {
		return fmt.Errorf("geo: %w", err)
	}
	e.priv.Store(pt)
	return nil
}

// Privacy describes the privacy lists in service, in the order of
// privacy.Lists; nil when none is loaded.
func (e *Engine) Privacy() []privacy.ListInfo {
	if pt := e.priv.Load(); pt != nil {
		return pt.Lists()
	}
	return nil
}

// PrivacyRefused lists the privacy lists' downloads refused whole
// (privacy.Table.Refused); nil when none is, or no list is loaded.
func (e *Engine) PrivacyRefused() []privacy.Refusal {
	if pt := e.priv.Load(); pt != nil {
		return pt.Refused()
	}
	return nil
}

// Close stops the engine. Lookups in flight finish first; later ones fail
// with ErrClosed.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if old := e.cur.Swap(nil); old != nil {
		return old.release()
	}
	return nil
}

// needsTimeZones reports whether any city source in service lacks time
// zones in its data (the DB-IP flat schema) and a zone index to answer
// them.
func (e *Engine) needsTimeZones() bool {
	g := e.acquire()
	if g == nil {
		return false
	}
	defer g.release()
	for _, s := range g.sources {
		if s.schema == schemaFlat && s.zones == nil {
			return true
		}
	}
	return false
}

// Datasets describes the files in service (Networks is not counted: see
// Describe), in precedence order, then the postal index of each city file
// (Kind "postal", Networks the records it gives a code; the city file's
// build time), then the privacy lists in service.
func (e *Engine) Datasets() []SourceInfo {
	g := e.acquire()
	if g == nil {
		return nil
	}
	defer g.release()
	out := make([]SourceInfo, len(g.sources))
	for i, s := range g.sources {
		out[i] = s.info
	}
	for _, s := range g.sources {
		if s.postal != nil {
			out = append(out, SourceInfo{File: PostalIndexFile(s.info.File), Kind: "postal", DatabaseType: "GeoNames postal codes",
				IPVersion: s.info.IPVersion, BuildTime: s.info.BuildTime, Networks: s.postal.records(), Description: postal.Attribution})
		}
	}
	return append(out, PrivacySources(e.Privacy())...)
}

// PrivacySources describes privacy lists as SourceInfo, Kind "privacy":
// File is the list's file in the data dir, or "builtin:" and that name for
// the snapshot's copy; DatabaseType is the list's name.
func PrivacySources(lists []privacy.ListInfo) []SourceInfo {
	out := make([]SourceInfo, 0, len(lists))
	for _, l := range lists {
		file, desc := l.File, l.Source+", "+l.License
		if l.Builtin {
			file = "builtin:privacy-" + l.Name + ".txt"
			desc = "built-in snapshot of " + desc
		}
		si := SourceInfo{File: file, Kind: "privacy", DatabaseType: l.Name, BuildTime: l.Date.UTC().Format(time.RFC3339),
			Networks: l.Entries, Description: desc, URL: l.URL, Bytes: l.Size}
		if l.Refused.Count > 0 {
			si.RefusedEntries = &l.Refused
		}
		out = append(out, si)
	}
	return out
}

// load opens every MMDB of the directory into a new generation.
func (e *Engine) load() (*generation, error) {
	files, err := mmdbFiles(e.dir)
	if err != nil {
		return nil, err
	}
	g := newGeneration(e.opts)
	for _, f := range files {
		s, err := openSource(f, false)
		if err != nil {
			g.release()
			return nil, err
		}
		if s.kind == kindUnsupported {
			e.log.Warn("ignoring MMDB of unsupported type", "file", f, "database_type", s.info.DatabaseType)
			s.r.Close()
			continue
		}
		if s.kind == kindCity || s.kind == kindCountry {
			s.zones = e.loadZones(f, s)
		}
		if s.kind == kindCity {
			s.postal = e.loadPostal(f, s)
		}
		g.add(s)
	}
	if len(g.sources) == 0 {
		g.release()
		return nil, fmt.Errorf("geo: %w in %s", ErrNoData, e.dir)
	}
	g.order()
	return g, nil
}

// loadZones returns the zone index of the city source s opened from
// path, or nil when it has none that fits: its zones then come from the
// finders. An index that is malformed or written for another file is
// logged and ignored.
func (e *Engine) loadZones(path string, s *source) *zoneIndex {
	z, err := loadZoneIndex(path, s.r)
	switch {
	case err != nil:
		e.log.Warn("ignoring the zone index of a city file; its time zones come from the coordinates", "file", ZoneIndexFile(path), "err", err)
	case z == nil && s.schema == schemaFlat:
		e.log.Info("no zone index beside a city file: its time zones come from the zone polygons, about 30 MB more memory; 'ipatlas db fetch' writes the index", "file", path)
	}
	return z
}

// loadPostal returns the postal index of the city source s opened from
// path, or nil when it has none that fits: its records then answer only
// the postal codes the file has. An index that is malformed or written
// for another file is logged and ignored.
func (e *Engine) loadPostal(path string, s *source) *postalIndex {
	z, err := loadPostalIndex(path, s.r)
	switch {
	case err != nil:
		e.log.Warn("ignoring the postal index of a city file; its records answer only the postal codes the file has", "file", PostalIndexFile(path), "err", err)
	case z == nil && s.schema == schemaFlat:
		e.log.Info("no postal index beside a city file: its records answer no postal code; 'ipatlas db fetch' writes the index", "file", path)
	}
	return z
}

// mmdbFiles lists the *.mmdb files of dir in name order, skipping names
// that start with "." (downloads in progress).
func mmdbFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("geo: reading data dir: %w", err)
	}
	var out []string
	for _, d := range ents {
		if !isDataFile(d.Name()) || d.IsDir() {
			continue
		}
		if d.Type()&fs.ModeSymlink == 0 && !d.Type().IsRegular() {
			continue
		}
		out = append(out, filepath.Join(dir, d.Name()))
	}
	return out, nil
}

func isDataFile(name string) bool {
	return strings.HasSuffix(name, ".mmdb") && !strings.HasPrefix(name, ".")
}

// Describe opens every MMDB in dir and reports what it is. A corrupt file is
// an error naming the file. Unlike Open it walks each file completely,
// counting networks and decoding every distinct record, so it takes seconds
// on the default dataset.
func Describe(dir string) ([]SourceInfo, error) {
	files, err := mmdbFiles(dir)
	if err != nil {
		return nil, err
	}
	out := make([]SourceInfo, 0, len(files))
	for _, f := range files {
		s, err := openSource(f, true)
		if err != nil {
			return nil, err
		}
		out = append(out, s.info)
		if err := s.r.Close(); err != nil {
			return nil, fmt.Errorf("geo: closing %s: %w", f, err)
		}
	}
	slices.SortStableFunc(out, func(a, b SourceInfo) int {
		return cmp.Compare(a.File, b.File)
	})
	return out, nil
}

// generation is one loaded set of files with its caches. It is reference
// counted: the engine holds one reference while it is current, each lookup
// one while it runs; the files are closed when the count reaches zero.
type generation struct {
	refs    atomic.Int64
	sources []*source // precedence order
	city4   []*source
	city6   []*source
	asn4    []*source
	asn6    []*source

	cityCache *cache[cityData]
	asnCache  *cache[asnData]
	countries countryTable
	asState
	local placeState // the places corrections name, and the announced space

	closeErr error
}

func newGeneration(opts Options) *generation {
	g := &generation{
		cityCache: newCache[cityData](cacheSize(opts.CacheEntries, DefaultCacheEntries)),
		asnCache:  newCache[asnData](cacheSize(opts.ASNCacheEntries, DefaultASNCacheEntries)),
	}
	g.refs.Store(1)
	return g
}

func cacheSize(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

func (g *generation) add(s *source) {
	s.id = uint32(len(g.sources))
	g.sources = append(g.sources, s)
}

// order sorts the sources by precedence and builds the per-family lists.
func (g *generation) order() {
	slices.SortStableFunc(g.sources, func(a, b *source) int {
		if c := cmp.Compare(a.part(), b.part()); c != 0 {
			return c
		}
		if c := cmp.Compare(a.rank, b.rank); c != 0 {
			return c
		}
		return cmp.Compare(a.info.File, b.info.File)
	})
	for _, s := range g.sources {
		isCity := s.kind == kindCity || s.kind == kindCountry
		if s.has4 {
			if isCity {
				g.city4 = append(g.city4, s)
			} else {
				g.asn4 = append(g.asn4, s)
			}
		}
		if s.has6 {
			if isCity {
				g.city6 = append(g.city6, s)
			} else {
				g.asn6 = append(g.asn6, s)
			}
		}
	}
	// An IPv4-only file answers IPv4 faster than an IPv6 tree's IPv4
	// subtree, so among equals it goes first.
	slices.SortStableFunc(g.city4, byRankThenV4)
	slices.SortStableFunc(g.asn4, byRankThenV4)
}

func byRankThenV4(a, b *source) int {
	if c := cmp.Compare(a.rank, b.rank); c != 0 {
		return c
	}
	return cmp.Compare(a.info.IPVersion, b.info.IPVersion)
}

func (g *generation) fileNames() []string {
	out := make([]string, len(g.sources))
	for i, s := range g.sources {
		out[i] = s.info.File
	}
	return out
}

func (g *generation) acquire() bool {
	for {
		n := g.refs.Load()
		if n <= 0 {
			return false
		}
		if g.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the files.
func (g *generation) release() error {
	if g.refs.Add(-1) != 0 {
		return nil
	}
	var errs []error
	for _, s := range g.sources {
		if err := s.r.Close(); err != nil {
			errs = append(errs, fmt.Errorf("geo: closing %s: %w", s.info.File, err))
		}
		if err := s.postal.close(); err != nil {
			errs = append(errs, fmt.Errorf("geo: closing the postal index of %s: %w", s.info.File, err))
		}
		if err := s.zones.close(); err != nil {
			errs = append(errs, fmt.Errorf("geo: closing the zone index of %s: %w", s.info.File, err))
		}
	}
	return errors.Join(errs...)
}

// city returns the composed city part for addr from the first city source
// that has a record for it, or nil; and the length of the network around
// addr within the network of every file it was looked up in.
func (g *generation) city(addr netip.Addr) (*cityData, int, error) {
	list := g.city6
	if addr.Is4() {
		list = g.city4
	}
	v, _, bits, err := lookupPartNet(addr, list, g.cityCache, func(s *source, res maxminddb.Result) (cityData, error) {
		d, err := s.decodeCity(res)
		if err != nil {
			return cityData{}, err
		}
		d.pointZone, d.pointZoneKnown = s.zones.zone(res.Offset())
		// The code shares the mapped index, which goes with the
		// generation; the composed record outlives it in callers' hands.
		d.postal = strings.Clone(s.postal.code(res.Offset()))
		return compose(d, &g.countries), nil
	})
	return v, bits, err
}

// asn does for the ASN part what city does for the city part, and also
// returns the network of the ASN data that holds addr: its route.
func (g *generation) asn(addr netip.Addr) (*asnData, netip.Prefix, int, error) {
	list := g.asn6
	if addr.Is4() {
		list = g.asn4
	}
	return lookupPartNet(addr, list, g.asnCache, func(_ *source, res maxminddb.Result) (asnData, error) {
		return decodeASN(res)
	})
}

// lookupPartNet looks addr up in each source of list in turn and returns
// the part from the first that has a record for it, or nil, and the
// network of that record. Many networks share one record, so the part
// built from a record is cached by the record's offset; build runs only
// on a miss.
//
// bits is the length of the network around addr within the network of
// every source looked up: the record's, and the empty networks of the
// sources passed over. Every address of it gets the same part.
func lookupPartNet[T any](addr netip.Addr, list []*source, c *cache[T], build func(*source, maxminddb.Result) (T, error)) (_ *T, _ netip.Prefix, bits int, _ error) {
	for _, s := range list {
		res := s.r.Lookup(addr)
		if err := res.Err(); err != nil {
			return nil, netip.Prefix{}, bits, fmt.Errorf("geo: looking up %s in %s: %w", addr, s.info.File, err)
		}
		p := res.Prefix()
		if addr.Is4() && !p.Addr().Is4() {
			// An IPv6 tree whose IPv4 part is one empty or data node
			// above ::/96: the whole IPv4 space.
			p = netip.Prefix{}
		}
		bits = max(bits, p.Bits())
		if !res.Found() {
			continue
		}
		off := res.Offset()
		if e := c.get(s.id, off); e != nil {
			return &e.v, p, bits, nil
		}
		v, err := build(s, res)
		if err != nil {
			return nil, netip.Prefix{}, bits, fmt.Errorf("geo: decoding the record of %s in %s: %w", addr, s.info.File, err)
		}
		e := &entry[T]{src: s.id, off: off, v: v}
		c.put(e)
		return &e.v, p, bits, nil
	}
	return nil, netip.Prefix{}, bits, nil
}

// openReader opens one file, turning any failure, even a panic in the
// reader on hostile input, into an error naming the file.
func openReader(path string) (r *maxminddb.Reader, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("geo: %s is not a valid MMDB file: %v", path, p)
		}
	}()
	r, err = maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("geo: %s is not a valid MMDB file: %w", path, err)
	}
	return r, nil
}
