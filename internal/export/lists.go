package export

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipatlas/ipatlas/internal/geo"
	"go4.org/netipx"
)

// ListFormats are the formats of a country list (WriteList).
var ListFormats = []string{"cidr", "nft", "ipset"}

// ListOptions choose the networks of a country list.
type ListOptions struct {
	// Countries are ISO 3166-1 alpha-2 codes, upper case; none means
	// every network that has a country.
	Countries []string
	// Family is 4 or 6 for one address family, 0 for both.
	Family   int
	Progress func(done, total int)
	Context  context.Context // stops the walk (Options.Context)
}

// ListStats count a list's networks.
type ListStats struct {
	Networks     int    // ranges of the walk in the list, before merging
	V4, V6       int    // CIDRs written, by family
	V4Addrs      uint64 // IPv4 addresses in the list
	countryFound map[string]bool
}

// Missing is the countries asked for that no network has.
func (s ListStats) Missing(countries []string) []string {
	var out []string
	for _, c := range countries {
		if !s.countryFound[c] {
			out = append(out, c)
		}
	}
	return out
}

// CountryPrefixes calls fn, in address order, with the fewest CIDRs that
// cover exactly the networks whose answer's country is one of
// opts.Countries: the engine's answers, with every correction it applies
// (overrides, geofeeds, the fusion of sources), as the MMDB and CSV
// exports hold them. Adjacent networks merge, whatever else their
// answers say. It streams: its memory does not grow with the list.
//
// Unlike the MMDB, a list holds 6to4 (2002::/16) where the engine
// answers it, by the IPv6 address it is, as lookups and the CSV export
// do.
func CountryPrefixes(e *geo.Engine, opts ListOptions, fn func(p netip.Prefix) error) (ListStats, error) {
	st := ListStats{countryFound: map[string]bool{}}
	want := map[string]bool{}
	for _, c := range opts.Countries {
		want[c] = true
	}
	var skip []netip.Prefix
	switch opts.Family {
	case 4:
		skip = append(skip, netip.MustParsePrefix("::/0"))
	case 6:
		skip = append(skip, netip.MustParsePrefix("0.0.0.0/0"))
	}
	var cur netipx.IPRange
	have := false
	flush := func() error {
		if !have {
			return nil
		}
		for _, p := range cur.Prefixes() {
			if p.Addr().Is4() {
				st.V4++
				st.V4Addrs += 1 << (32 - p.Bits())
			} else {
				st.V6++
			}
			if err := fn(p); err != nil {
				return err
			}
		}
		have = false
		return nil
	}
	err := Walk(e, Options{Skip: skip, Progress: opts.Progress, Context: opts.Context}, func(r netipx.IPRange, a *Answer) error {
		if a.CountryCode == "" || len(want) > 0 && !want[a.CountryCode] {
			return nil
		}
		st.Networks++
		st.countryFound[a.CountryCode] = true
		// IPv4 and IPv6 never merge: the last IPv4 address is not next
		// to the first IPv6 one.
		if have && cur.To().Next() == r.From() && cur.To().Is4() == r.From().Is4() {
			cur = netipx.IPRangeFrom(cur.From(), r.To())
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		cur, have = r, true
		return nil
	})
	if err == nil {
		err = flush()
	}
	return st, err
}

// NFTTable is the nftables table that holds the sets of an nft list.
const NFTTable = "ipatlas"

// maxSetName leaves room in ipset's 31 characters for "-v4-new".
const maxSetName = 24

// ValidSetName reports whether s can name the sets of an nft or ipset
// list.
func ValidSetName(s string) bool {
	if s == "" || len(s) > maxSetName || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// SetName is the name of a list's set of family (4 or 6): NAME_v4 in
// nftables, NAME-v4 in ipset.
func SetName(format, set string, family int) string {
	if format == "ipset" {
		return fmt.Sprintf("%s-v%d", set, family)
	}
	return fmt.Sprintf("%s_v%d", set, family)
}

// IPSetMaxElem is the maxelem of an ipset list's set of n networks: room
// for the list to grow to four times its size, and never below ipset's
// default.
func IPSetMaxElem(n int) int {
	m := 65536
	for m < 4*n {
		m *= 2
	}
	return m
}

// List is a country list to write: its networks by family, nil for a
// family left out (an empty one is an empty set).
type List struct {
	V4, V6  []netip.Prefix
	Set     string // the sets' name (nft and ipset)
	Comment string // a line at the top (nft and ipset)
}

// WriteList writes l to w in format:
//
//   - cidr: one CIDR a line, IPv4 first.
//   - nft: a script for nft -f that makes table inet ipatlas and in it
//     the sets NAME_v4 (type ipv4_addr) and NAME_v6 (ipv6_addr), flags
//     interval, and replaces their elements with the list's, in one
//     transaction; a rule elsewhere in the table refers to them
//     ("ip saddr @NAME_v4 drop").
//   - ipset: a file for ipset restore that makes the sets NAME-v4
//     (hash:net family inet) and NAME-v6 (family inet6) if they are
//     missing, fills a new set of each and swaps it in, so that a set in
//     use never lacks its networks and a new maxelem (IPSetMaxElem) takes
//     effect.
func WriteList(w io.Writer, format string, l List) error {
	if !slices.Contains(ListFormats, format) {
		return fmt.Errorf("export: list format %q: want one of %s", format, strings.Join(ListFormats, ", "))
	}
	if format != "cidr" && !ValidSetName(l.Set) {
		return fmt.Errorf("export: set name %q: want 1 to %d letters, digits, _ or -, starting with a letter", l.Set, maxSetName)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if format != "cidr" {
		fmt.Fprintf(bw, "# %s\n", strings.ReplaceAll(l.Comment, "\n", " "))
	}
	if format == "nft" {
		fmt.Fprintf(bw, "add table inet %s\n", NFTTable)
	}
	for _, f := range []struct {
		fam  int
		nets []netip.Prefix
	}{{4, l.V4}, {6, l.V6}} {
		if f.nets == nil {
			continue
		}
		name := SetName(format, l.Set, f.fam)
		switch format {
		case "cidr":
			for _, p := range f.nets {
				bw.WriteString(p.String())
				bw.WriteByte('\n')
			}
		case "nft":
			fmt.Fprintf(bw, "add set inet %s %s { type ipv%d_addr; flags interval; }\nflush set inet %s %s\n", NFTTable, name, f.fam, NFTTable, name)
			// Elements in statements of a thousand, which nft parses in
			// little memory.
			for chunk := range slices.Chunk(f.nets, 1000) {
				fmt.Fprintf(bw, "add element inet %s %s {\n", NFTTable, name)
				for i, p := range chunk {
					bw.WriteString("\t")
					bw.WriteString(p.String())
					if i < len(chunk)-1 {
						bw.WriteByte(',')
					}
					bw.WriteByte('\n')
				}
				bw.WriteString("}\n")
			}
		case "ipset":
			family := "inet"
			if f.fam == 6 {
				family = "inet6"
			}
			maxElem := IPSetMaxElem(len(f.nets))
			params := fmt.Sprintf("hash:net family %s hashsize %d maxelem %d", family, maxElem/4, maxElem)
			fmt.Fprintf(bw, "create %s %s -exist\ncreate %s-new %s -exist\nflush %s-new\n", name, params, name, params, name)
			for _, p := range f.nets {
				fmt.Fprintf(bw, "add %s-new %s\n", name, p)
			}
			fmt.Fprintf(bw, "swap %s-new %s\ndestroy %s-new\n", name, name, name)
		}
	}
	return bw.Flush()
}
