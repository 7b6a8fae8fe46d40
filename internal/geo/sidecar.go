package geo

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"

	"github.com/oschwald/maxminddb-golang/v2"
)

// A sidecar is an index file written beside an MMDB file when the data is
// installed (the zone index, the postal index), which the engine maps
// read-only, outside the collected heap, when it opens the file. Every
// sidecar has the same frame around its own layout, little-endian:
//
//	magic (8 bytes), version u16
//	the MMDB it belongs to (mmdbID): ip_version u16, node_count u32,
//	  build_epoch u64, file size u64, record_size u16
//	the format's own header and body
//	CRC-32C of everything before it, u32
//
// An index of records (or addresses) stores them in buckets: bucket k
// holds the keys whose high bits (key>>16) are k, as a run of their low
// halves (u16, increasing), and a table of where each bucket's run
// starts (buckets+1 u32, non-decreasing, the last the number of keys).
// A lookup reads two starts and searches a run of at most 65,536 halves.
//
// A new sidecar is a sidecarFormat, a type that embeds sidecar, a parse
// function that reads the format's header and body from the frame
// (parseFrame) and an encoder that writes them inside it (appendFrame,
// sealSidecar); loadSidecar and writeSidecar do the rest.

// sidecarFrameSize is the size of the frame's header: the magic, the
// version and the MMDB's identity.
const sidecarFrameSize = 8 + 2 + mmdbIDSize

// sidecarFormat is one kind of sidecar.
type sidecarFormat struct {
	what    string // "zone index", for errors
	suffix  string // ends the file's name: ".zones"
	magic   string // 8 bytes
	version uint16
	// headerSize is the frame's header and the format's own.
	headerSize int
	// maxSize bounds what the engine reads.
	maxSize int64
	// malformed is what every failure to parse the format wraps.
	malformed error
}

// file returns the name of the sidecar of the MMDB file named mmdb (a base
// name or a path). The suffix is no MMDB name, so that nothing that looks
// for data files takes it for one.
func (f *sidecarFormat) file(mmdb string) string { return mmdb + f.suffix }

