// Package mmdbstream writes a MaxMind DB file (an MMDB, the format of
// https://maxmind.github.io/MaxMind-DB/) from networks given in address
// order, in memory that does not grow with the file: the search tree is
// built along the path of the latest network, and a node leaves memory for
// a temporary file once the networks have passed it; each record goes to
// the data section (another temporary file) when the caller writes it,
// and networks refer to it by its offset. Finish assembles the file: the
// tree, the data section, the metadata.
//
// The file is the one mmdbwriter (github.com/maxmind/mmdbwriter) writes
// for the same networks and records inserted into an IPv6 tree with its
// IPv4 aliases and the reserved networks allowed: ::/96 is the IPv4 tree
// (an IPv4 network a.b.c.d/n is ::a.b.c.d/96+n), ::ffff:0:0/96, Teredo
// (2001::/32) and 6to4 (2002::/16) are aliases of it, nodes are numbered
// in the same order, and a value inside a record that was written before
// is a pointer to it where the pointer is shorter. What differs is the
// metadata, which is written without pointers (some readers mishandle
// them there).
package mmdbstream

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"net/netip"
	"os"
	"time"

	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Options describe the file: its metadata, and where it is held until
// Finish.
type Options struct {
	DatabaseType string
	Description  map[string]string // by language
	Languages    []string
	BuildTime    time.Time // the zero time means now
	// RecordSize is the bits of a record of the search tree: 24, 28 or
	// 32; 0 means 28.
	RecordSize int
	// TempDir holds the tree and the data section until Finish; "" means
	// os.TempDir.
	TempDir string
}

// Record is a record written to the data section, which networks refer
// to.
type Record struct{ off uint32 }

// A Writer builds a file. Its methods are not safe for concurrent use.
// Close removes its temporary files.
type Writer struct {
	opts       Options
	recordSize int

	tree     *os.File // node n's two records at n*8, as stored values
	nodes    []uint64 // the nodes from number base on, not yet in tree
	base     uint32
	count    uint32 // nodes made
	path     []open // the open nodes, path[d] at depth d
	pathAddr u128   // an address inside path's deepest node
	next     u128   // the first address after the last network
	full     bool   // the last network reached the end of the space
	v4root   uint32

	aliases []netip.Prefix // the aliases not yet in the tree, in order

	pending     []pnet // networks with one record, adjacent, in order
	pendingV    uint32 // their stored value
	accepted    u128   // the first address after the networks inserted
	acceptedAll bool   // they reach the end of the space

	dataFile *os.File
	data     *dataWriter
	Stats    Stats
}

// Stats count what was written.
type Stats struct {
	Networks int // prefixes inserted (the aliases not counted)
	Records  int // records written (Data)
	Nodes    int // nodes of the search tree, once Finish has run
}

// open is a node of the search tree that networks may still reach.
type open struct {
	num uint32
	rec [2]uint32 // stored values
}

// Stored values of a record, until Finish knows the number of nodes: a
// node's number, a data offset with dataBit set, or empty.
const (
	empty   = math.MaxUint32
	dataBit = 1 << 31

	maxOffset = dataBit - 1
)

var errTooLarge = errors.New("mmdbstream: the file is too large for its record size")

// v4Root is the IPv4 tree in the IPv6 one; ipv4Aliases are the networks
// that mmdbwriter makes aliases of it, in address order.
var (
	v4Root      = netip.MustParsePrefix("::/96")
	ipv4Aliases = []netip.Prefix{
		netip.MustParsePrefix("::ffff:0:0/96"),
		netip.MustParsePrefix("2001::/32"),
		netip.MustParsePrefix("2002::/16"),
	}
)

// New starts a file.
func New(opts Options) (*Writer, error) {
	rs := opts.RecordSize
	if rs == 0 {
		rs = 28
	}
	if rs != 24 && rs != 28 && rs != 32 {
		return nil, fmt.Errorf("mmdbstream: record size %d: want 24, 28 or 32", rs)
	}
	if opts.BuildTime.IsZero() {
		opts.BuildTime = time.Now()
	}
	w := &Writer{opts: opts, recordSize: rs, aliases: ipv4Aliases}
	var err error
	if w.tree, err = os.CreateTemp(opts.TempDir, "mmdbstream-tree-*"); err != nil {
		return nil, fmt.Errorf("mmdbstream: %w", err)
	}
	if w.dataFile, err = os.CreateTemp(opts.TempDir, "mmdbstream-data-*"); err != nil {
		w.Close()
		return nil, fmt.Errorf("mmdbstream: %w", err)
	}
	w.data = newDataWriter(w.dataFile)
	// The IPv4 tree's root is a node even where IPv4 has no networks:
	// readers find the IPv4 networks by walking to it.
	w.path = append(w.path, w.newNode())
	if err := w.descend(addrOf(v4Root.Addr()), v4Root.Bits()); err != nil {
		w.Close()
		return nil, err
	}
	w.v4root = w.path[len(w.path)-1].num
	return w, nil
}

