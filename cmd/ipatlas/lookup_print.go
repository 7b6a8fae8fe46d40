package main

// The printers of lookup's outcomes, in both modes: an aligned table, TSV,
// CSV and JSON lines. Text from the service or the datasets is printed as
// printable makes it (JSON: as jsonSafe escapes it).

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
	"golang.org/x/text/width"
)

type lookupPrinter interface {
	print(lookupOutcome) error
	flush() error
}

// jsonPrinter writes one JSON object per address per line: the record as
// the service sent it, or built from the engine's (--local) restricted to
// the fields; or the failure.
type jsonPrinter struct {
	w      io.Writer
	fields ipatlas.FieldSet
}

func (p *jsonPrinter) print(o lookupOutcome) error {
	var line []byte
	var err error
	switch raw := o.res.Raw(); {
	case o.err != nil:
		v := struct {
			IP    string            `json:"ip"`
			Error string            `json:"error"`
			Code  ipatlas.ErrorCode `json:"code,omitempty"`
		}{IP: o.input, Error: errorText(o.err), Code: errorCode(o.err)}
		line, err = json.Marshal(v)
	case len(raw) > 0:
		var buf bytes.Buffer
		err = json.Compact(&buf, raw)
		line = buf.Bytes()
	default:
		line, err = json.Marshal(p.fields.Partial(&o.res.Record))
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(p.w, "%s\n", jsonSafe(line))
	return err
}

func (p *jsonPrinter) flush() error { return nil }

// tsvPrinter writes tab-separated values: a header line, then a line per
// address; tabs and line breaks in a value become spaces.
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
		// No column holds the code: the error says it first.
		cells[0], cells[len(cells)-1] = o.input, strings.TrimPrefix(o.err.Error(), "ipatlas: ")
	} else {
		for i, col := range p.columns {
			cells[i] = recordField(&o.res.Record, col)
		}
	}
	for i, c := range cells {
		cells[i] = printable(c)
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
// fields, aligned; "-" marks an unknown value. The first shows the
// location with its accuracy radius and confidence.
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
		// How far off the point may be, and the level: "±390km medium".
		if r.AccuracyRadius > 0 {
			loc += " ±" + strconv.Itoa(r.AccuracyRadius) + "km"
			if r.Confidence != "" {
				loc += " " + r.Confidence
			}
		}
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
// package prefix, safe to print.
func errorText(err error) string {
	var e *ipatlas.Error
	if errors.As(err, &e) && e.Message != "" {
		return printable(e.Message)
	}
	return printable(strings.TrimPrefix(err.Error(), "ipatlas: "))
}

// writeAligned prints rows in columns two spaces apart, measuring text by
// its width on a terminal (a CJK character takes two cells). A row shorter
// than the widest lets its last cell run on. Cells are printed as
// printable makes them.
func writeAligned(w io.Writer, rows [][]string) error {
	for _, row := range rows {
		for i, c := range row {
			row[i] = printable(c)
		}
	}
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

// privacyColumns are the CSV columns of the privacy object.
var privacyColumns = []string{"hosting", "vpn", "tor", "relay", "service"}

// csvPrinter writes RFC 4180 rows: "input", the record's selected fields
// (privacy as its five columns), "error_code" and "error".
type csvPrinter struct {
	w       *csv.Writer
	columns []string // the record's keys, privacy expanded
	header  bool
}

func newCSVPrinter(w io.Writer, fields ipatlas.FieldSet) *csvPrinter {
	var cols []string
	for _, f := range fields.Names() {
		if f == "privacy" {
			cols = append(cols, privacyColumns...)
			continue
		}
		cols = append(cols, f)
	}
	return &csvPrinter{w: csv.NewWriter(w), columns: cols}
}

func (p *csvPrinter) print(o lookupOutcome) error {
	if !p.header {
		p.header = true
		head := append(append([]string{"input"}, p.columns...), "error_code", "error")
		if err := p.w.Write(head); err != nil {
			return err
		}
	}
	row := make([]string, 0, len(p.columns)+3)
	row = append(row, o.input)
	if o.err != nil {
		row = append(row, make([]string, len(p.columns))...)
		row = append(row, string(errorCode(o.err)), errorText(o.err))
	} else {
		r := &o.res.Record
		for _, col := range p.columns {
			row = append(row, csvField(r, col))
		}
		row = append(row, "", "")
	}
	for i, c := range row {
		row[i] = csvCell(c)
	}
	return p.w.Write(row)
}

// csvCell is a cell that a spreadsheet opens as the text it is: printable,
// and prefixed with ' when it starts (after spaces) with a character that
// makes a formula of it: = + - @ tab or CR (OWASP's rule against CSV
// injection), or their fullwidth forms, which some spreadsheets take for
// them. A plain decimal number, such as a coordinate (-33.5), stays as it
// is: a spreadsheet reads it as the number it is.
func csvCell(s string) string {
	s = printable(s)
	if plainNumber.MatchString(s) {
		return s
	}
	if r, _ := utf8.DecodeRuneInString(strings.TrimLeft(s, " ")); strings.ContainsRune("=+-@\t\r＝＋－＠", r) {
		return "'" + s
	}
	return s
}

// plainNumber is a decimal number without exponent: what the record's
// coordinates are printed as.
var plainNumber = regexp.MustCompile(`^[+-]?[0-9]+(\.[0-9]+)?$`)

func (p *csvPrinter) flush() error {
	p.w.Flush()
	return p.w.Error()
}

// csvField is recordField with the privacy object in columns: a flag is
// "true" or "false", or empty when unknown.
func csvField(r *ipatlas.Record, col string) string {
	pv := r.Privacy
	flag := func(on bool) string {
		if pv == nil {
			return ""
		}
		return strconv.FormatBool(on)
	}
	switch col {
	case "hosting":
		return flag(pv != nil && pv.Hosting)
	case "vpn":
		return flag(pv != nil && pv.VPN)
	case "relay":
		return flag(pv != nil && pv.Relay)
	case "tor":
		if pv == nil || pv.Tor == nil {
			return ""
		}
		return strconv.FormatBool(*pv.Tor)
	case "service":
		if pv == nil {
			return ""
		}
		return pv.Service
	}
	return recordField(r, col)
}
