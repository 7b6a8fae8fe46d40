package geo

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// zoneIndexRecords lists the offsets of the records of a city source that
// an index of it must hold, with the zone the finder path (timeZoneOf)
// gives each.
func zoneIndexRecords(t testing.TB, s *source) map[uintptr]string {
	t.Helper()
	out := map[uintptr]string{}
	seen := map[uintptr]bool{}
	for res := range s.r.Networks() {
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		off := res.Offset()
		if seen[off] {
			continue
		}
		seen[off] = true
		in, err := s.decodeCity(res)
		if err != nil {
			t.Fatal(err)
		}
		coords, hasCoords := coordsOf(in)
		cc := countryCodeOf(in)
		if needsPointZone(cc, in.timeZone, hasCoords) {
			out[off] = timeZoneOf(cc, coords[0], coords[1], hasCoords)
		}
	}
	return out
}

// checkIndexAgrees builds the index of the city file at path and checks
// that it holds exactly the records that need a zone from coordinates,
// each with the finder path's zone.
func checkIndexAgrees(t *testing.T, path string) ZoneIndexStats {
	t.Helper()
	start := time.Now()
	b, st, err := BuildZoneIndex(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	z, err := parseZoneIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openSource(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.r.Close()
	want := zoneIndexRecords(t, s)
	if z.records() != len(want) {
		t.Errorf("%s: the index holds %d records, want %d", path, z.records(), len(want))
	}
	bad := 0
	for off, w := range want {
		if got, ok := z.zone(off); !ok || got != w {
			if bad++; bad <= 10 {
				t.Errorf("%s: record at %d: index %q (held %v), finders %q", path, off, got, ok, w)
			}
		}
	}
	t.Logf("%s: %d distinct records, %d indexed (%d in no zone), %d zones, %d bytes, built in %s",
		filepath.Base(path), st.Records, st.Indexed, st.Unknown, st.Zones, st.Bytes, took.Round(time.Millisecond))
	return st
}

// zoneFixture writes the bench fixture (every known place, and records of
// multi-zone countries at random points, many of which need the polygon
// finder) into one dir with its zone indexes and the same files without
// indexes (links) into another; it returns both and addresses to look up.
func zoneFixture(t *testing.T) (indexed, plain string, addrs []netip.Addr) {
	indexed, plain = t.TempDir(), t.TempDir()
	addrs = geotest.WriteBenchFixture(t, indexed, 15000, 1000)
	for _, k := range geotest.Places {
		addrs = append(addrs, netip.MustParseAddr(k.IP))
	}
	for _, a := range []string{geotest.MappedIP, geotest.NAT64IP, geotest.UncoveredIP} {
		addrs = append(addrs, netip.MustParseAddr(a))
	}
	for _, name := range []string{geotest.CityV4File, geotest.CityV6File, geotest.ASNFile} {
		if err := os.Symlink(filepath.Join(indexed, name), filepath.Join(plain, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{geotest.CityV4File, geotest.CityV6File} {
		if _, err := WriteZoneIndex(context.Background(), filepath.Join(indexed, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(indexed, ZoneIndexFile(geotest.ASNFile))); err == nil {
		t.Error("the ASN file got a zone index")
	}
	return indexed, plain, addrs
}

func openUncached(t *testing.T, dir string) *Engine {
	t.Helper()
	e, err := Open(dir, Options{CacheEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// sameAnswers checks that two engines answer every address alike in both
// languages.
func sameAnswers(t *testing.T, got, want *Engine, addrs []netip.Addr) {
	t.Helper()
	for _, a := range addrs {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			g, err := got.Lookup(a, lang)
			if err != nil {
				t.Fatal(err)
			}
			w, err := want.Lookup(a, lang)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s %s: %+v, want %+v", a, lang, g, w)
			}
		}
	}
}

// zonesLoaded reports, per city file, whether the engine uses its index.
func zonesLoaded(e *Engine) map[string]bool {
	g := e.acquire()
	defer g.release()
	out := map[string]bool{}
	for _, s := range g.sources {
		if s.kind == kindCity {
			out[s.info.File] = s.zones != nil
		}
	}
	return out
}

func TestZoneIndex(t *testing.T) {
	indexed, plain, addrs := zoneFixture(t)

	t.Run("agrees with the finders", func(t *testing.T) {
		for _, name := range []string{geotest.CityV4File, geotest.CityV6File} {
			if st := checkIndexAgrees(t, filepath.Join(indexed, name)); name == geotest.CityV4File && (st.Indexed < 300 || st.Zones < 20) {
				t.Errorf("%s: %+v: too few records need a zone for the test to tell", name, st)
			}
		}
		// MaxMind's test files, GeoIP2 schema, when the shared tree has them.
		dir := filepath.Join("..", "..", "..", "shared", "testdata", "maxmind")
		for _, name := range []string{"GeoIP2-City-Test.mmdb", "GeoLite2-City-Test.mmdb"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Logf("skipping %s: %v", name, err)
				continue
			}
			checkIndexAgrees(t, filepath.Join(dir, name))
		}
	})

	t.Run("same answers without finders", func(t *testing.T) {
		with, without := openUncached(t, indexed), openUncached(t, plain)
		if got := zonesLoaded(with); !got[geotest.CityV4File] || !got[geotest.CityV6File] {
			t.Fatalf("indexes in use: %v, want both", got)
		}
		if got := zonesLoaded(without); got[geotest.CityV4File] || got[geotest.CityV6File] {
			t.Fatalf("indexes in use without any: %v", got)
		}
		if with.needsTimeZones() || !without.needsTimeZones() {
			t.Errorf("needsTimeZones: %v with the indexes, %v without; want false, true", with.needsTimeZones(), without.needsTimeZones())
		}
		before := finderLookups.Load()
		for _, a := range addrs {
			for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
				if _, err := with.Lookup(a, lang); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n := finderLookups.Load() - before; n != 0 {
			t.Errorf("with the indexes, %d lookups reached the finders", n)
		}
		sameAnswers(t, with, without, addrs)
		if finderLookups.Load() == before {
			t.Error("without the indexes, no lookup reached the finders: the counter tells nothing")
		}
	})

	t.Run("stale, truncated or corrupt indexes are ignored", func(t *testing.T) {
		v4, err := os.ReadFile(filepath.Join(indexed, ZoneIndexFile(geotest.CityV4File)))
		if err != nil {
			t.Fatal(err)
		}
		v6, err := os.ReadFile(filepath.Join(indexed, ZoneIndexFile(geotest.CityV6File)))
		if err != nil {
			t.Fatal(err)
		}
		corrupt := append([]byte(nil), v4...)
		corrupt[len(corrupt)/2] ^= 0x40
		reference := openUncached(t, plain)
		for _, c := range []struct {
			name   string
			v4, v6 []byte // the sidecars to write
		}{
			{"stale: each file has the other's index", v6, v4},
			{"truncated", v4[:len(v4)-7], v6[:zoneHeaderSize]},
			{"corrupt", corrupt, []byte("IPATZONE garbage")},
			{"empty", []byte{}, []byte{}},
		} {
			t.Run(c.name, func(t *testing.T) {
				dir := t.TempDir()
				for _, name := range []string{geotest.CityV4File, geotest.CityV6File, geotest.ASNFile} {
					if err := os.Symlink(filepath.Join(indexed, name), filepath.Join(dir, name)); err != nil {
						t.Fatal(err)
					}
				}
				for name, b := range map[string][]byte{geotest.CityV4File: c.v4, geotest.CityV6File: c.v6} {
					if err := os.WriteFile(filepath.Join(dir, ZoneIndexFile(name)), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				e := openUncached(t, dir)
				if got := zonesLoaded(e); got[geotest.CityV4File] || got[geotest.CityV6File] {
					t.Fatalf("indexes in use: %v, want none", got)
				}
				sameAnswers(t, e, reference, addrs)
			})
		}
	})

	t.Run("a record the index lacks takes the finders' zone", func(t *testing.T) {
		path := filepath.Join(indexed, geotest.CityV4File)
		s, err := openSource(path, false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.r.Close()
		want := zoneIndexRecords(t, s)
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		// Half the records, and a wrong zone for the other half, which
		// proves the index's zone is the one answered.
		var recs []indexedZone
		i := 0
		for _, off := range slices.Sorted(maps.Keys(want)) {
			if i++; i%2 == 0 {
				recs = append(recs, indexedZone{off, "Etc/Index"})
			}
		}
		b, _, err := encodeZoneIndex(fileID(s.r.Metadata, st.Size()), recs)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for _, name := range []string{geotest.CityV4File, geotest.ASNFile} {
			if err := os.Symlink(filepath.Join(indexed, name), filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, ZoneIndexFile(geotest.CityV4File)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		e := openUncached(t, dir)
		fromIndex, fromFinders := 0, 0
		for _, a := range addrs {
			if !a.Is4() {
				continue
			}
			res := s.r.Lookup(a)
			if !res.Found() {
				continue
			}
			w, ok := want[res.Offset()]
			if !ok {
				continue
			}
			inIndex := false
			for _, r := range recs {
				inIndex = inIndex || r.off == res.Offset()
			}
			if inIndex {
				w = "Etc/Index"
				fromIndex++
			} else {
				fromFinders++
			}
			rec, err := e.Lookup(a, ipatlas.English)
			if err != nil {
				t.Fatal(err)
			}
			if rec.TimeZone != w {
				t.Errorf("%s (indexed %v): zone %q, want %q", a, inIndex, rec.TimeZone, w)
			}
		}
		if fromIndex == 0 || fromFinders == 0 {
			t.Errorf("%d lookups answered from the index, %d from the finders: the test tells nothing", fromIndex, fromFinders)
		}
	})
}

// TestZoneIndexRoundTrip encodes random records and reads each back; no
// other offset is found.
// Zone indexes built one after another share one set of finders, which
// the last one's end schedules to be dropped; the next index after the
// drop builds a new set.
func TestIndexFindersShared(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteBenchFixture(t, dir, 2000, 100)
	build := func() {
		t.Helper()
		for _, name := range []string{geotest.CityV4File, geotest.CityV6File} {
			if _, st, err := BuildZoneIndex(context.Background(), filepath.Join(dir, name)); err != nil || (name == geotest.CityV4File && st.Indexed == 0) {
				t.Fatalf("%s: %+v, %v", name, st, err)
			}
		}
	}
	build()
	sets := indexFinderSets.Load()
	build()
	if n := indexFinderSets.Load() - sets; n != 0 {
		t.Errorf("the second pair of indexes made %d new sets of finders, want 0", n)
	}
	indexFinders.mu.Lock()
	drop, users, held := indexFinders.drop, indexFinders.users, indexFinders.cur != nil
	indexFinders.mu.Unlock()
	if drop == nil || users != 0 || !held {
		t.Fatalf("after the last index: drop scheduled %v, users %d, finders held %v", drop != nil, users, held)
	}
	dropIndexFinders(drop)
	indexFinders.mu.Lock()
	held = indexFinders.cur != nil
	indexFinders.mu.Unlock()
	if held {
		t.Error("the finders are held after their drop")
	}
	build()
	if n := indexFinderSets.Load() - sets; n != 1 {
		t.Errorf("the index after the drop made %d new sets of finders, want 1", n)
	}
}

func TestZoneIndexRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	zones := []string{"", "America/New_York", "Asia/Shanghai", "Europe/Moscow"}
	for _, n := range []int{0, 1, 1000, 50000} {
		want := map[uintptr]string{}
		var recs []indexedZone
		for len(recs) < n {
			off := uintptr(rng.Uint32N(1 << 26))
			if _, ok := want[off]; ok {
				continue
			}
			want[off] = zones[rng.IntN(len(zones))]
			recs = append(recs, indexedZone{off, want[off]})
		}
		b, _, err := encodeZoneIndex(mmdbID{6, 1234, 5678, 91011, 28}, recs)
		if err != nil {
			t.Fatal(err)
		}
		z, err := parseZoneIndex(b)
		if err != nil {
			t.Fatalf("%d records: %v", n, err)
		}
		if z.file != (mmdbID{6, 1234, 5678, 91011, 28}) || z.records() != n {
			t.Fatalf("%d records: read back %+v and %d records", n, z.file, z.records())
		}
		for off, w := range want {
			if got, ok := z.zone(off); !ok || got != w {
				t.Fatalf("%d records: offset %d: %q %v, want %q", n, off, got, ok, w)
			}
		}
		for range 1000 {
			off := uintptr(rng.Uint64N(1 << 34))
			if _, in := want[off]; in {
				continue
			}
			if got, ok := z.zone(off); ok {
				t.Fatalf("%d records: offset %d not indexed, found %q", n, off, got)
			}
		}
		if n > 0 && len(b) > 3*n+4*(1<<10+1)+zoneHeaderSize+64 {
			t.Errorf("%d records take %d bytes", n, len(b))
		}
	}
}

// FuzzZoneIndex feeds arbitrary bytes to the index reader, as they are
// and with a valid checksum appended (so that the structure past it is
// explored): it never panics, and what it accepts answers lookups within
// its bounds.
func FuzzZoneIndex(f *testing.F) {
	b, _, err := encodeZoneIndex(mmdbID{4, 10, 20, 30, 24}, []indexedZone{
		{5, "America/New_York"}, {70000, ""}, {70001, "Asia/Shanghai"}, {200000, "America/New_York"},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)-4])
	f.Add(b[:zoneHeaderSize])
	empty, _, _ := encodeZoneIndex(mmdbID{}, nil)
	f.Add(empty)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, binary.LittleEndian.AppendUint32(append([]byte(nil), b...), crc32.Checksum(b, castagnoli))} {
			z, err := parseZoneIndex(in)
			if err != nil {
				continue
			}
			for _, off := range []uintptr{0, 1, 5, 65535, 65536, 70000, 70001, 200000, 1 << 31, 1<<32 - 1, 1 << 40} {
				z.zone(off)
			}
			for i := range min(z.records(), 1000) {
				if int(z.ids[i]) >= len(z.zones) {
					t.Fatalf("record %d: zone %d of %d", i, z.ids[i], len(z.zones))
				}
			}
		}
	})
}

// TestRealZoneIndex checks the index of every city file of the real
// dataset against the finder path, record by record, and logs its build
// time and size.
func TestRealZoneIndex(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	files, err := mmdbFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		s, err := openSource(f, false)
		if err != nil {
			t.Fatal(err)
		}
		k := s.kind
		s.r.Close()
		if k == kindCity || k == kindCountry {
			checkIndexAgrees(t, f)
		}
	}
}

// TestRealZoneIndexHeap measures, each in a fresh process, the live heap
// after opening the real dataset and looking up 100,000 random public
// addresses (one in eight IPv6), with the zone indexes beside the files
// and without them (the finders then built).
func TestRealZoneIndexHeap(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	if child := os.Getenv("GEO_ZONE_HEAP_DIR"); child != "" {
		zoneHeapChild(t, child)
		return
	}
	indexed, plain := t.TempDir(), t.TempDir()
	files, err := mmdbFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, d := range []string{indexed, plain} {
			if err := os.Symlink(f, filepath.Join(d, filepath.Base(f))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := WriteZoneIndex(context.Background(), filepath.Join(indexed, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, dir string }{{"with the zone indexes", indexed}, {"without", plain}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRealZoneIndexHeap$", "-test.v")
		cmd.Env = append(os.Environ(), "GEO_ZONE_HEAP_DIR="+c.dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(line, "zone-heap ") {
				t.Logf("%s: %s", c.name, strings.TrimPrefix(line, "zone-heap "))
			}
		}
	}
}

func zoneHeapChild(t *testing.T, dir string) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	start := time.Now()
	for i := range 100_000 {
		var a netip.Addr
		if i%8 == 7 {
			var b [16]byte
			b[0] = 0x20 | byte(rng.IntN(2))<<1
			for j := 1; j < 16; j++ {
				b[j] = byte(rng.IntN(256))
			}
			a = netip.AddrFrom16(b)
		} else {
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], rng.Uint32())
			a = netip.AddrFrom4(b)
			if !a.IsGlobalUnicast() || a.IsPrivate() {
				continue
			}
		}
		if _, err := e.Lookup(a, ipatlas.Lang(i&1)); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	fmt.Printf("zone-heap live heap %.1f MB after open and 100,000 lookups (%.1f MB before open), lookups took %s, %d finder lookups\n",
		float64(after.HeapAlloc)/(1<<20), float64(before.HeapAlloc)/(1<<20), took.Round(time.Millisecond), finderLookups.Load())
}
