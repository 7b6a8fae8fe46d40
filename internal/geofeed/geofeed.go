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
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
)

// Place is what a feed says of a prefix's location. A feed's entries
// share their places: a place written on many lines is held once.
type Place struct {
	Country string // ISO 3166-1 alpha-2, upper case
	Region  string // ISO 3166-2 ("US-CA"), upper case; "" when not given
	City    string // as the feed writes it; "" when not given
	Postal  string // "" when not given
}

// Entry is one good line of a feed.
type Entry struct {
	Prefix netip.Prefix // masked; an IPv4 prefix is never IPv4-mapped
	Place
	Line int
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

// DroppedRegion is a region a published feed names that is no ISO 3166-2
// code of its country ("GB-EN" where ISO writes GB-ENG), and the lines
// that name it.
type DroppedRegion struct {
	Region    string `json:"region"`
	Lines     int    `json:"lines"`
	FirstLine int    `json:"first_line"`
}

// Feed is a parsed feed: its good entries, in address order, and the
// first of its bad lines.
type Feed struct {
	// Problems are the first MaxProblems skipped lines, in line order;
	// Skipped counts them all.
	Problems []Problem
	Skipped  int
	Lines    int // lines read, comments and blank lines included
	// DroppedRegions are the first MaxProblems distinct regions a
	// published feed names that are no ISO 3166-2 code of their country,
	// in the order first met: their lines apply without them (see
	// ParseFeed). RegionsDropped counts those lines.
	DroppedRegions []DroppedRegion
	RegionsDropped int

	places  []Place
	entries entries
}

// Len is the number of good entries.
func (f *Feed) Len() int { return f.entries.n }

// Entry is the i-th good entry, in address order.
func (f *Feed) Entry(i int) Entry {
	e := f.entries.at(i)
	return Entry{Prefix: e.prefix(), Place: f.places[e.place], Line: int(e.line)}
}

// At is the i-th entry's prefix and the index of its place in Places:
// what a caller that handles each place once needs.
func (f *Feed) At(i int) (netip.Prefix, int) {
	e := f.entries.at(i)
	return e.prefix(), int(e.place)
}

// Places are the distinct places the entries name.
func (f *Feed) Places() []Place { return f.places }

// All yields the good entries in address order.
func (f *Feed) All() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for i := range f.Len() {
			if !yield(f.Entry(i)) {
				return
			}
		}
	}
}

// MaxSize bounds a feed, in bytes, as read from the network and as
// decompressed. The largest published feeds (iCloud Private Relay's egress
// ranges) are a few tens of MB.
const MaxSize = 256 << 20

// MaxEntries bounds the good lines of a feed. The largest published feed
// (iCloud Private Relay's) has a few hundred thousand; a feed past the
// bound is refused whole, not cut at an arbitrary line.
const MaxEntries = 1_000_000

// MaxPlaces bounds the distinct places (country, region, city, postal
// code) of a feed: each is resolved against the dataset and composed into
// a record, so a feed naming a new place on every line would cost far
// more than its entries. Published feeds name a few thousand.
const MaxPlaces = 100_000

// MaxProblems bounds the skipped lines a feed keeps (the first ones);
// Feed.Skipped counts them all.
const MaxProblems = 100

// Bounds on the text fields: RFC 8805 sets none, but a city name of a
// kilobyte is a broken line, not a place.
const (
	maxCity   = 200
	maxPostal = 32
)

// ErrTooLarge is a feed over MaxSize.
var ErrTooLarge = errors.New("geofeed: feed larger than 256 MB")

// ErrTooManyEntries is a feed of more than MaxEntries good lines.
var ErrTooManyEntries = fmt.Errorf("geofeed: more than %d entries", MaxEntries)

// ErrTooManyPlaces is a feed that names more than MaxPlaces places.
var ErrTooManyPlaces = fmt.Errorf("geofeed: more than %d distinct places", MaxPlaces)

// Parse reads a feed as a stream: what it keeps is its good entries
// (each place once) and its first MaxProblems bad lines, whatever the
// feed's size. file names it in the problems. Every line that cannot be
// used is skipped and counted; the rest still count. The error is only
// for a feed that cannot be read at all (a read error, a feed over
// MaxSize, with more than MaxEntries entries or MaxPlaces places).
//
// The rules, from RFC 8805 and what publishers write: "#" starts a
// comment line; blank lines are skipped; a UTF-8 byte order mark is
// ignored; fields are CSV (a city may be quoted), surrounding blanks
// trimmed; trailing empty fields may be left out ("98.97.32.0/24,US,US-WA,
// Seattle") and fields after the fifth are ignored. A line is refused for
// an unreadable prefix, a prefix with host bits set, an unknown country
// code, a region that is not an ISO 3166-2 code of that country (of any
// level, current or withdrawn: names.IsISO3166_2), or a city or postal code with control or invisible formatting characters or
// past a sane length. A prefix repeated in one feed keeps its first line.
//
// Parse is for the operator's own file (overrides), whose lines it refuses
// whole; ParseFeed for a published one.
func Parse(r io.Reader, file string) (*Feed, error) { return parse(r, file, false) }

