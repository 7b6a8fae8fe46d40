package postal

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/names/fold"
)

// The bounds of a match, in kilometres from the place's coordinates.
const (
	// NameRadius bounds a match by name: the nearest code whose place has
	// the name asked for. A place of that name farther away is another
	// place of the same name (there are many Springfields), not this one.
	NameRadius = 30.0
	// NearRadius bounds a match by position alone, for a place whose name
	// no code's place has: the nearest code within it, which is the code
	// of the place or of its next neighbour. Farther, a code would more
	// often be wrong than right, and a wrong code is worse than none.
	NearRadius = 8.0
)

// cellDeg is the side of the grid cells the points are sorted by, in
// degrees: a search of NearRadius reads a few cells.
const cellDeg = 0.05

// An Index matches places to postal codes. It is built once (Builder)
// and read by any number of goroutines.
type Index struct {
	// ID identifies the data the index was built from (the first bytes
	// of its SHA-256), for those who keep what they derive from it.
	ID        uint64
	countries map[[2]byte]*country
	arena     []byte // length-prefixed strings: codes, name keys
	admins    []admin
	points    int
}

// country holds one country's points, sorted by cell, and its name
// entries, sorted by key.
type country struct {
	pts    []point
	names  []nameEntry
	single bool // the country has one code, every place's
}

type point struct {
	lat, lon float32
	cell     uint32
	code     uint32 // arena offset
	admin    uint16 // index into Index.admins
}

type nameEntry struct {
	key uint32 // arena offset of the folded name
	pt  uint32 // index into the country's pts
}

// admin is one first-level subdivision as the rows name it.
type admin struct {
	code string // ISO 3166-2 code without the country's part; "" when unknown
}

// str is the arena string at off. It shares the arena's memory, which
// no one writes once the index is built; strings handed out are copies,
// so that they do not keep the arena alive.
func (ix *Index) str(off uint32) string {
	n := uint32(ix.arena[off])
	return unsafe.String(&ix.arena[off+1], n)
}

func (ix *Index) strCmp(off uint32, s string) int { return strings.Compare(ix.str(off), s) }

// Len is how many codes (rows) the index holds.
func (ix *Index) Len() int {
	if ix == nil {
		return 0
	}
	return ix.points
}

// Countries lists the countries the index has codes for, sorted.
func (ix *Index) Countries() []string {
	if ix == nil {
		return nil
	}
	out := make([]string, 0, len(ix.countries))
	for cc := range ix.countries {
		out = append(out, string(cc[:]))
	}
	slices.Sort(out)
	return out
}

// Has reports whether the index has codes for the country.
func (ix *Index) Has(countryCode string) bool {
	cc, ok := ccOf(countryCode)
	return ok && ix != nil && ix.countries[cc] != nil
}

// Match is a postal code found for a place, with the point GeoNames gives
// the code.
type Match struct {
	Code     string
	Lat, Lon float64
	// ByName: the code's place has the name asked for; otherwise it is
	// the nearest code.
	ByName bool
	// Km is the distance from the coordinates asked for to the code's
	// point; NaN when none were given.
	Km float64
}

// Place is a place to find the postal code of.
type Place struct {
	Country string // ISO 3166-1 alpha-2
	// Subdivision is the first-level subdivision, by its English name or
	// its ISO 3166-2 code ("Quebec", "QC", "CA-QC"); "" when unknown.
	Subdivision string
	// Names are the names the place goes by, tried in turn: a town, then
	// the county or city that holds it.
	Names    []string
	Lat, Lon float64 // NaN when unknown
	// MaxKm bounds a match by name; 0 means NameRadius. A caller whose
	// names were resolved from the coordinates (the county or city that
	// contains them) may allow more, where the data's points are rough.
	MaxKm float64
}

// Code is the postal code of the place called name in countryCode (ISO
// 3166-1 alpha-2), in the first-level subdivision given by its English
// name or ISO 3166-2 code ("" when unknown), at lat, lon (NaN when
// unknown), as Lookup finds it; "" when there is none.
func (ix *Index) Code(countryCode, subdivision, name string, lat, lon float64) string {
	m, _ := ix.Lookup(Place{Country: countryCode, Subdivision: subdivision, Names: []string{name}, Lat: lat, Lon: lon})
	return m.Code
}

