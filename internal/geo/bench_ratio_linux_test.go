//go:build linux

package geo_test

import (
	"net/netip"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/oschwald/maxminddb-golang/v2"
	"golang.org/x/sys/unix"
)

// BenchmarkRecordVsRaw measures both in alternating chunks over the same
// addresses, in this thread's CPU time: on a shared machine wall-clock
// ns/op of two separate benchmarks depends on what else runs meanwhile,
// while the ratio of CPU times does not. It reports raw-ns/op,
// record-ns/op (mean of en and zh) and their ratio.
func BenchmarkRecordVsRaw(b *testing.B) {
	dir, addrs := fixtureDir(b)
	benchRatio(b, dir, addrs, geo.Options{})
}

// BenchmarkRecordPrivacyVsRaw compares the record with the privacy
// lists loaded (every flag looked up, Tor included).
func BenchmarkRecordPrivacyVsRaw(b *testing.B) {
	dir, addrs := fixtureDir(b)
	benchRatio(b, dir, addrs, privacyOptions(b, dir))
}

func BenchmarkRealRecordVsRaw(b *testing.B) {
	dir, addrs := realDir(b)
	benchRatio(b, dir, addrs, geo.Options{})
}

// BenchmarkRealRecordPrivacyVsRaw loads the built-in privacy snapshot
// over the real dataset (a real data dir is not written into).
func BenchmarkRealRecordPrivacyVsRaw(b *testing.B) {
	dir, addrs := realDir(b)
	benchRatio(b, dir, addrs, geo.Options{BuiltinPrivacy: true})
}

func benchRatio(b *testing.B, dir string, addrs []netip.Addr, opts geo.Options) {
	db, err := maxminddb.Open(filepath.Join(dir, geotest.CityV4File))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	e, err := geo.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var v rawFlat
	for _, a := range addrs {
		if err := db.Lookup(a).Decode(&v); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Lookup(a, ipatlas.English); err != nil {
			b.Fatal(err)
		}
		if _, err := e.Lookup(a, ipatlas.Chinese); err != nil {
			b.Fatal(err)
		}
	}
	t, n := interleaved(b, addrs, func(a netip.Addr, _ int) {
		v = rawFlat{}
		if err := db.Lookup(a).Decode(&v); err != nil {
			b.Fatal(err)
		}
	}, func(a netip.Addr, j int) {
		if _, err := e.Lookup(a, ipatlas.Lang(j&1)); err != nil {
			b.Fatal(err)
		}
	})
	raw, rec := t[0], t[1]
	b.ReportMetric(float64(raw.Nanoseconds())/float64(n), "raw-ns/op")
	b.ReportMetric(float64(rec.Nanoseconds())/float64(n), "record-ns/op")
	b.ReportMetric(float64(rec)/float64(raw), "ratio")
}

// threadCPU is the CPU time of the calling OS thread.
func threadCPU(b *testing.B) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Skipf("no per-thread CPU clock here: %v", err)
	}
	return time.Duration(ts.Nano())
}

// interleaved runs each of fns over the same chunk of addrs (a power of
// two of them), chunk after chunk for the benchmark's time: fns[0], the
// baseline, first, then the others in an order that rotates, so that none
// of them always finds the caches another warmed. It returns each fn's
// total in this thread's CPU time and the number of addresses each was
// given: on a shared machine, the ratio of two such totals holds where
// the ns/op of separate benchmarks drift. fn gets the address and its
// index in the chunk.
func interleaved(b *testing.B, addrs []netip.Addr, fns ...func(a netip.Addr, j int)) ([]time.Duration, int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const chunk = 512
	times := make([]time.Duration, len(fns))
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		base := (i * chunk) & (len(addrs) - 1)
		for k := range fns {
			f := 0
			if k > 0 {
				f = 1 + (i+k-1)%(len(fns)-1)
			}
			t0 := threadCPU(b)
			for j := range chunk {
				fns[f](addrs[(base+j)&(len(addrs)-1)], j)
			}
			times[f] += threadCPU(b) - t0
		}
		n += chunk
	}
	return times, n
}

// BenchmarkRealPrivacyCost measures, in alternating chunks over the same
// addresses and in this thread's CPU time, one raw city lookup, the record
// without privacy lists and the record with the built-in ones, and
// reports each record's ratio to the raw lookup: what the privacy object
// adds, free of the drift between separate benchmarks.
func BenchmarkRealPrivacyCost(b *testing.B) {
	dir, addrs := realDir(b)
	db, err := maxminddb.Open(filepath.Join(dir, geotest.CityV4File))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var engines [2]*geo.Engine
	for i, opts := range []geo.Options{{}, {BuiltinPrivacy: true}} {
		if engines[i], err = geo.Open(dir, opts); err != nil {
			b.Fatal(err)
		}
		defer engines[i].Close()
	}
	var v rawFlat
	for _, a := range addrs {
		if err := db.Lookup(a).Decode(&v); err != nil {
			b.Fatal(err)
		}
		for _, e := range engines {
			for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
				if _, err := e.Lookup(a, lang); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	record := func(e *geo.Engine) func(netip.Addr, int) {
		return func(a netip.Addr, j int) {
			if _, err := e.Lookup(a, ipatlas.Lang(j&1)); err != nil {
				b.Fatal(err)
			}
		}
	}
	t, n := interleaved(b, addrs, func(a netip.Addr, _ int) {
		v = rawFlat{}
		if err := db.Lookup(a).Decode(&v); err != nil {
			b.Fatal(err)
		}
	}, record(engines[0]), record(engines[1]))
	raw, plain, priv := t[0], t[1], t[2]
	b.ReportMetric(float64(raw.Nanoseconds())/float64(n), "raw-ns/op")
	b.ReportMetric(float64(plain)/float64(raw), "ratio-plain")
	b.ReportMetric(float64(priv)/float64(raw), "ratio-privacy")
}
