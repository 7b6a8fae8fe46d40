package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"golang.org/x/text/width"
)

func lookupRemoteHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas lookup [flags] IP...
       ipatlas lookup [flags] -          (addresses from standard input, one per line)
       ipatlas lookup [flags] --file FILE   (addresses from FILE, one per line)
       ipatlas lookup --local [flags] IP...   (offline, on the data dir; see --local --help)

Looks addresses up through the service with the API key, printing them in
the order given: one address with POST /api/ip-query, several with
POST /api/ip-query/batch, 100 addresses per request (a repeated address is
asked once). Malformed and non-public addresses are refused before any
request and cost nothing. Results are cached on disk for the cache lifetime
(24h by default); --no-cache asks the service again and leaves the cache
alone.

--fields city,country,... asks for only those fields of the record (ip is
always there): a smaller answer, the same price. Names: ip, continent,
continent_code, country, country_code, province, province_code, city,
district, isp, asn, latitude, longitude, time_zone, currency, zip_code,
area_code, route, privacy. A full record
in the disk cache answers any selection; partial answers are not cached.

Addresses come from the arguments, "-" (standard input) and --file, in that
order; in the input, blank lines and lines starting with # are skipped.
With more than 100 addresses, a progress bar counts them on standard error
when it is a terminal and the output is not.

Output: an aligned table on a terminal; tab-separated values with a header
line (every field of the record, or the --fields) when piped; with --json,
one JSON object per address per line: the record as the service sent it
(absent fields stay absent), or {"ip": ..., "error": ..., "code": ...}.
With --csv, comma-separated values (RFC 4180): a header, then one row per
address in input order, failures included: "input" (the address as given),
the record's fields, with privacy as five columns (hosting, vpn, tor,
relay: true, false or empty when unknown; service), then "error_code" and
"error", empty on success.

