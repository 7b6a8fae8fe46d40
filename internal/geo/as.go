package geo

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
// once per generation: by the first AS query, or ahead of it in the
// background once the engine is asked to (IndexASAhead, which `ipatlas
// serve` does after it starts serving). Built on demand, the first AS
// query waits for the walk of the ASN files, 0.6-1 s of CPU on the
// default dataset, where the next take milliseconds; built ahead, every
// server holds it, about 17 MB of heap (twice that in memory, with the
// GC's headroom), whether or not it answers AS queries. Its networks are
// packed and sorted by AS, a dozen bytes per network, because the
// default data has over 700,000.
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

// asIndexOf returns g's index, built by the first caller (or the
// background build of IndexASAhead, which the others wait for).
func (g *generation) asIndexOf() (*asIndex, error) {
	if b := g.asBuilt.Load(); b != nil {
		return b.idx, b.err
	}
	g.asMu.Lock()
	defer g.asMu.Unlock()
	if b := g.asBuilt.Load(); b != nil {
		return b.idx, b.err
	}
	idx, err := g.buildASIndex(nil)
	g.asBuilt.Store(&asBuild{idx, err})
	return idx, err
}

// errASStopped ends a background build of an index nobody will ask.
var errASStopped = errors.New("geo: AS index no longer needed")

// buildASIndexAhead builds g's index unless it is built, and gives up
// (leaving it to the first query, should one still come) once stop says
// so: g was replaced or the engine closed.
func (g *generation) buildASIndexAhead(stop func() bool) (built bool, networks int, err error) {
	g.asMu.Lock()
	defer g.asMu.Unlock()
	if g.asBuilt.Load() != nil {
		return false, 0, nil
	}
	idx, err := g.buildASIndex(stop)
	if errors.Is(err, errASStopped) {
		return false, 0, err
	}
	g.asBuilt.Store(&asBuild{idx, err})
	if idx != nil {
		networks = len(idx.v4) + len(idx.v6)
	}
	return true, networks, err
}

// IndexASAhead makes the engine build the AS index of each dataset in
// the background as soon as the dataset is in service, the current one at
// once and each reloaded one when it is swapped in, rather than on the
// first AS query, which would otherwise wait for it (see asIndex for what
// it costs). A query that comes during the build waits for its end
// rather than starting another.
func (e *Engine) IndexASAhead() {
	if e.asAhead.Swap(true) {
		return
	}
	e.indexASAhead()
}

// indexASAhead starts the build of the current generation's index, when
// IndexASAhead asked for it.
func (e *Engine) indexASAhead() {
	if !e.asAhead.Load() {
		return
	}
	g := e.acquire()
	if g == nil {
		return
	}
	go func() {
		defer g.release()
		start := time.Now()
		n := 0
		built, networks, err := g.buildASIndexAhead(func() bool {
			// Checked every 64Ki networks: a few milliseconds apart.
			n++
			return n%(1<<16) == 0 && e.cur.Load() != g
		})
		switch {
		case errors.Is(err, errASStopped):
		case err != nil:
			e.log.Warn("building the AS index ahead; AS queries will try again", "err", err.Error())
		case built:
			e.log.Info("AS index built", "networks", networks, "took", time.Since(start).Round(time.Millisecond))
		}
	}()
}

// buildASIndex walks, per address family, the ASN file of highest
// precedence that answers that family (the one lookups answer from; a
// lower one is only consulted where it has a network the first lacks,
// which the index leaves out). stop, when not nil, is asked at each
// network whether to give up, with errASStopped.
func (g *generation) buildASIndex(stop func() bool) (*asIndex, error) {
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
		var (
			rec      seenRec
			lastOff  uintptr
			haveLast bool
		)
		for res := range s.r.NetworksWithin(fam.root) {
			if err := res.Err(); err != nil {
				return nil, fmt.Errorf("geo: walking %s: %w", s.info.File, err)
			}
			if stop != nil && stop() {
				return nil, errASStopped
			}
			p := res.Prefix()
			if fam.root.Addr().Is6() && (p.Addr().Is4() || p.Addr().Is4In6()) {
				continue // the IPv4 subtree, walked as IPv4
			}
			// Neighbouring networks mostly share their record: the last
			// one is checked before the map.
			if off := res.Offset(); off != lastOff || !haveLast {
				r, ok := seen[off]
				if !ok {
					d, err := decodeASN(res)
					if err != nil {
						return nil, fmt.Errorf("geo: decoding the record of %s in %s: %w", p, s.info.File, err)
					}
					r = seenRec{d.number, d.isp}
					seen[off] = r
					// A record's first network is the first of its AS
					// that has it: the name is the walk's first.
					if _, named := idx.names[r.n]; !named && r.n != 0 {
						idx.names[r.n] = r.org
					}
				}
				rec, lastOff, haveLast = r, off, true
			}
			if rec.n == 0 {
				continue
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
	// By AS, then address: the walk's networks are disjoint, so no two
	// compare equal and an unstable sort gives the one order (a stable
	// sort by AS alone, keeping the walk's address order, took a third of
	// the build).
	slices.SortFunc(idx.v4, func(a, b as4) int {
		return cmp.Or(cmp.Compare(a.asn, b.asn), cmp.Compare(a.addr, b.addr))
	})
	slices.SortFunc(idx.v6, func(a, b as6) int {
		return cmp.Or(cmp.Compare(a.asn, b.asn), cmp.Compare(a.hi, b.hi), cmp.Compare(a.lo, b.lo))
	})
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
		city, _, err := g.city(p.Addr())
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
	asMu    sync.Mutex // held by a build
	asBuilt atomic.Pointer[asBuild]
}

// asBuild is the outcome of a generation's one build of its AS index.
type asBuild struct {
	idx *asIndex
	err error
}
