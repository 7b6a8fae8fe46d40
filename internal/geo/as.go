package geo

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
)

// ASLocator is what the server needs of the engine to answer one AS.
type ASLocator interface {
	// AS returns what the data knows of AS number n, the country named in
	// lang. An AS the data does not know is an *ipatlas.Error with
	// CodeUnknownAS.
	AS(n uint32, lang ipatlas.Lang) (ipatlas.AS, error)
}

var _ ASLocator = (*Engine)(nil)

// asIndex maps AS numbers to their networks in the ASN data. It is built
// once per generation, by the first AS query, and dropped with the
// generation. It is not built ahead: on the default dataset it holds
// 30 MB of heap (about twice that in memory, with the GC's headroom) that
// a server answering no AS query never needs, while the walk of the ASN
// files that builds it makes that first query wait 1-2 s. Its networks
// are packed and sorted by AS, a dozen bytes per network, because the
// default data has over a million.
type asIndex struct {
	v4    []as4 // by AS, then address
	v6    []as6
	names map[uint32]string
}

type as4 struct {
	asn  uint32
	addr uint32
	bits uint8
}

type as6 struct {
	hi, lo uint64
	asn    uint32
	bits   uint8
}

// prefixes returns the networks of AS n, IPv4 then IPv6, in address order.
func (x *asIndex) prefixes(n uint32) []netip.Prefix {
	i, _ := slices.BinarySearchFunc(x.v4, n, func(e as4, n uint32) int { return cmp.Compare(e.asn, n) })
	j, _ := slices.BinarySearchFunc(x.v6, n, func(e as6, n uint32) int { return cmp.Compare(e.asn, n) })
	var out []netip.Prefix
	for ; i < len(x.v4) && x.v4[i].asn == n; i++ {
		e := x.v4[i]
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(e.addr >> 24), byte(e.addr >> 16), byte(e.addr >> 8), byte(e.addr)}), int(e.bits)))
	}
	for ; j < len(x.v6) && x.v6[j].asn == n; j++ {
		e := x.v6[j]
		var b [16]byte
		for k := range 8 {
			b[k] = byte(e.hi >> (56 - 8*k))
			b[8+k] = byte(e.lo >> (56 - 8*k))
		}
		out = append(out, netip.PrefixFrom(netip.AddrFrom16(b), int(e.bits)))
	}
	return out
}

// asIndexOf builds g's index once.
func (g *generation) asIndexOf() (*asIndex, error) {
	g.asOnce.Do(func() { g.asIdx, g.asErr = g.buildASIndex() })
	return g.asIdx, g.asErr
}

// buildASIndex walks, per address family, the ASN file of highest
// precedence that answers that family (the one lookups answer from; a
// lower one is only consulted where it has a network the first lacks,
// which the index leaves out).
func (g *generation) buildASIndex() (*asIndex, error) {
	idx := &asIndex{names: map[uint32]string{}}
	type seenRec struct {
		n   uint32
		org string
	}
	for _, fam := range []struct {
		list []*source
		root netip.Prefix
	}{
		{g.asn4, netip.MustParsePrefix("0.0.0.0/0")},
		{g.asn6, netip.MustParsePrefix("::/0")},
	} {
		if len(fam.list) == 0 {
			continue
		}
		s := fam.list[0]
		seen := map[uintptr]seenRec{}
		for res := range s.r.NetworksWithin(fam.root) {
			if err := res.Err(); err != nil {
				return nil, fmt.Errorf("geo: walking %s: %w", s.info.File, err)
			}
			p := res.Prefix()
			if fam.root.Addr().Is6() && (p.Addr().Is4() || p.Addr().Is4In6()) {
				continue // the IPv4 subtree, walked as IPv4
			}
			rec, ok := seen[res.Offset()]
			if !ok {
				d, err := decodeASN(res)
				if err != nil {
					return nil, fmt.Errorf("geo: decoding the record of %s in %s: %w", p, s.info.File, err)
				}
				rec = seenRec{d.number, d.isp}
				seen[res.Offset()] = rec
			}
			if rec.n == 0 {
				continue
			}
			if _, ok := idx.names[rec.n]; !ok {
				idx.names[rec.n] = rec.org
			}
			if p.Addr().Is4() {
				b := p.Addr().As4()
				idx.v4 = append(idx.v4, as4{asn: rec.n, addr: uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), bits: uint8(p.Bits())})
				continue
			}
			b := p.Addr().As16()
			e := as6{asn: rec.n, bits: uint8(p.Bits())}
			for k := range 8 {
				e.hi = e.hi<<8 | uint64(b[k])
				e.lo = e.lo<<8 | uint64(b[8+k])
			}
			idx.v6 = append(idx.v6, e)
		}
	}
	// The walk is in address order: a stable sort by AS keeps it within
	// each AS.
	slices.SortStableFunc(idx.v4, func(a, b as4) int { return cmp.Compare(a.asn, b.asn) })
	slices.SortStableFunc(idx.v6, func(a, b as6) int { return cmp.Compare(a.asn, b.asn) })
	idx.v4, idx.v6 = slices.Clip(idx.v4), slices.Clip(idx.v6)
	return idx, nil
}