// Close removes the temporary files; a Writer is done with after Finish
// or a failure.
func (w *Writer) Close() error {
	var errs []error
	for _, f := range []*os.File{w.tree, w.dataFile} {
		if f != nil {
			errs = append(errs, f.Close(), os.Remove(f.Name()))
		}
	}
	w.tree, w.dataFile = nil, nil
	return errors.Join(errs...)
}

// Data writes v to the data section and returns it as a record for
// Insert. Each call writes v anew: a caller that inserts one value for
// many networks keeps its Record (the writer holds no index of the
// records, which would grow with the file). Two halves of a network
// merge only where they have the same Record.
func (w *Writer) Data(v mmdbtype.DataType) (Record, error) {
	off := w.data.off
	if off > maxOffset {
		return Record{}, errTooLarge
	}
	if _, err := v.WriteTo(w.data); err != nil {
		return Record{}, fmt.Errorf("mmdbstream: %w", err)
	}
	w.Stats.Records++
	return Record{uint32(off)}, nil
}

// Insert adds network p with record r. Networks come in address order
// (IPv4 first, then IPv6, as netip orders them), and none overlaps
// another. Two halves of a network with the same record are that
// network. A network that holds one of the IPv4 aliases is inserted
// around it; one inside an alias, or holding the IPv4 tree without being
// it, is an error.
func (w *Writer) Insert(p netip.Prefix, r Record) error {
	if !p.IsValid() {
		return fmt.Errorf("mmdbstream: invalid network %s", p)
	}
	p = p.Masked()
	a, bits := addrOf(p.Addr()), p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	switch {
	case bits < v4Root.Bits() && commonBits(a, u128{}) >= bits:
		return fmt.Errorf("mmdbstream: %s holds the IPv4 tree", p)
	case w.acceptedAll || a.less(w.accepted):
		return fmt.Errorf("mmdbstream: %s is not after the networks inserted before it", p)
	}
	v := r.off | dataBit
	if len(w.pending) > 0 && (v != w.pendingV || a != w.accepted) {
		if err := w.flushPending(); err != nil {
			return err
		}
	}
	w.pendingV = v
	w.pending = append(w.pending, pnet{a, bits})
	// Merge the latest network with its left half while they share the
	// record, as mmdbwriter merges a node's two equal records; never
	// into a network that holds the IPv4 tree, which is a node of its
	// own there.
	for n := len(w.pending); n >= 2; n = len(w.pending) {
		x, y := w.pending[n-2], w.pending[n-1]
		pb := x.bits - 1
		if x.bits != y.bits || x.a.bit(pb) != 0 || y.a != x.a.withBit(pb) ||
			pb < v4Root.Bits() && commonBits(x.a, u128{}) >= pb {
			break
		}
		w.pending = append(w.pending[:n-2], pnet{x.a, pb})
	}
	last := a.last(bits)
	w.acceptedAll = last == maxU128
	w.accepted = last.next()
	w.Stats.Networks++
	return nil
}

// pnet is a network waiting for its other half.
type pnet struct {
	a    u128
	bits int
}

// flushPending inserts the networks that wait.
func (w *Writer) flushPending() error {
	for _, p := range w.pending {
		if err := w.insertAround(p.a, p.bits, w.pendingV); err != nil {
			return err
		}
	}
	w.pending = w.pending[:0]
	return nil
}

// insertAround inserts the network a/bits with stored value v, in the
// parts of it that are not aliases.
func (w *Writer) insertAround(a u128, bits int, v uint32) error {
	first, last := a, a.last(bits)
	for len(w.aliases) > 0 {
		al := w.aliases[0]
		aa, ab := addrOf(al.Addr()), al.Bits()
		switch {
		case aa.last(ab).less(first):
			// The alias is before the network: it goes in first.
			if err := w.insert(aa, ab, w.v4root); err != nil {
				return err
			}
			w.aliases = w.aliases[1:]
			continue
		case last.less(aa):
		case bits == ab && a == aa:
			// The part of a network that is the alias stays the alias.
			w.aliases = w.aliases[1:]
			return w.insert(aa, ab, w.v4root)
		case bits > ab:
			return fmt.Errorf("mmdbstream: %s is inside the alias %s of the IPv4 tree", prefixOf(a, bits), al)
		default:
			// The network holds the alias: its halves go in apart.
			if err := w.insertAround(a, bits+1, v); err != nil {
				return err
			}
			return w.insertAround(a.withBit(bits), bits+1, v)
		}
		break
	}
	return w.insert(a, bits, v)
}

