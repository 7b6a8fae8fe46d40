package privacy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// snapshotBody is the snapshot's copy of a list.
func snapshotBody(t testing.TB, name string) string {
	t.Helper()
	b, ok, err := privacy.Snapshot(name)
	if err != nil || !ok {
		t.Fatalf("%s: not in the snapshot (%v)", name, err)
	}
	return string(b)
}

// hosts is n consecutive addresses from first, one a line.
func hosts(first string, n int) string {
	var b strings.Builder
	a := netip.MustParseAddr(first)
	for range n {
		b.WriteString(a.String() + "\n")
		a = a.Next()
	}
	return b.String()
}

// exitList is a plausible Tor exit list: 1,200 addresses.
func exitList() string { return hosts("185.220.100.0", 1200) }

// TestCheckRefusesEntries: an entry wider than the list's bound (for the
// Tor exits, any range), or wholly in space that is not globally
// reachable, is refused and named; the rest of the copy is kept.
func TestCheckRefusesEntries(t *testing.T) {
	for _, c := range []struct {
		list, body string
		refused    []string // the refusals, in order
	}{
		// A mirror's catch-all line among the real entries.
		{"ipranges-telegram-ipv4", snapshotBody(t, "ipranges-telegram-ipv4") + "0.0.0.0/0\n", []string{"0.0.0.0/0: wider than /8"}},
		{"ipranges-telegram-ipv6", snapshotBody(t, "ipranges-telegram-ipv6") + "::/0\n", []string{"::/0: wider than /24"}},
		{"x4bnet-datacenter-ipv6", snapshotBody(t, "x4bnet-datacenter-ipv6") + "2000::/3\n2600::/23\n", []string{"2000::/3: wider than /24", "2600::/23: wider than /24"}},
		{"x4bnet-datacenter-ipv4", snapshotBody(t, "x4bnet-datacenter-ipv4") + "3.0.0.0/7\n", []string{"2.0.0.0/7: wider than /8"}},
		// A /8 is within the bound (Microsoft's list holds a /9).
		{"ipranges-microsoft-ipv4", snapshotBody(t, "ipranges-microsoft-ipv4") + "4.0.0.0/8\n", nil},
		{"x4bnet-vpn-ipv4", snapshotBody(t, "x4bnet-vpn-ipv4") + "10.0.0.0/8\n192.168.1.0/24\n", []string{
			"10.0.0.0/8: not globally reachable (private-use)", "192.168.1.0/24: not globally reachable (private-use)"}},
		// Vultr's own list names documentation and 6to4 space.
		{"ipranges-vultr-ipv6", snapshotBody(t, "ipranges-vultr-ipv6"), []string{"2001:2::/48: not globally reachable (benchmarking)",
			"2001:10::/28: not globally reachable (deprecated ORCHID)", "2001:db8::/32: not globally reachable (documentation)", "2002::/16: wider than /24"}},
		// The Tor exits are single public addresses.
		{privacy.TorList, exitList() + "8.8.8.0/24\n0.0.0.0/0\n8.8.8.8\n9.9.9.9/32\n::ffff:1.1.1.1/128\n10.1.2.3\n2001:db8::1\n2620:fe::fe\n", []string{
			"8.8.8.0/24: not a single address", "0.0.0.0/0: not a single address", "10.1.2.3/32: not globally reachable (private-use)",
			"2001:db8::1/128: not globally reachable (documentation)"}},
	} {
		l := list(t, c.list)
		e, err := l.Parse([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		kept, r, err := l.Check(e)
		if err != nil {
			t.Errorf("%s: %v", c.list, err)
			continue
		}
		if r.Count != len(c.refused) || !slices.Equal(r.Examples, c.refused[:min(len(c.refused), 5)]) {
			t.Errorf("%s: refused %d %q, want %q", c.list, r.Count, r.Examples, c.refused)
		}
		if kept.Len() != e.Len()-len(c.refused) {
			t.Errorf("%s: kept %d of %d, want %d", c.list, kept.Len(), e.Len(), e.Len()-len(c.refused))
		}
		for _, p := range kept.Prefixes {
			for _, x := range c.refused {
				if strings.HasPrefix(x, p.String()+":") {
					t.Errorf("%s: %s refused and kept", c.list, p)
				}
			}
		}
	}
}

// TestCheckRefusesCopies: a copy that is padded, mostly refused or would
// flag far more of the Internet than the real list is refused whole.
func TestCheckRefusesCopies(t *testing.T) {
	var slash8s, slash24s6 strings.Builder
	for i := 1; i < 224; i++ {
		if i != 10 && i != 127 {
			fmt.Fprintf(&slash8s, "%d.0.0.0/8\n", i)
		}
	}
	for i := range 256 {
		fmt.Fprintf(&slash24s6, "24%02x:%02x00::/24\n", i/16, i%16*16)
	}
	var asns strings.Builder
	for i := range 6000 {
		fmt.Fprintf(&asns, "AS%d\n", 1000+i)
	}
	for _, c := range []struct {
		what, list, body, want string
	}{
		{"a mirror serving the whole Internet", "ipranges-telegram-ipv4", "0.0.0.0/0\n", "1 of its 1 entries refused"},
		{"a mirror serving the whole Internet", "ipranges-telegram-ipv6", "::/0\n", "1 of its 1 entries refused"},
		{"one /8 for a list of seven small ranges", "ipranges-telegram-ipv4", "91.0.0.0/8\n", "covers 0.507% of the announced IPv4 space, more than the 0.01%"},
		{"Comcast's /8 added to the real list", "ipranges-telegram-ipv4", snapshotBody(t, "ipranges-telegram-ipv4") + "73.0.0.0/8\n", "more than the 0.01%"},
		{"the whole Internet in /8s", "x4bnet-datacenter-ipv4", slash8s.String(), "of the announced IPv4 space, more than the 40%"},
		{"256 /24s of IPv6", "x4bnet-datacenter-ipv6", slash24s6.String(), "of the announced IPv6 space, more than the 15%"},
		{"a Tor list padded far beyond the real one", privacy.TorList, exitList() + "8.8.8.8\n" + hosts("8.8.0.0", 4000), "5201 entries, more than the 5000"},
		{"a Tor list mostly not exits", privacy.TorList, exitList() + hosts("10.0.0.0", 500), "500 of its 1700 entries refused"},
		{"a Tor list of ranges", privacy.TorList, strings.ReplaceAll(exitList(), "\n", "/24\n"), "1200 of its 1200 entries refused"},
		{"a padded AS list", "x4bnet-datacenter-asn", asns.String(), "6000 entries, more than the 5000"},
	} {
		l := list(t, c.list)
		e, err := l.Parse([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = l.Check(e)
		if !errors.Is(err, privacy.ErrImplausible) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s (%s): %v, want ErrImplausible saying %q", c.what, c.list, err, c.want)
		}
	}
	// Overlaps count once: twenty copies of one /12 cover one /12.
	l := list(t, "x4bnet-vpn-ipv4")
	e, _ := l.Parse([]byte(strings.Repeat("45.0.0.0/12\n", 20)))
	if _, _, err := l.Check(e); err != nil {
		t.Errorf("twenty copies of a /12: %v", err)
	}
	// Stray refused entries, under a quarter, leave the copy in service.
	l = list(t, privacy.TorList)
	e, _ = l.Parse([]byte(exitList() + hosts("10.0.0.0", 100)))
	if kept, r, err := l.Check(e); err != nil || kept.Len() != 1200 || r.Count != 100 || len(r.Examples) != 5 {
		t.Errorf("a Tor list with 100 private addresses: kept %d, refused %+v, %v", kept.Len(), r, err)
	}
}

// TestSnapshotWithinBounds: every list of the snapshot passes its bounds
// with room to grow (at most half its MaxShare), and no bound is lax
// (at most ten times the real share, or the 0.01% floor).
func TestSnapshotWithinBounds(t *testing.T) {
	for _, l := range privacy.Lists {
		e, ok := snapshotEntries(t, l)
		if !ok {
			if l.MaxEntries == 0 {
				t.Errorf("%s: no snapshot and no MaxEntries", l.Name)
			}
			continue
		}
		if l.Format == privacy.FormatASN {
			if l.MaxEntries < 4*e.Len() || l.MaxEntries > 10*e.Len() {
				t.Errorf("%s: MaxEntries %d for %d entries", l.Name, l.MaxEntries, e.Len())
			}
			continue
		}
		if l.Widest4 != 8 || l.Widest6 != 24 {
			t.Errorf("%s: bounds /%d, /%d", l.Name, l.Widest4, l.Widest6)
		}
		v4, v6 := privacy.Coverage(e.Prefixes)
		share := 100 * max(v4/privacy.AnnouncedIPv4, v6/privacy.AnnouncedIPv6)
		if 2*share > l.MaxShare || l.MaxShare > max(0.01, 10*share) {
			t.Errorf("%s: covers %.5f%% of the announced space, bound %g%%", l.Name, share, l.MaxShare)
		}
		t.Logf("%-28s %8.5f%%  bound %5g%%", l.Name, share, l.MaxShare)
	}
	if l := list(t, privacy.TorList); l.Widest4 != 32 || l.Widest6 != 128 || l.MaxEntries < 4000 {
		t.Errorf("Tor bounds: %+v", l)
	}
}

// TestCoverage: the sweep counts what netipx's IPSet counts, over every
// range of the snapshot at once (nested, overlapping and both families).
func TestCoverage(t *testing.T) {
	var all []netip.Prefix
	var b netipx.IPSetBuilder
	for _, l := range privacy.Lists {
		if e, ok := snapshotEntries(t, l); ok {
			all = append(all, e.Prefixes...)
			for _, p := range e.Prefixes {
				b.AddPrefix(p)
			}
		}
	}
	set, err := b.IPSet()
	if err != nil {
		t.Fatal(err)
	}
	var w4, w6 float64
	for _, p := range set.Prefixes() {
		if p.Addr().Is4() {
			w4 += math.Exp2(float64(32 - p.Bits()))
		} else {
			w6 += math.Exp2(float64(64 - p.Bits()))
		}
	}
	if v4, v6 := privacy.Coverage(all); v4 != w4 || v6 != w6 {
		t.Errorf("coverage %g, %g; netipx %g, %g", v4, v6, w4, w6)
	}
}

// TestAnnouncedSpace: AnnouncedIPv4 and AnnouncedIPv6 are within 10% of
// what the real ASN data routes.
func TestAnnouncedSpace(t *testing.T) {
	dir := realdata.Dir(t)
	db, err := maxminddb.Open(filepath.Join(dir, dataset.ASNFile))
	if err != nil {
		t.Skipf("no ASN data in the data dir: %v", err)
	}
	defer db.Close()
	var routed []netip.Prefix
	for r := range db.Networks() {
		if !r.Found() {
			continue
		}
		p := r.Prefix()
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		routed = append(routed, p)
	}
	v4, v6 := privacy.Coverage(routed)
	t.Logf("the ASN data routes %.0f IPv4 addresses and %.3g IPv6 /64s", v4, v6)
	if math.Abs(v4/privacy.AnnouncedIPv4-1) > 0.1 || math.Abs(v6/privacy.AnnouncedIPv6-1) > 0.1 {
		t.Errorf("AnnouncedIPv4 %g, AnnouncedIPv6 %g: the data says %g and %g", privacy.AnnouncedIPv4, privacy.AnnouncedIPv6, v4, v6)
	}
}

// writeFetched installs a copy of a list in dir as a fetch does: its file
// and its entry in privacy.json.
func writeFetched(t *testing.T, dir, name, body string, at time.Time) {
	t.Helper()
	l := list(t, name)
	if err := os.WriteFile(filepath.Join(dir, l.File()), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := privacy.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Lists = append(m.Lists, privacy.ListState{Name: name, URL: "https://mirror.example/" + name, FetchedAt: at, Size: int64(len(body))})
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, privacy.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLoadRefusesCopies: a copy in the data dir that fails its bounds
// (fetched by a build with looser ones) is not served: the list answers
// from the snapshot (none for the Tor exits), and Refused says why. So a
// mirror serving 0.0.0.0/0 as Telegram's list names no Comcast address
// Telegram, and a padded Tor list makes 8.8.8.8 no exit.
func TestLoadRefusesCopies(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	writeFetched(t, dir, "ipranges-telegram-ipv4", "0.0.0.0/0\n", at)
	writeFetched(t, dir, privacy.TorList, exitList()+"8.8.8.8\n"+hosts("8.8.0.0", 5000), at)
	writeFetched(t, dir, "ipranges-vultr-ipv4", snapshotBody(t, "ipranges-vultr-ipv4"), at)
	tab, err := privacy.Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	comcast := netip.MustParseAddr("73.170.12.34")
	if f, s := tab.Lookup(comcast, 7922); f != 0 || s != "" {
		t.Errorf("%s (Comcast): %04b %q, want on no list", comcast, f, s)
	}
	if _, s := tab.Lookup(netip.MustParseAddr("149.154.167.51"), 0); s != "Telegram" {
		t.Errorf("Telegram's own address: %q, want the snapshot's Telegram", s)
	}
	if f, _ := tab.Lookup(netip.MustParseAddr("8.8.8.8"), 15169); f&privacy.Tor != 0 || !tab.TorFetched().IsZero() {
		t.Errorf("8.8.8.8 from a padded Tor list: %04b, Tor list of %v", f, tab.TorFetched())
	}
	var names []string
	for _, r := range tab.Refused() {
		names = append(names, r.Name)
		if r.URL != "https://mirror.example/"+r.Name || !r.At.Equal(at) || !strings.Contains(r.Reason, "implausible list") {
			t.Errorf("refusal %+v", r)
		}
	}
	if !slices.Equal(names, []string{privacy.TorList, "ipranges-telegram-ipv4"}) {
		t.Errorf("refused %q", names)
	}
	for _, li := range tab.Lists() {
		switch li.Name {
		case "ipranges-telegram-ipv4":
			if !li.Builtin || li.Entries != 7 {
				t.Errorf("Telegram's list in service: %+v, want the snapshot's", li)
			}
		case "ipranges-vultr-ipv4":
			if li.Builtin || li.Entries != 121 || li.Refused.Count != 3 {
				t.Errorf("Vultr's fetched list: %+v, want 121 entries and 3 refused", li)
			}
		case privacy.TorList:
			t.Errorf("the padded Tor list is in service: %+v", li)
		}
	}
}
