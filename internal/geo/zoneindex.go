package geo

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/oschwald/maxminddb-golang/v2"
)

// A zone index is the sidecar of a city file (ZoneIndexFile names it)
// that holds, for every distinct record of the file whose zone comes from
// its coordinates (needsPointZone), the zone the finders give there, ""
// included. It is written when the data is installed, so that the serving
// process answers those zones without building the finders (13.6 MB of
// heap, as much GC headroom, and 6.7 MB of the binary's pages read).
//
// Layout, in a sidecar's frame (sidecar.go), little-endian:
//
//	frame: magic "IPATZONE", version 1, the MMDB it belongs to
//	zones u16, records u32, buckets u32
//	zone table: per zone, its length (u8) and name
//	the records' offsets (maxminddb's Result.Offset), in buckets
//	zone ids: records u8
//	frame: CRC-32C
//
// Three bytes a record.
const (
	zoneHeaderSize = sidecarFrameSize + 2 + 4 + 4
	// maxZoneIndexSize bounds what the engine reads: records are
	// three bytes each, and no real file has millions of them.
	maxZoneIndexSize = 64 << 20
)

var zoneSidecar = sidecarFormat{what: "zone index", suffix: ".zones", magic: "IPATZONE", version: 1,
	headerSize: zoneHeaderSize, maxSize: maxZoneIndexSize, malformed: errZoneIndex}

// ZoneIndexFile returns the name of the zone index of the MMDB file named
// mmdb (a base name or a path).
func ZoneIndexFile(mmdb string) string { return zoneSidecar.file(mmdb) }

func isZoneIndexFile(name string) bool { return zoneSidecar.isFile(name) }

// zoneIndex is a parsed, checked index; its slices but zones are views
// of one buffer, which nothing writes and which close releases. The
// buffer is the file mapped, outside the collected heap, so that the
// collector's headroom is not sized by it; zones are copies, since the
// records that name them outlive the index.
type zoneIndex struct {
	zones []string
	keys  buckets // the records' offsets
	ids   []byte  // records u8
	sidecar
}

// close releases the index's memory; the index must not be used after.
func (z *zoneIndex) close() error {
	if z == nil {
		return nil
	}
	return z.release()
}

// zone returns the indexed zone of the record at off, ok false when the
// index (which may be nil) does not hold it.
func (z *zoneIndex) zone(off uintptr) (zone string, ok bool) {
	if z == nil {
		return "", false
	}
	if i, ok := z.keys.find(uint64(off)); ok {
		return z.zones[z.ids[i]], true
	}
	return "", false
}

// records is how many records the index holds.
func (z *zoneIndex) records() int { return len(z.ids) }

var errZoneIndex = errors.New("malformed zone index")

// parseZoneIndex reads and checks an index: every bound that lookups rely
// on holds afterwards, whatever b was.
func parseZoneIndex(b []byte) (*zoneIndex, error) {
	file, body, err := zoneSidecar.parseFrame(b)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	z := &zoneIndex{sidecar: sidecar{file: file}}
	h := b[sidecarFrameSize:]
	nZones, nRecords, nBuckets := int(le.Uint16(h)), uint64(le.Uint32(h[2:])), uint64(le.Uint32(h[6:]))
	if nZones == 0 || nZones > 256 || nBuckets > 1<<16 {
		return nil, fmt.Errorf("%w: %d zones, %d buckets", errZoneIndex, nZones, nBuckets)
	}
	rest := body[zoneHeaderSize:]
	z.zones = make([]string, nZones)
	for i := range z.zones {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return nil, fmt.Errorf("%w: zone table cut short", errZoneIndex)
		}
		n := int(rest[0])
		z.zones[i] = string(rest[1 : 1+n])
		rest = rest[1+n:]
	}
	keys := bucketsSize(nBuckets, nRecords)
	if uint64(len(rest)) != keys+nRecords {
		return nil, fmt.Errorf("%w: %d bytes of records, want %d", errZoneIndex, len(rest), keys+nRecords)
	}
	if z.keys, err = parseBuckets(rest[:keys], nBuckets, nRecords, errZoneIndex); err != nil {
		return nil, err
	}
	z.ids = rest[keys:]
	for i, id := range z.ids {
		if int(id) >= nZones {
			return nil, fmt.Errorf("%w: record %d has zone %d of %d", errZoneIndex, i, id, nZones)
		}
	}
	return z, nil
}

