package export_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/export"
	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"
)

var aliases = []netip.Prefix{export.SixToFour, netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("::ffff:0:0/96"), netip.MustParsePrefix("::/96")}

// countryOf is the country an MMDB answers for a, "" for none.
func countryOf(t *testing.T, db *maxminddb.Reader, a netip.Addr) string {
	t.Helper()
	var rec struct {
		Country struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"country"`
	}
	if err := db.Lookup(a).Decode(&rec); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	return rec.Country.ISOCode
}

// TestCountryListsAgreeWithMMDB: a country list and the MMDB export of
// the same engine agree on every address of a sample, both ways: an
// address in the list has one of its countries in the MMDB, and an
// address the MMDB gives one of them is in the list. The sample is the
// first and last address of every CIDR of the list, of one in 20 of the
// MMDB's networks, the addresses beside them, and random ones. The list is the fewest CIDRs: the ones
// of the set it covers, in order.
func TestCountryListsAgreeWithMMDB(t *testing.T) {
	e := fixtureEngine(t)
	var buf bytes.Buffer
	if _, err := export.WriteMMDB(&buf, e, export.MMDBOptions{TempDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	db, err := maxminddb.OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	var base []netip.Addr
	around := func(p netip.Prefix) {
		first, last := p.Masked().Addr(), netipx.PrefixLastIP(p)
		base = append(base, first, last, first.Prev(), last.Next())
	}
	// Of the MMDB's networks (175 thousand), one in 20 at random: the
	// lists' own boundaries, below, are where a difference would show.
	for res := range db.Networks() {
		if r.IntN(20) == 0 {
			around(res.Prefix())
		}
	}
	for range 2000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		base = append(base, netip.AddrFrom4([4]byte(b[:4])), netip.AddrFrom16(b))
		b[0] = 0x20 | b[0]&0x1f // global unicast
		base = append(base, netip.AddrFrom16(b))
	}

	for _, c := range []export.ListOptions{
		{Countries: []string{"CN"}},
		{Countries: []string{"US", "DE"}},
		{Countries: []string{"US"}, Family: 4},
		{Countries: []string{"DE", "JP"}, Family: 6},
		{}, // every country
	} {
		t.Run(fmt.Sprintf("%v/%d", c.Countries, c.Family), func(t *testing.T) {
			var list []netip.Prefix
			st, err := export.CountryPrefixes(e, c, func(p netip.Prefix) error {
				list = append(list, p)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) == 0 || st.V4+st.V6 != len(list) {
				t.Fatalf("%d CIDRs, stats %+v", len(list), st)
			}
			var b netipx.IPSetBuilder
			for _, p := range list {
				b.AddPrefix(p)
			}
			set, _ := b.IPSet()
			if fewest := set.Prefixes(); !slices.Equal(fewest, list) {
				t.Fatalf("the list's %d CIDRs are not the %d fewest of its set, in order", len(list), len(fewest))
			}
			sample := slices.Clone(base)
			for _, p := range list {
				first, last := p.Masked().Addr(), netipx.PrefixLastIP(p)
				sample = append(sample, first, last, first.Prev(), last.Next())
			}
			checked := 0
			for _, a := range sample {
				// The MMDB answers its aliases of the IPv4 tree (6to4,
				// Teredo, mapped and compatible addresses) by the IPv4
				// address inside, the engine (and so the list) 6to4 by
				// the IPv6 address it is.
				if !a.IsValid() || slices.ContainsFunc(aliases, func(p netip.Prefix) bool { return p.Contains(a) }) {
					continue
				}
				cc := countryOf(t, db, a)
				want := cc != "" && (len(c.Countries) == 0 || slices.Contains(c.Countries, cc)) &&
					(c.Family == 0 || c.Family == 4 && a.Is4() || c.Family == 6 && a.Is6())
				if got := set.Contains(a); got != want {
					t.Fatalf("%s: in the list %v, the MMDB's country %q", a, got, cc)
				}
				checked++
			}
			t.Logf("%d CIDRs, %d addresses agree", len(list), checked)
		})
	}
	st, err := export.CountryPrefixes(e, export.ListOptions{Countries: []string{"CN", "ZZ"}}, func(netip.Prefix) error { return nil })
	if err != nil || !slices.Equal(st.Missing([]string{"CN", "ZZ"}), []string{"ZZ"}) {
		t.Errorf("missing %v, %v", st.Missing([]string{"CN", "ZZ"}), err)
	}
}

// TestWriteList: the formats' shapes, with an empty family.
func TestWriteList(t *testing.T) {
	l := export.List{
		V4:      []netip.Prefix{netip.MustParsePrefix("1.0.1.0/24"), netip.MustParsePrefix("1.0.2.0/23")},
		V6:      []netip.Prefix{},
		Set:     "block",
		Comment: "test\nlist",
	}
	for _, c := range []struct {
		format string
		want   []string
	}{
		{"cidr", []string{"1.0.1.0/24", "1.0.2.0/23"}},
		{"nft", []string{
			"# test list",
			"add table inet ipatlas",
			"add set inet ipatlas block_v4 { type ipv4_addr; flags interval; }",
			"flush set inet ipatlas block_v4",
			"add element inet ipatlas block_v4 {", "\t1.0.1.0/24,", "\t1.0.2.0/23", "}",
			"add set inet ipatlas block_v6 { type ipv6_addr; flags interval; }",
			"flush set inet ipatlas block_v6",
		}},
		{"ipset", []string{
			"# test list",
			"create block-v4 hash:net family inet hashsize 16384 maxelem 65536 -exist",
			"create block-v4-new hash:net family inet hashsize 16384 maxelem 65536 -exist",
			"flush block-v4-new",
			"add block-v4-new 1.0.1.0/24",
			"add block-v4-new 1.0.2.0/23",
			"swap block-v4-new block-v4",
			"destroy block-v4-new",
			"create block-v6 hash:net family inet6 hashsize 16384 maxelem 65536 -exist",
			"create block-v6-new hash:net family inet6 hashsize 16384 maxelem 65536 -exist",
			"flush block-v6-new",
			"swap block-v6-new block-v6",
			"destroy block-v6-new",
		}},
	} {
		var buf bytes.Buffer
		if err := export.WriteList(&buf, c.format, l); err != nil {
			t.Fatal(err)
		}
		var got []string
		for sc := bufio.NewScanner(&buf); sc.Scan(); {
			got = append(got, sc.Text())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s:\n%s\nwant\n%s", c.format, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
	if err := export.WriteList(&bytes.Buffer{}, "nft", export.List{Set: "a b"}); err == nil {
		t.Error("a set name with a space")
	}
	if n := export.IPSetMaxElem(100000); n != 524288 {
		t.Errorf("maxelem of 100000: %d", n)
	}
}
