package geo

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/postal"
	"github.com/oschwald/maxminddb-golang/v2"
)

// A postal index is the sidecar of a city file (PostalIndexFile names
// it) that holds the postal code of every distinct record of the file
// that has none of its own and whose place package postal finds one for.
// It is written when the data is installed, from GeoNames' 1.2 million
// codes, so that the serving process answers postal codes without
// holding them: it maps the file (five bytes a record, and the codes
// used) into memory read-only, outside the Go heap and its collector,
// and copies a code only into the records it composes.
//
// Layout, in a sidecar's frame (sidecar.go), little-endian:
//
//	frame: magic "IPATPOST", version 1, the MMDB it belongs to
//	the postal data it was built from: its id (Index.ID), u64
//	codes u32, records u32, buckets u32
//	code offsets: codes u32, each code's offset in the code table
//	code table: per code, its length (u8, not 0) and text, sorted
//	the records' offsets, in buckets
//	code ids: records u24
//	frame: CRC-32C
const (
	postalHeaderSize = sidecarFrameSize + 8 + 4 + 4 + 4
	maxPostalIndex   = 64 << 20
	maxPostalCodes   = 1 << 24
)

var postalSidecar = sidecarFormat{what: "postal index", suffix: ".postal", magic: "IPATPOST", version: 1,
	headerSize: postalHeaderSize, maxSize: maxPostalIndex, malformed: errPostalIndex}

// PostalIndexFile returns the name of the postal index of the MMDB file
// named mmdb (a base name or a path).
func PostalIndexFile(mmdb string) string { return postalSidecar.file(mmdb) }

func isPostalIndexFile(name string) bool { return postalSidecar.isFile(name) }

// postalIndex is a parsed, checked index; its slices are views of one
// buffer, which nothing writes and which close releases.
type postalIndex struct {
	data  uint64  // the postal data's id
	offs  []byte  // codes u32
	table []byte  // the code table
	keys  buckets // the records' offsets
	ids   []byte  // records u24
	sidecar
}

// close releases the index's memory; the index must not be used after.
func (z *postalIndex) close() error {
	if z == nil {
		return nil
	}
	return z.release()
}

// code returns the postal code of the record at off, "" when the index
// (which may be nil) holds none.
func (z *postalIndex) code(off uintptr) string {
	if z == nil {
		return ""
	}
	if i, ok := z.keys.find(uint64(off)); ok {
		id := uint32(z.ids[3*i]) | uint32(z.ids[3*i+1])<<8 | uint32(z.ids[3*i+2])<<16
		return z.codeText(id)
	}
	return ""
}

// codeText is code id as a string that shares the index's memory: it
// must be copied before it outlives the index.
func (z *postalIndex) codeText(id uint32) string {
	off := binary.LittleEndian.Uint32(z.offs[4*id:])
	n := uint32(z.table[off])
	return unsafe.String(&z.table[off+1], n)
}

func (z *postalIndex) records() int { return len(z.ids) / 3 }

// codes is how many codes the index holds.
func (z *postalIndex) codes() int { return len(z.offs) / 4 }

var errPostalIndex = errors.New("malformed postal index")

