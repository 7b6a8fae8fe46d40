package main

// db export: what the engine answers, written out as an MMDB for proxies'
// GeoIP2 modules, or as CSV for spreadsheets and SQL imports.

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/export"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/postal"
	"go4.org/netipx"
)

const dbExportHelp = `usage: ipatlas db export [--format mmdb|csv] [--data-dir DIR] [--overrides FILE] [--geofeed FEED] FILE
       ipatlas db export --format cidr|nft|ipset [--country CC,CC...] [--family 4|6] [--set NAME] FILE

Writes what ipatlas answers for every public address, from the data dir,
with the corrections a server with the same settings applies (the
overrides file, the published feeds' copies in the data dir, which 'db
fetch' or a running server fetched: export fetches nothing) and the
privacy lists (fetched copies, else the snapshot built in; the Tor exit
list only while it is fresh).

  mmdb  (default) a GeoIP2-City-compatible MMDB, for nginx's and HAProxy's
        GeoIP2 modules, Caddy and Traefik plugins and MaxMind's readers:
        continent, country, subdivisions (the province, with its ISO code),
        city, postal, location (latitude, longitude, time_zone), the AS in
        traits and at the top level, the privacy flags in traits
        (is_hosting_provider, is_anonymous_vpn, is_tor_exit_node,
        is_anonymous), and under "ipatlas" the district, currency,
        area code, every flag and where the location comes from; names in
        "en" and "zh-CN". The metadata carries the sources' attribution.
  csv   one row per network (CIDR) with a header. A cell a spreadsheet
        would run as a formula is prefixed with ', as 'lookup --csv' does.

Country lists, for firewalls: the networks whose answer's country is one
of --country (every network with a country without it), after the same
corrections, adjacent ones merged into the fewest CIDRs, IPv4 then IPv6.
  cidr  one CIDR a line.
  nft   an nftables script for 'nft -f FILE': table inet ipatlas with the
        sets NAME_v4 and NAME_v6 (flags interval), their elements
        replaced in one transaction. A rule of yours in the same table
        refers to them: ip saddr @NAME_v4 drop.
  ipset a file for 'ipset restore': the sets NAME-v4 (hash:net family
        inet) and NAME-v6 (inet6), each filled as a new set and swapped
        in, with a maxelem of four times the list or more.

The export streams: it holds the tables and caches of the dataset, not
the file (under 1 GiB for the default dataset; a soft memory limit of
640 MiB unless GOMEMLIMIT is set), and writes the MMDB's search tree and
records to temporary files beside FILE until it assembles them. FILE "-"
is standard output, except for an MMDB; a file is written beside its
place and renamed into place when complete. A progress bar shows on a
terminal.

Flags (each also read from its environment variable, then the config file;
see 'ipatlas --help'):
  --format FORMAT      mmdb, csv, cidr, nft or ipset (default mmdb)
  --country CC,CC...   the lists' countries, ISO 3166-1 alpha-2 codes
                       (default every country)
  --family 4|6         the lists' address family (default both)
  --set NAME           the nft and ipset lists' set name (default ipatlas)
  --config FILE        config file (IPATLAS_CONFIG)
  --data-dir DIR       data directory (IPATLAS_DATA_DIR; default
                       $XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas)
  --overrides FILE     the local corrections file (IPATLAS_OVERRIDES)
  --geofeed FEED       a published feed, "URL [AS...]" (repeatable;
                       IPATLAS_GEOFEED; default the built-in list, "none"
                       for no feed)
  --database-type TYPE the MMDB's database_type (default GeoIP2-City, the
                       type MaxMind's City readers accept)
`

