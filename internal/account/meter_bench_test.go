package account_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// grantAll is a store whose Charge grants everything at once, with no
// I/O: a benchmark on it measures the meter's own work (queueing a
// charge, waking its caller) apart from any store's commit.
type grantAll struct {
	account.Store
	mu   sync.Mutex
	used int64
}

func (g *grantAll) Charge(_ context.Context, _ string, _ time.Time, reqs []account.ChargeRequest) ([]account.Grant, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]account.Grant, len(reqs))
	for i, r := range reqs {
		g.used += r.N
		out[i] = account.Grant{KeyID: r.KeyID, Granted: r.N, Used: g.used, Limit: 1 << 50, Credits: 1 << 50}
	}
	return out, nil
}

// BenchmarkMeterOverhead charges from 64 concurrent callers, as the load
// harness's 64 connections do, through a store that costs nothing. It
// reports the process's CPU per charge (cpu-µs/op): what the meter's
// batching costs every metered query, on top of the store's commit.
func BenchmarkMeterOverhead(b *testing.B) {
	st := &grantAll{}
	m := account.NewMeter(st, account.MeterOptions{})
	defer m.Close(context.Background())
	k := account.Key{ID: "k", Hash: []byte("h")}
	b.SetParallelism(32) // 64 goroutines on this 2-CPU machine's GOMAXPROCS
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if o, err := m.Charge(ctx, k); err != nil || !o.Granted {
				b.Errorf("charge: %+v, %v", o, err)
				return
			}
		}
	})
	b.StopTimer()
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.used != int64(b.N) {
		b.Fatalf("the store charged %d queries for %d charges", st.used, b.N)
	}
}
