// Package geofeed reads IP geolocation feeds in the format of RFC 8805: a
// CSV that names the place of each prefix (prefix, country, region, city,
// postal code). It parses a feed line by line, keeping every good line
// and reporting every bad one as FILE:LINE: reason, knows where the
// well-known operators publish theirs and which ASes each speaks for, and
// fetches feeds into a cache in the data directory, so that a restart
// without the network still has the last good copy.
//
// What a feed may claim, and what a place it names becomes in a record,
// is the geo package's business: it has the ASN data and the dataset.
package geofeed

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
)

// Entry is one good line of a feed.
type Entry struct {
	Prefix  netip.Prefix // masked; an IPv4 prefix is never IPv4-mapped
	Country string       // ISO 3166-1 alpha-2, upper case
	Region  string       // ISO 3166-2 ("US-CA"), upper case; "" when not given
	City    string       // as the feed writes it; "" when not given
	Postal  string       // "" when not given
	Line    int
}

// Problem is one line of a feed that was skipped, and why.
type Problem struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// String is the problem as logs and `db info` show it: FILE:LINE: reason.
func (p Problem) String() string {
	return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Reason
}

// Feed is a parsed feed: its good entries in file order and its bad lines.
type Feed struct {
	Entries  []Entry
	Problems []Problem
	Lines    int // lines read, comments and blank lines included
}

// MaxSize bounds a feed, in bytes. The largest published feeds (iCloud
// Private Relay's egress ranges) are a few tens of MB.
const MaxSize = 256 << 20

// Bounds on the text fields: RFC 8805 sets none, but a city name of a
// kilobyte is a broken line, not a place.
const (
	maxCity   = 200
	maxPostal = 32
)

// ErrTooLarge is a feed over MaxSize.
var ErrTooLarge = errors.New("geofeed: feed larger than 256 MB")

// Parse reads a feed. file names it in the problems. Every line that
// cannot be used is skipped and reported; the rest still count. The error
// is only for a feed that cannot be read at all (a read error, a feed
// over MaxSize).
//
// The rules, from RFC 8805 and what publishers write: "#" starts a
// comment line; blank lines are skipped; a UTF-8 byte order mark is
// ignored; fields are CSV (a city may be quoted), surrounding blanks
// trimmed; trailing empty fields may be left out ("98.97.32.0/24,US,US-WA,
// Seattle") and fields after the fifth are ignored. A line is refused for
// an unreadable prefix, a prefix with host bits set, an unknown country
// code, a region that is not an ISO 3166-2 code of that country, or a
// city or postal code with control characters or past a sane length. A
// prefix repeated in one feed keeps its first line.
func Parse(r io.Reader, file string) (*Feed, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxSize+1), 64<<10)
	f := &Feed{}
	seen := map[netip.Prefix]int{}
	var total int64
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line of 64 KiB is no feed line: skip the rest of it.
			for errors.Is(err, bufio.ErrBufferFull) {
				total += int64(len(line))
				line, err = br.ReadSlice('\n')
			}
			total += int64(len(line))
			f.Lines = n
			f.Problems = append(f.Problems, Problem{file, n, "line longer than 64 KiB"})
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		total += int64(len(line))
		if total > MaxSize {
			return nil, ErrTooLarge
		}
		if len(line) == 0 && err == io.EOF {
			break
		}
		f.Lines = n
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if e, reason := parseLine(line); reason != "" {
			f.Problems = append(f.Problems, Problem{file, n, reason})
		} else if e.Prefix.IsValid() {
			if first, dup := seen[e.Prefix]; dup {
				f.Problems = append(f.Problems, Problem{file, n, fmt.Sprintf("%s is already on line %d", e.Prefix, first)})
			} else {
				seen[e.Prefix] = n
				e.Line = n
				f.Entries = append(f.Entries, e)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

// parseLine reads one line: an entry, or a reason to skip it; neither for
// a comment or a blank line.
func parseLine(raw []byte) (Entry, string) {
	s := strings.TrimRight(string(raw), "\r\n")
	if !utf8.ValidString(s) {
		return Entry{}, "not UTF-8"
	}
	t := strings.TrimSpace(s)
	if t == "" || t[0] == '#' {
		return Entry{}, ""
	}
	fields, err := splitCSV(t)
	if err != nil {
		return Entry{}, "not a CSV line: " + err.Error()
	}
	for len(fields) < 5 {
		fields = append(fields, "")
	}
	for i := range fields {
		fields[i] = strings.TrimSpace(fields[i])
	}
	var e Entry
	p, reason := parsePrefix(fields[0])
	if reason != "" {
		return Entry{}, reason
	}
	e.Prefix = p
	cc := strings.ToUpper(fields[1])
	switch {
	case cc == "":
		return Entry{}, "no country: the line says nothing to correct"
	case len(cc) != 2 || !isAlpha(cc):
		return Entry{}, fmt.Sprintf("country %q is not an ISO 3166-1 alpha-2 code", short(fields[1]))
	case names.Country(cc, ipatlas.English) == "":
		return Entry{}, fmt.Sprintf("unknown country code %q", cc)
	}
	e.Country = cc
	if region := strings.ToUpper(fields[2]); region != "" {
		sub, ok := strings.CutPrefix(region, cc+"-")
		if !ok || len(sub) < 1 || len(sub) > 3 || !isAlnum(sub) {
			return Entry{}, fmt.Sprintf("region %q is not an ISO 3166-2 code of %s", short(fields[2]), cc)
		}
		e.Region = region
	}
	if reason := checkText(fields[3], maxCity, "city"); reason != "" {
		return Entry{}, reason
	}
	e.City = fields[3]
	if reason := checkText(fields[4], maxPostal, "postal code"); reason != "" {
		return Entry{}, reason
	}
	e.Postal = fields[4]
	return e, ""
}

// splitCSV splits one line by RFC 4180, which RFC 8805 follows.
func splitCSV(s string) ([]string, error) {
	if !strings.ContainsRune(s, '"') {
		return strings.Split(s, ","), nil
	}
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	rec, err := r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	return rec, nil
}

// parsePrefix reads a feed's prefix. A bare address is its host prefix.
func parsePrefix(s string) (netip.Prefix, string) {
	if s == "" {
		return netip.Prefix{}, "no prefix"
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Sprintf("%q is not an IP prefix", short(s))
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Sprintf("%s is an IPv4-mapped IPv6 prefix: write the IPv4 prefix", p)
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Sprintf("%s has host bits set (the prefix is %s)", p, m)
	}
	return p, ""
}

func checkText(s string, limit int, what string) string {
	if len(s) > limit {
		return fmt.Sprintf("%s longer than %d bytes", what, limit)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return what + " holds a control character"
		}
	}
	return ""
}

func isAlpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// short quotes at most 40 bytes of a field in a reason.
func short(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return s
}
