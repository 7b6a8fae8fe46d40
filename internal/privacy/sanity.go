package privacy

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"go4.org/netipx"

	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// The announced space of each address family, which MaxShare is a share
// of: the addresses (IPv4) and /64 networks (IPv6) the ASN data routes,
// measured on its November 2026 build (3,310,086,129 and 9.88e14; see
// TestAnnouncedSpace). Both grow over the years, which only loosens the
// bounds a little.
const (
	AnnouncedIPv4 = 3.31e9
	AnnouncedIPv6 = 9.88e14
)

// ErrImplausible means a list parses but would flag far more than the
// real list ever does (a padded list, or a mirror serving the whole
// Internet): it must never replace a good copy.
var ErrImplausible = errors.New("implausible list")

// Refusals are the entries of a copy that Check refused, the copy itself
// being kept.
type Refusals struct {
	Count    int      `json:"count"`
	Examples []string `json:"examples,omitempty"` // the first few, "ENTRY: why"
}

// maxExamples is how many refused entries Refusals keeps.
const maxExamples = 5

// Refusal is a download of a list that was refused whole: the copy in
// service (or the snapshot's) stayed.
type Refusal struct {
	Name   string    `json:"name"`
	URL    string    `json:"url"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason"`
}

// refusedShare is the share of refused entries above which a copy is not
// the publisher's list and is refused whole: the real lists have none,
// bar a handful of stray entries (four of Vultr's 27 IPv6 ranges are
// documentation, benchmarking, ORCHID and 6to4 space).
const refusedShare = 0.25

// Check applies the list's sanity bounds to a parsed copy and returns the
// entries it keeps.
//
// An entry is refused when its prefix is shorter than Widest4 or Widest6
// (for the Tor exits: when it is not a single host), or when its first
// and last addresses both lie in space that is not globally reachable
// (netaddr.Classify: private, documentation, ...): no list names such
// space, and no such address is ever looked up.
//
// The copy is refused whole, ErrImplausible, when it has more entries
// than MaxEntries (padding), when more than a quarter of its entries are
// refused (a file that is mostly not the list), or when the entries it
// keeps cover more than MaxShare percent of the announced space of either
// family (a list that would flag a slice of the Internet it never named).
func (l List) Check(e Entries) (Entries, Refusals, error) {
	var r Refusals
	if l.MaxEntries > 0 && e.Len() > l.MaxEntries {
		return Entries{}, r, fmt.Errorf("%s: %w: %d entries, more than the %d a real copy ever has", l.Name, ErrImplausible, e.Len(), l.MaxEntries)
	}
	kept := e // shares e's entries until one is refused
	for i, p := range e.Prefixes {
		why := l.refuse(p)
		if why == "" {
			if r.Count > 0 {
				kept.Prefixes = append(kept.Prefixes, p)
			}
			continue
		}
		if r.Count == 0 {
			kept.Prefixes = slices.Clone(e.Prefixes[:i])
		}
		r.Count++
		if len(r.Examples) < maxExamples {
			r.Examples = append(r.Examples, p.String()+": "+why)
		}
	}
	if r.Count > 0 && float64(r.Count) > refusedShare*float64(e.Len()) {
		return Entries{}, r, fmt.Errorf("%s: %w: %d of its %d entries refused (more than a quarter), the first %s", l.Name, ErrImplausible,
			r.Count, e.Len(), r.Examples[0])
	}
	if l.MaxShare > 0 {
		v4, v6 := coverage(kept.Prefixes, l.MaxShare/100*AnnouncedIPv4, l.MaxShare/100*AnnouncedIPv6)
		for _, f := range []struct {
			name  string
			share float64
		}{{"IPv4", 100 * v4 / AnnouncedIPv4}, {"IPv6", 100 * v6 / AnnouncedIPv6}} {
			if f.share > l.MaxShare {
				return Entries{}, r, fmt.Errorf("%s: %w: covers %.3g%% of the announced %s space, more than the %g%% a real copy may", l.Name,
					ErrImplausible, f.share, f.name, l.MaxShare)
			}
		}
	}
	return kept, r, nil
}

// refuse says why an entry is refused, or "".
func (l List) refuse(p netip.Prefix) string {
	widest, host := l.Widest4, 32
	if p.Addr().Is6() {
		widest, host = l.Widest6, 128
	}
	if p.Bits() < widest {
		if widest == host {
			return "not a single address"
		}
		return fmt.Sprintf("wider than /%d", widest)
	}
	first, last := p.Addr(), netipx.PrefixLastIP(p)
	if b, ok := netaddr.Classify(first); ok {
		if _, ok := netaddr.Classify(last); ok {
			return "not globally reachable (" + b.Name + ")"
		}
	}
	return ""
}

// coverage is how much the prefixes cover, overlaps counted once: IPv4
// addresses, and IPv6 /64 networks. CIDR prefixes are nested or disjoint,
// so in address order, outer first, a prefix inside the last one counted
// adds nothing. (netipx's IPSet gives the same figure at three times the
// cost of the whole Load.) When even the plain sum, overlaps counted
// again, is within max (a share of the announced space of each family),
// it is returned, and the sort is saved: so it is for every real list.
func coverage(ps []netip.Prefix, max4, max6 float64) (v4, v6 float64) {
	for _, p := range ps {
		if p.Addr().Is4() {
			v4 += math.Exp2(float64(32 - p.Bits()))
		} else {
			v6 += math.Exp2(float64(64 - p.Bits()))
		}
	}
	if v4 <= max4 && v6 <= max6 {
		return v4, v6
	}
	v4, v6 = 0, 0
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.Bits(), b.Bits())
	})
	var outer netip.Prefix
	for _, p := range ps {
		if outer.IsValid() && outer.Bits() <= p.Bits() && outer.Contains(p.Addr()) {
			continue
		}
		outer = p
		if p.Addr().Is4() {
			v4 += math.Exp2(float64(32 - p.Bits()))
		} else {
			v6 += math.Exp2(float64(64 - p.Bits()))
		}
	}
	return v4, v6
}
