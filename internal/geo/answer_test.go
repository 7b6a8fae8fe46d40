package geo_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"sync"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// encodeRecord is what the server writes for a record: encoding/json with
// HTML escaping off, without the newline.
func encodeRecord(t testing.TB, rec ipatlas.Record) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&rec); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// checkAppendJSON compares AppendJSON with Lookup's record encoded by
// encoding/json, twice per address and language (a part's cache miss,
// then a hit), and with the caches on and off.
func checkAppendJSON(t *testing.T, dir string, addrs []netip.Addr) {
	for _, opts := range []geo.Options{{}, {CacheEntries: -1, ASNCacheEntries: -1}, {CacheEntries: 2, ASNCacheEntries: 2}, {BuiltinPrivacy: true}} {
		e, err := geo.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
				rec, err := e.Lookup(a, lang)
				if err != nil {
					t.Fatal(err)
				}
				want := encodeRecord(t, rec)
				for range 2 {
					got, err := e.AppendJSON([]byte("x"), a, lang)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got[1:], want) {
						t.Fatalf("%s %s %+v:\n got %s\nwant %s", a, lang, opts, got[1:], want)
					}
				}
			}
		}
		e.Close()
		if _, err := e.AppendJSON(nil, addrs[0], ipatlas.English); err == nil {
			t.Error("AppendJSON after Close: no error")
		}
	}
}

func TestAppendJSONMatchesLookup(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	var addrs []netip.Addr
	for _, k := range geotest.Places {
		p := netip.MustParsePrefix(k.Network)
		addrs = append(addrs, p.Addr(), p.Addr().Next())
	}
	// Not in the data, an IPv4-mapped address, one with a zone.
	addrs = append(addrs, netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("::ffff:"+addrs[0].String()),
		netip.MustParseAddr("2a01:4f8::1%eth0"))
	checkAppendJSON(t, dir, addrs)

	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.AppendJSON(nil, netip.Addr{}, ipatlas.English); err == nil {
		t.Error("AppendJSON of the zero address: no error")
	}
	// A hit allocates nothing, with the privacy lists loaded too.
	p, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	buf := make([]byte, 0, 1024)
	// Chinese names are written as they are, as English ones: no
	// allocation in either language once the parts are cached.
	for _, e := range []*geo.Engine{e, p} {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			for _, a := range addrs[:len(addrs)-3] {
				if n := testing.AllocsPerRun(100, func() { buf, _ = e.AppendJSON(buf[:0], a, lang) }); n != 0 {
					t.Errorf("AppendJSON(%s, %s) with its parts cached: %v allocations", a, lang, n)
				}
			}
		}
	}
	// The privacy object is written for every address, not cached with
	// the parts: one on a list and one that is not.
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "81.2.69.142"} {
		rec, err := p.Lookup(netip.MustParseAddr(a), ipatlas.English)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := p.AppendJSON(nil, netip.MustParseAddr(a), ipatlas.English)
		if want := encodeRecord(t, rec); !bytes.Equal(got, want) || rec.Privacy == nil {
			t.Errorf("%s with privacy lists:\n got %s\nwant %s", a, got, want)
		}
	}
}

// The same on the real dataset, when there is one: its names hold every
// kind of character the fixture may miss.
func TestRealAppendJSONMatchesLookup(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	addrs := randomPublicIPv4(2000)
	checkAppendJSON(t, dir, addrs)
}

// Concurrent lookups through a cache small enough to evict all the time
// answer what one lookup alone does (run with -race).
func TestAppendJSONConcurrent(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{CacheEntries: 2, ASNCacheEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	want := map[netip.Addr][2][]byte{}
	var addrs []netip.Addr
	for _, k := range geotest.Places {
		a := netip.MustParsePrefix(k.Network).Addr()
		addrs = append(addrs, a)
		var w [2][]byte
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			rec, err := e.Lookup(a, lang)
			if err != nil {
				t.Fatal(err)
			}
			w[lang] = encodeRecord(t, rec)
		}
		want[a] = w
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var buf []byte
			for i := range 2000 {
				a, lang := addrs[(i+g)%len(addrs)], ipatlas.Lang((i/len(addrs))%2)
				var err error
				if buf, err = e.AppendJSON(buf[:0], a, lang); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(buf, want[a][lang]) {
					t.Errorf("%s %s: %s, want %s", a, lang, buf, want[a][lang])
					return
				}
			}
		})
	}
	wg.Wait()
}
