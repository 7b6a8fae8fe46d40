package main

// What lookup's two modes share: its flags (--lang, --fields, --file,
// --format, --json, --csv), the addresses, the printers and how a failed
// address makes the exit status and the error. The remote mode
// (lookup_remote.go) asks the service; --local (lookup_local.go) asks the
// engine on the data dir.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ipatlas/ipatlas"
)

// runLookup looks addresses up offline on the data dir with --local
// (lookup_local.go), or through the service with the Go client
// (lookup_remote.go).
func runLookup(ctx context.Context, e env, args []string) error {
	if slices.Contains(args, "--local") || slices.Contains(args, "-local") {
		err := runLookupLocal(ctx, e, args)
		var ee *exitError
		if errors.As(err, &ee) && ee.code == exitUsage && ee.hint == "" {
			ee.hint = "lookup --local" // its help is not lookup's
		}
		return err
	}
	return runLookupRemote(ctx, e, args)
}

// The parts of lookup's help that hold for both modes.
const (
	lookupFieldsHelp = `--fields city,country,... prints only those fields of the record (ip is
always there). Names: ip, continent, continent_code, country, country_code,
province, province_code, city, district, isp, asn, latitude, longitude, time_zone,
currency, zip_code, area_code, route, network, privacy, location_source; hostname and
hostname_confirmed only when named (they cost a DNS lookup, not a query).`

	lookupInputHelp = `Addresses come from the arguments, "-" (standard input) and --file, in that
order; in the input, blank lines and lines starting with # are skipped.`

	lookupOutputHelp = `Output: an aligned table on a terminal; tab-separated values with a header
line (every field of the record, or the --fields) when piped; with --json,
one JSON object per address per line: the record, or {"ip": ..., "error":
..., "code": ...}. With --csv, comma-separated values (RFC 4180): a header,
then one row per address in input order, failures included: "input" (the
address as given), the record's fields, with privacy as five columns
(hosting, vpn, tor, relay: true, false or empty when unknown; service),
then "error_code" and "error", empty on success. A text cell that a
spreadsheet would take for a formula (starting with =, +, -, @, tab or CR)
is prefixed with ', and control characters and terminal escape sequences
are left out of every format but --json, which escapes them.`
)

// lookupFlags are the flags of both modes, as given.
type lookupFlags struct {
	lang, file, format, fields string
	json, csv                  bool
}

func addLookupFlags(fs *flag.FlagSet) *lookupFlags {
	f := &lookupFlags{}
	fs.StringVar(&f.lang, "lang", "en", "text values in `LANG`: en or zh")
	fs.BoolVar(&f.json, "json", false, "one JSON object per address per line")
	fs.BoolVar(&f.csv, "csv", false, "comma-separated values: a header, then one row per address")
	fs.StringVar(&f.file, "file", "", "read addresses from `FILE`, one per line (- for standard input)")
	fs.StringVar(&f.format, "format", "auto", "output `FORMAT`: auto, table, tsv, csv or json")
	fs.StringVar(&f.fields, "fields", "", "only these record `FIELDS`, comma-separated (ip is always shown)")
	return f
}

// lookupJob is what the flags and arguments of either mode ask for.
type lookupJob struct {
	lang   ipatlas.Lang
	fields ipatlas.FieldSet
	format string // table, tsv, csv or json
	ips    []string
}

// job checks the flags and gathers the addresses; name is the command as
// its usage errors name it.
func (f *lookupFlags) job(e env, name string, args []string) (lookupJob, error) {
	var j lookupJob
	var ok bool
	if j.lang, ok = ipatlas.ParseLang(f.lang); !ok {
		return j, usageError(fmt.Sprintf("%s: --lang %q: want en or zh", name, f.lang))
	}
	var err error
	if j.fields, err = parseFieldsFlag(f.fields); err != nil {
		return j, usageError(name + ": --fields: " + errorText(err))
	}
	j.format = f.format
	switch {
	case f.json && f.csv:
		return j, usageError(name + ": --json and --csv: choose one")
	case f.json:
		j.format = "json"
	case f.csv:
		j.format = "csv"
	}
	switch j.format {
	case "auto":
		j.format = "tsv"
		if isTerminal(e.stdout) {
			j.format = "table"
		}
	case "table", "tsv", "csv", "json":
	default:
		return j, usageError(fmt.Sprintf("%s: --format %q: want auto, table, tsv, csv or json", name, j.format))
	}
	j.ips, err = gatherAddresses(e, name, args, f.file)
	return j, err
}

// lookupReport prints the outcomes of a job as they come, in input order,
// and keeps what its end needs: how many failed, and the first failure.
type lookupReport struct {
	p      lookupPrinter
	total  int
	failed int
	first  error
}

func (j lookupJob) report(w io.Writer) *lookupReport {
	var p lookupPrinter
	switch j.format {
	case "json":
		p = &jsonPrinter{w: w, fields: j.fields}
	case "tsv":
		p = &tsvPrinter{w: w, columns: j.fields.Names()}
	case "csv":
		p = newCSVPrinter(w, j.fields)
	default:
		p = &tablePrinter{w: w, fields: j.fields}
	}
	return &lookupReport{p: p, total: len(j.ips)}
}

func (r *lookupReport) add(o *lookupOutcome) error {
	if o.err != nil {
		r.failed++
		if r.first == nil {
			r.first = o.err
		}
	}
	return r.p.print(*o)
}

// finish flushes the output and returns the job's error: nil when every
// address was answered; else with the exit code of the first failure,
// which is the error itself for a single address.
func (r *lookupReport) finish() error {
	if err := r.p.flush(); err != nil {
		return err
	}
	switch {
	case r.failed == 0:
		return nil
	case r.total == 1:
		return clientExit(r.first)
	}
	return &exitError{code: clientExitCode(r.first),
		err: fmt.Errorf("lookup: %d of %s failed; the first: %w", r.failed, plural(r.total, "address", "addresses"), r.first)}
}

// readAddresses reads the addresses to look up from standard input, local
// or remote alike: one a line, blank lines and # comments skipped.
func readAddresses(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}