// Lookup finds the postal code of a place. It prefers, in order:
//
//  1. a code whose place has one of the place's names (the first name
//     that any code's place has), in its subdivision where both are
//     known, nearest to its coordinates and within MaxKm of them;
//     without coordinates, the code of that name nearest the middle of
//     all of them;
//  2. the nearest code of the country (and subdivision) within
//     NearRadius of the coordinates;
//  3. in a territory with a single code (Gibraltar, the Vatican), that
//     code;
//
// and otherwise finds none (ok false).
func (ix *Index) Lookup(pl Place) (m Match, ok bool) {
	cc, ok := ccOf(pl.Country)
	if !ok || ix == nil {
		return Match{}, false
	}
	c := ix.countries[cc]
	if c == nil {
		return Match{}, false
	}
	sub := ""
	if pl.Subdivision != "" {
		sub = names.SubdivisionCode(pl.Country, pl.Subdivision)
	}
	lat, lon := pl.Lat, pl.Lon
	hasCoords := !math.IsNaN(lat) && !math.IsNaN(lon) && math.Abs(lat) <= 90 && math.Abs(lon) <= 180
	maxKm := pl.MaxKm
	if maxKm <= 0 {
		maxKm = NameRadius
	}
	var buf [8]string
	keys := buf[:0]
	for _, name := range pl.Names {
		keys = nameKeys(keys, name)
	}
	for _, key := range keys {
		lo, hi := ix.nameRange(c, key)
		if lo == hi {
			continue
		}
		if m, ok := ix.byName(c, c.names[lo:hi], sub, lat, lon, hasCoords, maxKm); ok {
			return m, true
		}
	}
	if hasCoords {
		if m, ok := ix.nearest(c, sub, lat, lon); ok {
			return m, true
		}
	}
	if c.single {
		p := &c.pts[0]
		m := Match{Code: strings.Clone(ix.str(p.code)), Lat: float64(p.lat), Lon: float64(p.lon), Km: math.NaN()}
		if hasCoords {
			m.Km = Km(lat, lon, m.Lat, m.Lon)
		}
		return m, true
	}
	return Match{}, false
}

// compatible reports whether a point may be the code of a place in the
// subdivision sub: unless both are known and differ.
func (ix *Index) compatible(p *point, sub string) bool {
	if sub == "" {
		return true
	}
	a := ix.admins[p.admin].code
	return a == "" || a == sub
}

func (ix *Index) nameRange(c *country, key string) (int, int) {
	lo, _ := slices.BinarySearchFunc(c.names, key, func(e nameEntry, k string) int { return ix.strCmp(e.key, k) })
	hi := lo
	for hi < len(c.names) && ix.strCmp(c.names[hi].key, key) == 0 {
		hi++
	}
	return lo, hi
}

func (ix *Index) byName(c *country, es []nameEntry, sub string, lat, lon float64, hasCoords bool, maxKm float64) (Match, bool) {
	if !hasCoords {
		// The middle of the places of that name in the subdivision.
		var sLat, sLon float64
		n := 0
		for _, e := range es {
			if p := &c.pts[e.pt]; ix.compatible(p, sub) {
				sLat, sLon = sLat+float64(p.lat), sLon+float64(p.lon)
				n++
			}
		}
		if n == 0 {
			return Match{}, false
		}
		lat, lon = sLat/float64(n), sLon/float64(n)
	}
	near := newNearness(lat, lon)
	best, bestD := -1, math.Inf(1)
	for _, e := range es {
		p := &c.pts[e.pt]
		if !ix.compatible(p, sub) {
			continue
		}
		d := near.of(p)
		if d < bestD || d == bestD && best >= 0 && ix.str(p.code) < ix.str(c.pts[best].code) {
			best, bestD = int(e.pt), d
		}
	}
	if best < 0 {
		return Match{}, false
	}
	p := &c.pts[best]
	bestKm := Km(lat, lon, float64(p.lat), float64(p.lon))
	if hasCoords && bestKm > maxKm {
		return Match{}, false
	}
	m := Match{Code: strings.Clone(ix.str(p.code)), Lat: float64(p.lat), Lon: float64(p.lon), ByName: true, Km: bestKm}
	if !hasCoords {
		m.Km = math.NaN()
	}
	return m, true
}