Flags:
`)
	clientFlagsHelp(w, fs)
	fmt.Fprint(w, "\n", clientSettingsHelp, "\n", clientExitHelp,
		"  With several addresses, the exit code is that of the first one that failed.\n")
}

// lookupOutcome is one address's result, printed in input order.
type lookupOutcome struct {
	input string
	res   client.LookupResult
	err   error
}

func runLookupRemote(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lookup", flag.ContinueOnError)
	cf := addClientFlags(fs)
	langName := fs.String("lang", "en", "text values in `LANG`: en or zh")
	jsonOut := fs.Bool("json", false, "one JSON object per address per line")
	csvOut := fs.Bool("csv", false, "comma-separated values: a header, then one row per address")
	file := fs.String("file", "", "read addresses from `FILE`, one per line (- for standard input)")
	format := fs.String("format", "auto", "output `FORMAT`: auto, table, tsv, csv or json")
	noCache := fs.Bool("no-cache", false, "ask the service even when the answer is cached")
	fieldList := fs.String("fields", "", "only these record `FIELDS`, comma-separated (ip is always shown)")
	ips, err := parseArgs(e, fs, args, func(w io.Writer) { lookupRemoteHelp(w, fs) })
	if err != nil {
		return err
	}
	lang, ok := ipatlas.ParseLang(*langName)
	if !ok {
		return usageError(fmt.Sprintf("lookup: --lang %q: want en or zh", *langName))
	}
	fields, err := parseFieldsFlag(*fieldList)
	if err != nil {
		return usageError("lookup: --fields: " + errorText(err))
	}
	out := *format
	switch {
	case *jsonOut && *csvOut:
		return usageError("lookup: --json and --csv: choose one")
	case *jsonOut:
		out = "json"
	case *csvOut:
		out = "csv"
	}
	switch out {
	case "auto":
		out = "tsv"
		if isTerminal(e.stdout) {
			out = "table"
		}
	case "table", "tsv", "csv", "json":
	default:
		return usageError(fmt.Sprintf("lookup: --format %q: want auto, table, tsv, csv or json", out))
	}
	if ips, err = gatherAddresses(e, "lookup", ips, *file); err != nil {
		return err
	}
	c, cache, err := cf.lookupClient(e, *noCache)
	if err != nil {
		return err
	}

	var p lookupPrinter
	switch out {
	case "json":
		p = &jsonPrinter{w: e.stdout}
	case "tsv":
		p = &tsvPrinter{w: e.stdout, columns: fields.Names()}
	case "csv":
		p = newCSVPrinter(e.stdout, fields)
	default:
		p = &tablePrinter{w: e.stdout, fields: fields}
	}
	var first error
	failed := 0
	var fresh *client.LookupResult
	bar := newProgress(e, "looking up", len(ips), out == "table")
	err = lookupAll(ctx, c, cache, ips, lang, fields, bar, func(o *lookupOutcome) error {
		if o.err != nil {
			failed++
			if first == nil {
				first = o.err
			}
		} else if !o.res.Cached {
			fresh = &o.res
		}
		return p.print(*o)
	})
	if err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	cache.prune()
	if out == "table" && fresh != nil {
		fmt.Fprintln(e.stderr, quotaLine(fresh))
	}
	switch {
	case failed == 0:
		return nil
	case len(ips) == 1:
		return clientExit(first)
	}
	return &exitError{code: clientExitCode(first), err: fmt.Errorf("lookup: %d of %d addresses failed; the first: %w", failed, len(ips), first)}
}

// lookupOne asks for one address with a single query.
func lookupOne(ctx context.Context, c *client.Client, cache diskCache, ip string, lang ipatlas.Lang, fields ipatlas.FieldSet) lookupOutcome {
	if r, ok := cache.get(ip, lang); ok {
		return lookupOutcome{input: ip, res: r.Select(fields)}
	}
	r, err := c.LookupFields(ctx, ip, lang, fieldNames(fields)...)
	if err == nil && !r.Cached && fields.All() {
		cache.put(ip, lang, r)
	}
	return lookupOutcome{input: ip, res: r, err: err}
}

// lookupChunk asks for up to ipatlas.MaxBatchSize addresses with one batch
// request: the ones not in the disk cache.
func lookupChunk(ctx context.Context, c *client.Client, cache diskCache, ips []string, lang ipatlas.Lang, fields ipatlas.FieldSet) []lookupOutcome {
	out := make([]lookupOutcome, len(ips))
	var ask []string
	var at []int // positions in ips of ask
	for i, ip := range ips {
		out[i].input = ip
		if r, ok := cache.get(ip, lang); ok {
			out[i].res = r.Select(fields)
			continue
		}
		ask = append(ask, ip)
		at = append(at, i)
	}
	if len(ask) == 0 {
		return out
	}
	// A request that fails as a whole is in every item's error; the
	// next chunk is still tried, as every address of a list is.
	res, _ := c.LookupBatch(ctx, ask, lang, fieldNames(fields)...)
	for j, r := range res {
		o := &out[at[j]]
		o.res, o.err = r.Result, r.Err
		if r.Err == nil && !r.Result.Cached && fields.All() {
			cache.put(r.IP, lang, r.Result)
		}
	}
	return out
}

// parseFieldsFlag reads --fields: names separated by commas, spaces
// around them ignored.
func parseFieldsFlag(s string) (ipatlas.FieldSet, error) {
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return ipatlas.ParseFields(names)
}

// fieldNames is what the client takes: nil for every field.
func fieldNames(f ipatlas.FieldSet) []string {
	if f.All() {
		return nil
	}
	return f.Names()
}

func quotaLine(r *client.LookupResult) string {
	s := "credits: " + strconv.FormatInt(r.Meta.CurrentCredits, 10)
	if r.RateLimit.Limit > 0 {
		s += fmt.Sprintf(", quota: %d of %d left this month", r.RateLimit.Remaining, r.RateLimit.Limit)
	}
	return s
}

type lookupPrinter interface {
	print(lookupOutcome) error
	flush() error
}

type jsonPrinter struct{ w io.Writer }

func (p *jsonPrinter) print(o lookupOutcome) error {
	var line []byte
	if o.err != nil {
		v := struct {
			IP    string            `json:"ip"`
			Error string            `json:"error"`
			Code  ipatlas.ErrorCode `json:"code,omitempty"`
		}{IP: o.input, Error: o.err.Error()}
		var e *ipatlas.Error
		if errors.As(o.err, &e) {
			v.Code = e.Code
		}
		line, _ = json.Marshal(v)
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, o.res.Raw()); err != nil {
			return err
		}
		line = buf.Bytes()
	}
	_, err := fmt.Fprintf(p.w, "%s\n", line)
	return err
}

func (p *jsonPrinter) flush() error { return nil }

type tsvPrinter struct {
	w       io.Writer
	columns []string // the record's keys to print; "ip" first
	header  bool
}

func (p *tsvPrinter) print(o lookupOutcome) error {
	if !p.header {
		p.header = true
		if _, err := fmt.Fprintln(p.w, strings.Join(p.columns, "\t")+"\terror"); err != nil {
			return err
		}
	}
	cells := make([]string, len(p.columns)+1)
	if o.err != nil {
		cells[0], cells[len(cells)-1] = o.input, o.err.Error()
	} else {
		for i, col := range p.columns {
			cells[i] = recordField(&o.res.Record, col)
		}
	}
	for i, c := range cells {
		cells[i] = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, c)
	}
	_, err := fmt.Fprintln(p.w, strings.Join(cells, "\t"))
	return err
}

func (p *tsvPrinter) flush() error { return nil }

// recordField is a record's value by JSON key; "" when unknown.
func recordField(r *ipatlas.Record, key string) string {
	if key == "privacy" {
		return privacyText(r.Privacy)
	}
	return r.Text(key)
}

// privacyText is the privacy object for people: the flags that are set
// and the service ("hosting, vpn (Proton VPN)"), "none" when the address
// is on no list, "tor unknown" when the Tor list is too old; "" when the
// flags are unknown.
func privacyText(p *ipatlas.Privacy) string {
	if p == nil {
		return ""
	}
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{p.Hosting, "hosting"}, {p.VPN, "vpn"}, {p.Tor != nil && *p.Tor, "tor"}, {p.Relay, "relay"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	s := strings.Join(flags, ", ")
	if s == "" {
		s = "none"
	}
	if p.Service != "" {
		s += " (" + p.Service + ")"
	}
	if p.Tor == nil {
		s += "; tor unknown"
	}
	return s
}

// tablePrinter shows the fields a person reads first, or the selected
// fields, aligned; "-" marks an unknown value.
type tablePrinter struct {
	w      io.Writer
	fields ipatlas.FieldSet
	rows   [][]string
}

func (p *tablePrinter) print(o lookupOutcome) error {
	if p.rows == nil {
		if p.fields.All() {
			p.rows = append(p.rows, []string{"IP", "COUNTRY", "PROVINCE", "CITY", "ISP", "ASN", "ROUTE", "LOCATION", "TIME ZONE", "PRIVACY"})
		} else {
			var head []string
			for _, f := range p.fields.Names() {
				head = append(head, strings.ToUpper(strings.ReplaceAll(f, "_", " ")))
			}
			p.rows = append(p.rows, head)
		}
	}
	if o.err != nil {
		p.rows = append(p.rows, []string{o.input, "error: " + errorText(o.err)})
		return nil
	}
	r := &o.res.Record
	if !p.fields.All() {
		var row []string
		for _, f := range p.fields.Names() {
			c := recordField(r, f)
			if c == "" {
				c = "-"
			}
			row = append(row, c)
		}
		p.rows = append(p.rows, row)
		return nil
	}
	loc := ""
	if r.Latitude != nil && r.Longitude != nil {
		loc = strconv.FormatFloat(*r.Latitude, 'f', 4, 64) + "," + strconv.FormatFloat(*r.Longitude, 'f', 4, 64)
	}
	country := r.Country
	if r.CountryCode != "" && country != "" {
		country += " (" + r.CountryCode + ")"
	}
	row := []string{r.IP, country, r.Province, r.City, r.ISP, r.ASN, recordField(r, "route"), loc, r.TimeZone, privacyText(r.Privacy)}
	for i, c := range row {
		if c == "" {
			row[i] = "-"
		}
	}
	p.rows = append(p.rows, row)
	return nil
}

func (p *tablePrinter) flush() error { return writeAligned(p.w, p.rows) }

// errorText is an error for a person: the service's message without the
// package prefix.
func errorText(err error) string {
	var e *ipatlas.Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return strings.TrimPrefix(err.Error(), "ipatlas: ")
}

// writeAligned prints rows in columns two spaces apart, measuring text by
// its width on a terminal (a CJK character takes two cells). A row shorter
// than the widest lets its last cell run on.
func writeAligned(w io.Writer, rows [][]string) error {
	var widths []int
	for _, row := range rows {
		for i, c := range row[:max(len(row)-1, 0)] {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		b.Reset()
		for i, c := range row {
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(c)+2))
			}
		}
		b.WriteByte('\n')
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}
