// Package postal gives a place its postal code, from GeoNames' postal code
// data (CC BY 4.0): it reads that data in GeoNames' own format, strictly,
// and matches a place (country, first-level subdivision, name,
// coordinates) to the code of the place, or to none.
//
// The data is large (1.2 million codes of about 120 countries), so no
// serving process keeps it: `db fetch` loads it once, gives every record of
// the city files its code (package geo's postal index) and lets it go.
// Where GeoNames cannot be reached, the copy fetched before serves, else
// the snapshot built into the binary (Builtin), which holds the code of
// every place that GeoNames lists with several codes or with a large
// weight, in the same format.
package postal

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ulikunitz/xz"
)

// URL is where GeoNames publishes the postal codes of all countries,
// rebuilt daily: a zip holding allCountries.txt.
const URL = "https://download.geonames.org/export/zip/allCountries.zip"

// Attribution is the credit the CC BY 4.0 licence asks for wherever the
// codes are shown or redistributed.
const Attribution = "Postal codes from GeoNames (https://www.geonames.org), licensed under CC BY 4.0"

// zipMember is the file of the zip that holds the codes.
const zipMember = "allCountries.txt"

// Row is one line of GeoNames' postal code file: tab-separated, UTF-8,
// no header, twelve columns.
type Row struct {
	Country    string  // ISO 3166-1 alpha-2, upper case
	Code       string  // the postal code, as GeoNames writes it
	Place      string  // the place's name
	Admin1     string  // first-level subdivision's name ("Alaska"); may be empty
	Admin1Code string  // its code in GeoNames ("AK"); may be empty
	Admin2     string  // second-level subdivision's name; may be empty
	Lat, Lon   float64 // the code's representative point (WGS84)
	// Accuracy is GeoNames' accuracy of the point (1 estimated, 4
	// geonameid, 6 centroid of addresses); 0 when not given.
	Accuracy int
}

// Limits of a row; GeoNames' longest place name is under 200 bytes.
const (
	maxLine  = 4 << 10
	maxField = 400
	maxCode  = 20
	// MaxRows bounds a file: GeoNames has about 1.6 million rows.
	MaxRows = 8 << 20
)

// ErrFormat is a file that is not in GeoNames' postal code format.
var ErrFormat = errors.New("not GeoNames' postal code format")

// ParseLine reads one line (without its newline) of the format.
func ParseLine(line string) (Row, error) {
	var f [12]string
	n := 0
	for n < 11 {
		i := strings.IndexByte(line, '\t')
		if i < 0 {
			break
		}
		f[n], line = line[:i], line[i+1:]
		n++
	}
	if n != 11 || strings.IndexByte(line, '\t') >= 0 {
		return Row{}, fmt.Errorf("%w: %d columns, want 12", ErrFormat, strings.Count(line, "\t")+n+1)
	}
	f[11] = line
	for i, s := range f {
		if len(s) > maxField {
			return Row{}, fmt.Errorf("%w: column %d is %d bytes long", ErrFormat, i+1, len(s))
		}
		if !utf8.ValidString(s) {
			return Row{}, fmt.Errorf("%w: column %d is not UTF-8", ErrFormat, i+1)
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				return Row{}, fmt.Errorf("%w: column %d holds a control character", ErrFormat, i+1)
			}
		}
	}
	r := Row{Country: f[0], Code: strings.TrimSpace(f[1]), Place: strings.TrimSpace(f[2]),
		Admin1: strings.TrimSpace(f[3]), Admin1Code: strings.TrimSpace(f[4]), Admin2: strings.TrimSpace(f[5])}
	if len(r.Country) != 2 || r.Country[0] < 'A' || r.Country[0] > 'Z' || r.Country[1] < 'A' || r.Country[1] > 'Z' {
		return Row{}, fmt.Errorf("%w: country %q is no ISO 3166-1 alpha-2 code", ErrFormat, f[0])
	}
	if r.Code == "" || len(r.Code) > maxCode {
		return Row{}, fmt.Errorf("%w: postal code %q", ErrFormat, f[1])
	}
	var err error
	if r.Lat, err = coord(f[9], 90); err != nil {
		return Row{}, fmt.Errorf("%w: latitude %q", ErrFormat, f[9])
	}
	if r.Lon, err = coord(f[10], 180); err != nil {
		return Row{}, fmt.Errorf("%w: longitude %q", ErrFormat, f[10])
	}
	if a := strings.TrimSpace(f[11]); a != "" {
		if r.Accuracy, err = strconv.Atoi(a); err != nil || r.Accuracy < 0 || r.Accuracy > 9 {
			return Row{}, fmt.Errorf("%w: accuracy %q", ErrFormat, f[11])
		}
	}
	return r, nil
}

func coord(s string, limit float64) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || v < -limit || v > limit {
		return 0, ErrFormat
	}
	return v, nil
}

// Read calls fn for each row of r, a file in GeoNames' format. A line
// that is not in the format is an error naming it; so is an empty file.
func Read(r io.Reader, fn func(*Row) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	n := 0
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			continue
		}
		n++
		if n > MaxRows {
			return fmt.Errorf("%w: more than %d rows", ErrFormat, MaxRows)
		}
		row, err := ParseLine(line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if err := fn(&row); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: %w: longer than %d bytes", n+1, ErrFormat, maxLine)
		}
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: no rows", ErrFormat)
	}
	return nil
}

// Open returns the rows' text of a file as GeoNames or a copy of it
// stores it, by its first bytes: GeoNames' zip (allCountries.txt inside),
// xz or gzip, or the text itself. ra must hold size bytes.
func Open(ra io.ReaderAt, size int64) (io.Reader, error) {
	head := make([]byte, 6)
	n, err := ra.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	head = head[:n]
	sr := io.NewSectionReader(ra, 0, size)
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		zr, err := zip.NewReader(ra, size)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		for _, f := range zr.File {
			if f.Name == zipMember {
				rc, err := f.Open()
				if err != nil {
					return nil, fmt.Errorf("%w: %v", ErrFormat, err)
				}
				return rc, nil
			}
		}
		return nil, fmt.Errorf("%w: the zip holds no %s", ErrFormat, zipMember)
	case bytes.HasPrefix(head, []byte("\xfd7zXZ\x00")):
		xr, err := xz.NewReader(sr)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		return xr, nil
	case bytes.HasPrefix(head, []byte("\x1f\x8b")):
		gr, err := gzip.NewReader(sr)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		return gr, nil
	}
	return sr, nil
}