// ParseFeed reads a published feed as Parse does, but for a region of the
// right shape and country that is no ISO 3166-2 code ("GB-EN", which
// iCloud Private Relay writes for England, where ISO writes GB-ENG): the
// line applies without its region, as a lookup without one would, since
// its country and city still place the addresses, and the region is
// counted in Feed.DroppedRegions. The operator who publishes the feed is
// not there to fix it, and dropping every such line would drop a
// country's whole share of the feed. A region of another country (US,
// DE-BE) still refuses the line: the line contradicts itself.
func ParseFeed(r io.Reader, file string) (*Feed, error) { return parse(r, file, true) }

func parse(r io.Reader, file string, dropRegions bool) (*Feed, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxSize+1), 64<<10)
	p := &parser{file: file, f: &Feed{}, text: map[string]string{}, places: map[Place]uint32{}, dropRegions: dropRegions}
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
			if total > MaxSize {
				return nil, ErrTooLarge
			}
			p.f.Lines = n
			p.skip(n, "line longer than 64 KiB")
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
		p.f.Lines = n
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		p.line = n
		e, ok, reason := p.parseLine(line)
		if p.err != nil {
			return nil, p.err
		}
		if reason != "" {
			p.skip(n, reason)
		} else if ok {
			if p.f.entries.n >= MaxEntries {
				return nil, ErrTooManyEntries
			}
			e.line = uint32(n)
			p.f.entries.add(e)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	p.dedup()
	return p.f, nil
}

// parser is the state of one Parse: the feed so far and the interned
// texts and places, so that a place repeated on a million lines is held
// once.
type parser struct {
	file   string
	f      *Feed
	text   map[string]string
	places map[Place]uint32
	err    error // what makes the whole feed unusable
	// dups are the first repeated prefixes found by dedup, by line.
	dups []dupLine
	// dropRegions says a region that is no ISO 3166-2 code is dropped,
	// not its line; dropped indexes f.DroppedRegions by region.
	dropRegions bool
	dropped     map[string]int
	line        int // the line being read
}

// skip counts a bad line, and keeps it among the first MaxProblems.
func (p *parser) skip(line int, reason string) {
	p.f.Skipped++
	if len(p.f.Problems) < MaxProblems {
		p.f.Problems = append(p.f.Problems, Problem{p.file, line, reason})
	}
}

// detail reports whether a bad line's reason is still kept: past the
// first MaxProblems, reasons are not even written.
func (p *parser) detail() bool { return len(p.f.Problems) < MaxProblems }

// intern returns the string of b, one copy per distinct text.
func (p *parser) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := p.text[string(b)]; ok {
		return s
	}
	s := string(b)
	p.text[s] = s
	return s
}

// skipped is a bad line's reason when it is not kept.
const skipped = "skipped"

