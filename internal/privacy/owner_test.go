package privacy_test

import (
	"math"
	"math/rand/v2"
	"net/netip"
	"sort"
	"testing"

	"github.com/ipatlas/ipatlas/internal/privacy"
)

// TestOwnerPrecedence: where a tenant's range lies inside a cloud
// operator's, the operator names the address; the tenant's own ranges, in
// no operator's list, keep its name; a list that is no tenant (a crawler's
// hosts) keeps its name inside the operator's; the flags are every list's.
func TestOwnerPrecedence(t *testing.T) {
	tab := compile(t, map[string]string{
		"ipranges-microsoft-ipv4": "20.0.0.0/11\n",
		"ipranges-amazon-ipv4":    "3.5.0.0/16\n",
		"ipranges-github-ipv4":    "20.1.0.0/16\n20.1.2.0/24\n140.82.112.0/20\n3.5.1.0/24\n",
		"ipranges-openai-ipv4":    "20.1.2.16/28\n",
		"x4bnet-vpn-ipv4":         "20.1.3.0/24\n",
		"ipranges-github-ipv6":    "2a0a:a440::/29\n2603:1030:1::/48\n",
		"ipranges-microsoft-ipv6": "2603:1000::/24\n",
	})
	H, V := privacy.Hosting, privacy.VPN
	for _, c := range []struct {
		addr    string
		flags   privacy.Flags
		service string
	}{
		{"20.1.0.1", H, "Microsoft Azure"},     // GitHub's /16 inside Azure's /11
		{"20.1.2.1", H, "Microsoft Azure"},     // and its /24 inside that
		{"20.1.2.17", H, "OpenAI"},             // a crawler's hosts inside both
		{"20.1.3.1", H | V, "Microsoft Azure"}, // a nameless list changes nothing
		{"20.2.0.1", H, "Microsoft Azure"},
		{"140.82.112.1", H, "GitHub"}, // GitHub's own
		{"3.5.1.1", H, "Amazon AWS"},
		{"2603:1030:1::1", H, "Microsoft Azure"},
		{"2a0a:a440::1", H, "GitHub"},
	} {
		f, s := tab.Lookup(netip.MustParseAddr(c.addr), 0)
		if f != c.flags || s != c.service {
			t.Errorf("%s: %04b %q, want %04b %q", c.addr, f, s, c.flags, c.service)
		}
	}
}

// snapshotTable compiles every list of the snapshot as Load does, after
// edit changes the lists' properties.
func snapshotTable(t testing.TB, edit func(*privacy.List)) *privacy.Table {
	var loaded []privacy.Loaded
	for _, l := range privacy.Lists {
		e, ok := snapshotEntries(t, l)
		if !ok {
			continue
		}
		edit(&l)
		loaded = append(loaded, privacy.Loaded{List: l, Entries: e, Info: privacy.ListInfo{Name: l.Name}})
	}
	return privacy.Compile(loaded)
}

// TestGitHubOnAzure measures, on the snapshot (the same files as
// ../shared/data/privacy), how many of 10,000 addresses drawn from
// Microsoft's ranges answer "GitHub": drawn from a range chosen uniformly
// (each range counts once) and from one chosen by its size (each address
// counts once), with the owner's precedence and, for the figure before it,
// with GitHub's list taken for no tenant. With it none does; GitHub's own
// ranges, outside every operator's list, still answer "GitHub".
//
//	go test -run TestGitHubOnAzure -v ./internal/privacy/
func TestGitHubOnAzure(t *testing.T) {
	before := snapshotTable(t, func(l *privacy.List) { l.Tenant = false })
	after := snapshotTable(t, func(*privacy.List) {})
	for _, name := range []string{"ipranges-microsoft-ipv4", "ipranges-microsoft-ipv6"} {
		ms, _ := snapshotEntries(t, list(t, name))
		ps := ms.Prefixes
		cum := make([]float64, len(ps))
		total := 0.0
		for i, p := range ps {
			total += math.Exp2(float64(p.Addr().BitLen() - p.Bits()))
			cum[i] = total
		}
		const n = 10000
		for _, bySize := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(29, 29))
			var github [2]int
			for range n {
				p := ps[rng.IntN(len(ps))]
				if bySize {
					p = ps[sort.SearchFloat64s(cum, rng.Float64()*total)]
				}
				a := RandomIn(rng, p)
				for i, tab := range []*privacy.Table{before, after} {
					if _, s := tab.Lookup(a, 0); s == "GitHub" {
						github[i]++
					}
				}
			}
			t.Logf("%s, ranges drawn by size %v: %d of %d answer GitHub before (%.2f%%), %d after", name, bySize, github[0], n,
				100*float64(github[0])/n, github[1])
			if github[1] != 0 {
				t.Errorf("%s: %d of %d addresses of Microsoft's ranges answer GitHub", name, github[1], n)
			}
			if name == "ipranges-microsoft-ipv4" && github[0] == 0 {
				t.Errorf("%s: the sample found no GitHub range inside Microsoft's before the rule: it measures nothing", name)
			}
		}
	}

	// GitHub's ranges: those inside an operator's list answer the
	// operator (or a more specific list that is no tenant), the others
	// "GitHub".
	var owners []netip.Prefix
	for _, l := range privacy.Lists {
		if e, ok := snapshotEntries(t, l); ok && l.Owner {
			owners = append(owners, e.Prefixes...)
		}
	}
	own := 0
	for _, name := range []string{"ipranges-github-ipv4", "ipranges-github-ipv6"} {
		gh, _ := snapshotEntries(t, list(t, name))
		for _, p := range gh.Prefixes {
			inside := false
			for _, o := range owners {
				if o.Bits() <= p.Bits() && o.Contains(p.Addr()) {
					inside = true
					break
				}
			}
			_, s := after.Lookup(p.Addr(), 0)
			switch {
			case !inside && s != "GitHub":
				t.Errorf("%s, GitHub's own, answers %q", p, s)
			case inside && s == "GitHub":
				t.Errorf("%s, inside an operator's list, answers GitHub", p)
			}
			if !inside {
				own++
			}
		}
	}
	if own == 0 {
		t.Error("no GitHub range of its own in the snapshot")
	}
	t.Logf("%d of GitHub's ranges are its own and answer GitHub", own)
}
