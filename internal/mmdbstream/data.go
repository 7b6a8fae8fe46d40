package mmdbstream

import (
	"bufio"
	"bytes"
	"hash/maphash"
	"io"

	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// hashKey is a value's 96-bit hash: a collision among the few million
// values of a file is as likely as none at all (about 2^-54).
type hashKey struct {
	a uint64
	b uint32
}

// dataWriter writes the data section to a file as values arrive. A value
// inside a record (a map's key or value, an array's element) that was
// written before is written as a pointer to it where the pointer is the
// shorter, as mmdbwriter does: values are known by a 96-bit hash of
// their encoding, so that the index costs 16 bytes a value (and the map's
// slack) however large the value.
type dataWriter struct {
	w     *bufio.Writer
	off   int64
	index map[hashKey]uint32 // offsets
	seeds [2]maphash.Seed
	key   keyWriter
}

func newDataWriter(w io.Writer) *dataWriter {
	return &dataWriter{
		w:     bufio.NewWriterSize(w, 1<<20),
		index: map[hashKey]uint32{},
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
	}
}

func (d *dataWriter) Write(p []byte) (int, error) {
	n, err := d.w.Write(p)
	d.off += int64(n)
	return n, err
}

func (d *dataWriter) WriteByte(c byte) error {
	if err := d.w.WriteByte(c); err != nil {
		return err
	}
	d.off++
	return nil
}

func (d *dataWriter) WriteString(s string) (int, error) {
	n, err := d.w.WriteString(s)
	d.off += int64(n)
	return n, err
}

// WriteOrWritePointer writes v, or a pointer to its earlier copy where
// that is shorter than v's first writing.
func (d *dataWriter) WriteOrWritePointer(v mmdbtype.DataType) (int64, error) {
	enc, err := d.key.encode(v)
	if err != nil {
		return 0, err
	}
	// A pointer takes at least two bytes: a value of two or fewer is
	// never pointed to, and needs no place in the index.
	if len(enc) <= 2 {
		n, err := d.Write(enc)
		return int64(n), err
	}
	k := d.hash(enc)
	// The pointer is used where it is shorter than the value whole (its
	// first writing may be shorter still, where it holds pointers).
	off, ok := d.index[k]
	if ok && int64(len(enc)) > mmdbtype.Pointer(off).WrittenSize() {
		return mmdbtype.Pointer(off).WriteTo(d)
	}
	at := d.off
	n, err := v.WriteTo(d)
	if err != nil || ok {
		return n, err
	}
	if at > maxOffset {
		return n, errTooLarge
	}
	d.index[k] = uint32(at)
	return n, nil
}

func (d *dataWriter) hash(b []byte) hashKey {
	return hashKey{maphash.Bytes(d.seeds[0], b), uint32(maphash.Bytes(d.seeds[1], b))}
}

// keyWriter encodes a value whole, without pointers: the bytes that
// stand for it in the index.
type keyWriter struct {
	bytes.Buffer
}

func (k *keyWriter) WriteOrWritePointer(v mmdbtype.DataType) (int64, error) {
	return v.WriteTo(k)
}

// encode is v's encoding, valid until the next call.
func (k *keyWriter) encode(v mmdbtype.DataType) ([]byte, error) {
	k.Reset()
	if _, err := v.WriteTo(k); err != nil {
		return nil, err
	}
	return k.Bytes(), nil
}
