package names

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"math"
	"sync"
)

// The county-level boundaries of China resolve a place the tables do not
// know by its coordinates: the county that contains it, and so its
// prefecture-level city. china_regions.bin holds the simplified
// polygons, each as its county (an index in cnCounties) and its rings in
// fixed point (1/1024 degree, zigzag varint deltas). Its first use indexes
// the polygons by their boxes; their rings stay in the embedded file and
// are decoded as a point is tested against them, which only a place the
// tables do not know needs (the engine caches the record it composes):
// kept decoded, they took 2.7 MB of heap.

//go:embed china_regions.bin
var cnRegionsData []byte

// cnUnit is a prefecture-level city, a municipality, or a county-level
// division a province administers directly (仙桃市).
type cnUnit struct {
	province uint8  // index in cnProvinces
	chinese  string // "郑州市"
	english  string // "Zhengzhou"; "" when no source names it in English
	areaCode string
}

// cnCounty is a county-level division of a unit; chinese is "" where the
// boundary data's county was merged or renamed since and only its unit is
// known.
type cnCounty struct {
	unit    uint16
	chinese string
	key     string // its name's pinyin as foldPinyin folds an English spelling
}

// cnUnitIndex finds a unit by its Chinese name (no two share one) and
// lists each unit's counties.
type cnUnitIndex struct {
	byName   map[string]uint16
	counties [len(cnUnits)][]uint16
}

var cnUnitsIndex = sync.OnceValue(func() *cnUnitIndex {
	x := &cnUnitIndex{byName: make(map[string]uint16, len(cnUnits))}
	for i := range cnUnits {
		x.byName[cnUnits[i].chinese] = uint16(i)
	}
	for i := range cnCounties {
		u := cnCounties[i].unit
		x.counties[u] = append(x.counties[u], uint16(i))
	}
	return x
})

// cnCountyNamed returns the county of the unit named unitChinese (郑州市)
// that the English name spells ("Guancheng", "Nanshan Qu", "Peixian"):
// the one county of the unit whose key the name folds to, else, when no
// county has that key, the one whose key it folds to without a trailing
// word for its kind written together with it (Peixian pei, 沛县). Two
// counties of one key (临夏市 and 临夏县, 郁南县 and 云安区) are no answer.
func cnCountyNamed(unitChinese, english string) (string, bool) {
	var buf [64]byte
	key, ok := foldPinyin(buf[:0], trimDistrictWord(english))
	if !ok || len(key) == 0 {
		return "", false
	}
	x := cnUnitsIndex()
	u, ok := x.byName[unitChinese]
	if !ok {
		return "", false
	}
	name, n := countyWithKey(x.counties[u], key)
	if n == 0 {
		for _, w := range kindSyllables {
			if t, ok := bytes.CutSuffix(key, []byte(w)); ok && len(t) >= 2 {
				name, n = countyWithKey(x.counties[u], t)
				break
			}
		}
	}
	return name, n == 1
}

// kindSyllables are the words for a county's kind as the data writes them
// joined to its name.
var kindSyllables = [...]string{"xian", "qu", "shi", "qi"}

// countyWithKey returns the county among counties with the key, and how
// many have it.
func countyWithKey(counties []uint16, key []byte) (string, int) {
	name, n := "", 0
	for _, c := range counties {
		if cnCounties[c].key == string(key) {
			name, n = cnCounties[c].chinese, n+1
		}
	}
	return name, n
}

// foldPinyin appends to dst the key of an English spelling of a Chinese
// name: its letters in lower case, ü and v as u, without spaces,
// apostrophes or hyphens ("Yun'an" yunan, "Lüliang" luliang). A name with
// any other character, or too long for dst's capacity, has no key.
func foldPinyin(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			if c == 'v' {
				c = 'u'
			}
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
			if c == 'v' {
				c = 'u'
			}
		case c == ' ' || c == '\'' || c == '-':
			continue
		case c == 0xc3 && i+1 < len(s) && (s[i+1] == 0xbc || s[i+1] == 0x9c): // ü, Ü
			i++
			c = 'u'
		default:
			return dst, false
		}
		if len(dst) == cap(dst) {
			return dst, false
		}
		dst = append(dst, c)
	}
	return dst, true
}

