// Package cityindex is the format of package names' table of the world's
// cities: rows that name a place (its Chinese name and coordinates) under a
// country and a folded key, laid out so that a lookup searches the bytes
// as they are embedded in the binary, with no decoding into the heap. The
// generator (names/gen) encodes the table, package names searches it; both
// use this package, so the two sides cannot drift.
//
// A table is three parts, each a file of its own:
//
//   - Keys, the index: the rows sorted by country and key, in blocks of
//     BlockRows rows. A directory of the 26×26 two-letter codes (each the
//     first block of the country) and an index of the blocks (each its
//     offset, the number of places before it, and its first key's first 8
//     bytes), both fixed-width, lead a lookup to its country's blocks and
//     by binary search to one of them, which it reads row by row. Within a
//     block a row's key is written as the bytes it does not share with the
//     key before it (front coding), and its place as the next place not
//     yet seen or a small offset from the block's first one; most rows
//     take a header byte, a length byte and a few letters.
//   - Places, 8 bytes a place: the offset of its name in Names and its
//     coordinates, packed in a little-endian uint64.
//   - Names, UTF-8 text: the distinct Chinese names, one a line, so that a
//     name found is a slice of the embedded string.
//
// Numbers are little-endian, varints encoding/binary's; key prefixes are
// bytes in order, so that they compare as big-endian numbers.
package cityindex

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// A Match is what a lookup weighs of a row it finds: where the place is,
// and how far from it a point may be.
type Match struct {
	Lat, Lon int32  // 1e-4 degrees
	Radius   uint16 // 100 m: a point farther away is not this place
	Unique   bool   // no other place of the country has the key
	Alt      bool   // the key is one of the place's alternate names
}

// A Row is an entry of the table: a place named Name under a country and
// a key.
type Row struct {
	Country string // "US": two ASCII letters
	Key     string // a folded name (package fold)
	Name    string // "山景城"
	Match
}

const (
	// MaxKey is the longest key a table holds, in bytes.
	MaxKey = 255
	// BlockRows is the number of rows of a block, but for a country's
	// last one: a lookup reads half as many on average.
	BlockRows = 8

	magic       = "CIX1"
	headerSize  = 12        // magic, two radii, the blocks' count
	countries   = 26*26 + 1 // the directory's entries: AA to ZZ, then the end
	countrySize = 4         // first block
	blockSize   = 16        // offset, first place, the first key's first 8 bytes
	placeSize   = 8

	latBits, lonBits, nameBits = 21, 22, 21
	latBias, lonBias           = 90 * 1e4, 180 * 1e4
)

// The header byte of a row.
const (
	rowRadius     = 0b11 // 0, 1: the table's first or second radius; 2: a uvarint follows
	rowUnique     = 1 << 2
	rowAlt        = 1 << 3
	rowNewPlace   = 1 << 4 // else a varint follows: the place less the block's first one
	rowLongLength = 1 << 5 // the key's shared and own lengths follow in a byte each, not a nibble each
)

// Data is the three parts of a table, as Encode writes them and as they
// are embedded.
type Data struct {
	Keys   []byte
	Places []byte
	Names  string
}

// A Table is a table opened for lookups. Its zero value is an empty table.
type Table struct {
	dir    []byte // countrySize bytes a code, AA to ZZ, then the end
	blocks []byte // blockSize bytes a block, and one more for the end
	rows   []byte
	places []byte
	names  string
	radius [2]uint16
}