// parsePostalIndex reads and checks an index: every bound that lookups
// rely on holds afterwards, whatever b was. The index's strings point into
// b, which must not change afterwards.
func parsePostalIndex(b []byte) (*postalIndex, error) {
	file, body, err := postalSidecar.parseFrame(b)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	z := &postalIndex{sidecar: sidecar{file: file}}
	h := b[sidecarFrameSize:]
	z.data = le.Uint64(h)
	nCodes, nRecords, nBuckets := uint64(le.Uint32(h[8:])), uint64(le.Uint32(h[12:])), uint64(le.Uint32(h[16:]))
	if nCodes > maxPostalCodes || nBuckets > 1<<16 {
		return nil, fmt.Errorf("%w: %d codes, %d buckets", errPostalIndex, nCodes, nBuckets)
	}
	rest := body[postalHeaderSize:]
	if uint64(len(rest)) < 4*nCodes {
		return nil, fmt.Errorf("%w: code offsets cut short", errPostalIndex)
	}
	z.offs, rest = rest[:4*nCodes], rest[4*nCodes:]
	// The table runs from here to the records, whose size their count
	// gives.
	records := bucketsSize(nBuckets, nRecords) + 3*nRecords
	if uint64(len(rest)) < records {
		return nil, fmt.Errorf("%w: %d bytes after the code offsets, fewer than the records need", errPostalIndex, len(rest))
	}
	z.table, rest = rest[:uint64(len(rest))-records], rest[uint64(len(rest))-records:]
	next := uint64(0)
	for i := uint64(0); i < nCodes; i++ {
		off := uint64(le.Uint32(z.offs[4*i:]))
		if off != next || off >= uint64(len(z.table)) || z.table[off] == 0 || off+1+uint64(z.table[off]) > uint64(len(z.table)) {
			return nil, fmt.Errorf("%w: code %d at offset %d", errPostalIndex, i, off)
		}
		next = off + 1 + uint64(z.table[off])
	}
	if next != uint64(len(z.table)) {
		return nil, fmt.Errorf("%w: %d bytes of the code table hold no code", errPostalIndex, uint64(len(z.table))-next)
	}
	keys := bucketsSize(nBuckets, nRecords)
	if z.keys, err = parseBuckets(rest[:keys], nBuckets, nRecords, errPostalIndex); err != nil {
		return nil, err
	}
	z.ids = rest[keys:]
	for i := uint64(0); i < nRecords; i++ {
		if id := uint64(z.ids[3*i]) | uint64(z.ids[3*i+1])<<8 | uint64(z.ids[3*i+2])<<16; id >= nCodes {
			return nil, fmt.Errorf("%w: record %d has code %d of %d", errPostalIndex, i, id, nCodes)
		}
	}
	return z, nil
}

// loadPostalIndex maps the postal index of the MMDB file at path, open
// as r: nil and no error when there is none, an error when there is one
// that is malformed or belongs to another file. The caller closes it.
func loadPostalIndex(path string, r *maxminddb.Reader) (*postalIndex, error) {
	return loadSidecar(path, r, &postalSidecar, parsePostalIndex)
}

// PostalIndexStats describes a postal index as BuildPostalIndex made it.
type PostalIndexStats struct {
	Records int // distinct records of the MMDB file
	Own     int // records with a postal code of their own in the file
	Indexed int // records given a code by the index
	ByName  int // of which by the name of their place
	Codes   int // distinct codes indexed
	Bytes   int // size of the index
}

// NeedsPostalIndex reports whether the MMDB file at path is a city file
// without a well-formed postal index of its own beside it, built from the
// postal data with the id data.
func NeedsPostalIndex(path string, data uint64) (bool, error) {
	r, err := openReader(path)
	if err != nil {
		return false, err
	}
	defer r.Close()
	if k, _, _ := classify(r.Metadata.DatabaseType); k != kindCity {
		return false, nil
	}
	z, err := loadPostalIndex(path, r)
	defer z.close()
	return z == nil || err != nil || z.data != data, nil
}

// chinaNameKm bounds a match by name in China, whose county and city the
// names package resolves from the record's coordinates: GeoNames gives
// each Chinese code one rough point, often tens of kilometres from the
// city, so the name decides within the province.
const chinaNameKm = 150

// postalPlace is the place of a decoded record as package postal matches
// it to a code: the record's country, first-level subdivision (as the
// data names it), the names its place goes by (the record's city; in
// China its county first, then its city, as the record answers them in
// English) and its coordinates.
func postalPlace(in cityInput) postal.Place {
	// A zone of its own spares compose the time-zone finders, which the
	// place does not need.
	in.timeZone = "UTC"
	d := compose(in, &countryTable{})
	p := postal.Place{Country: countryCodeOf(in), Subdivision: clean(in.province.EN), Lat: in.lat, Lon: in.lon}
	if !d.hasCoords {
		p.Lat, p.Lon = math.NaN(), math.NaN()
	}
	t := d.text[ipatlas.English]
	if p.Country == "CN" {
		p.MaxKm = chinaNameKm
		if t.district != "" {
			p.Names = append(p.Names, t.district)
		}
	}
	if t.city != "" {
		p.Names = append(p.Names, t.city)
	}
	if raw, _ := splitDistrict(in.city.EN); raw != "" && raw != t.city {
		p.Names = append(p.Names, raw)
	}
	return p
}