type cnPolygon struct {
	county                 uint16
	province               uint8
	minX, minY, maxX, maxY int32
	rings                  uint32 // offset in the index's data of its rings: their count, then each ring
}

type cnRegionIndex struct {
	data     []byte // china_regions.bin
	polygons []cnPolygon
	cells    map[int32][]uint16 // 1° cell -> polygons whose box meets it
}

// regionScale is the fixed point of china_regions.bin, 1/1024 degree.
const regionScale = 1024

// cnNearLimit is how far, in degrees, a point outside every polygon may lie
// from the nearest one and still belong to it: the simplified coastlines
// and borders leave out some shore towns and islands. Within the province
// the data names, cnProvinceNearLimit: a point in the sea off its coast is
// the province's (DB-IP places Beidaihe 40 km out in the Bohai).
const (
	cnNearLimit         = 0.15
	cnProvinceNearLimit = 0.6
)

var cnRegions = sync.OnceValue(func() *cnRegionIndex {
	idx, ok := decodeRegions(cnRegionsData)
	if !ok {
		// The data is embedded: an undecodable file is a build defect,
		// and places the tables do not know stay unresolved.
		return &cnRegionIndex{}
	}
	return idx
})

// decodeRegions indexes the polygons of data, checking that all of it
// decodes.
func decodeRegions(data []byte) (*cnRegionIndex, bool) {
	b := data
	if len(b) < 5 || string(b[:5]) != "CNRG1" {
		return nil, false
	}
	b = b[5:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	nextI := func() (int64, bool) {
		v, n := binary.Varint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	np, ok := next()
	if !ok || np > 1<<16 {
		return nil, false
	}
	idx := &cnRegionIndex{data: data, polygons: make([]cnPolygon, 0, np), cells: map[int32][]uint16{}}
	for range np {
		county, ok := next()
		if !ok || county >= uint64(len(cnCounties)) {
			return nil, false
		}
		pg := cnPolygon{county: uint16(county), province: cnUnits[cnCounties[county].unit].province,
			minX: math.MaxInt32, minY: math.MaxInt32, maxX: math.MinInt32, maxY: math.MinInt32,
			rings: uint32(len(data) - len(b))}
		nr, ok := next()
		if !ok || nr > 1<<16 {
			return nil, false
		}
		for range nr {
			n, ok := next()
			if !ok || n > 1<<20 {
				return nil, false
			}
			var x, y int64
			for range n {
				dx, ok1 := nextI()
				dy, ok2 := nextI()
				if !ok1 || !ok2 || x+dx != int64(int32(x+dx)) || y+dy != int64(int32(y+dy)) {
					return nil, false
				}
				x, y = x+dx, y+dy
				pg.minX, pg.maxX = min(pg.minX, int32(x)), max(pg.maxX, int32(x))
				pg.minY, pg.maxY = min(pg.minY, int32(y)), max(pg.maxY, int32(y))
			}
		}
		i := uint16(len(idx.polygons))
		idx.polygons = append(idx.polygons, pg)
		for cy := floorDiv(pg.minY); cy <= floorDiv(pg.maxY); cy++ {
			for cx := floorDiv(pg.minX); cx <= floorDiv(pg.maxX); cx++ {
				k := cellKey(cx, cy)
				idx.cells[k] = append(idx.cells[k], i)
			}
		}
	}
	return idx, len(b) == 0
}

func floorDiv(v int32) int32 {
	if v < 0 {
		return -((-v + regionScale - 1) / regionScale)
	}
	return v / regionScale
}

func cellKey(cx, cy int32) int32 { return (cy+90)*360 + cx + 180 }

// cnCountyAt returns the index in cnCounties of the county containing
// the point, among the counties of province (an index in cnProvinces), or
// of all of China when province is negative. A point outside every
// polygon goes to the nearest one within near degrees.
func cnCountyAt(lat, lon float64, province int, near float64) (int, bool) {
	if !(lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180) {
		return 0, false
	}
	idx := cnRegions()
	x, y := lon*regionScale, lat*regionScale
	cx, cy := int32(math.Floor(lon)), int32(math.Floor(lat))
	for _, i := range idx.cells[cellKey(cx, cy)] {
		pg := &idx.polygons[i]
		if province >= 0 && int(pg.province) != province {
			continue
		}
		if x < float64(pg.minX) || x > float64(pg.maxX) || y < float64(pg.minY) || y > float64(pg.maxY) {
			continue
		}
		if idx.contains(pg, x, y) {
			return int(pg.county), true
		}
	}
	// Nearest edge within the limit, in the cells around.
	best, bestD := -1, math.Inf(1)
	limit := near * regionScale
	scale := math.Cos(lat * math.Pi / 180)
	cells := int32(math.Ceil(near))
	for dy := -cells; dy <= cells; dy++ {
		for dx := -cells; dx <= cells; dx++ {
			for _, i := range idx.cells[cellKey(cx+dx, cy+dy)] {
				pg := &idx.polygons[i]
				if province >= 0 && int(pg.province) != province {
					continue
				}
				if x < float64(pg.minX)-limit || x > float64(pg.maxX)+limit || y < float64(pg.minY)-limit || y > float64(pg.maxY)+limit {
					continue
				}
				if d := idx.distance(pg, x, y, scale); d < bestD {
					best, bestD = int(pg.county), d
				}
			}
		}
	}
	if best >= 0 && bestD <= limit {
		return best, true
	}
	return 0, false
}

// edges calls f with each edge of the polygon's rings, decoding them from
// the index's data as it goes (decodeRegions checked that they decode):
// (xi, yi) is a ring's point and (xj, yj) the one before it; closed adds
// each ring's edge from its last point back to its first, as (first,
// last).
func (idx *cnRegionIndex) edges(pg *cnPolygon, closed bool, f func(xi, yi, xj, yj float64)) {
	b := idx.data[pg.rings:]
	next := func() uint64 {
		v, n := binary.Uvarint(b)
		b = b[n:]
		return v
	}
	nextI := func() int64 {
		v, n := binary.Varint(b)
		b = b[n:]
		return v
	}
	for nr := next(); nr > 0; nr-- {
		n := next()
		var x, y int64
		var x0, y0, xj, yj float64
		for k := range n {
			x, y = x+nextI(), y+nextI()
			xi, yi := float64(int32(x)), float64(int32(y))
			if k == 0 {
				x0, y0 = xi, yi
			} else {
				f(xi, yi, xj, yj)
			}
			xj, yj = xi, yi
		}
		if closed && n > 0 {
			f(x0, y0, xj, yj)
		}
	}
}

// contains is the even-odd rule over all rings, so that holes and
// islands count right.
func (idx *cnRegionIndex) contains(pg *cnPolygon, x, y float64) bool {
	in := false
	idx.edges(pg, true, func(xi, yi, xj, yj float64) {
		if (yi > y) != (yj > y) && x < (xj-xi)*(y-yi)/(yj-yi)+xi {
			in = !in
		}
	})
	return in
}

// distance is the shortest distance from the point to the polygon's
// edges, longitudes scaled by the cosine of the latitude.
func (idx *cnRegionIndex) distance(pg *cnPolygon, x, y, scale float64) float64 {
	best := math.Inf(1)
	idx.edges(pg, false, func(bx, by, ax, ay float64) {
		best = min(best, segmentDistance(x*scale, y, ax*scale, ay, bx*scale, by))
	})
	return best
}

func segmentDistance(px, py, ax, ay, bx, by float64) float64 {
	dx, dy := bx-ax, by-ay
	t := 0.0
	if l := dx*dx + dy*dy; l > 0 {
		t = max(0, min(1, ((px-ax)*dx+(py-ay)*dy)/l))
	}
	return math.Hypot(px-(ax+t*dx), py-(ay+t*dy))
}
