// Package export writes out what the engine answers for every public
// address: the networks of the dataset in service, with its corrections
// and privacy lists, each with the answer in English and Chinese, as a
// GeoIP2-City-compatible MMDB (for nginx's, HAProxy's, Caddy's and
// Traefik's GeoIP2 modules) or as CSV rows.
//
// The networks are the engine's pieces (geo.Engine.Pieces: the union of
// every source's boundaries) within the public address space
// (netaddr.Public), each answered by a lookup of its first address, and
// adjacent pieces with equal answers merged; so the answer an export gives
// any address is the one the engine gives it.
package export

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"go4.org/netipx"
)

// Answer is the engine's answer for a network, in both languages, without
// what differs from address to address inside it (the address, the
// route). It is comparable: equal answers are one record.
type Answer struct {
	ContinentCode, Continent, ContinentZH string
	CountryCode, Country, CountryZH       string
	ProvinceCode, Province, ProvinceZH    string
	City, CityZH                          string
	District, DistrictZH                  string
	Postal, TimeZone, Currency, AreaCode  string
	Latitude, Longitude                   float64
	HasLocation                           bool

	ASN uint32 // 0 when no AS announces the network
	ISP string

	// PrivacyKnown is false when no privacy list is loaded: the flags are
	// then unknown. TorKnown is false while the Tor exit list is missing
	// or too old.
	PrivacyKnown             bool
	Hosting, VPN, Relay, Tor bool
	TorKnown                 bool
	Service                  string

	Source string // Record.LocationSource
}

// Empty reports whether a has nothing to say: no location, no AS, no
// flag. Such networks are left out of an export, as an MMDB leaves out
// what it knows nothing about.
func (a *Answer) Empty() bool {
	return a.Source == "" && a.ASN == 0 && !a.Hosting && !a.VPN && !a.Relay && !a.Tor && a.Service == ""
}

// AnswerOf is the answer of the records en and zh, the engine's answers
// for one address in English and Chinese.
func AnswerOf(en, zh ipatlas.Record) Answer {
	a := Answer{
		ContinentCode: en.ContinentCode, Continent: en.Continent, ContinentZH: zh.Continent,
		CountryCode: en.CountryCode, Country: en.Country, CountryZH: zh.Country,
		ProvinceCode: en.ProvinceCode, Province: en.Province, ProvinceZH: zh.Province,
		City: en.City, CityZH: zh.City, District: en.District, DistrictZH: zh.District,
		Postal: en.ZipCode, TimeZone: en.TimeZone, Currency: en.Currency, AreaCode: en.AreaCode,
		ISP: en.ISP, Source: en.LocationSource,
	}
	if en.Latitude != nil && en.Longitude != nil {
		a.Latitude, a.Longitude, a.HasLocation = *en.Latitude, *en.Longitude, true
	}
	if n, err := strconv.ParseUint(strings.TrimPrefix(en.ASN, "AS"), 10, 32); err == nil {
		a.ASN = uint32(n)
	}
	if p := en.Privacy; p != nil {
		a.PrivacyKnown, a.Hosting, a.VPN, a.Relay, a.Service = true, p.Hosting, p.VPN, p.Relay, p.Service
		if p.Tor != nil {
			a.TorKnown, a.Tor = true, *p.Tor
		}
	}
	return a
}

// Lookup is the engine's answer for addr.
func Lookup(e geo.Locator, addr netip.Addr) (Answer, error) {
	en, err := e.Lookup(addr, ipatlas.English)
	if err != nil {
		return Answer{}, err
	}
	zh, err := e.Lookup(addr, ipatlas.Chinese)
	if err != nil {
		return Answer{}, err
	}
	return AnswerOf(en, zh), nil
}

// Options tunes a walk.
type Options struct {
	// Skip lists prefixes left out of the walk besides the non-public
	// space (the MMDB leaves out 2002::/16, which its readers answer by
	// the IPv4 address inside).
	Skip []netip.Prefix
	// Progress, when not nil, is told how many of total pieces are done,
	// now and then and at the end.
	Progress func(done, total int)
}

// Walk calls fn, in address order, with every public network (a range;
// see netipx.IPRange.Prefixes for its CIDRs) the engine answers with
// something, and its answer; adjacent networks with equal answers are
// one range.
func Walk(e *geo.Engine, opts Options, fn func(r netipx.IPRange, a *Answer) error) error {
	ps, err := e.Pieces()
	if err != nil {
		return err
	}
	var b netipx.IPSetBuilder
	for _, p := range netaddr.Public() {
		b.AddPrefix(p)
	}
	for _, p := range opts.Skip {
		b.RemovePrefix(p)
	}
	public, err := b.IPSet()
	if err != nil {
		return fmt.Errorf("export: the public address space: %w", err)
	}
	pub := public.Ranges()
	total, done := ps.Len(), 0
	var cur netipx.IPRange
	var curA Answer
	have := false
	flush := func() error {
		if !have || curA.Empty() {
			return nil
		}
		a := curA
		return fn(cur, &a)
	}
	j := 0
	for first, last := range ps.All() {
		done++
		if opts.Progress != nil && done%65536 == 0 {
			opts.Progress(done, total)
		}
		// The public ranges are in address order, as the pieces are.
		for j < len(pub) && pub[j].To().Less(first) {
			j++
		}
		for k := j; k < len(pub) && !last.Less(pub[k].From()); k++ {
			from, to := maxAddr(first, pub[k].From()), minAddr(last, pub[k].To())
			a, err := Lookup(e, from)
			if err != nil {
				return err
			}
			if have && a == curA && cur.To().Next() == from {
				cur = netipx.IPRangeFrom(cur.From(), to)
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			cur, curA, have = netipx.IPRangeFrom(from, to), a, true
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if opts.Progress != nil {
		opts.Progress(total, total)
	}
	return nil
}

func maxAddr(a, b netip.Addr) netip.Addr {
	if a.Less(b) {
		return b
	}
	return a
}

func minAddr(a, b netip.Addr) netip.Addr {
	if a.Less(b) {
		return a
	}
	return b
}