// nearest is the nearest point of c within NearRadius of lat, lon.
func (ix *Index) nearest(c *country, sub string, lat, lon float64) (Match, bool) {
	const kmPerDeg = 111.2
	dLat := NearRadius / kmPerDeg
	cosLat := math.Cos((math.Abs(lat) + dLat) * math.Pi / 180)
	dLon := 180.0
	if cosLat > 0.01 {
		dLon = min(dLat/cosLat, 180)
	}
	near := newNearness(lat, lon)
	best, bestD := -1, math.Inf(1)
	r0, r1 := cellRow(lat-dLat), cellRow(lat+dLat)
	for _, span := range lonSpans(lon, dLon) {
		c0, c1 := cellCol(span[0]), cellCol(span[1])
		for r := r0; r <= r1; r++ {
			lo, _ := slices.BinarySearchFunc(c.pts, r<<16|c0, func(p point, k uint32) int { return cmp.Compare(p.cell, k) })
			for i := lo; i < len(c.pts) && c.pts[i].cell <= r<<16|c1; i++ {
				p := &c.pts[i]
				if !ix.compatible(p, sub) {
					continue
				}
				d := near.of(p)
				if d < bestD || d == bestD && best >= 0 && ix.str(p.code) < ix.str(c.pts[best].code) {
					best, bestD = i, d
				}
			}
		}
	}
	if best < 0 {
		return Match{}, false
	}
	p := &c.pts[best]
	bestKm := Km(lat, lon, float64(p.lat), float64(p.lon))
	if bestKm > NearRadius {
		return Match{}, false
	}
	return Match{Code: strings.Clone(ix.str(p.code)), Lat: float64(p.lat), Lon: float64(p.lon), Km: bestKm}, true
}

// nearness orders points by their distance from one place: the square
// of the equirectangular distance, which orders points within a few
// hundred kilometres as the great circle does, without trigonometry per
// point.
type nearness struct{ lat, lon, cos float64 }

func newNearness(lat, lon float64) nearness {
	return nearness{lat, lon, math.Cos(lat * math.Pi / 180)}
}

func (n nearness) of(p *point) float64 {
	dLat := float64(p.lat) - n.lat
	dLon := math.Abs(float64(p.lon) - n.lon)
	if dLon > 180 {
		dLon = 360 - dLon
	}
	dLon *= n.cos
	return dLat*dLat + dLon*dLon
}

// lonSpans splits [lon-d, lon+d] at the antimeridian.
func lonSpans(lon, d float64) [][2]float64 {
	lo, hi := lon-d, lon+d
	switch {
	case hi-lo >= 360:
		return [][2]float64{{-180, 180}}
	case lo < -180:
		return [][2]float64{{-180, hi}, {lo + 360, 180}}
	case hi > 180:
		return [][2]float64{{lo, 180}, {-180, hi - 360}}
	}
	return [][2]float64{{lo, hi}}
}

func cellRow(lat float64) uint32 {
	return uint32(math.Floor((min(max(lat, -90), 90) + 90) / cellDeg))
}

func cellCol(lon float64) uint32 {
	return uint32(math.Floor((min(max(lon, -180), 180) + 180) / cellDeg))
}

func cellOf(lat, lon float64) uint32 { return cellRow(lat)<<16 | cellCol(lon) }

// Km is the great-circle distance between two points, in kilometres.
func Km(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0
	p1, p2 := lat1*math.Pi/180, lat2*math.Pi/180
	dp, dl := p2-p1, (lon2-lon1)*math.Pi/180
	a := math.Sin(dp/2)*math.Sin(dp/2) + math.Cos(p1)*math.Cos(p2)*math.Sin(dl/2)*math.Sin(dl/2)
	return 2 * r * math.Asin(math.Sqrt(min(a, 1)))
}

func ccOf(s string) ([2]byte, bool) {
	if len(s) != 2 {
		return [2]byte{}, false
	}
	b := [2]byte{s[0] &^ 0x20, s[1] &^ 0x20}
	if b[0] < 'A' || b[0] > 'Z' || b[1] < 'A' || b[1] > 'Z' {
		return [2]byte{}, false
	}
	return b, true
}

// kindWords end the names of places that are named by their kind as well
// ("Changfeng County", "Licheng District"): the name without the word is
// the place's too.
var kindWords = []string{"county", "district", "city", "shi", "xian", "qu"}

// nameKeys appends the keys a place name is found by: its fold key
// (package fold), and where it has them, the key without a bracket
// ("Wainwright Region (Tofield)": "wainwright region" and "tofield"),
// without a trailing number ("Paris 01": "paris") or without a word for
// its kind ("Changfeng County": "changfeng").
func nameKeys(dst []string, name string) []string {
	add := func(k string) {
		if k != "" && !slices.Contains(dst, k) {
			dst = append(dst, k)
		}
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return dst
	}
	full := fold.String(name)
	add(full)
	if i := strings.IndexByte(name, '('); i > 0 {
		if j := strings.IndexByte(name[i:], ')'); j > 0 {
			add(fold.String(name[:i] + name[i+j+1:]))
			add(fold.String(name[i+1 : i+j]))
		}
	}
	if i := strings.LastIndexByte(full, ' '); i > 0 {
		last := full[i+1:]
		if strings.Trim(last, "0123456789") == "" || slices.Contains(kindWords, last) {
			add(full[:i])
		}
	}
	return dst
}

