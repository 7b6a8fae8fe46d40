package geo

import (
	"fmt"
	"iter"
	"net/netip"
	"slices"

	"github.com/ipatlas/ipatlas/internal/netaddr"
	"go4.org/netipx"
)

// Pieces cuts the address space into ranges within each of which Lookup
// gives every address the same answer (its IP aside): the union of the
// network boundaries of every source an answer is made of. Walking the
// pieces and looking up the first address of each is how the whole of
// what the engine answers is written out (ipatlas db export).
type Pieces struct {
	v4 []uint32 // starts, ascending, v4[0] == 0; a piece ends before the next start, the last at 2^32-1
	v6 []netaddr.U128
}

func v4num(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func v4addr(x uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
}

// Pieces collects the boundaries of the dataset in service: the networks
// of every city and ASN file that answers a family (an IPv6 tree's IPv4
// subtree counts as IPv4), the privacy lists' intervals (the AS lists
// follow the ASN networks) and the corrections' prefixes (a feed's check
// of the address's AS follows the ASN networks too). IPv6 pieces are of
// native IPv6 addresses: the ranges Lookup answers by an embedded IPv4
// address (::ffff:0:0/96, ::/96, 64:ff9b::/96) are pieces whose answer is
// that of the IPv4 pieces, not one answer.
func (e *Engine) Pieces() (*Pieces, error) {
	g := e.acquire()
	if g == nil {
		return nil, ErrClosed
	}
	defer g.release()
	ps := &Pieces{v4: []uint32{0}, v6: []netaddr.U128{{}}}
	// A source's networks come in address order, each often starting
	// where the one before ends: a start equal to the last boundary
	// added is not added again, which halves the tables built (they are
	// most of an export's memory).
	add := func(first, last netip.Addr) {
		if first.Is4() {
			if x := v4num(first); ps.v4[len(ps.v4)-1] != x {
				ps.v4 = append(ps.v4, x)
			}
			if end := uint64(v4num(last)) + 1; end < 1<<32 {
				ps.v4 = append(ps.v4, uint32(end))
			}
			return
		}
		if x := netaddr.U128Of(first); ps.v6[len(ps.v6)-1] != x {
			ps.v6 = append(ps.v6, x)
		}
		if end := netaddr.U128Of(last); end != netaddr.MaxU128 {
			ps.v6 = append(ps.v6, end.Next())
		}
	}
	walk := func(list []*source, root netip.Prefix) error {
		for _, s := range list {
			for res := range s.r.NetworksWithin(root) {
				if err := res.Err(); err != nil {
					return fmt.Errorf("geo: walking %s: %w", s.info.File, err)
				}
				p := res.Prefix()
				if root.Addr().Is6() && (p.Addr().Is4() || p.Addr().Is4In6()) {
					continue // the IPv4 subtree, walked as IPv4
				}
				add(p.Masked().Addr(), netipx.PrefixLastIP(p))
			}
		}
		return nil
	}
	v4root, v6root := netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")
	for _, w := range []struct {
		list []*source
		root netip.Prefix
	}{{g.city4, v4root}, {g.asn4, v4root}, {g.city6, v6root}, {g.asn6, v6root}} {
		if err := walk(w.list, w.root); err != nil {
			return nil, err
		}
	}
	if pt := e.priv.Load(); pt != nil {
		for a := range pt.Starts() {
			if a.Is4() {
				ps.v4 = append(ps.v4, v4num(a))
			} else {
				ps.v6 = append(ps.v6, netaddr.U128Of(a))
			}
		}
	}
	if o := e.local.Load(); o != nil {
		for _, t := range o.layers {
			if t == nil {
				continue
			}
			for p := range t.All() {
				add(p.Masked().Addr(), netipx.PrefixLastIP(p))
			}
		}
	}
	// Copies of the exact size let the tables built, which grew by
	// appending, go.
	slices.Sort(ps.v4)
	ps.v4 = slices.Clone(slices.Compact(ps.v4))
	slices.SortFunc(ps.v6, netaddr.U128.Cmp)
	ps.v6 = slices.Clone(slices.Compact(ps.v6))
	return ps, nil
}

// Len is the number of pieces.
func (ps *Pieces) Len() int { return len(ps.v4) + len(ps.v6) }

// All yields every piece, first and last address, IPv4 (4-byte
// addresses) then IPv6, in address order; together they cover both
// address spaces.
func (ps *Pieces) All() iter.Seq2[netip.Addr, netip.Addr] {
	return func(yield func(netip.Addr, netip.Addr) bool) {
		for i, x := range ps.v4 {
			end := uint32(1<<32 - 1)
			if i+1 < len(ps.v4) {
				end = ps.v4[i+1] - 1
			}
			if !yield(v4addr(x), v4addr(end)) {
				return
			}
		}
		for i, x := range ps.v6 {
			end := netaddr.MaxU128
			if i+1 < len(ps.v6) {
				end = ps.v6[i+1].Prev()
			}
			if !yield(x.Addr(), end.Addr()) {
				return
			}
		}
	}
}
