// Package export writes out what the engine answers for every public
// address: the networks of the dataset in service, with its corrections
// and privacy lists, each with the answer in English and Chinese, as a
// GeoIP2-City-compatible MMDB (for nginx's, HAProxy's, Caddy's and
// Traefik's GeoIP2 modules) or as CSV rows. An MMDB record is the GeoIP2
// model (package geoip2) that the MaxMind web shape answers too.
//
// The networks are the engine's pieces (geo.Engine.Pieces: the union of
// every source's boundaries) within the public address space
// (netaddr.Public), each answered by a lookup of its first address, and
// adjacent pieces with equal answers merged; so the answer an export gives
// any address is the one the engine gives it.
package export

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"go4.org/netipx"
)

// Answer is the engine's answer for a network, in both languages
// (geo.Answer): what the addresses inside it share. It is comparable:
// equal answers are one record.
type Answer geo.Answer

// Lookup is the engine's answer for addr.
func Lookup(e geo.Locator, addr netip.Addr) (Answer, error) {
	a, err := geo.LookupAnswer(e, addr)
	return Answer(a), err
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
	// Context, when not nil, stops the walk with its error once done
	// (an interrupted export).
	Context context.Context
}

// Walk calls fn, in address order, with every public network (a range;
// see netipx.IPRange.Prefixes for its CIDRs) the engine answers with
// something (an answer that is not geo.Answer.Empty), and its answer;
// adjacent networks with equal answers are one range.
func Walk(e *geo.Engine, opts Options, fn func(r netipx.IPRange, a *Answer) error) error {
	if opts.Context != nil && opts.Context.Err() != nil {
		return opts.Context.Err()
	}
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
		if !have || (*geo.Answer)(&curA).Empty() {
			return nil
		}
		a := curA
		return fn(cur, &a)
	}
	j := 0
	for first, last := range ps.All() {
		done++
		if done%65536 == 0 {
			if opts.Context != nil && opts.Context.Err() != nil {
				return opts.Context.Err()
			}
			if opts.Progress != nil {
				opts.Progress(done, total)
			}
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
