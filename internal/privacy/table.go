package privacy

import (
	"cmp"
	"iter"
	"net/netip"
	"slices"
	"time"

	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// Table is every loaded list compiled into one sorted range table per
// address family: the address space cut into intervals, each with the
// flags and service of every list range that covers it, so that a lookup
// is one binary search whatever the number of lists. It is immutable.
type Table struct {
	v4    []uint32 // interval starts, ascending; v4[0] == 0
	v4val []uint16 // index into attrs, per interval
	v6    []netaddr.U128
	v6val []uint16
	// v4idx[h] is the interval that holds the address h<<16, so that the
	// interval of any address of the /16 h lies in v4idx[h]..v4idx[h+1]:
	// a lookup searches a handful of intervals rather than all of them,
	// and touches a few cache lines rather than one per halving. v6idx
	// does the same for the top 16 bits of IPv6 addresses.
	v4idx []uint32
	v6idx []uint32
	// v4one[h] is the attrs index of the /16 h when one interval covers
	// it whole (most /16s), else noOne: then the lookup reads one cache
	// line rather than the index, the starts and the values.
	v4one []uint16
	attrs []attr // attrs[0] is "on no list"

	dcASNs []uint32 // sorted: ASes whose every address is Hosting

	lists   []ListInfo
	refused []Refusal // downloads refused whole: the lists answer from the copy before, if any
	torAt   time.Time // when the Tor list in the table was fetched; zero when none
}

type attr struct {
	flags   Flags
	service string
}

// ListInfo describes one list in a table, for `db info` and the datasets
// listing.
type ListInfo struct {
	Name    string
	File    string // in the data dir; "" for the snapshot's copy
	URL     string // where it was fetched from
	Source  string
	License string
	Date    time.Time // the upstream's date of this copy (Last-Modified, the snapshot's commit), else when it was fetched
	Size    int64     // bytes
	Entries int       // in service: the copy's entries less those refused
	Builtin bool      // the binary's snapshot, not a fetched copy
	// Refused are the copy's entries that Check refused.
	Refused Refusals
}

// Loaded is one parsed list with what is known of its copy.
type Loaded struct {
	List    List
	Entries Entries
	Info    ListInfo
}

// Compile builds a table from parsed lists. Every flag of every covering
// range is set. The service of an address is the one named by the most
// specific range that covers it and names one, between equal ranges the
// list earlier in Lists, with one exception, the owner's precedence: when
// that range is a Tenant list's and an Owner list's range also covers the
// address, the owner names it (the most specific of the owners' ranges).
// An address in both a cloud operator's list and a tenant's is the
// operator's: GitHub lists the Azure ranges its Actions runners take their
// addresses from, which are Azure's, shared with every other customer, so
// they answer "Microsoft Azure"; GitHub's own ranges, in no operator's
// list, stay "GitHub".
func Compile(lists []Loaded) *Table {
	t := &Table{attrs: []attr{{}}}
	index := map[attr]uint16{{}: 0}
	attrOf := func(a attr) uint16 {
		if i, ok := index[a]; ok {
			return i
		}

		i := uint16(len(t.attrs))
		t.attrs = append(t.attrs, a)
		index[a] = i
		return i
	}
	prio := map[string]int{}
	for i, l := range Lists {
		prio[l.Name] = i
	}
	var spans4, spans6 []span
	for _, l := range lists {
		for _, p := range l.Entries.Prefixes {
			s := span{bits: p.Bits(), flags: l.List.Flags, service: l.List.Service, prio: prio[l.List.Name],
				owner: l.List.Owner, tenant: l.List.Tenant}
			s.start, s.end = rangeOf(p)
			if p.Addr().Is4() {
				spans4 = append(spans4, s)
			} else {
				spans6 = append(spans6, s)
			}
		}
		if l.List.Format == FormatASN {
			t.dcASNs = append(t.dcASNs, l.Entries.ASNs...)
		}
		if l.List.Name == TorList {
			t.torAt = l.Info.Date
		}
		t.lists = append(t.lists, l.Info)
	}
	slices.Sort(t.dcASNs)
	t.dcASNs = slices.Compact(t.dcASNs)
	starts, vals := sweep(spans4, netaddr.U128{Lo: 1<<32 - 1}, attrOf)
	t.v4 = make([]uint32, len(starts))
	for i, s := range starts {
		t.v4[i] = uint32(s.Lo)
	}
	t.v4val = vals
	t.v6, t.v6val = sweep(spans6, netaddr.MaxU128, attrOf)
	t.v4idx = buckets(len(t.v4), func(i, h int) bool { return t.v4[i] <= uint32(h)<<16 })
	t.v6idx = buckets(len(t.v6), func(i, h int) bool { return t.v6[i].Cmp(netaddr.U128{Hi: uint64(h) << 48}) <= 0 })
	t.v4one = make([]uint16, 1<<16)
	for h := range t.v4one {
		lo, hi := t.v4idx[h], t.v4idx[h+1]
		if hi > lo && t.v4[hi] == uint32(h+1)<<16 {
			hi-- // the next interval starts at the next /16
		}
		t.v4one[h] = noOne
		if lo == hi {
			t.v4one[h] = t.v4val[lo]
		}
	}
	return t
}

// noOne marks a /16 of v4one that holds more than one interval. No attrs
// index reaches it: the lists are fixed, and make at most 16 flag sets
// times their few dozen services.
const noOne = 0xffff

// buckets builds v4idx or v6idx: atOrBefore(i, h) reports whether
// interval i starts at or before the first address of bucket h.
func buckets(n int, atOrBefore func(i, h int) bool) []uint32 {
	idx := make([]uint32, 1<<16+1)
	i := 0
	for h := range 1 << 16 {
		for i+1 < n && atOrBefore(i+1, h) {
			i++
		}
		idx[h] = uint32(i)
	}
	idx[1<<16] = uint32(n - 1)
	return idx
}

// span is one list range.
type span struct {
	start, end netaddr.U128
	bits       int
	flags      Flags
	service    string
	prio       int
	owner      bool // List.Owner
	tenant     bool // List.Tenant
}

// sweep cuts the space [0, max] into intervals by the spans, which are
// CIDR ranges and so either nested or disjoint: in start order, outer
// before inner, a stack holds the ranges covering the current point.
func sweep(spans []span, max netaddr.U128, attrOf func(attr) uint16) ([]netaddr.U128, []uint16) {
	slices.SortFunc(spans, func(a, b span) int {
		if c := a.start.Cmp(b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.bits, b.bits)
	})
	starts := []netaddr.U128{{}}
	vals := []uint16{0}
	var stack []span
	emit := func(at netaddr.U128) {
		v := attrOf(combine(stack))
		n := len(starts)
		if starts[n-1] == at {
			vals[n-1] = v
			if n > 1 && vals[n-2] == v {
				starts, vals = starts[:n-1], vals[:n-1]
			}
			return
		}
		if vals[n-1] == v {
			return
		}
		starts, vals = append(starts, at), append(vals, v)
	}
	pop := func() {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if top.end != max {
			emit(top.end.Next())
		}
	}
	for _, s := range spans {
		for len(stack) > 0 && stack[len(stack)-1].end.Cmp(s.start) < 0 {
			pop()
		}
		stack = append(stack, s)
		emit(s.start)
	}
	for len(stack) > 0 {
		pop()
	}
	return starts, vals
}

// combine is the attribute of a point covered by the spans of stack: see
// Compile for the service.
func combine(stack []span) attr {
	var a attr
	best, owner := -1, -1
	better := func(i, than int) bool {
		s := stack[i]
		return than < 0 || s.bits > stack[than].bits || (s.bits == stack[than].bits && s.prio < stack[than].prio)
	}
	for i, s := range stack {
		a.flags |= s.flags
		if s.service == "" {
			continue
		}
		if better(i, best) {
			best = i
		}
		if s.owner && better(i, owner) {
			owner = i
		}
	}
	if best >= 0 && stack[best].tenant && owner >= 0 {
		best = owner
	}
	if best >= 0 {
		a.service = stack[best].service
	}
	return a
}

// Lookup returns the flags and service of an address (IPv4-mapped
// addresses are looked up as IPv4), and Hosting also when asn, the AS
// announcing the address (0 when unknown), is on a datacenter AS list.
func (t *Table) Lookup(a netip.Addr, asn uint32) (Flags, string) {
	f, service, _ := t.LookupNet(a, asn)
	return f, service
}

// LookupNet is Lookup that also returns the prefix length (in a's family,
// an IPv4-mapped address counting as IPv4) of the largest CIDR around a
// whose addresses all lie in a's interval: the lists give every address
// of it the same flags and service. The AS lists follow the AS's
// networks, which the caller bounds.
func (t *Table) LookupNet(a netip.Addr, asn uint32) (Flags, string, int) {
	if a.Is4() || a.Is4In6() {
		b := a.Unmap().As4()
		x := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		i := int(t.v4idx[x>>16])
		if t.v4one[x>>16] == noOne {
			lo, hi := i+1, int(t.v4idx[x>>16+1])+1
			for lo < hi {
				m := int(uint(lo+hi) >> 1)
				if t.v4[m] <= x {
					lo = m + 1
				} else {
					hi = m
				}
			}
			i = lo - 1
		}
		last := uint64(1)<<32 - 1
		if i+1 < len(t.v4) {
			last = uint64(t.v4[i+1]) - 1
		}
		f, service := t.result(t.v4val[i], asn)
		return f, service, netaddr.BlockBits(netaddr.U128{Lo: uint64(x)}, netaddr.U128{Lo: uint64(t.v4[i])}, netaddr.U128{Lo: last}, 32)
	}
	x := netaddr.U128Of(a)
	lo, hi := int(t.v6idx[x.Hi>>48])+1, int(t.v6idx[x.Hi>>48+1])+1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.v6[m].Cmp(x) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	last := netaddr.MaxU128
	if i+1 < len(t.v6) {
		last = t.v6[i+1].Prev()
	}
	f, service := t.result(t.v6val[i], asn)
	return f, service, netaddr.BlockBits(x, t.v6[i], last, 128)
}

func (t *Table) result(v uint16, asn uint32) (Flags, string) {
	at := &t.attrs[v]
	f := at.flags
	if asn != 0 && f&Hosting == 0 && t.HostingAS(asn) {
		f |= Hosting
	}
	return f, at.service
}

// HostingAS reports whether an AS is on a datacenter AS list.
func (t *Table) HostingAS(asn uint32) bool {
	_, ok := slices.BinarySearch(t.dcASNs, asn)
	return ok
}

// TorFetched is when the Tor exit list in the table was fetched; the zero
// time when the table has none.
func (t *Table) TorFetched() time.Time { return t.torAt }

// Lists describes the lists in the table, in the order of Lists.
func (t *Table) Lists() []ListInfo { return slices.Clone(t.lists) }

// Refused are the downloads of lists refused whole (privacy.json's, and
// fetched copies that fail this build's bounds): the list answers from
// the copy before it, the snapshot's, or not at all.
func (t *Table) Refused() []Refusal { return slices.Clone(t.refused) }

// Intervals is the number of intervals of the IPv4 and IPv6 tables, for
// measurements.
func (t *Table) Intervals() (v4, v6 int) { return len(t.v4), len(t.v6) }

// rangeOf is the first and last address of a masked prefix, as numbers
// (IPv4 in the low 32 bits).
func rangeOf(p netip.Prefix) (netaddr.U128, netaddr.U128) {
	if p.Addr().Is4() {
		b := p.Addr().As4()
		x := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
		host := uint64(1)<<(32-p.Bits()) - 1
		return netaddr.U128{Lo: x}, netaddr.U128{Lo: x | host}
	}
	start := netaddr.U128Of(p.Addr())
	end := start
	host := 128 - p.Bits()
	switch {
	case host >= 128:
		end = netaddr.MaxU128
	case host >= 64:
		end.Lo = ^uint64(0)
		end.Hi |= 1<<(host-64) - 1
	default:
		end.Lo |= 1<<host - 1
	}
	return start, end
}

// Touches reports whether any address of p is on a list range (the AS
// lists aside).
func (t *Table) Touches(p netip.Prefix) bool {
	p = p.Masked()
	first, last := rangeOf(p)
	if p.Addr().Is4() {
		x, y := uint32(first.Lo), uint32(last.Lo)
		i, found := slices.BinarySearch(t.v4, x)
		if !found {
			i-- // the interval holding x starts before it
		}
		for j := i; j < len(t.v4) && t.v4[j] <= y; j++ {
			if t.attrs[t.v4val[j]].flags != 0 {
				return true
			}
		}
		return false
	}
	i, found := slices.BinarySearchFunc(t.v6, first, netaddr.U128.Cmp)
	if !found {
		i--
	}
	for j := i; j < len(t.v6) && t.v6[j].Cmp(last) <= 0; j++ {
		if t.attrs[t.v6val[j]].flags != 0 {
			return true
		}
	}
	return false
}

// Starts yields the first address of every interval of the table, IPv4
// (as 4-byte addresses) then IPv6, each family in ascending order: within
// an interval every address has the same flags and service. The AS lists
// aside, which follow the ASN data's networks.
func (t *Table) Starts() iter.Seq[netip.Addr] {
	return func(yield func(netip.Addr) bool) {
		for _, x := range t.v4 {
			if !yield(netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})) {
				return
			}
		}
		for _, x := range t.v6 {
			if !yield(x.Addr()) {
				return
			}
		}
	}
}