// Open reads the headers of d, in constant time: it leaves the rows, which
// Check verifies, as they are.
func Open(d Data) (*Table, error) {
	k := d.Keys
	if len(k) < headerSize || string(k[:4]) != magic {
		return nil, errors.New("cityindex: not a city index")
	}
	nb := int(binary.LittleEndian.Uint32(k[8:]))
	dir := headerSize + countries*countrySize
	rows := dir + (nb+1)*blockSize
	if nb > len(k) || rows > len(k) {
		return nil, errors.New("cityindex: index truncated")
	}
	t := &Table{
		dir:    k[headerSize:dir],
		blocks: k[dir:rows],
		rows:   k[rows:],
		places: d.Places,
		names:  d.Names,
		radius: [2]uint16{binary.LittleEndian.Uint16(k[4:]), binary.LittleEndian.Uint16(k[6:])},
	}
	if t.countryBlock(countries-1) != nb || t.blockOffset(nb) != len(t.rows) || len(d.Places)%placeSize != 0 || t.blockPlace(nb) != len(d.Places)/placeSize {
		return nil, errors.New("cityindex: parts of different tables")
	}
	if d.Names != "" && d.Names[len(d.Names)-1] != '\n' {
		return nil, errors.New("cityindex: names truncated")
	}
	return t, nil
}

func (t *Table) numBlocks() int { return len(t.blocks)/blockSize - 1 }

// countryBlock is the first block of the country of directory entry i
// (and the last one's end): the country's blocks end where the next
// entry's begin.
func (t *Table) countryBlock(i int) int {
	return int(binary.LittleEndian.Uint32(t.dir[i*countrySize:]))
}

// countryEntry is the directory entry of a two-letter code, false for
// one not of two capital letters.
func countryEntry(c0, c1 byte) (int, bool) {
	if c0 < 'A' || c0 > 'Z' || c1 < 'A' || c1 > 'Z' {
		return 0, false
	}
	return int(c0-'A')*26 + int(c1-'A'), true
}
func (t *Table) blockOffset(b int) int {
	return int(binary.LittleEndian.Uint32(t.blocks[b*blockSize:]))
}
func (t *Table) blockPlace(b int) int {
	return int(binary.LittleEndian.Uint32(t.blocks[b*blockSize+4:]))
}
func (t *Table) blockPrefix(b int) uint64 {
	return binary.BigEndian.Uint64(t.blocks[b*blockSize+8:])
}

// prefix is the first 8 bytes of key, padded with zeros, as a big-endian
// number: where two keys' prefixes differ, they are in the same order.
func prefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var v uint64
	for i := range 8 {
		v <<= 8
		if i < len(key) {
			v |= uint64(key[i])
		}
	}
	return v
}

// firstKey is the key of a block's first row, written whole.
func (t *Table) firstKey(b int) []byte {
	at := t.blockOffset(b)
	h := t.rows[at]
	if h&rowLongLength != 0 {
		n := int(t.rows[at+2])
		return t.rows[at+3 : at+3+n]
	}
	n := int(t.rows[at+1] & 0x0f)
	return t.rows[at+2 : at+2+n]
}

// place decodes the coordinates of place i.
func (t *Table) place(i int, m *Match) {
	v := binary.LittleEndian.Uint64(t.places[i*placeSize:])
	m.Lat = int32(v>>nameBits&(1<<latBits-1)) - latBias
	m.Lon = int32(v>>(nameBits+latBits)) - lonBias
}

// name returns the name of place i.
func (t *Table) name(i int) string {
	at := int(binary.LittleEndian.Uint64(t.places[i*placeSize:]) & (1<<nameBits - 1))
	n := strings.IndexByte(t.names[at:], '\n')
	return t.names[at : at+n]
}

// A reader reads the rows of a run of blocks in order.
type reader struct {
	t        *Table
	pos, end int // the next row and the end of the run, offsets in t.rows
	block    int // the block being read
	blockEnd int
	first    int // the block's first place
	next     int // the place of the next row with a new place
}

func (r *reader) enter(b int) {
	r.block, r.pos, r.blockEnd = b, r.t.blockOffset(b), r.t.blockOffset(b+1)
	r.first = r.t.blockPlace(b)
	r.next = r.first
}

