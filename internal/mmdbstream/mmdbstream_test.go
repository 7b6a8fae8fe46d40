package mmdbstream_test

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/mmdbstream"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"
)

// network is a network of a test file and the index of its record.
type network struct {
	p   netip.Prefix
	rec int
}

// randomNetworks is a random set of disjoint networks in address order,
// IPv4 and IPv6, and their records: whole networks of every size, halves
// that share a record (which a writer merges), networks that hold the
// aliases of the IPv4 tree, and none inside them.
func randomNetworks(r *rand.Rand, records int) []network {
	var out []network
	prev := 0
	budget := 3000
	var gen func(p netip.Prefix, v6 bool)
	gen = func(p netip.Prefix, v6 bool) {
		special := false
		if v6 {
			for _, al := range aliases {
				switch {
				case al.Bits() <= p.Bits() && al.Contains(p.Addr()):
					return // inside an alias, or the IPv4 tree
				case p.Bits() < al.Bits() && p.Contains(al.Addr()):
					special = true
				}
			}
		}
		maxBits := 32
		if v6 {
			maxBits = 128
		}
		switch x := r.IntN(10); {
		case p.Bits() < maxBits && (special && p.Bits() < 96 && p.Contains(netip.IPv6Unspecified()) || budget > 0 && x < 6):
			budget--
			lo := netip.PrefixFrom(p.Addr(), p.Bits()+1)
			gen(lo, v6)
			gen(netip.PrefixFrom(netipx.PrefixLastIP(lo).Next(), p.Bits()+1), v6)
		case x < 8:
			// A record like the one before it half the time, so that
			// halves share one.
			if r.IntN(2) == 0 {
				prev = r.IntN(records)
			}
			out = append(out, network{p, prev})
		}
	}
	gen(netip.MustParsePrefix("0.0.0.0/0"), false)
	budget = 3000
	gen(netip.MustParsePrefix("::/0"), true)
	return out
}

var aliases = []netip.Prefix{
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0/96"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2002::/16"),
}

// testRecords are GeoIP2-like records that share parts (names maps,
// strings), so that the data section has pointers.
func testRecords(n int) []mmdbtype.DataType {
	countries := []mmdbtype.Map{
		{"iso_code": mmdbtype.String("DE"), "names": mmdbtype.Map{"en": mmdbtype.String("Germany"), "zh-CN": mmdbtype.String("德国")}},
		{"iso_code": mmdbtype.String("CN"), "names": mmdbtype.Map{"en": mmdbtype.String("China"), "zh-CN": mmdbtype.String("中国")}},
		{"iso_code": mmdbtype.String("US"), "names": mmdbtype.Map{"en": mmdbtype.String("United States"), "zh-CN": mmdbtype.String("美国")}},
	}
	var recs []mmdbtype.DataType
	for i := range n {
		m := mmdbtype.Map{
			"country":                  countries[i%len(countries)],
			"registered_country":       countries[(i/3)%len(countries)],
			"autonomous_system_number": mmdbtype.Uint32(64496 + i%7),
			"location": mmdbtype.Map{
				"latitude": mmdbtype.Float64(float64(i%11) * 1.5), "longitude": mmdbtype.Float64(float64(i) / 3),
				"accuracy_radius": mmdbtype.Uint16(50),
			},
			"subdivisions": mmdbtype.Slice{mmdbtype.Map{"iso_code": mmdbtype.String(strings.Repeat("X", 1+i%3))}},
			"flag":         mmdbtype.Bool(i%2 == 0),
		}
		if i%5 == 0 {
			m["city"] = mmdbtype.Map{"names": mmdbtype.Map{"en": mmdbtype.String("City " + strings.Repeat("z", i))}}
		}
		recs = append(recs, m)
	}
	return recs
}

var (
	built = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	desc  = map[string]string{"en": "a test file", "zh-CN": "测试"}
	langs = []string{"en", "zh-CN"}
)