// loadZoneIndex maps the zone index of the MMDB file at path, open as r:
// nil and no error when there is none, an error when there is one that is
// malformed or belongs to another file. The caller closes it.
func loadZoneIndex(path string, r *maxminddb.Reader) (*zoneIndex, error) {
	return loadSidecar(path, r, &zoneSidecar, parseZoneIndex)
}

// ZoneIndexStats describes a zone index as BuildZoneIndex made it.
type ZoneIndexStats struct {
	Records int // distinct records of the MMDB file
	Indexed int // records whose zone comes from their coordinates
	Unknown int // of which the finders place in no zone ("")
	Zones   int // distinct zones indexed, "" included
	Bytes   int // size of the index
}

// NeedsZoneIndex reports whether the MMDB file at path is a city or
// country file without a well-formed zone index of its own beside it.
func NeedsZoneIndex(path string) (bool, error) {
	r, err := openReader(path)
	if err != nil {
		return false, err
	}
	defer r.Close()
	if k, _, _ := classify(r.Metadata.DatabaseType); k != kindCity && k != kindCountry {
		return false, nil
	}
	z, err := loadZoneIndex(path, r)
	z.close()
	return z == nil || err != nil, nil
}

// WriteZoneIndex writes the zone index of the MMDB file at path beside it
// (ZoneIndexFile), replacing any, and returns what BuildZoneIndex says of
// it. A file that takes none (not a city or country file) gets none.
func WriteZoneIndex(ctx context.Context, path string) (ZoneIndexStats, error) {
	b, st, err := BuildZoneIndex(ctx, path)
	if err != nil || b == nil {
		return st, err
	}
	if err := writeSidecar(ZoneIndexFile(path), b); err != nil {
		return st, fmt.Errorf("geo: writing the zone index of %s: %w", path, err)
	}
	return st, nil
}

// BuildZoneIndex computes the zone index of the MMDB file at path: it
// decodes every distinct record once, as the engine does, and looks the
// zone of each that needs one up with the index finders (indexFinders),
// which are dropped a while after the last index is built. It returns nil
// for a file that takes no index (not a city or country file). It takes
// seconds on the default dataset.
func BuildZoneIndex(ctx context.Context, path string) (b []byte, st ZoneIndexStats, err error) {
	finders := acquireIndexFinders()
	defer releaseIndexFinders()
	var recs []indexedZone
	id, records, ok, err := walkRecords(ctx, path, func(k kind) bool { return k == kindCity || k == kindCountry },
		func(off uintptr, in cityInput) error {
			coords, hasCoords := coordsOf(in)
			if !needsPointZone(countryCodeOf(in), in.timeZone, hasCoords) {
				return nil
			}
			tiles, err := finders.tiles()
			if err != nil {
				return fmt.Errorf("geo: building the time-zone finders: %w", err)
			}
			recs = append(recs, indexedZone{off, zoneAt(tiles, finders.polygons, coords[0], coords[1])})
			return nil
		})
	if err != nil || !ok {
		return nil, st, err
	}
	st.Records = records
	st.Indexed = len(recs)
	for _, rec := range recs {
		if rec.zone == "" {
			st.Unknown++
		}
	}
	b, st.Zones, err = encodeZoneIndex(id, recs)
	if err != nil {
		return nil, st, fmt.Errorf("geo: %s: %w", path, err)
	}
	st.Bytes = len(b)
	return b, st, nil
}

