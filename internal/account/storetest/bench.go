package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
)

// BenchmarkMeter measures charges per second through a Meter with default
// options on st, with callers goroutines charging concurrently, spread
// over keys keys of one account. It reports charges/s and the mean batch
// size (charges/batch).
func BenchmarkMeter(b *testing.B, st account.Store, callers, keys int) {
	ctx := context.Background()
	a, err := st.CreateAccount(ctx, account.NewAccount{
		Name: "bench", Tier: account.Enterprise, CustomLimit: account.MaxMonthlyLimit,
		InitialCredits: account.MaxCreditChange, At: t0,
	})
	if err != nil {
		b.Fatal(err)
	}
	ks := make([]account.Key, keys)
	for i := range ks {
		nk := account.GenerateKey(a.ID, t0)
		if err := st.CreateKey(ctx, nk.Key); err != nil {
			b.Fatal(err)
		}
		ks[i] = nk.Key
	}
	m := account.NewMeter(st, account.MeterOptions{})
	defer m.Close(ctx)

	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := ks[c%keys]
			for next.Add(1) <= int64(b.N) {
				o, err := m.Charge(ctx, k)
				if err != nil || !o.Granted {
					b.Errorf("charge: %+v, %v", o, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "charges/s")
	if s := m.Stats(); s.Batches > 0 {
		b.ReportMetric(float64(s.Charges)/float64(s.Batches), "charges/batch")
	}
}