// row decodes the row at r.pos, entering the next block where one ends:
// the length of the key it shares with the row before (0 for a block's
// first), the bytes of its own, its place, radius and header byte.
func (r *reader) row() (shared int, own []byte, place int, radius uint16, h byte) {
	if r.pos == r.blockEnd {
		r.enter(r.block + 1)
	}
	b := r.t.rows
	h = b[r.pos]
	var n int
	if h&rowLongLength != 0 {
		shared, n = int(b[r.pos+1]), int(b[r.pos+2])
		r.pos += 3
	} else {
		shared, n = int(b[r.pos+1]>>4), int(b[r.pos+1]&0x0f)
		r.pos += 2
	}
	own = b[r.pos : r.pos+n]
	r.pos += n
	switch h & rowRadius {
	case 0, 1:
		radius = r.t.radius[h&rowRadius]
	default:
		v, n := binary.Uvarint(b[r.pos:])
		radius = uint16(v)
		r.pos += n
	}
	if h&rowNewPlace != 0 {
		place = r.next
		r.next++
	} else {
		d, n := varint(b[r.pos:])
		place = r.first + d
		r.pos += n
	}
	return shared, own, place, radius, h
}

// varint is binary.Varint, inline for the one and two bytes that most
// place offsets take.
func varint(b []byte) (int, int) {
	var u uint
	var n int
	switch {
	case b[0] < 0x80:
		u, n = uint(b[0]), 1
	case b[1] < 0x80:
		u, n = uint(b[0]&0x7f)|uint(b[1])<<7, 2
	default:
		v, n := binary.Varint(b)
		return int(v), n
	}
	return int(u>>1) ^ -int(u&1), n
}

// A Cursor reads the rows of one country and key, in the table's order;
// Find returns one.
type Cursor struct {
	reader
	target []byte
	match  int // how much of target the row read last begins with
	place  int // the row's
	radius uint16
	header byte
}

// Find returns a cursor over the rows of the country (its two letters as
// c[0]<<8 | c[1]) whose key is key. It allocates nothing.
func (t *Table) Find(country uint16, key []byte) Cursor {
	// The cursor starts at the end of the block before the one to read,
	// which its first row enters.
	b, start, end := t.locate(country, key)
	return Cursor{reader: reader{t: t, block: b - 1, pos: start, blockEnd: start, end: end}, target: key}
}