// walkRecords decodes every distinct record of the MMDB file at path once
// (aliases of a subtree and networks sharing a record visit it once), as
// the engine decodes it, for the indexes written beside a city file; ok is
// false, and nothing visited, for a file whose kind takes no index. It
// returns the identity of the file and how many records it visited. A
// corrupt file is an error, never a panic or an endless walk.
func walkRecords(ctx context.Context, path string, takes func(kind) bool, visit func(off uintptr, in cityInput) error) (id mmdbID, records int, ok bool, err error) {
	r, err := openReader(path)
	if err != nil {
		return id, 0, false, err
	}
	defer r.Close()
	s := &source{r: r}
	if s.kind, s.schema, _ = classify(r.Metadata.DatabaseType); !takes(s.kind) {
		return id, 0, false, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return id, 0, false, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("geo: %s is corrupt: %v", path, p)
		}
	}()
	seen := make(map[uintptr]struct{})
	ends, limit := uint(0), maxWalkEnds(r)
	for res := range r.NetworksWithin(everything(r), maxminddb.IncludeNetworksWithoutData()) {
		if err := res.Err(); err != nil {
			return id, 0, false, fmt.Errorf("geo: %s is corrupt: %w", path, err)
		}
		if ends++; ends > limit {
			return id, 0, false, fmt.Errorf("geo: %s is corrupt: %w", path, errSharedNodes)
		}
		if ends%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return id, 0, false, err
			}
		}
		if !res.Found() {
			continue
		}
		off := res.Offset()
		if _, ok := seen[off]; ok {
			continue
		}
		seen[off] = struct{}{}
		in, err := s.decodeCity(res)
		if err != nil {
			return id, 0, false, fmt.Errorf("geo: %s is corrupt: record of %s: %w", path, res.Prefix(), err)
		}
		if err := visit(off, in); err != nil {
			return id, 0, false, err
		}
	}
	return fileID(r.Metadata, fi.Size()), len(seen), true, nil
}

// indexedZone is one record of a zone index.
type indexedZone struct {
	off  uintptr
	zone string
}

// encodeZoneIndex lays out the index of the file id with the records
// recs (each offset once, in any order) and says how many zones it names.
func encodeZoneIndex(id mmdbID, recs []indexedZone) ([]byte, int, error) {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b indexedZone) int { return cmp.Compare(a.off, b.off) })
	ids := map[string]int{}
	keys := make([]uint64, len(recs))
	for i, rec := range recs {
		if rec.off > 1<<32-1 {
			return nil, 0, fmt.Errorf("a record at offset %d is beyond what a zone index holds", rec.off)
		}
		if i > 0 && recs[i-1].off == rec.off {
			return nil, 0, fmt.Errorf("offset %d twice", rec.off)
		}
		ids[rec.zone] = 0
		keys[i] = uint64(rec.off)
	}
	zones := make([]string, 0, len(ids)+1)
	for z := range ids {
		zones = append(zones, z)
	}
	if len(zones) == 0 {
		zones = append(zones, "")
	}
	slices.Sort(zones)
	if len(zones) > 256 {
		return nil, 0, fmt.Errorf("%d zones, more than a zone index holds", len(zones))
	}
	for i, z := range zones {
		if len(z) > 255 {
			return nil, 0, fmt.Errorf("zone name %q is too long for a zone index", z)
		}
		ids[z] = i
	}
	buckets := bucketCount(keys)

	le := binary.LittleEndian
	b := make([]byte, 0, zoneHeaderSize+16*len(zones)+int(bucketsSize(uint64(buckets), uint64(len(recs))))+len(recs)+4)
	b = zoneSidecar.appendFrame(b, id)
	b = le.AppendUint16(b, uint16(len(zones)))
	b = le.AppendUint32(b, uint32(len(recs)))
	b = le.AppendUint32(b, uint32(buckets))
	for _, z := range zones {
		b = append(b, byte(len(z)))
		b = append(b, z...)
	}
	b = appendBuckets(b, keys)
	for _, rec := range recs {
		b = append(b, byte(ids[rec.zone]))
	}
	return sealSidecar(b), len(zones), nil
}
