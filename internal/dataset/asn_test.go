package dataset_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"
)

var asnBuild = time.Date(2026, 6, 17, 19, 0, 0, 0, time.UTC)

// compileASN compiles CSV files and opens the result, verified.
func compileASN(t testing.TB, csvs ...string) (*maxminddb.Reader, dataset.ASNStats) {
	t.Helper()
	c, err := dataset.NewASNCompiler(asnBuild, "test")
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range csvs {
		if err := c.AddCSV(strings.NewReader(s), fmt.Sprintf("file%d.csv", i)); err != nil {
			t.Fatalf("AddCSV: %v", err)
		}
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	db, err := maxminddb.OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Verify(); err != nil {
		t.Fatalf("compiled ASN database fails verification: %v", err)
	}
	return db, c.Stats()
}

func asnOf(t testing.TB, db *maxminddb.Reader, ip string) (asnRecord, bool) {
	t.Helper()
	var rec asnRecord
	r := db.Lookup(netip.MustParseAddr(ip))
	if err := r.Decode(&rec); err != nil {
		t.Fatalf("%s: %v", ip, err)
	}
	return rec, r.Found()
}

func TestASNCompileLooksUpLikeTheCSV(t *testing.T) {
	db, stats := compileASN(t, datasettest.ASNIPv4CSV, datasettest.ASNIPv6CSV)
	if db.Metadata.DatabaseType != dataset.ASNDatabaseType || db.Metadata.IPVersion != 6 || !db.Metadata.BuildTime().Equal(asnBuild) {
		t.Errorf("metadata %+v", db.Metadata)
	}
	rows := strings.Count(datasettest.ASNIPv4CSV, "\n") + strings.Count(datasettest.ASNIPv6CSV, "\n")
	if stats.Rows != rows {
		t.Errorf("stats %+v, want %d rows", stats, rows)
	}

	cases := []struct {
		ip    string
		found bool
		asn   uint32
		org   string
	}{
		// Quoted organizations with commas and doubled quotes, unquoted
		// exactly as the CSV gives them.
		{"1.0.0.0", true, 13335, "Cloudflare, Inc."},
		{"1.0.0.255", true, 13335, "Cloudflare, Inc."},
		{"1.0.1.0", false, 0, ""},
		{"2.26.200.0", true, 201907, `LLC "SPUTNIK"`},
		{"2.26.215.255", true, 201907, `LLC "SPUTNIK"`},
		{"2.26.216.0", false, 0, ""},
		{"2.26.199.255", false, 0, ""},
		// 8.8.9.3-8.8.10.17 is not CIDR-aligned: both ends and nothing
		// beyond them.
		{"8.8.9.2", false, 0, ""},
		{"8.8.9.3", true, 15169, "Google LLC"},
		{"8.8.9.200", true, 15169, "Google LLC"},
		{"8.8.10.17", true, 15169, "Google LLC"},
		{"8.8.10.18", true, 64500, `Single, Address "Org"`},
		{"8.8.10.19", false, 0, ""},
		{"114.114.114.114", true, 21859, "Zenlayer, Inc"},
		// IPv4-mapped IPv6 reaches the IPv4 subtree through the alias.
		{"::ffff:1.0.0.1", true, 13335, "Cloudflare, Inc."},
		{"2001:200:1b9:ffff:ffff:ffff:ffff:ffff", true, 2500, "WIDE Project"},
		{"2001:200:1ba::1", true, 24047, "Internet Systems Consortium, Inc."},
		{"2001:200:1bb::", false, 0, ""},
		{"2001:4860:4860::8888", true, 15169, "Google LLC"},
		// 2400:3200::3-2400:3200::1:5, not aligned.
		{"2400:3200::2", false, 0, ""},
		{"2400:3200::3", true, 37963, "Hangzhou Alibaba Advertising Co.,Ltd."},
		{"2400:3200::1:5", true, 37963, "Hangzhou Alibaba Advertising Co.,Ltd."},
		{"2400:3200::1:6", false, 0, ""},
	}
	for _, c := range cases {
		rec, found := asnOf(t, db, c.ip)
		if found != c.found || rec.Number != c.asn || rec.Organization != c.org {
			t.Errorf("%s: got %+v (found %v), want AS%d %q (found %v)", c.ip, rec, found, c.asn, c.org, c.found)
		}
	}
	// 2001::/32 is Teredo, an alias of the IPv4 tree in MaxMind's layout:
	// the row cannot be stored and is counted instead.
	if stats.Aliased == 0 {
		t.Errorf("the Teredo row was not reported as aliased: %+v", stats)
	}
}

func TestASNCompileAllRowsProperty(t *testing.T) {
	// Random non-overlapping ranges with gaps, in both families: every
	// range's ends and a point inside resolve to its row, the addresses
	// just outside resolve to nothing.
	rng := rand.New(rand.NewPCG(1, 2))
	type row struct {
		start, end netip.Addr
		asn        uint32
		org        string
	}
	var rows []row
	for _, fam := range []netip.Addr{netip.MustParseAddr("11.0.0.0"), netip.MustParseAddr("2a00::")} {
		a := fam
		for i := range 300 {
			a = advance(a, 1+rng.Uint64N(5000))
			end := advance(a, rng.Uint64N(3000))
			org := fmt.Sprintf("Org %d", i)
			if i%3 == 0 {
				org = fmt.Sprintf(`Org "%d", Ltd.`, i)
			}
			rows = append(rows, row{a, end, uint32(rng.Uint64N(1 << 32)), org})
			a = advance(end, 2)
		}
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for _, r := range rows {
		w.Write([]string{r.start.String(), r.end.String(), fmt.Sprint(r.asn), r.org})
	}
	w.Flush()
	db, stats := compileASN(t, buf.String())

	wantPrefixes := 0
	for _, r := range rows {
		wantPrefixes += len(netipx.IPRangeFrom(r.start, r.end).Prefixes())
		inside := advance(r.start, uint64(rng.Int64N(int64(diff(r.start, r.end))+1)))
		for _, ip := range []netip.Addr{r.start, r.end, inside} {
			rec, found := asnOf(t, db, ip.String())
			if !found || rec.Number != r.asn || rec.Organization != r.org {
				t.Fatalf("%s in %s-%s: got %+v, want AS%d %q", ip, r.start, r.end, rec, r.asn, r.org)
			}
		}
		for _, ip := range []netip.Addr{r.start.Prev(), r.end.Next()} {
			if rec, found := asnOf(t, db, ip.String()); found {
				t.Fatalf("%s, just outside %s-%s: got %+v", ip, r.start, r.end, rec)
			}
		}
	}
	if stats.Prefixes != wantPrefixes || stats.Rows != len(rows) {
		t.Errorf("stats %+v, want %d rows, %d prefixes", stats, len(rows), wantPrefixes)
	}
}

// advance returns a+n (no overflow in the ranges used).
func advance(a netip.Addr, n uint64) netip.Addr {
	b := a.As16()
	carry := n
	for i := 15; i >= 0 && carry > 0; i-- {
		s := uint64(b[i]) + carry&0xff
		b[i] = byte(s)
		carry = carry>>8 + s>>8
	}
	out := netip.AddrFrom16(b)
	if a.Is4() {
		return out.Unmap()
	}
	return out
}

// diff returns b-a for addresses less than 2^63 apart.
func diff(a, b netip.Addr) uint64 {
	x, y := a.As16(), b.As16()
	var n uint64
	for i := 8; i < 16; i++ {
		n = n<<8 + uint64(y[i]) - uint64(x[i])
	}
	return n
}

func TestASNCompileRejectsMalformedRows(t *testing.T) {
	for _, bad := range []string{
		"1.2.3.4,1.2.3.0,1,ends before it starts",
		"1.2.3.0,1.2.3.255,AS1,not a number",
		"1.2.3.0,1.2.3.255,4294967296,too big",
		"1.2.3.0,1.2.3.255,-1,negative",
		"1.2.3.0,2001::,1,mixed families",
		"fe80::1%eth0,fe80::2,1,zone",
		"1.2.3.0,1.2.3.255,1",
		"1.2.3.0,1.2.3.255,1,a,b",
		"1.2.3,1.2.3.255,1,short address",
		"01.2.3.0,1.2.3.255,1,leading zero",
		`1.2.3.0,1.2.3.255,1,"unterminated`,
	} {
		c, err := dataset.NewASNCompiler(asnBuild, "")
		if err != nil {
			t.Fatal(err)
		}
		err = c.AddCSV(strings.NewReader("9.9.9.0,9.9.9.255,19281,Quad9\n"+bad+"\n"), "asn-ipv4.csv")
		if err == nil || !strings.Contains(err.Error(), "asn-ipv4.csv") {
			t.Errorf("%q: %v, want an error naming the file", bad, err)
			continue
		}
		if !strings.Contains(err.Error(), ":2") && !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v, want an error naming line 2", bad, err)
		}
	}
}

func TestASNCompileEmptyOrganizationIsAbsent(t *testing.T) {
	db, _ := compileASN(t, "5.5.5.0,5.5.5.255,64512,\n")
	var rec map[string]any
	if err := db.Lookup(netip.MustParseAddr("5.5.5.5")).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if _, ok := rec["autonomous_system_organization"]; ok || rec["autonomous_system_number"] != uint64(64512) {
		t.Errorf("record %v", rec)
	}
}

func FuzzASNCompile(f *testing.F) {
	f.Add(datasettest.ASNIPv4CSV)
	f.Add(datasettest.ASNIPv6CSV)
	f.Add("::,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,1,all\n")
	f.Add("0.0.0.0,255.255.255.255,1,\"a,\"\"b\"\"\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := dataset.NewASNCompiler(asnBuild, "")
		if err != nil {
			t.Fatal(err)
		}
		if c.AddCSV(strings.NewReader(in), "fuzz.csv") != nil {
			return
		}
		var buf bytes.Buffer
		if _, err := c.WriteTo(&buf); err != nil {
			t.Fatalf("accepted input does not write: %v", err)
		}
		db, err := maxminddb.OpenBytes(buf.Bytes())
		if err != nil {
			t.Fatalf("accepted input gives an unreadable database: %v", err)
		}
		defer db.Close()
		if err := db.Verify(); err != nil {
			t.Fatalf("accepted input gives a database failing verification: %v", err)
		}
	})
}

