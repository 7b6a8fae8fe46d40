package geo_test

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// residentialASes are large residential ISPs: Comcast, Charter, AT&T,
// Verizon, Deutsche Telekom, Orange, BT, Telefónica Spain, China Telecom,
// China Unicom, KT, Reliance Jio, Vivo Brazil.
var residentialASes = []uint32{7922, 20115, 7018, 701, 3320, 3215, 2856, 3352, 4134, 4837, 4766, 55836, 26599}

// TestRealFlagsAgainstSources measures the flags against their sources
// over the real dataset, with the built-in lists and a Tor list in the Tor
// Project's format:
//
//	IPATLAS_TEST_DATA_DIR=~/.cache/ipatlas-ci/data go test -run TestRealFlagsAgainstSources -v ./internal/geo/
//
// For a fresh random sample of 1,000 addresses drawn from each list (its
// ranges; the announced prefixes of its ASes for an AS list; its addresses
// for the Tor list) every address must carry the list's flag. For 1,000
// addresses of each large residential ISP, drawn from prefixes on none of
// the lists, none may carry any flag.
func TestRealFlagsAgainstSources(t *testing.T) {
	realdata.Whole(t)
	data := realdata.Dir(t)
	// The engine reads the real files from a directory of links, so that
	// the Tor list is written next to them, never into the real data dir.
	dir := t.TempDir()
	for _, f := range []string{geotest.CityV4File, geotest.CityV6File, geotest.ASNFile} {
		if err := os.Symlink(data+"/"+f, dir+"/"+f); err != nil {
			t.Fatal(err)
		}
	}
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d", seed)
	torAddrs := make([]netip.Addr, 0, 1200)
	var tor []byte
	for len(torAddrs) < cap(torAddrs) {
		a := randomPublic(rng)
		torAddrs = append(torAddrs, a)
		tor = append(tor, a.String()+"\n"...)
	}
	geotest.WritePrivacyList(t, dir, privacy.TorList, string(tor), time.Now())
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	flags := func(a netip.Addr) privacy.Flags {
		r, err := e.Lookup(a, ipatlas.English)
		if err != nil {
			t.Fatal(err)
		}
		p := r.Privacy
		var f privacy.Flags
		if p.Hosting {
			f |= privacy.Hosting
		}
		if p.VPN {
			f |= privacy.VPN
		}
		if p.Tor != nil && *p.Tor {
			f |= privacy.Tor
		}
		if p.Relay {
			f |= privacy.Relay
		}
		return f
	}
	const n = 1000
	tab, err := privacy.Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range privacy.Lists {
		var draw func() netip.Addr
		switch {
		case l.Name == privacy.TorList:
			draw = func() netip.Addr { return torAddrs[rng.IntN(len(torAddrs))] }
		default:
			b, ok, err := privacy.Snapshot(l.Name)
			if err != nil || !ok {
				t.Fatalf("%s: %v", l.Name, err)
			}
			ents, err := l.Parse(b)
			if err != nil {
				t.Fatal(err)
			}
			if l.Format == privacy.FormatASN {
				var prefixes []netip.Prefix
				for _, asn := range ents.ASNs {
					as, err := e.AS(asn, ipatlas.English)
					if err != nil {
						continue // on the list, but announcing nothing in the data
					}
					for _, p := range append(as.Prefixes, as.Prefixes6...) {
						prefixes = append(prefixes, p.Netblock)
					}
				}
				ents.Prefixes = prefixes
			}
			draw = func() netip.Addr { return randomIn(rng, ents.Prefixes[rng.IntN(len(ents.Prefixes))]) }
		}
		flagged := 0
		for range n {
			a := draw()
			if f := flags(a); f&l.Flags == l.Flags {
				flagged++
			} else if n-flagged < 4 {
				t.Errorf("%s: %s has flags %04b", l.Name, a, f)
			}
		}
		t.Logf("%-28s %4d of %d flagged (%.1f%%)", l.Name, flagged, n, 100*float64(flagged)/n)
	}
	for _, asn := range residentialASes {
		if tab.HostingAS(asn) {
			t.Errorf("AS%d, a residential ISP, is on a datacenter AS list", asn)
			continue
		}
		as, err := e.AS(asn, ipatlas.English)
		if err != nil {
			t.Errorf("AS%d: %v", asn, err)
			continue
		}
		// Its prefixes that no list range touches.
		var clean []netip.Prefix
		listed := 0
		for _, p := range append(as.Prefixes, as.Prefixes6...) {
			if tab.Touches(p.Netblock) {
				listed++
				continue
			}
			clean = append(clean, p.Netblock)
		}
		flagged := 0
		for range n {
			a := randomIn(rng, clean[rng.IntN(len(clean))])
			if f := flags(a); f != 0 {
				flagged++
				if flagged < 4 {
					t.Errorf("AS%d (%s): %s has flags %04b", asn, as.Name, a, f)
				}
			}
		}
		t.Logf("AS%-6d %-40.40s %4d of %d flagged; %d of its %d prefixes touch a list", asn, as.Name, flagged, n, listed,
			len(as.Prefixes)+len(as.Prefixes6))
	}
}

func randomPublic(rng *rand.Rand) netip.Addr {
	for {
		v := rng.Uint32()
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if _, special := netaddr.Classify(a); !special {
			return a
		}
	}
}
