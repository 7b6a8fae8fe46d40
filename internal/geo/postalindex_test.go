package geo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/postal"
)

func TestPostalIndexRoundTrip(t *testing.T) {
	id := mmdbID{4, 10, 20, 30, 24}
	recs := []indexedCode{{200000, "94043"}, {5, "100000"}, {70000, "94043"}, {70001, "GX11 1AA"}}
	b, codes, err := encodePostalIndex(id, 77, recs)
	if err != nil {
		t.Fatal(err)
	}
	if codes != 3 {
		t.Errorf("%d codes, want 3", codes)
	}
	z, err := parsePostalIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	if z.file != id || z.data != 77 || z.records() != 4 {
		t.Errorf("file %v, data %d, %d records", z.file, z.data, z.records())
	}
	for off, want := range map[uintptr]string{5: "100000", 70000: "94043", 70001: "GX11 1AA", 200000: "94043",
		0: "", 6: "", 65541: "", 1 << 31: "", 1 << 40: ""} {
		if got := z.code(off); got != want {
			t.Errorf("code(%d) = %q, want %q", off, got, want)
		}
	}
	var none *postalIndex
	if none.code(5) != "" {
		t.Error("a nil index answers")
	}
	for _, bad := range [][]indexedCode{{{5, "a"}, {5, "b"}}, {{5, ""}}, {{5, strings.Repeat("9", 256)}}, {{1 << 33, "1"}}} {
		if _, _, err := encodePostalIndex(id, 0, bad); err == nil {
			t.Errorf("encoded %v", bad)
		}
	}
}

// Damage anywhere is a malformed index, never a panic or a wrong code.
func TestPostalIndexRejectsDamage(t *testing.T) {
	b, _, err := encodePostalIndex(mmdbID{4, 10, 20, 30, 24}, 1, []indexedCode{{5, "94043"}, {70000, "10115"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x41
		if _, err := parsePostalIndex(d); !errors.Is(err, errPostalIndex) {
			t.Errorf("byte %d flipped: %v", i, err)
		}
	}
	for _, n := range []int{0, 10, postalHeaderSize, len(b) - 1} {
		if _, err := parsePostalIndex(b[:n]); !errors.Is(err, errPostalIndex) {
			t.Errorf("cut to %d bytes: %v", n, err)
		}
	}
}

func FuzzPostalIndex(f *testing.F) {
	b, _, err := encodePostalIndex(mmdbID{4, 10, 20, 30, 24}, 9, []indexedCode{{5, "94043"}, {70000, "10115"}, {70001, "94043"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)-4])
	empty, _, _ := encodePostalIndex(mmdbID{}, 0, nil)
	f.Add(empty)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, binary.LittleEndian.AppendUint32(bytes.Clone(b), crc32.Checksum(b, castagnoli))} {
			z, err := parsePostalIndex(in)
			if err != nil {
				continue
			}
			for _, off := range []uintptr{0, 1, 5, 65535, 65536, 70000, 70001, 1 << 31, 1<<32 - 1, 1 << 40} {
				z.code(off)
			}
		}
	})
}

// fixturePostal is postal data for the fixture's places: Mountain View's
// codes (its record has one of its own) and Beijing's.
const fixturePostal = "US\t94040\tMountain View\tCalifornia\tCA\t\t\t\t\t37.3855\t-122.088\t4\n" +
	"US\t94041\tMountain View\tCalifornia\tCA\t\t\t\t\t37.4\t-122.08\t4\n" +
	"CN\t100000\tBeijing\tBeijing\t22\t\t\t\t\t39.9075\t116.3972\t\n" +
	"CN\t518000\tShenzhen\tGuangdong\t30\t\t\t\t\t22.5455\t114.0683\t\n"

func TestEngineAnswersPostalIndex(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	ix, err := postal.Load(strings.NewReader(fixturePostal), int64(len(fixturePostal)))
	if err != nil {
		t.Fatal(err)
	}
	v4 := filepath.Join(dir, geotest.CityV4File)
	if need, err := NeedsPostalIndex(v4, ix.ID); err != nil || !need {
		t.Fatalf("NeedsPostalIndex before: %v, %v", need, err)
	}
	st, err := WritePostalIndex(t.Context(), v4, ix)
	if err != nil {
		t.Fatal(err)
	}
	if st.Indexed < 2 || st.Own < 1 || st.ByName < 2 {
		t.Errorf("stats %+v: want Beijing and Shenzhen by name, Mountain View's own code", st)
	}
	if need, _ := NeedsPostalIndex(v4, ix.ID); need {
		t.Error("NeedsPostalIndex after writing it")
	}
	if need, _ := NeedsPostalIndex(v4, ix.ID+1); !need {
		t.Error("an index of other postal data is not stale")
	}
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, c := range []struct{ addr, zip string }{
		{geotest.Beijing.IP, "100000"},
		{geotest.MountainView.IP, "94043"}, // the data's own code wins
	} {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			r, err := e.Lookup(netip.MustParseAddr(c.addr), lang)
			if err != nil {
				t.Fatal(err)
			}
			if r.ZipCode != c.zip {
				t.Errorf("%s in %v: zip %q, want %q", c.addr, lang, r.ZipCode, c.zip)
			}
			b, err := e.AppendJSON(nil, netip.MustParseAddr(c.addr), lang)
			if err != nil || !bytes.Contains(b, []byte(`"zip_code":"`+c.zip+`"`)) {
				t.Errorf("%s in %v: JSON %s, %v", c.addr, lang, b, err)
			}
		}
	}
	found := false
	for _, d := range e.Datasets() {
		if d.Kind == "postal" && d.File == PostalIndexFile(geotest.CityV4File) && d.Networks == st.Indexed {
			found = true
		}
	}
	if !found {
		t.Errorf("Datasets does not list the postal index: %+v", e.Datasets())
	}

	// An index written for another file is ignored, not served.
	if err := os.Rename(PostalIndexFile(v4), PostalIndexFile(filepath.Join(dir, geotest.CityV6File))); err != nil {
		t.Fatal(err)
	}
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.Lookup(netip.MustParseAddr(geotest.Beijing.IP), ipatlas.English); r.ZipCode != "" {
		t.Errorf("Beijing's code %q with no index of its own file", r.ZipCode)
	}
}

// A postal index written beside a city file in service (a fetch that
// found new postal codes, the city files unchanged) is served without a
// restart.
func TestWatchPicksUpPostalIndex(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := Open(dir, Options{Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Watch(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	ix, err := postal.Load(strings.NewReader(fixturePostal), int64(len(fixturePostal)))
	if err != nil {
		t.Fatal(err)
	}
	zip := func() string {
		r, _ := e.Lookup(netip.MustParseAddr(geotest.Beijing.IP), ipatlas.English)
		return r.ZipCode
	}
	if z := zip(); z != "" {
		t.Fatalf("Beijing's code %q before any postal index", z)
	}
	// Watch may not have subscribed yet when the index is first written:
	// write it again until the change shows, within a generous deadline.
	for deadline := time.Now().Add(20 * time.Second); zip() != "100000"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the postal index written beside the city file was not picked up")
		}
		if _, err := WritePostalIndex(t.Context(), filepath.Join(dir, geotest.CityV4File), ix); err != nil {
			t.Fatal(err)
		}
	}
}