// BuildPostalIndex computes the postal index of the MMDB file at path
// with the codes of ix: it decodes every distinct record once, as the
// engine does, and looks the code of each record without one up by its
// place (postalPlace). It returns nil for a file that takes no index (not
// a city file).
func BuildPostalIndex(ctx context.Context, path string, ix *postal.Index) (b []byte, st PostalIndexStats, err error) {
	var recs []indexedCode
	id, records, ok, err := walkRecords(ctx, path, func(k kind) bool { return k == kindCity },
		func(off uintptr, in cityInput) error {
			if strings.TrimSpace(in.zip) != "" {
				st.Own++
				return nil
			}
			m, ok := ix.Lookup(postalPlace(in))
			if !ok {
				return nil
			}
			if m.ByName {
				st.ByName++
			}
			recs = append(recs, indexedCode{off, m.Code})
			return nil
		})
	if err != nil || !ok {
		return nil, st, err
	}
	st.Records = records
	st.Indexed = len(recs)
	b, st.Codes, err = encodePostalIndex(id, ix.ID, recs)
	if err != nil {
		return nil, st, fmt.Errorf("geo: %s: %w", path, err)
	}
	st.Bytes = len(b)
	return b, st, nil
}

// WritePostalIndex writes the postal index of the MMDB file at path
// beside it (PostalIndexFile), replacing any, and returns what
// BuildPostalIndex says of it. A file that takes none gets none.
func WritePostalIndex(ctx context.Context, path string, ix *postal.Index) (PostalIndexStats, error) {
	b, st, err := BuildPostalIndex(ctx, path, ix)
	if err != nil || b == nil {
		return st, err
	}
	if err := writeSidecar(PostalIndexFile(path), b); err != nil {
		return st, fmt.Errorf("geo: writing the postal index of %s: %w", path, err)
	}
	return st, nil
}

// indexedCode is one record of a postal index.
type indexedCode struct {
	off  uintptr
	code string
}

// encodePostalIndex lays out the index of the file id with the records
// recs (each offset once, in any order) and says how many codes it holds.
func encodePostalIndex(id mmdbID, data uint64, recs []indexedCode) ([]byte, int, error) {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b indexedCode) int { return cmp.Compare(a.off, b.off) })
	ids := map[string]int{}
	keys := make([]uint64, len(recs))
	for i, rec := range recs {
		if rec.off > 1<<32-1 {
			return nil, 0, fmt.Errorf("a record at offset %d is beyond what a postal index holds", rec.off)
		}
		if i > 0 && recs[i-1].off == rec.off {
			return nil, 0, fmt.Errorf("offset %d twice", rec.off)
		}
		if rec.code == "" || len(rec.code) > 255 {
			return nil, 0, fmt.Errorf("postal code %q does not fit a postal index", rec.code)
		}
		ids[rec.code] = 0
		keys[i] = uint64(rec.off)
	}
	codes := make([]string, 0, len(ids))
	for c := range ids {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	if len(codes) > maxPostalCodes {
		return nil, 0, fmt.Errorf("%d codes, more than a postal index holds", len(codes))
	}
	for i, c := range codes {
		ids[c] = i
	}
	buckets := bucketCount(keys)
	le := binary.LittleEndian
	b := make([]byte, 0, postalHeaderSize+12*len(codes)+int(bucketsSize(uint64(buckets), uint64(len(recs))))+3*len(recs)+4)
	b = postalSidecar.appendFrame(b, id)
	b = le.AppendUint64(b, data)
	b = le.AppendUint32(b, uint32(len(codes)))
	b = le.AppendUint32(b, uint32(len(recs)))
	b = le.AppendUint32(b, uint32(buckets))
	off := 0
	for _, c := range codes {
		b = le.AppendUint32(b, uint32(off))
		off += 1 + len(c)
	}
	for _, c := range codes {
		b = append(b, byte(len(c)))
		b = append(b, c...)
	}
	b = appendBuckets(b, keys)
	for _, rec := range recs {
		id := ids[rec.code]
		b = append(b, byte(id), byte(id>>8), byte(id>>16))
	}
	return sealSidecar(b), len(codes), nil
}