// isFile reports whether a base name is a sidecar of this format (a
// temporary file being written, dot-named, is not).
func (f *sidecarFormat) isFile(name string) bool {
	return strings.HasSuffix(name, ".mmdb"+f.suffix) && !strings.HasPrefix(name, ".")
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// mmdbIDSize is the size of an mmdbID in a sidecar.
const mmdbIDSize = 2 + 4 + 8 + 8 + 2

// mmdbID is what identifies the MMDB file a sidecar belongs to: an index
// built for another file (another build, or the same build cut short) is
// not used.
type mmdbID struct {
	ipVersion  uint16
	nodeCount  uint32
	buildEpoch uint64
	size       uint64
	recordSize uint16
}

func fileID(md maxminddb.Metadata, size int64) mmdbID {
	return mmdbID{uint16(md.IPVersion), uint32(md.NodeCount), uint64(md.BuildEpoch), uint64(size), uint16(md.RecordSize)}
}

// readMMDBID reads an mmdbID from the first mmdbIDSize bytes of b.
func readMMDBID(b []byte) mmdbID {
	le := binary.LittleEndian
	return mmdbID{ipVersion: le.Uint16(b), nodeCount: le.Uint32(b[2:]), buildEpoch: le.Uint64(b[6:]),
		size: le.Uint64(b[14:]), recordSize: le.Uint16(b[22:])}
}

// appendMMDBID appends id as readMMDBID reads it.
func appendMMDBID(b []byte, id mmdbID) []byte {
	le := binary.LittleEndian
	b = le.AppendUint16(b, id.ipVersion)
	b = le.AppendUint32(b, id.nodeCount)
	b = le.AppendUint64(b, id.buildEpoch)
	b = le.AppendUint64(b, id.size)
	return le.AppendUint16(b, id.recordSize)
}

// sidecar is what every parsed sidecar holds: the identity of the MMDB
// file it was built for, and the mapped bytes that its slices view.
type sidecar struct {
	file mmdbID
	mapping
}

func (s *sidecar) base() *sidecar { return s }

// parseFrame checks b's frame (its magic and version, the checksum at its
// end over the rest, and that it is at least headerSize bytes before the
// checksum) and returns the identity of the MMDB file it was built for
// and the body: the bytes before the checksum, the headers included. A
// failure wraps f.malformed.
func (f *sidecarFormat) parseFrame(b []byte) (mmdbID, []byte, error) {
	if len(b) < f.headerSize+4 {
		return mmdbID{}, nil, fmt.Errorf("%w: %d bytes, shorter than its header", f.malformed, len(b))
	}
	if string(b[:8]) != f.magic {
		return mmdbID{}, nil, fmt.Errorf("%w: no magic", f.malformed)
	}
	le := binary.LittleEndian
	if v := le.Uint16(b[8:]); v != f.version {
		return mmdbID{}, nil, fmt.Errorf("%w: version %d, want %d", f.malformed, v, f.version)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != le.Uint32(b[len(b)-4:]) {
		return mmdbID{}, nil, fmt.Errorf("%w: checksum mismatch", f.malformed)
	}
	return readMMDBID(b[10:]), body, nil
}

// appendFrame starts a sidecar of the MMDB file id in b: the frame's
// header, which the format's own follows.
func (f *sidecarFormat) appendFrame(b []byte, id mmdbID) []byte {
	b = append(b, f.magic...)
	b = binary.LittleEndian.AppendUint16(b, f.version)
	return appendMMDBID(b, id)
}

// sealSidecar ends a sidecar with the checksum of everything in it.
func sealSidecar(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// loadSidecar maps the sidecar of format f beside the MMDB file at path,
// open as r, and parses it: nil and no error when there is none, an error
// when there is one that is malformed or belongs to another file. The
// caller closes it.
func loadSidecar[X any, P interface {
	*X
	base() *sidecar
}](path string, r *maxminddb.Reader, f *sidecarFormat, parse func([]byte) (P, error)) (P, error) {
	m, err := mapIndex(f.file(path), f.maxSize, f.malformed)
	if m == nil || err != nil {
		return nil, err
	}
	x, err := parse(m.buf)
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(path); err == nil && x.base().file != fileID(r.Metadata, st.Size()) {
			err = fmt.Errorf("the %s belongs to another file (build time, nodes or size differ)", f.what)
		}
	}
	if err != nil {
		m.release()
		return nil, err
	}
	x.base().mapping = *m
	return x, nil
}

// writeSidecar replaces the file at name with b, through a temporary file
// renamed into place, so that a reader never maps half of one.
func writeSidecar(name string, b []byte) error {
	dir, base := filepath.Split(name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+"-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// buckets are the keys of an index, each a u32, by their high halves
// (see the top of this file).
type buckets struct {
	starts []byte // (buckets+1) u32
	lows   []byte // keys u16
}

// bucketsSize is the size of the buckets of n keys in nBuckets.
func bucketsSize(nBuckets, n uint64) uint64 { return 4*(nBuckets+1) + 2*n }

// find returns the place of key among the keys, ok false when it is not
// one of them.
func (bk *buckets) find(key uint64) (i int, ok bool) {
	lo, hi, ok := bk.bucket(key)
	if !ok {
		return 0, false
	}
	want := uint16(key)
	i, j := lo, hi
	for i < j {
		m := int(uint(i+j) >> 1)
		if bk.low(m) < want {
			i = m + 1
		} else {
			j = m
		}
	}
	return i, i < hi && bk.low(i) == want
}

// bucket returns where the run of key's bucket starts and ends among the
// keys; ok false when the index has no such bucket.
func (bk *buckets) bucket(key uint64) (lo, hi int, ok bool) {
	b := key >> 16
	if b >= uint64(len(bk.starts)/4-1) {
		return 0, 0, false
	}
	le := binary.LittleEndian
	return int(le.Uint32(bk.starts[4*b:])), int(le.Uint32(bk.starts[4*b+4:])), true
}

// low is the low half of the i-th key.
func (bk *buckets) low(i int) uint16 { return binary.LittleEndian.Uint16(bk.lows[2*i:]) }

// parseBuckets reads the buckets of n keys in nBuckets from b, which is
// bucketsSize(nBuckets, n) bytes, and checks every bound that find relies
// on. A failure wraps malformed.
func parseBuckets(b []byte, nBuckets, n uint64, malformed error) (buckets, error) {
	if nBuckets > 1<<16 || uint64(len(b)) != bucketsSize(nBuckets, n) {
		return buckets{}, fmt.Errorf("%w: %d bytes of %d buckets of %d records", malformed, len(b), nBuckets, n)
	}
	bk := buckets{starts: b[:4*(nBuckets+1)], lows: b[4*(nBuckets+1):]}
	le := binary.LittleEndian
	prev := uint32(0)
	for k := uint64(0); k <= nBuckets; k++ {
		s := le.Uint32(bk.starts[4*k:])
		if s < prev || uint64(s) > n {
			return buckets{}, fmt.Errorf("%w: bucket %d starts at %d", malformed, k, s)
		}
		if k > 0 {
			for i := int(prev) + 1; i < int(s); i++ {
				if bk.low(i) <= bk.low(i-1) {
					return buckets{}, fmt.Errorf("%w: bucket %d is not sorted", malformed, k-1)
				}
			}
		}
		prev = s
	}
	if uint64(prev) != n {
		return buckets{}, fmt.Errorf("%w: buckets end at %d of %d records", malformed, prev, n)
	}
	return bk, nil
}

// bucketCount is how many buckets hold keys, the largest last.
func bucketCount(keys []uint64) int {
	if len(keys) == 0 {
		return 0
	}
	return int(keys[len(keys)-1]>>16) + 1
}

// appendBuckets appends the buckets of keys (increasing) as parseBuckets
// reads them, in bucketCount(keys) buckets.
func appendBuckets(b []byte, keys []uint64) []byte {
	le := binary.LittleEndian
	next := 0
	for k := 0; k <= bucketCount(keys); k++ {
		for next < len(keys) && int(keys[next]>>16) < k {
			next++
		}
		b = le.AppendUint32(b, uint32(next))
	}
	for _, key := range keys {
		b = le.AppendUint16(b, uint16(key))
	}
	return b
}