// insert puts stored value v in the record of network a/bits, making the
// nodes above it.
func (w *Writer) insert(a u128, bits int, v uint32) error {
	if w.full || a.less(w.next) {
		return fmt.Errorf("mmdbstream: %s is not after the networks inserted before it", prefixOf(a, bits))
	}
	// The deepest open node that holds the network; the ones below it
	// are passed and leave memory.
	d := min(len(w.path)-1, bits, commonBits(w.pathAddr, a))
	for len(w.path)-1 > d {
		if err := w.closeNode(); err != nil {
			return err
		}
	}
	w.pathAddr = a
	if d == bits {
		// The network is the open node itself (the IPv4 tree's root,
		// which is a node before anything is in it).
		n := &w.path[d]
		if n.rec != [2]uint32{empty, empty} {
			return fmt.Errorf("mmdbstream: %s overlaps a network inserted before it", prefixOf(a, bits))
		}
		n.rec = [2]uint32{v, v}
	} else {
		if err := w.descend(a, bits-1); err != nil {
			return err
		}
		n := &w.path[len(w.path)-1]
		b := a.bit(bits - 1)
		if n.rec[b] != empty {
			return fmt.Errorf("mmdbstream: %s overlaps a network inserted before it", prefixOf(a, bits))
		}
		n.rec[b] = v
	}
	last := a.last(bits)
	if last == maxU128 {
		w.full = true
	}
	w.next = last.next()
	return nil
}

// descend makes the open path reach depth (a node of it holding a).
func (w *Writer) descend(a u128, depth int) error {
	for d := len(w.path) - 1; d < depth; d++ {
		b := a.bit(d)
		if w.path[d].rec[b] != empty {
			return fmt.Errorf("mmdbstream: %s overlaps a network inserted before it", prefixOf(a, d+1))
		}
		n := w.newNode()
		w.path[d].rec[b] = n.num
		w.path = append(w.path, n)
	}
	w.pathAddr = a
	return nil
}

// newNode is a new open node, numbered next: nodes are made in the order
// of a depth-first walk, left first, as mmdbwriter numbers them.
func (w *Writer) newNode() open {
	n := open{num: w.count, rec: [2]uint32{empty, empty}}
	w.count++
	w.nodes = append(w.nodes, 0)
	return n
}

// nodeBatch is how many nodes are held before they are written out.
const nodeBatch = 1 << 16

// closeNode lets go of the deepest open node: its records are final.
func (w *Writer) closeNode() error {
	n := w.path[len(w.path)-1]
	w.path = w.path[:len(w.path)-1]
	v := uint64(n.rec[0])<<32 | uint64(n.rec[1])
	if n.num >= w.base {
		w.nodes[n.num-w.base] = v
	} else {
		// Written out while it was open: its place in the file is
		// written again.
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], v)
		if _, err := w.tree.WriteAt(b[:], int64(n.num)*8); err != nil {
			return fmt.Errorf("mmdbstream: %w", err)
		}
	}
	if len(w.nodes) >= nodeBatch {
		return w.flushNodes()
	}
	return nil
}

// flushNodes writes the nodes held to the tree file. The open ones among
// them are written again when they close.
func (w *Writer) flushNodes() error {
	buf := make([]byte, 8*len(w.nodes))
	for i, v := range w.nodes {
		binary.BigEndian.PutUint64(buf[8*i:], v)
	}
	if _, err := w.tree.WriteAt(buf, int64(w.base)*8); err != nil {
		return fmt.Errorf("mmdbstream: %w", err)
	}
	w.base += uint32(len(w.nodes))
	w.nodes = w.nodes[:0]
	return nil
}

