package geo_test

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/oschwald/maxminddb-golang/v2"
)

// The benchmarks compare one raw maxminddb city lookup-and-decode (the
// floor any engine pays) with one full record (city and ASN lookups and
// composition), over the same addresses in the same run:
//
//	go test -run '^$' -bench . -benchmem ./internal/geo/
//
// The Real variants run over the dataset in $IPATLAS_TEST_DATA_DIR.

// benchFixture is built once per process: tens of thousands of networks.
var benchFixture = sync.OnceValues(func() (string, error) {
	return os.MkdirTemp("", "geo-bench-")
})

var benchAddrs []netip.Addr

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := benchFixture(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func fixtureDir(b *testing.B) (string, []netip.Addr) {
	dir, err := benchFixture()
	if err != nil {
		b.Fatal(err)
	}
	if benchAddrs == nil {
		benchAddrs = geotest.WriteBenchFixture(b, dir, 50000, 1<<16)
	}
	return dir, benchAddrs
}

func realDir(b *testing.B) (string, []netip.Addr) {
	dir := realdata.Dir(b)
	return dir, randomPublicIPv4(1 << 16)
}

// randomPublicIPv4 draws uniformly from the public IPv4 space, as an
// unbiased stand-in for traffic.
func randomPublicIPv4(n int) []netip.Addr {
	rng := rand.New(rand.NewPCG(7, 7))
	out := make([]netip.Addr, 0, n)
	for len(out) < n {
		v := rng.Uint32()
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		if _, special := netaddr.Classify(a); !special {
			out = append(out, a)
		}
	}
	return out
}

// rawFlat is the whole DB-IP flat record, as a plain reader decodes it.
type rawFlat struct {
	CountryCode string  `maxminddb:"country_code"`
	State1      string  `maxminddb:"state1"`
	State2      string  `maxminddb:"state2"`
	City        string  `maxminddb:"city"`
	Postcode    string  `maxminddb:"postcode"`
	Latitude    float32 `maxminddb:"latitude"`
	Longitude   float32 `maxminddb:"longitude"`
	Timezone    string  `maxminddb:"timezone"`
}

func benchRaw(b *testing.B, dir string, addrs []netip.Addr) {
	db, err := maxminddb.Open(filepath.Join(dir, geotest.CityV4File))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var v rawFlat
	for _, a := range addrs { // the same warm-up as the engine gets
		if err := db.Lookup(a).Decode(&v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		v = rawFlat{}
		if err := db.Lookup(addrs[i&(len(addrs)-1)]).Decode(&v); err != nil {
			b.Fatal(err)
		}
	}
}

// privacyOptions load the privacy lists: the built-in snapshot, and a
// fresh Tor list in the data dir, so that every flag is looked up.
func privacyOptions(b *testing.B, dir string) geo.Options {
	geotest.WritePrivacyList(b, dir, privacy.TorList, geotest.TorExits(1000), time.Now())
	return geo.Options{BuiltinPrivacy: true}
}

func benchRecord(b *testing.B, dir string, addrs []netip.Addr, opts geo.Options) {
	e, err := geo.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		b.Run(lang.String(), func(b *testing.B) {
			for _, a := range addrs {
				if _, err := e.Lookup(a, lang); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := e.Lookup(addrs[i&(len(addrs)-1)], lang); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkRawCityLookup(b *testing.B) {
	dir, addrs := fixtureDir(b)
	benchRaw(b, dir, addrs)
}

func BenchmarkRecord(b *testing.B) {
	dir, addrs := fixtureDir(b)
	benchRecord(b, dir, addrs, geo.Options{})
}

// BenchmarkRecordPrivacy is BenchmarkRecord with the privacy lists
// loaded.
func BenchmarkRecordPrivacy(b *testing.B) {
	dir, addrs := fixtureDir(b)
	benchRecord(b, dir, addrs, privacyOptions(b, dir))
}

// BenchmarkRecordParallel shows the cost of the shared reference count
// when all cores look up at once.
func BenchmarkRecordParallel(b *testing.B) {
	dir, addrs := fixtureDir(b)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, err := e.Lookup(addrs[i&(len(addrs)-1)], ipatlas.English); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkRealRawCityLookup(b *testing.B) {
	dir, addrs := realDir(b)
	benchRaw(b, dir, addrs)
}

func BenchmarkRealRecord(b *testing.B) {
	dir, addrs := realDir(b)
	benchRecord(b, dir, addrs, geo.Options{})
}

func BenchmarkRealRecordPrivacy(b *testing.B) {
	dir, addrs := realDir(b)
	benchRecord(b, dir, addrs, geo.Options{BuiltinPrivacy: true})
}

// BenchmarkAppendJSON is the native answer's record as the server writes
// it, with the privacy lists loaded.
func BenchmarkAppendJSON(b *testing.B) {
	dir, addrs := fixtureDir(b)
	e, err := geo.Open(dir, privacyOptions(b, dir))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	out := make([]byte, 0, 1024)
	for _, a := range addrs {
		if out, err = e.AppendJSON(out[:0], a, ipatlas.English); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if out, err = e.AppendJSON(out[:0], addrs[i&(len(addrs)-1)], ipatlas.English); err != nil {
			b.Fatal(err)
		}
	}
}