// parseLine reads one line: an entry, or a reason to skip it; neither for
// a comment or a blank line. It allocates nothing for a line whose
// texts were seen before but the prefix's text, nor any reason past the
// first MaxProblems.
func (p *parser) parseLine(raw []byte) (e entry, ok bool, reason string) {
	b := bytes.TrimRight(raw, "\r\n")
	if !utf8.Valid(b) {
		return entry{}, false, "not UTF-8"
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] == '#' {
		return entry{}, false, ""
	}
	var fields [5][]byte
	if bytes.IndexByte(b, '"') < 0 {
		rest := b
		for i := range fields {
			f, tail, more := bytes.Cut(rest, []byte{','})
			fields[i] = f
			if !more {
				break
			}
			rest = tail
		}
	} else {
		rec, err := splitCSV(string(b))
		if err != nil {
			return entry{}, false, "not a CSV line: " + err.Error()
		}
		for i := range min(len(rec), len(fields)) {
			fields[i] = []byte(rec[i])
		}
	}
	for i := range fields {
		fields[i] = bytes.TrimSpace(fields[i])
	}
	pfx, reason := parsePrefix(string(fields[0]), p.detail())
	if reason != "" {
		return entry{}, false, reason
	}
	var up [8]byte
	cc := upper(up[:0], fields[1])
	switch {
	case len(cc) == 0:
		return entry{}, false, "no country: the line says nothing to correct"
	case len(cc) != 2 || !isAlpha(cc):
		return entry{}, false, p.why("country %q is not an ISO 3166-1 alpha-2 code", fields[1])
	}
	country, known := p.text[string(cc)]
	if !known {
		if names.Country(string(cc), ipatlas.English) == "" {
			return entry{}, false, p.why("unknown country code %q", cc)
		}
		country = p.intern(cc)
	}
	var place Place
	place.Country = country
	if len(fields[2]) > 0 {
		var rb [8]byte
		region := upper(rb[:0], fields[2])
		sub, ok := bytes.CutPrefix(region, []byte{cc[0], cc[1], '-'})
		switch {
		case len(region) > 6 || !ok || len(sub) < 1 || len(sub) > 3 || !isAlnum(sub):
			return entry{}, false, p.why("region %q is not an ISO 3166-2 code of "+country, fields[2])
		case names.IsISO3166_2(string(region)):
			place.Region = p.intern(region)
		case p.dropRegions:
			p.dropRegion(region)
		default:
			return entry{}, false, p.why("region %q is not an ISO 3166-2 code of "+country, fields[2])
		}
	}
	if reason := checkText(fields[3], maxCity, "city", p.detail()); reason != "" {
		return entry{}, false, reason
	}
	place.City = p.intern(fields[3])
	if reason := checkText(fields[4], maxPostal, "postal code", p.detail()); reason != "" {
		return entry{}, false, reason
	}
	place.Postal = p.intern(fields[4])
	idx, ok := p.places[place]
	if !ok {
		if len(p.f.places) >= MaxPlaces {
			p.err = ErrTooManyPlaces
			return entry{}, false, ""
		}
		idx = uint32(len(p.f.places))
		p.f.places = append(p.f.places, place)
		p.places[place] = idx
	}
	return newEntry(pfx, idx), true, ""
}

// dropRegion counts a line applied without its region.
func (p *parser) dropRegion(region []byte) {
	p.f.RegionsDropped++
	if i, ok := p.dropped[string(region)]; ok {
		p.f.DroppedRegions[i].Lines++
		return
	}
	if len(p.f.DroppedRegions) >= MaxProblems {
		return
	}
	if p.dropped == nil {
		p.dropped = map[string]int{}
	}
	p.dropped[string(region)] = len(p.f.DroppedRegions)
	p.f.DroppedRegions = append(p.f.DroppedRegions, DroppedRegion{Region: string(region), Lines: 1, FirstLine: p.line})
}

// why is a reason quoting a field, written only while reasons are kept.
func (p *parser) why(format string, field []byte) string {
	if !p.detail() {
		return skipped
	}
	return fmt.Sprintf(format, short(string(field)))
}