// AS implements ASLocator. The name is the ASN data's organization; the
// country is where the AS announces most of its addresses by the city data
// (its largest IPv4 prefixes, else its IPv6 ones); NumIPs counts IPv4
// addresses as ipinfo does; Hosting is whether the AS is on a datacenter
// AS list of the privacy data (false when none is loaded).
func (e *Engine) AS(n uint32, lang ipatlas.Lang) (ipatlas.AS, error) {
	g := e.acquire()
	if g == nil {
		return ipatlas.AS{}, ErrClosed
	}
	defer g.release()
	idx, err := g.asIndexOf()
	if err != nil {
		return ipatlas.AS{}, err
	}
	name, known := idx.names[n]
	if !known {
		return ipatlas.AS{}, &ipatlas.Error{Code: ipatlas.CodeUnknownAS}
	}
	prefixes := idx.prefixes(n)
	if lang != ipatlas.Chinese {
		lang = ipatlas.English
	}
	out := ipatlas.AS{ASN: ipatlas.FormatAS(n), Name: name, Prefixes: []ipatlas.ASPrefix{}, Prefixes6: []ipatlas.ASPrefix{}}
	for _, p := range prefixes {
		ap := ipatlas.ASPrefix{Netblock: p, Size: ipatlas.PrefixSize(p)}
		if p.Addr().Is4() {
			out.Prefixes = append(out.Prefixes, ap)
			out.NumIPs += 1 << (32 - p.Bits())
		} else {
			out.Prefixes6 = append(out.Prefixes6, ap)
		}
	}
	cc, err := g.asCountry(prefixes)
	if err != nil {
		return ipatlas.AS{}, err
	}
	if cc != "" {
		out.CountryCode = cc
		out.Country = names.Country(cc, lang)
	}
	if pt := e.priv.Load(); pt != nil {
		out.Hosting = pt.HostingAS(n)
	}
	return out, nil
}

// countryPrefixes is how many of an AS's largest prefixes decide its
// country: enough to outweigh the long tail of small ones.
const countryPrefixes = 256

// asCountry is the country of the most addresses among the largest
// prefixes of one family (IPv4 if the AS has any), each weighed by its
// size, by the city data at the prefix's first address.
func (g *generation) asCountry(prefixes []netip.Prefix) (string, error) {
	fam := prefixes
	if i := slices.IndexFunc(prefixes, func(p netip.Prefix) bool { return p.Addr().Is6() }); i > 0 {
		fam = prefixes[:i] // IPv4 only
	}
	fam = slices.Clone(fam)
	slices.SortStableFunc(fam, func(a, b netip.Prefix) int { return cmp.Compare(a.Bits(), b.Bits()) })
	fam = fam[:min(len(fam), countryPrefixes)]
	weight := map[string]float64{}
	for _, p := range fam {
		city, err := g.city(p.Addr())
		if err != nil {
			return "", err
		}
		if city == nil || city.country == nil || city.country.countryCode == "" {
			continue
		}
		weight[city.country.countryCode] += math.Ldexp(1, p.Addr().BitLen()-p.Bits())
	}
	best, bestW := "", 0.0
	for cc, w := range weight {
		if w > bestW || (w == bestW && cc < best) {
			best, bestW = cc, w
		}
	}
	return best, nil
}

// asState is the part of a generation the AS index needs.
type asState struct {
	asOnce sync.Once
	asIdx  *asIndex
	asErr  error
}