// streamed is the networks written by a Writer.
func streamed(t *testing.T, nets []network, recs []mmdbtype.DataType, recordSize int) []byte {
	t.Helper()
	w, err := mmdbstream.New(mmdbstream.Options{DatabaseType: "Test-City", Description: desc, Languages: langs,
		BuildTime: built, RecordSize: recordSize, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	handles := map[int]mmdbstream.Record{}
	for _, n := range nets {
		h, ok := handles[n.rec]
		if !ok {
			if h, err = w.Data(recs[n.rec]); err != nil {
				t.Fatal(err)
			}
			handles[n.rec] = h
		}
		if err := w.Insert(n.p, h); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := w.Finish(&buf); err != nil {
		t.Fatal(err)
	}
	if w.Stats.Networks != len(nets) || w.Stats.Records != len(handles) {
		t.Errorf("stats %+v, %d networks and %d records inserted", w.Stats, len(nets), len(handles))
	}
	return buf.Bytes()
}

// treeWritten is the networks written by mmdbwriter's in-memory tree,
// inserted in a random order.
func treeWritten(t *testing.T, r *rand.Rand, nets []network, recs []mmdbtype.DataType, recordSize int) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "Test-City", Description: desc, Languages: langs,
		BuildEpoch: built.Unix(), IPVersion: 6, RecordSize: recordSize, IncludeReservedNetworks: true, DisableMetadataPointers: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range r.Perm(len(nets)) {
		if err := tree.Insert(netipx.PrefixIPNet(nets[i].p), recs[nets[i].rec]); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSameAsMMDBWriter writes random networks with both writers, for
// every record size: the search trees are the same node for node (the
// same numbers, records and aliases), each data record decodes to the
// same value, and maxminddb-golang verifies the file and reads back the
// same networks. The data sections differ in their order: mmdbwriter
// writes a record where its tree walk first meets it, this writer where
// the networks do.
func TestSameAsMMDBWriter(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for _, rs := range []int{24, 28, 32} {
		for range 2 {
			nets := randomNetworks(r, 40)
			recs := testRecords(40)
			got, want := open(t, streamed(t, nets, recs, rs)), open(t, treeWritten(t, r, nets, recs, rs))
			sameTree(t, got, want)
			if err := got.db.Verify(); err != nil {
				t.Fatal(err)
			}
			if g, w := readBack(t, got.db), readBack(t, want.db); !reflect.DeepEqual(g, w) {
				t.Fatalf("record size %d: %d networks read back, mmdbwriter's %d", rs, len(g), len(w))
			}
			if m := got.db.Metadata; m.DatabaseType != "Test-City" || m.Description["zh-CN"] != "测试" || m.BuildEpoch != uint(built.Unix()) ||
				!reflect.DeepEqual(m, want.db.Metadata) {
				t.Errorf("metadata %+v, mmdbwriter's %+v", m, want.db.Metadata)
			}
		}
	}
}

// file is an MMDB and its bytes.
type file struct {
	b  []byte
	db *maxminddb.Reader
}

func open(t *testing.T, b []byte) file {
	t.Helper()
	db, err := maxminddb.OpenBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return file{b, db}
}

// record is node n's record on side (0 left, 1 right).
func (f file) record(n uint, side int) uint {
	rs := f.db.Metadata.RecordSize
	b := f.b[n*rs/4:]
	switch rs {
	case 24:
		b = b[3*side:]
		return uint(b[0])<<16 | uint(b[1])<<8 | uint(b[2])
	case 28:
		if side == 0 {
			return uint(b[3]>>4)<<24 | uint(b[0])<<16 | uint(b[1])<<8 | uint(b[2])
		}
		return uint(b[3]&0x0f)<<24 | uint(b[4])<<16 | uint(b[5])<<8 | uint(b[6])
	}
	b = b[4*side:]
	return uint(b[0])<<24 | uint(b[1])<<16 | uint(b[2])<<8 | uint(b[3])
}

// sameTree compares the two trees record by record.
func sameTree(t *testing.T, got, want file) {
	t.Helper()
	nc := got.db.Metadata.NodeCount
	if nc != want.db.Metadata.NodeCount {
		t.Fatalf("%d nodes, mmdbwriter's %d", nc, want.db.Metadata.NodeCount)
	}
	for n := range nc {
		for side := range 2 {
			g, w := got.record(n, side), want.record(n, side)
			switch {
			case g <= nc || w <= nc:
				if g != w {
					t.Fatalf("node %d, side %d: %d, mmdbwriter's %d (%d nodes)", n, side, g, w, nc)
				}
			default:
				var gv, wv any
				if err := got.db.LookupOffset(uintptr(g - nc - 16)).Decode(&gv); err != nil {
					t.Fatal(err)
				}
				if err := want.db.LookupOffset(uintptr(w - nc - 16)).Decode(&wv); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gv, wv) {
					t.Fatalf("node %d, side %d: %v, mmdbwriter's %v", n, side, gv, wv)
				}
			}
		}
	}
}

// readBack is every network of db and its record.
func readBack(t *testing.T, db *maxminddb.Reader) map[netip.Prefix]any {
	t.Helper()
	out := map[netip.Prefix]any{}
	for res := range db.Networks() {
		var v any
		if err := res.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out[res.Prefix()] = v
	}
	return out
}

// TestEmpty is a file of no network: the IPv4 tree and its aliases, as
// mmdbwriter writes it.
func TestEmpty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	got, want := streamed(t, nil, nil, 28), treeWritten(t, r, nil, nil, 28)
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes, mmdbwriter's %d", len(got), len(want))
	}
	if n := readBack(t, open(t, got).db); len(n) != 0 {
		t.Errorf("networks %v", n)
	}
}

// TestInsertErrors: networks out of order, overlapping, inside an alias
// or holding the IPv4 tree are refused, naming the network.
func TestInsertErrors(t *testing.T) {
	for _, c := range []struct {
		nets []string
		want string
	}{
		{[]string{"10.0.0.0/8", "9.0.0.0/8"}, "9.0.0.0/8 is not after"},
		{[]string{"10.0.0.0/8", "10.1.0.0/16"}, "10.1.0.0/16 is not after"},
		{[]string{"2001:0:1::/48"}, "inside the alias 2001::/32"},
		{[]string{"::ffff:1.2.3.4/128"}, "inside the alias ::ffff:0.0.0.0/96"},
		{[]string{"::/64"}, "::/64 holds the IPv4 tree"},
		{[]string{"2001:db8::/32", "1.2.3.0/24"}, "1.2.3.0/24 is not after"},
	} {
		w, err := mmdbstream.New(mmdbstream.Options{TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := w.Data(mmdbtype.Map{"a": mmdbtype.String("b")})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.nets {
			if err = w.Insert(netip.MustParsePrefix(n), rec); err != nil {
				break
			}
		}
		if err == nil {
			err = w.Finish(&bytes.Buffer{})
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.nets, err, c.want)
		}
		w.Close()
	}
}
