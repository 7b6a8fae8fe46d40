package geo

import (
	"errors"
	"iter"
	"net/netip"
	"slices"

	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// CorrectionRegion is the ISO 3166-2 code the correction that answers
// addr (in AS asn) names, and whether one answers it: the record has no
// field for it yet.
func CorrectionRegion(e *Engine, addr netip.Addr, asn uint32) (string, bool) {
	o := e.local.Load()
	if o == nil {
		return "", false
	}
	v := o.lookup(addr, asn)
	if v == nil {
		return "", false
	}
	return v.region, true
}

// ASIndexStopped: a background build of the current dataset's AS index
// told to stop at once leaves no index behind, and the next AS query
// builds it.
func ASIndexStopped(e *Engine) (stopped, builtLater bool) {
	g := e.acquire()
	defer g.release()
	_, _, err := g.buildASIndexAhead(func() bool { return true })
	stopped = errors.Is(err, errASStopped) && g.asBuilt.Load() == nil
	_, err = g.asIndexOf()
	return stopped, err == nil && g.asBuilt.Load() != nil
}

// PieceStarts yields the first address of every piece of ps that holds
// an address of [first, last] (one family; an IPv4 range in 4-byte
// addresses), clipped to first: within each piece every address has the
// same answer, so these addresses show every answer the range holds.
func PieceStarts(ps *Pieces, first, last netip.Addr) iter.Seq[netip.Addr] {
	return func(yield func(netip.Addr) bool) {
		if !yield(first) {
			return
		}
		if first.Is4() {
			x, y := v4num(first), v4num(last)
			i, _ := slices.BinarySearch(ps.v4, x+1)
			for ; i < len(ps.v4) && ps.v4[i] <= y; i++ {
				if !yield(v4addr(ps.v4[i])) {
					return
				}
			}
			return
		}
		x, y := netaddr.U128Of(first), netaddr.U128Of(last)
		if x == netaddr.MaxU128 {
			return
		}
		i, _ := slices.BinarySearchFunc(ps.v6, x.Next(), netaddr.U128.Cmp)
		for ; i < len(ps.v6) && ps.v6[i].Cmp(y) <= 0; i++ {
			if !yield(ps.v6[i].Addr()) {
				return
			}
		}
	}
}