// locate returns the block where the rows of the country and key begin,
// if there are any, its offset, and the offset where the country's rows
// end; start and end are equal where there are none.
func (t *Table) locate(country uint16, key []byte) (block, start, end int) {
	ci, ok := countryEntry(byte(country>>8), byte(country))
	if !ok || len(t.dir) == 0 {
		return 0, 0, 0
	}
	b0, b1 := t.countryBlock(ci), t.countryBlock(ci+1)
	if b0 == b1 {
		return 0, 0, 0
	}
	// The first block whose first key is not before key: the rows of
	// key, if any, begin in the block before it, or in it. The index
	// holds each first key's prefix, so that most steps do not read the
	// rows.
	kp := prefix(key)
	lo, hi := b0, b1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if p := t.blockPrefix(m); p < kp || p == kp && bytes.Compare(t.firstKey(m), key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	b := max(b0, lo-1)
	return b, t.blockOffset(b), t.blockOffset(b1)
}

// Next advances to the next row of the key, and reports whether there is
// one. It compares each row's own bytes with the key where the row before
// stopped matching it, the rows being in order: a row that shares more
// with the row before than that row matched of the key is still before
// the key, one that shares less is past it.
func (c *Cursor) Next() bool {
	for c.pos < c.end {
		if c.pos == c.blockEnd {
			c.match = 0 // a block's first key is whole
		}
		shared, own, place, radius, h := c.row()
		if shared > c.match {
			continue
		}
		if shared < c.match {
			break
		}
		rest := c.target[c.match:]
		n := 0
		for n < len(own) && n < len(rest) && own[n] == rest[n] {
			n++
		}
		c.match += n
		switch {
		case n == len(own) && n == len(rest):
			c.place, c.radius, c.header = place, radius, h
			return true
		case n == len(own) || n < len(rest) && own[n] < rest[n]:
			continue
		}
		break
	}
	c.pos = c.end
	return false
}

// Match is the row Next advanced to.
func (c *Cursor) Match() Match {
	m := Match{Radius: c.radius, Unique: c.header&rowUnique != 0, Alt: c.header&rowAlt != 0}
	c.t.place(c.place, &m)
	return m
}

// Name is the name of the row Next advanced to, read apart from Match so
// that a lookup reads only the names it returns.
func (c *Cursor) Name() string {
	// Read through c.t, not held in c: escape analysis then does not take
	// a name returned to hold c.target, the caller's buffer, which stays
	// on its stack.
	return c.t.name(c.place)
}

// All returns every row, in the table's order. It is for tests and tools:
// each row's key is a new string.
func (t *Table) All() iter.Seq[Row] {
	return func(yield func(Row) bool) {
		if len(t.dir) == 0 {
			return
		}
		for ci := range countries - 1 {
			b0, b1 := t.countryBlock(ci), t.countryBlock(ci+1)
			if b0 == b1 {
				continue
			}
			country := string([]byte{'A' + byte(ci/26), 'A' + byte(ci%26)})
			r := reader{t: t, end: t.blockOffset(b1)}
			r.enter(b0)
			var key []byte
			for r.pos < r.end {
				shared, own, place, radius, h := r.row()
				key = append(key[:shared], own...)
				row := Row{Country: country, Key: string(key), Name: t.name(place)}
				t.place(place, &row.Match)
				row.Radius, row.Unique, row.Alt = radius, h&rowUnique != 0, h&rowAlt != 0
				if !yield(row) {
					return
				}
			}
		}
	}
}

// Check verifies every byte of the table: that each row decodes within
// its block, with a key no longer than MaxKey, not before the one before
// it and sharing with it all it says it does, a place that exists, and a
// name that starts a line. Lookups in a table Check accepts stay within
// its bytes and find every row of their key.
func (t *Table) Check() error {
	nb := t.numBlocks()
	nplaces := len(t.places) / placeSize
	if len(t.dir) == 0 {
		return nil // the empty table
	}
	for ci := range countries - 1 {
		if b0, b1 := t.countryBlock(ci), t.countryBlock(ci+1); b0 > b1 || ci == 0 && b0 != 0 {
			return fmt.Errorf("cityindex: directory entry %d: blocks %d to %d", ci, b0, b1)
		}
	}
	for b := range nb {
		if t.blockOffset(b) >= t.blockOffset(b+1) || t.blockPlace(b) > t.blockPlace(b+1) {
			return fmt.Errorf("cityindex: block %d is empty or out of order", b)
		}
	}

	if t.blockOffset(0) != 0 {
		return errors.New("cityindex: rows before the first block")
	}
	var key, prev [MaxKey]byte
	keyLen, prevLen := 0, 0
	for ci := range countries - 1 {
		prevLen = 0 // the keys of a country are in order from its first
		for b := t.countryBlock(ci); b < t.countryBlock(ci+1); b++ {
			end, first := t.blockOffset(b+1), t.blockPlace(b)
			next := first
			for at, firstRow := t.blockOffset(b), true; at < end; firstRow = false {
				h := t.rows[at]
				if h>>6 != 0 || h&rowRadius == 3 {
					return fmt.Errorf("cityindex: block %d: bad row header %#x", b, h)
				}
				var shared, own int
				switch {
				case h&rowLongLength != 0 && at+3 <= end:
					shared, own = int(t.rows[at+1]), int(t.rows[at+2])
					at += 3
				case h&rowLongLength == 0 && at+2 <= end:
					shared, own = int(t.rows[at+1]>>4), int(t.rows[at+1]&0x0f)
					at += 2
				default:
					return fmt.Errorf("cityindex: block %d truncated", b)
				}
				if firstRow && shared != 0 || shared > keyLen || shared+own == 0 || shared+own > MaxKey || at+own > end {
					return fmt.Errorf("cityindex: block %d: bad key lengths %d+%d", b, shared, own)
				}
				if !firstRow && shared < keyLen && own > 0 && t.rows[at] == key[shared] {
					// Next takes a row that shares less than the one
					// before matched of a key to be past it.
					return fmt.Errorf("cityindex: block %d: a key shares more than it says", b)
				}
				copy(key[shared:], t.rows[at:at+own])
				keyLen = shared + own
				at += own
				if bytes.Compare(prev[:prevLen], key[:keyLen]) > 0 {
					return fmt.Errorf("cityindex: block %d: key %q out of order", b, key[:keyLen])
				}
				prev, prevLen = key, keyLen
				if h&rowRadius == 2 {
					v, n := binary.Uvarint(t.rows[at:end])
					if n <= 0 || v > 0xffff {
						return fmt.Errorf("cityindex: block %d: bad radius", b)
					}
					at += n
				}
				place := next
				if h&rowNewPlace != 0 {
					next++
				} else {
					d, n := binary.Varint(t.rows[at:end])
					if n <= 0 || d < -int64(nplaces) || d > int64(nplaces) {
						return fmt.Errorf("cityindex: block %d: bad place", b)
					}
					place = first + int(d)
					at += n
				}
				if place < 0 || place >= nplaces {
					return fmt.Errorf("cityindex: block %d: place %d of %d", b, place, nplaces)
				}
			}
			if next != t.blockPlace(b+1) {
				return fmt.Errorf("cityindex: block %d: %d new places, the index says %d", b, next-first, t.blockPlace(b+1)-first)
			}
		}
	}
	for b := range nb { // firstKey reads rows checked above
		if t.blockPrefix(b) != prefix(t.firstKey(b)) {
			return fmt.Errorf("cityindex: block %d: the index's prefix is not its first key's", b)
		}
	}
	for i := range nplaces {
		v := binary.LittleEndian.Uint64(t.places[i*placeSize:])
		name := int(v & (1<<nameBits - 1))
		if name >= len(t.names) || name > 0 && t.names[name-1] != '\n' || t.names[name] == '\n' {
			return fmt.Errorf("cityindex: place %d: its name at %d starts no line", i, name)
		}
		if lat := v >> nameBits & (1<<latBits - 1); lat > 2*latBias {
			return fmt.Errorf("cityindex: place %d: latitude out of range", i)
		}
		if lon := v >> (nameBits + latBits); lon > 2*lonBias {
			return fmt.Errorf("cityindex: place %d: longitude out of range", i)
		}
	}
	return nil
}

// Encode lays out rows, which must be sorted by country and key, as a
// table. A place is a distinct (name, coordinates); places are numbered,
// and names written, in the order of the rows that first use them.
func Encode(rows []Row) (Data, error) {
	var (
		keys, blocks, body []byte
		places             []byte
		names              strings.Builder
		nameAt             = map[string]int{}
	)
	type place struct {
		name     string
		lat, lon int32
	}
	placeAt := map[place]int{}

	// The two most frequent radii.
	freq := map[uint16]int{}
	for _, r := range rows {
		freq[r.Radius]++
	}
	var radius [2]uint16
	var top [2]int
	for r, n := range freq {
		switch {
		case n > top[0] || n == top[0] && r < radius[0]:
			radius[1], top[1] = radius[0], top[0]
			radius[0], top[0] = r, n
		case n > top[1] || n == top[1] && r < radius[1]:
			radius[1], top[1] = r, n
		}
	}

	var dir []byte // the directory, to the last country seen
	var prev Row
	var prevKey []byte
	nblocks, inBlock, first := 0, 0, 0
	for i, r := range rows {
		ci, ok := 0, len(r.Country) == 2
		if ok {
			ci, ok = countryEntry(r.Country[0], r.Country[1])
		}
		if !ok {
			return Data{}, fmt.Errorf("cityindex: row %d: country %q", i, r.Country)
		}
		if r.Key == "" || len(r.Key) > MaxKey {
			return Data{}, fmt.Errorf("cityindex: row %d: key of %d bytes", i, len(r.Key))
		}
		if r.Name == "" || strings.ContainsRune(r.Name, '\n') {
			return Data{}, fmt.Errorf("cityindex: row %d: name %q", i, r.Name)
		}
		if r.Lat < -latBias || r.Lat > latBias || r.Lon < -lonBias || r.Lon > lonBias {
			return Data{}, fmt.Errorf("cityindex: row %d: coordinates %d, %d", i, r.Lat, r.Lon)
		}
		newCountry := i == 0 || r.Country != prev.Country
		if i > 0 && cmp.Or(cmp.Compare(prev.Country, r.Country), cmp.Compare(prev.Key, r.Key)) > 0 {
			return Data{}, fmt.Errorf("cityindex: rows %d and %d out of order", i-1, i)
		}
		for len(dir) <= ci*countrySize { // the codes up to this country's begin here
			dir = binary.LittleEndian.AppendUint32(dir, uint32(nblocks))
		}
		if newCountry || inBlock == BlockRows {
			blocks = binary.LittleEndian.AppendUint32(blocks, uint32(len(body)))
			blocks = binary.LittleEndian.AppendUint32(blocks, uint32(len(placeAt)))
			blocks = binary.BigEndian.AppendUint64(blocks, prefix([]byte(r.Key)))
			nblocks++
			inBlock, first, prevKey = 0, len(placeAt), nil
		}
		inBlock++

		p := place{r.Name, r.Lat, r.Lon}
		pi, seen := placeAt[p]
		if !seen {
			pi = len(placeAt)
			placeAt[p] = pi
			at, ok := nameAt[r.Name]
			if !ok {
				at = names.Len()
				nameAt[r.Name] = at
				names.WriteString(r.Name)
				names.WriteByte('\n')
			}
			if at >= 1<<nameBits {
				return Data{}, errors.New("cityindex: names too long")
			}
			v := uint64(at) | uint64(r.Lat+latBias)<<nameBits | uint64(r.Lon+lonBias)<<(nameBits+latBits)
			places = binary.LittleEndian.AppendUint64(places, v)
		}

		shared := 0
		for shared < len(prevKey) && shared < len(r.Key) && prevKey[shared] == r.Key[shared] {
			shared++
		}
		own := len(r.Key) - shared
		var h byte
		switch r.Radius {
		case radius[0]:
		case radius[1]:
			h = 1
		default:
			h = 2
		}
		if r.Unique {
			h |= rowUnique
		}
		if r.Alt {
			h |= rowAlt
		}
		if !seen {
			h |= rowNewPlace
		}
		if shared < 16 && own < 16 {
			body = append(body, h, byte(shared<<4|own))
		} else {
			body = append(body, h|rowLongLength, byte(shared), byte(own))
		}
		body = append(body, r.Key[shared:]...)
		if h&rowRadius == 2 {
			body = binary.AppendUvarint(body, uint64(r.Radius))
		}
		if seen {
			body = binary.AppendVarint(body, int64(pi-first))
		}
		prev, prevKey = r, []byte(r.Key)
	}
	blocks = binary.LittleEndian.AppendUint32(blocks, uint32(len(body)))
	blocks = binary.LittleEndian.AppendUint32(blocks, uint32(len(placeAt)))
	blocks = binary.BigEndian.AppendUint64(blocks, 0)
	for len(dir) < countries*countrySize {
		dir = binary.LittleEndian.AppendUint32(dir, uint32(nblocks))
	}

	keys = append(keys, magic...)
	keys = binary.LittleEndian.AppendUint16(keys, radius[0])
	keys = binary.LittleEndian.AppendUint16(keys, radius[1])
	keys = binary.LittleEndian.AppendUint32(keys, uint32(nblocks))
	keys = append(keys, dir...)
	keys = append(keys, blocks...)
	keys = append(keys, body...)
	return Data{Keys: keys, Places: places, Names: names.String()}, nil
}