// upper appends b in upper case (ASCII) to dst, at most cap(dst) bytes:
// a longer field is cut, and then too long for what it is read as.
func upper(dst, b []byte) []byte {
	for _, c := range b {
		if len(dst) == cap(dst) {
			// One byte more than fits tells the caller it is too long.
			return append(dst[:len(dst):len(dst)], 'X')
		}
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// dedup sorts the entries by address and keeps the first line of each
// prefix; the others are skipped lines, merged by line number with the
// first problems.
func (p *parser) dedup() {
	s := &p.f.entries
	sort.Sort(s)
	w := 0
	for i := range s.n {
		e := s.at(i)
		if w > 0 {
			if prev := s.at(w - 1); prev.samePrefix(e) {
				p.f.Skipped++
				p.dup(dupLine{line: e.line, first: prev.line, e: *e})
				continue
			}
		}
		*s.at(w) = *e
		w++
	}
	s.truncate(w)
	if len(p.dups) > 0 {
		p.sortDups()
		ps := p.f.Problems
		for _, d := range p.dups[:min(len(p.dups), MaxProblems)] {
			ps = append(ps, Problem{p.file, int(d.line), fmt.Sprintf("%s is already on line %d", d.e.prefix(), d.first)})
		}
		slices.SortFunc(ps, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
		p.f.Problems = slices.Clip(ps[:min(len(ps), MaxProblems)])
	}
}

// dupLine is a line that repeats the prefix of an earlier one.
type dupLine struct {
	line, first uint32
	e           entry
}

// dup keeps a repeated line among the MaxProblems of lowest line.
func (p *parser) dup(d dupLine) {
	p.dups = append(p.dups, d)
	if len(p.dups) >= 2*MaxProblems {
		p.sortDups()
		p.dups = p.dups[:MaxProblems]
	}
}

func (p *parser) sortDups() {
	slices.SortFunc(p.dups, func(a, b dupLine) int { return cmp.Compare(a.line, b.line) })
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
// detail false leaves the reason unwritten.
func parsePrefix(s string, detail bool) (netip.Prefix, string) {
	if s == "" {
		return netip.Prefix{}, "no prefix"
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil || a.Zone() != "" {
			if !detail {
				return netip.Prefix{}, skipped
			}
			return netip.Prefix{}, fmt.Sprintf("%q is not an IP prefix", short(s))
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		if !detail {
			return netip.Prefix{}, skipped
		}
		return netip.Prefix{}, fmt.Sprintf("%s is an IPv4-mapped IPv6 prefix: write the IPv4 prefix", p)
	}
	if m := p.Masked(); m != p {
		if !detail {
			return netip.Prefix{}, skipped
		}
		return netip.Prefix{}, fmt.Sprintf("%s has host bits set (the prefix is %s)", p, m)
	}
	return p, ""
}

// checkText refuses a city or a postal code past limit bytes, or with a
// character that is not text: a control character, an invisible
// formatting one (Unicode category Cf: bidirectional overrides, zero-width
// spaces and marks, which make a name look like another), or a line or
// paragraph separator. detail false leaves the reason unwritten.
func checkText(b []byte, limit int, what string, detail bool) string {
	reason := ""
	if len(b) > limit {
		reason = fmt.Sprintf("%s longer than %d bytes", what, limit)
	}
	for i := 0; i < len(b) && reason == ""; {
		r, n := utf8.DecodeRune(b[i:])
		i += n
		switch {
		case !detail && (unicode.IsControl(r) || NotText(r)):
			return skipped
		case unicode.IsControl(r):
			reason = what + " holds a control character"
		case NotText(r):
			reason = fmt.Sprintf("%s holds an invisible formatting character (U+%04X)", what, r)
		}
	}
	if reason != "" && !detail {
		return skipped
	}
	return reason
}

// NotText reports the characters that are in no name although they are
// not control characters: invisible formatting characters (Unicode
// category Cf: bidirectional overrides and marks, zero-width spaces and
// joiners, the byte order mark), which make a name read as another or
// reorder what follows it, and the line and paragraph separators.
func NotText(r rune) bool {
	return r >= 0x80 && (unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029')
}

func isAlpha(b []byte) bool {
	for _, c := range b {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func isAlnum(b []byte) bool {
	for _, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
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

// entry is a good line as a feed keeps it: 28 bytes and no pointer, so
// that a million of them are 28 MB the garbage collector need not scan.
type entry struct {
	addr  [16]byte
	place uint32 // index in Feed.places
	line  uint32
	bits  uint8
	is4   bool
}

func newEntry(p netip.Prefix, place uint32) entry {
	a := p.Addr()
	e := entry{place: place, bits: uint8(p.Bits()), is4: a.Is4()}
	if e.is4 {
		v4 := a.As4()
		copy(e.addr[12:], v4[:])
	} else {
		e.addr = a.As16()
	}
	return e
}

func (e *entry) prefix() netip.Prefix {
	if e.is4 {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte(e.addr[12:])), int(e.bits))
	}
	return netip.PrefixFrom(netip.AddrFrom16(e.addr), int(e.bits))
}

func (e *entry) samePrefix(o *entry) bool {
	return e.addr == o.addr && e.bits == o.bits && e.is4 == o.is4
}

// compare orders entries by family (IPv4 first), address, prefix length
// (a prefix before those it contains), then line.
func (e *entry) compare(o *entry) int {
	if e.is4 != o.is4 {
		if e.is4 {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(e.addr[:], o.addr[:]); c != 0 {
		return c
	}
	if c := cmp.Compare(e.bits, o.bits); c != 0 {
		return c
	}
	return cmp.Compare(e.line, o.line)
}

// entries holds a feed's entries in chunks: growing never copies what is
// held (a slice doubling would need twice the memory for a moment).
type entries struct {
	chunks [][]entry
	n      int
}

const chunkBits = 14 // 16,384 entries, 448 KiB a chunk

func (s *entries) at(i int) *entry {
	return &s.chunks[i>>chunkBits][i&(1<<chunkBits-1)]
}

func (s *entries) add(e entry) {
	if s.n>>chunkBits == len(s.chunks) {
		s.chunks = append(s.chunks, make([]entry, 1<<chunkBits))
	}
	*s.at(s.n) = e
	s.n++
}

// truncate keeps the first n entries and frees the chunks past them.
func (s *entries) truncate(n int) {
	s.n = n
	keep := (n + 1<<chunkBits - 1) >> chunkBits
	clear(s.chunks[keep:])
	s.chunks = s.chunks[:keep]
}

func (s *entries) Len() int           { return s.n }
func (s *entries) Less(i, j int) bool { return s.at(i).compare(s.at(j)) < 0 }
func (s *entries) Swap(i, j int)      { a, b := s.at(i), s.at(j); *a, *b = *b, *a }