// BenchmarkASNCompile compiles a generated CSV of 20,000 rows shaped like
// the real data (about 1/25 of it): mostly runs of whole /24s in IPv4 and
// /48s in IPv6, one row in ten not CIDR-aligned.
func BenchmarkASNCompile(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	row := func(start, end netip.Addr, i int) {
		w.Write([]string{start.String(), end.String(), fmt.Sprint(rng.Uint32N(1000)), fmt.Sprintf("Org %d, Inc.", i%1000)})
	}
	v4 := uint32(1 << 24)
	for i := range 10000 {
		start, end := v4, v4+256*(1+rng.Uint32N(8))-1
		if i%10 == 0 {
			start += 1 + rng.Uint32N(255)
		}
		row(netip.AddrFrom4([4]byte{byte(start >> 24), byte(start >> 16), byte(start >> 8), byte(start)}),
			netip.AddrFrom4([4]byte{byte(end >> 24), byte(end >> 16), byte(end >> 8), byte(end)}), i)
		v4 = end + 1 + 256*rng.Uint32N(3)
	}
	v6 := func(hi, lo uint64) netip.Addr {
		var a [16]byte
		for i := range 8 {
			a[i], a[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
		}
		return netip.AddrFrom16(a)
	}
	hi := uint64(0x2001_0200) << 32
	for i := range 10000 {
		start, end := hi, hi+(1+rng.Uint64N(8))<<16-1
		lo := uint64(0)
		if i%10 == 0 {
			lo = rng.Uint64()
		}
		row(v6(start, lo), v6(end, ^uint64(0)), i)
		hi = end + 1 + rng.Uint64N(3)<<16
	}
	w.Flush()
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		c, err := dataset.NewASNCompiler(asnBuild, "")
		if err != nil {
			b.Fatal(err)
		}
		if err := c.AddCSV(bytes.NewReader(in), "bench.csv"); err != nil {
			b.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := c.WriteTo(&out); err != nil {
			b.Fatal(err)
		}
	}
}

// An organization name that is not UTF-8 would make an MMDB that readers
// refuse (found by FuzzASNCompile). The row is kept, the bad bytes marked.
func TestASNCompileRepairsInvalidUTF8(t *testing.T) {
	db, stats := compileASN(t, "6.6.6.0,6.6.6.255,64513,\"Caf\xe9 \xff Net\"\n7.7.7.0,7.7.7.255,64514,Fine\n")
	if stats.Repaired != 1 || stats.Rows != 2 {
		t.Errorf("stats %+v, want 2 rows, 1 repaired", stats)
	}
	var rec struct {
		Org string `maxminddb:"autonomous_system_organization"`
	}
	if err := db.Lookup(netip.MustParseAddr("6.6.6.6")).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.Org != "Caf\uFFFD \uFFFD Net" {
		t.Errorf("organization %q", rec.Org)
	}
}