// A Builder collects rows into an Index.
type Builder struct {
	rows     map[[2]byte][]point
	keys     map[[2]byte][]builderKey
	arena    []byte
	admins   []admin
	adminIDs map[string]uint16 // country + "\x00" + Admin1 + "\x00" + Admin1Code
	n        int
}

type builderKey struct {
	key uint32
	pt  uint32
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{rows: map[[2]byte][]point{}, keys: map[[2]byte][]builderKey{}, adminIDs: map[string]uint16{}}
}

func (b *Builder) appendStr(s string) uint32 {
	if len(s) > 255 {
		s = s[:255]
	}
	off := uint32(len(b.arena))
	b.arena = append(b.arena, byte(len(s)))
	b.arena = append(b.arena, s...)
	return off
}

// Usable reports whether a row names a place's code: not a code of a
// company's or a post office box's mail alone (France's CEDEX codes), nor
// the placeholder GeoNames lists for Hong Kong and Macau, which have no
// postal codes.
func Usable(r *Row) bool {
	return !strings.Contains(r.Code, "CEDEX") && r.Country != "HK" && r.Country != "MO"
}

// Add adds one row; a row that is not Usable is left out.
func (b *Builder) Add(r *Row) {
	if !Usable(r) {
		return
	}
	cc, ok := ccOf(r.Country)
	if !ok {
		return
	}
	ak := r.Country + "\x00" + r.Admin1 + "\x00" + r.Admin1Code
	aid, ok := b.adminIDs[ak]
	if !ok {
		code := ""
		if r.Admin1 != "" {
			code = names.SubdivisionCode(r.Country, r.Admin1)
		}
		if code == "" && r.Admin1Code != "" {
			code = names.SubdivisionCode(r.Country, r.Admin1Code)
		}
		if len(b.admins) > math.MaxUint16 {
			return // no country has that many subdivisions
		}
		aid = uint16(len(b.admins))
		b.admins = append(b.admins, admin{code: code})
		b.adminIDs[ak] = aid
	}
	pts := b.rows[cc]
	i := uint32(len(pts))
	b.rows[cc] = append(pts, point{lat: float32(r.Lat), lon: float32(r.Lon), cell: cellOf(r.Lat, r.Lon),
		code: b.appendStr(r.Code), admin: aid})
	var buf [3]string
	for _, k := range nameKeys(buf[:0], r.Place) {
		b.keys[cc] = append(b.keys[cc], builderKey{b.appendStr(k), i})
	}
	b.n++
}

// Index sorts what was added into an Index; the Builder is spent.
func (b *Builder) Index() *Index {
	ix := &Index{countries: make(map[[2]byte]*country, len(b.rows)), arena: slices.Clip(b.arena), admins: b.admins, points: b.n}
	for cc, pts := range b.rows {
		// Sort by cell, keeping a permutation to renumber the name keys.
		order := make([]uint32, len(pts))
		for i := range order {
			order[i] = uint32(i)
		}
		slices.SortStableFunc(order, func(x, y uint32) int { return cmp.Compare(pts[x].cell, pts[y].cell) })
		where := make([]uint32, len(pts))
		sorted := make([]point, len(pts))
		for to, from := range order {
			sorted[to] = pts[from]
			where[from] = uint32(to)
		}
		keys := b.keys[cc]
		es := make([]nameEntry, len(keys))
		for i, k := range keys {
			es[i] = nameEntry{key: k.key, pt: where[k.pt]}
		}
		slices.SortStableFunc(es, func(x, y nameEntry) int { return strings.Compare(ix.str(x.key), ix.str(y.key)) })
		single := true
		for i := range sorted {
			single = single && ix.str(sorted[i].code) == ix.str(sorted[0].code)
		}
		ix.countries[cc] = &country{pts: sorted, names: es, single: single}
		delete(b.rows, cc) // each country's rows go as soon as they are sorted
		delete(b.keys, cc)
	}
	b.rows, b.keys = nil, nil
	return ix
}

// Load reads a file in GeoNames' format, or as Open takes it, into an
// Index whose ID is that of the file's bytes (FileID).
func Load(rd io.ReaderAt, size int64) (*Index, error) {
	id, err := FileID(io.NewSectionReader(rd, 0, size))
	if err != nil {
		return nil, err
	}
	r, err := Open(rd, size)
	if err != nil {
		return nil, err
	}
	b := NewBuilder()
	if err := Read(r, func(row *Row) error { b.Add(row); return nil }); err != nil {
		return nil, err
	}
	ix := b.Index()
	ix.ID = id
	return ix, nil
}

// FileID is the id of a file's bytes: the first eight bytes of their
// SHA-256, little-endian.
func FileID(r io.Reader) (uint64, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(h.Sum(nil)), nil
}
