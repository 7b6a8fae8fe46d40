//go:build unix

package sqlite_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// BenchmarkChargeBatch is one group commit as the load harness makes them:
// one key, 20 queries, one transaction. Serial, so ns/op is the time of
// one commit (its fsync included) and the CPU profile is the commit's.
func BenchmarkChargeBatch(b *testing.B) {
	st, nk := benchStore(b)
	ctx := context.Background()
	reqs := []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 20, Cost: 1}}
	cpu0 := processCPU(b)
	for b.Loop() {
		now := time.Now()
		g, err := st.Charge(ctx, account.Period(now), now, reqs)
		if err != nil || g[0].Granted != 20 {
			b.Fatalf("charge: %+v, %v", g, err)
		}
	}
	// Wall time is mostly the fsync's wait, which varies with the disk;
	// CPU time is what a commit takes from the queries around it.
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// BenchmarkChargeQueries is a batch as the meter forms it under load: 32
// single queries of one key, each its own request.
func BenchmarkChargeQueries(b *testing.B) {
	st, nk := benchStore(b)
	ctx := context.Background()
	reqs := make([]account.ChargeRequest, 32)
	for i := range reqs {
		reqs[i] = account.ChargeRequest{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}
	}
	cpu0 := processCPU(b)
	for b.Loop() {
		now := time.Now()
		g, err := st.Charge(ctx, account.Period(now), now, reqs)
		if err != nil || g[31].Granted != 1 {
			b.Fatalf("charge: %+v, %v", g, err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is this process's user and system CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