// Finish writes the file to out: the search tree, the data section, the
// metadata.
func (w *Writer) Finish(out io.Writer) error {
	if err := w.flushPending(); err != nil {
		return err
	}
	for _, al := range w.aliases {
		if err := w.insert(addrOf(al.Addr()), al.Bits(), w.v4root); err != nil {
			return err
		}
	}
	w.aliases = nil
	for len(w.path) > 0 {
		if err := w.closeNode(); err != nil {
			return err
		}
	}
	if err := w.flushNodes(); err != nil {
		return err
	}
	if err := w.data.w.Flush(); err != nil {
		return fmt.Errorf("mmdbstream: %w", err)
	}
	nodeCount := uint64(w.count)
	w.Stats.Nodes = int(nodeCount)
	if nodeCount+16+uint64(w.data.off) >= 1<<w.recordSize {
		return errTooLarge
	}

	bw := bufio.NewWriterSize(out, 1<<20)
	in := bufio.NewReaderSize(io.NewSectionReader(w.tree, 0, int64(nodeCount)*8), 1<<20)
	var stored [8]byte
	rec := make([]byte, w.recordSize/4)
	value := func(s uint32) uint64 {
		switch {
		case s == empty:
			return nodeCount
		case s&dataBit != 0:
			return nodeCount + 16 + uint64(s&^dataBit)
		}
		return uint64(s)
	}
	for range nodeCount {
		if _, err := io.ReadFull(in, stored[:]); err != nil {
			return fmt.Errorf("mmdbstream: reading the tree back: %w", err)
		}
		l := value(binary.BigEndian.Uint32(stored[:4]))
		r := value(binary.BigEndian.Uint32(stored[4:]))
		switch w.recordSize {
		case 24:
			rec[0], rec[1], rec[2] = byte(l>>16), byte(l>>8), byte(l)
			rec[3], rec[4], rec[5] = byte(r>>16), byte(r>>8), byte(r)
		case 28:
			rec[0], rec[1], rec[2] = byte(l>>16), byte(l>>8), byte(l)
			rec[3] = byte(l>>24&0x0f)<<4 | byte(r>>24&0x0f)
			rec[4], rec[5], rec[6] = byte(r>>16), byte(r>>8), byte(r)
		case 32:
			binary.BigEndian.PutUint32(rec, uint32(l))
			binary.BigEndian.PutUint32(rec[4:], uint32(r))
		}
		if _, err := bw.Write(rec); err != nil {
			return err
		}
	}
	bw.Write(make([]byte, 16)) // the data section separator
	if _, err := io.Copy(bw, io.NewSectionReader(w.dataFile, 0, w.data.off)); err != nil {
		return err
	}
	bw.WriteString("\xAB\xCD\xEFMaxMind.com")
	if _, err := w.metadata().WriteTo(&plainWriter{bw}); err != nil {
		return err
	}
	return bw.Flush()
}

// metadata is the file's metadata map, mmdbwriter's keys.
func (w *Writer) metadata() mmdbtype.Map {
	desc := mmdbtype.Map{}
	for k, v := range w.opts.Description {
		desc[mmdbtype.String(k)] = mmdbtype.String(v)
	}
	langs := mmdbtype.Slice{}
	for _, l := range w.opts.Languages {
		langs = append(langs, mmdbtype.String(l))
	}
	return mmdbtype.Map{
		"binary_format_major_version": mmdbtype.Uint16(2),
		"binary_format_minor_version": mmdbtype.Uint16(0),
		"build_epoch":                 mmdbtype.Uint64(w.opts.BuildTime.Unix()),
		"database_type":               mmdbtype.String(w.opts.DatabaseType),
		"description":                 desc,
		"ip_version":                  mmdbtype.Uint16(6),
		"languages":                   langs,
		"node_count":                  mmdbtype.Uint32(w.count),
		"record_size":                 mmdbtype.Uint16(w.recordSize),
	}
}

// plainWriter writes values whole, never as pointers.
type plainWriter struct{ *bufio.Writer }

func (p *plainWriter) WriteOrWritePointer(v mmdbtype.DataType) (int64, error) {
	return v.WriteTo(p)
}

// u128 is an IPv6 address (an IPv4 one in ::/96) as a number.
type u128 struct{ hi, lo uint64 }

var maxU128 = u128{math.MaxUint64, math.MaxUint64}

func addrOf(a netip.Addr) u128 {
	b := a.As16()
	if a.Is4() {
		b = [16]byte{12: b[12], 13: b[13], 14: b[14], 15: b[15]}
	}
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

func (x u128) addr() netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x.hi)
	binary.BigEndian.PutUint64(b[8:], x.lo)
	return netip.AddrFrom16(b)
}

func prefixOf(a u128, bits int) netip.Prefix { return netip.PrefixFrom(a.addr(), bits) }

func (x u128) less(y u128) bool { return x.hi < y.hi || x.hi == y.hi && x.lo < y.lo }

// bit is bit i of x, the first being 0.
func (x u128) bit(i int) int {
	if i < 64 {
		return int(x.hi >> (63 - i) & 1)
	}
	return int(x.lo >> (127 - i) & 1)
}

// withBit is x with bit i set.
func (x u128) withBit(i int) u128 {
	if i < 64 {
		x.hi |= 1 << (63 - i)
	} else {
		x.lo |= 1 << (127 - i)
	}
	return x
}

// last is the last address of the network x/bits.
func (x u128) last(bits int) u128 {
	switch {
	case bits == 0:
		return maxU128
	case bits <= 64:
		return u128{x.hi | math.MaxUint64>>bits, math.MaxUint64}
	case bits == 128:
		return x
	}
	return u128{x.hi, x.lo | math.MaxUint64>>(bits-64)}
}

func (x u128) next() u128 {
	x.lo++
	if x.lo == 0 {
		x.hi++
	}
	return x
}

// commonBits is how many leading bits x and y share.
func commonBits(x, y u128) int {
	if d := x.hi ^ y.hi; d != 0 {
		return bits.LeadingZeros64(d)
	}
	return 64 + bits.LeadingZeros64(x.lo^y.lo)
}