func runDBExport(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("db export", flag.ContinueOnError)
	format := fs.String("format", "mmdb", "mmdb or csv")
	dirFlag := fs.String("data-dir", "", "data directory")
	configFlag := fs.String("config", "", "config file")
	overridesFlag := fs.String("overrides", "", "overrides file")
	dbType := fs.String("database-type", export.DatabaseType, "database_type")
	countryFlag := fs.String("country", "", "the lists' countries")
	familyFlag := fs.String("family", "", "the lists' address family, 4 or 6")
	setFlag := fs.String("set", "ipatlas", "the nft and ipset lists' set name")
	var feedFlags feedFlag
	fs.Var(&feedFlags, "geofeed", "a published RFC 8805 feed: \"URL [AS...]\", or none")
	pos, err := parseArgs(e, fs, args, func(w io.Writer) { io.WriteString(w, dbExportHelp) })
	if err != nil {
		return err
	}
	list := slices.Contains(export.ListFormats, *format)
	var lo export.ListOptions
	switch {
	case len(pos) != 1:
		return usageError(fmt.Sprintf("db export takes one FILE, got %d arguments", len(pos)))
	case *format != "mmdb" && *format != "csv" && !list:
		return usageError(fmt.Sprintf("db export: --format %q: want mmdb, csv, cidr, nft or ipset", *format))
	case !list && (*countryFlag != "" || *familyFlag != "" || *setFlag != "ipatlas"):
		return usageError("db export: --country, --family and --set are for the lists: --format cidr, nft or ipset")
	case list:
		if lo, err = listOptions(*countryFlag, *familyFlag); err != nil {
			return usageError("db export: " + err.Error())
		}
		if *format != "cidr" && !export.ValidSetName(*setFlag) {
			return usageError(fmt.Sprintf("db export: --set %q: want up to 24 letters, digits, _ or -, starting with a letter", *setFlag))
		}
	case *format == "mmdb" && pos[0] == "-":
		return usageError("db export: an MMDB is written to a file, not to standard output")
	case strings.TrimSpace(*dbType) == "":
		return usageError("db export: --database-type is empty")
	}
	out := pos[0]
	ls, err := resolveLocal(e, *configFlag, *dirFlag, "")
	if err != nil {
		return err
	}
	overrides, feeds, err := correctionSettings(ls, e.getenv, *overridesFlag, feedFlags)
	if err != nil {
		return usageError("db export: --geofeed: " + err.Error())
	}
	// The walk meets each of the dataset's records in many places far
	// apart: caches the size of the distinct records keep it from
	// composing each again and again.
	engine, err := openConfiguredEngine(ls.dataDir, overrides, feeds, geo.Options{CacheEntries: 1 << 20, ASNCacheEntries: 1 << 18})
	if err != nil {
		return fmt.Errorf("db export: %w", err)
	}
	defer engine.Close()

	// The export streams: what it holds is the engine's tables, its
	// caches and the records' index, not the file. A soft limit keeps the
	// collector from letting garbage grow the heap to twice that (unless
	// the user set GOMEMLIMIT).
	if e.getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(exportMemoryLimit))
	}
	start := time.Now()
	progress := countBar(e.stderr, "exporting")
	var st export.Stats
	if list {
		lo.Context = ctx
		return exportList(e, engine, out, *format, *setFlag, lo, progress, start)
	}
	err = writeAtomically(out, e.stdout, func(w io.Writer) error {
		if *format == "csv" {
			st, err = exportCSV(ctx, w, engine, progress)
			return err
		}
		desc, err := exportDescription(ls.dataDir, engine)
		if err != nil {
			return err
		}
		// The tree and the records wait beside the file, on the disk
		// that is to hold it, rather than in a /tmp that may be memory.
		st, err = export.WriteMMDB(w, engine, export.MMDBOptions{DatabaseType: *dbType, Description: desc, Progress: progress,
			Context: ctx, TempDir: filepath.Dir(out)})
		return err
	})
	if err != nil {
		return fmt.Errorf("db export: %w", err)
	}
	if out != "-" {
		size := int64(0)
		if fi, err := os.Stat(out); err == nil {
			size = fi.Size()
		}
		fmt.Fprintf(e.stderr, "wrote %s: %s networks (%s CIDRs), %s distinct records, %.1f MiB in %s\n", out,
			groupThousands(st.Networks), groupThousands(st.Prefixes), groupThousands(st.Records),
			float64(size)/(1<<20), time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// listOptions reads --country and --family.
func listOptions(countries, family string) (export.ListOptions, error) {
	var lo export.ListOptions
	for c := range strings.SplitSeq(countries, ",") {
		c = strings.ToUpper(strings.TrimSpace(c))
		switch {
		case c == "" && countries == "":
			continue
		case len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z':
			return lo, fmt.Errorf("--country %q: want ISO 3166-1 alpha-2 codes separated by commas, such as CN,RU", countries)
		}
		if !slices.Contains(lo.Countries, c) {
			lo.Countries = append(lo.Countries, c)
		}
	}
	switch family {
	case "":
	case "4", "6":
		lo.Family = int(family[0] - '0')
	default:
		return lo, fmt.Errorf("--family %q: want 4 or 6", family)
	}
	return lo, nil
}

// exportList writes a country list: the walk streams, the list's CIDRs
// (far fewer than the networks) are held so that an ipset's maxelem
// knows their number.
func exportList(e env, engine *geo.Engine, out, format, set string, lo export.ListOptions, progress func(done, total int), start time.Time) error {
	lo.Progress = progress
	var l export.List
	if lo.Family != 6 {
		l.V4 = []netip.Prefix{}
	}
	if lo.Family != 4 {
		l.V6 = []netip.Prefix{}
	}
	st, err := export.CountryPrefixes(engine, lo, func(p netip.Prefix) error {
		if p.Addr().Is4() {
			l.V4 = append(l.V4, p)
		} else {
			l.V6 = append(l.V6, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("db export: %w", err)
	}
	what := "every country"
	if len(lo.Countries) > 0 {
		what = strings.Join(lo.Countries, ", ")
	}
	l.Set = set
	l.Comment = fmt.Sprintf("ipatlas db export --format %s: the networks of %s, from ipatlas' answers of %s", format, what, time.Now().UTC().Format(time.DateOnly))
	err = writeAtomically(out, e.stdout, func(w io.Writer) error { return export.WriteList(w, format, l) })
	if err != nil {
		return fmt.Errorf("db export: %w", err)
	}
	for _, c := range st.Missing(lo.Countries) {
		fmt.Fprintf(e.stderr, "db export: no network answers the country %s\n", c)
	}
	if out != "-" {
		fmt.Fprintf(e.stderr, "wrote %s: %s CIDRs of %s (IPv4: %s, %s addresses; IPv6: %s) in %s\n", out,
			groupThousands(st.V4+st.V6), what, groupThousands(st.V4), groupThousands(int(st.V4Addrs)), groupThousands(st.V6),
			time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}

// exportMemoryLimit is the export's soft memory limit
// (runtime/debug.SetMemoryLimit).
const exportMemoryLimit = 640 << 20

// openConfiguredEngine opens the data dir's dataset with the corrections a
// server with these settings answers from, and the built-in privacy
// lists where none was fetched; opts sets the rest (the caches).
func openConfiguredEngine(dir, overrides string, sources []geofeed.Source, opts geo.Options) (*geo.Engine, error) {
	opts.BuiltinPrivacy = true
	e, err := geo.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (fetch the datasets with 'ipatlas db fetch --data-dir %s')", err, dir)
	}
	if overrides != "" {
		f, err := geofeed.LoadFile(overrides)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("overrides: %w", err)
		}
		e.SetOverrides(&geo.Overrides{File: overrides, Feed: f, Loaded: time.Now()})
	}
	if len(sources) > 0 {
		feeds := make([]geo.FeedInput, len(sources))
		for i, s := range sources {
			feeds[i].Source = s
			if cp, err := geofeed.Load(dir, s); err == nil {
				feeds[i].Copy = cp
			}
		}
		e.SetFeeds(feeds)
	}
	return e, nil
}

// writeAtomically writes name through write: "-" is stdout; a file is
// written beside its place and renamed into it once complete, so that a
// proxy reading it never sees half a file.
func writeAtomically(name string, stdout io.Writer, write func(io.Writer) error) error {
	if name == "-" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// exportCSV writes one row per CIDR, each cell as lookup --csv writes it.
func exportCSV(ctx context.Context, w io.Writer, engine *geo.Engine, progress func(done, total int)) (export.Stats, error) {
	cw := csv.NewWriter(w)
	var st export.Stats
	if err := cw.Write(export.CSVHeader); err != nil {
		return st, err
	}
	// Distinct answers are counted by a 128-bit hash, as WriteMMDB finds
	// its records.
	seen := map[[2]uint64]struct{}{}
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	err := export.Walk(engine, export.Options{Progress: progress, Context: ctx}, func(r netipx.IPRange, a *export.Answer) error {
		st.Networks++
		seen[[2]uint64{maphash.Comparable(seeds[0], *a), maphash.Comparable(seeds[1], *a)}] = struct{}{}
		for _, p := range r.Prefixes() {
			st.Prefixes++
			row := a.CSVRow(p.String())
			for i, c := range row {
				row[i] = csvCell(c)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		return nil
	})
	st.Records = len(seen)
	if err != nil {
		return st, err
	}
	cw.Flush()
	return st, cw.Error()
}

// exportDescription is the MMDB's description: what it is, when it was
// built from what, and the attribution every source's licence asks for.
func exportDescription(dir string, engine *geo.Engine) (map[string]string, error) {
	var parts []string
	add := func(s string) {
		if s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	m, err := dataset.ReadManifest(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, p := range m.Packages {
		add(fmt.Sprintf("%s %s (built %s): %s", p.Name, p.Version, p.BuildDate.UTC().Format(time.DateOnly), p.Attribution))
	}
	for _, s := range engine.Datasets() {
		switch {
		case s.Kind == "postal":
			add(postal.Attribution)
		case s.Kind != "privacy" && s.Description != "":
			add(s.File + ": " + s.Description)
		}
	}
	for _, l := range engine.Privacy() {
		add(fmt.Sprintf("privacy list %s: %s (%s), %s", l.Name, l.Source, l.URL, l.License))
	}
	for _, c := range engine.Corrections() {
		switch {
		case c.Kind == "geofeed" && c.Applied > 0:
			add(fmt.Sprintf("geofeed %s: locations published by its operator at %s (RFC 8805)", c.Name, c.URL))
		case c.Kind == "override" && c.Applied > 0:
			add("local overrides: the operator's own corrections")
		}
	}
	for _, s := range names.Sources() {
		add(fmt.Sprintf("%s (%s), %s: %s", s.Name, s.URL, s.Licence, s.Provides))
	}
	head := "ipatlas' answers (https://github.com/ipatlas/ipatlas), exported " + time.Now().UTC().Format(time.DateOnly) +
		" in GeoIP2 City's layout. Sources and their attribution: "
	return map[string]string{
		"en":    head + strings.Join(parts, "; "),
		"zh-CN": "ipatlas 的查询结果（GeoIP2 City 格式）。数据来源及署名见英文说明。",
	}, nil
}
