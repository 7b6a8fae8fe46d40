package postgres_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
)

// BenchmarkCharge measures charges per second on PostgreSQL from 64
// concurrent callers (16 connections per replica), all on one hot key or spread over 64 keys of 64
// accounts, through the batching Meter (one replica, or three on one
// schema) and, for comparison, with one Store.Charge transaction per
// query. Without batching a hot key serializes every query on its
// account's row lock; with batching it costs one lock per batch.
//
//	IPATLAS_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -run '^$' -bench Charge -benchtime 3s ./internal/postgres
func BenchmarkCharge(b *testing.B) {
	const callers = 64
	for _, keys := range []int{1, callers} {
		name := "hot-key"
		if keys > 1 {
			name = "many-keys"
		}
		b.Run("meter/"+name, func(b *testing.B) { benchCharge(b, 1, keys, callers, true) })
		b.Run("meter-3-replicas/"+name, func(b *testing.B) { benchCharge(b, 3, keys, callers, true) })
		b.Run("unbatched/"+name, func(b *testing.B) { benchCharge(b, 1, keys, callers, false) })
	}
}

func benchCharge(b *testing.B, replicas, nkeys, callers int, batched bool) {
	dsn := pgtest.DSN(b)
	schema := pgtest.NewSchema(b)
	sts := make([]*postgres.Store, replicas)
	for i := range sts {
		// 16 connections let the unbatched case run 16 transactions at
		// once without taking a shared server's every connection; the
		// Meter needs one per batch in flight.
		sts[i] = open(b, dsn, schema, postgres.Options{MaxConns: 16})
	}
	keys := make([]account.Key, nkeys)
	for i := range keys {
		_, k := customer(b, sts[0], account.MaxMonthlyLimit, account.MaxCreditChange)
		keys[i] = k.Key
	}
	meters := make([]*account.Meter, replicas)
	for i, st := range sts {
		meters[i] = account.NewMeter(st, account.MeterOptions{})
		defer meters[i].Close(context.Background())
	}
	ctx := context.Background()
	var next, caller atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((callers + procs - 1) / procs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := int(caller.Add(1) - 1)
		k, r := keys[c%nkeys], c%replicas
		req := []account.ChargeRequest{{KeyID: k.ID, Hash: k.Hash, N: 1, Cost: 1}}
		for pb.Next() {
			next.Add(1)
			if batched {
				if o, err := meters[r].Charge(ctx, k); err != nil || !o.Granted {
					b.Errorf("charge: %+v, %v", o, err)
					return
				}
			} else {
				if gs, err := sts[r].Charge(ctx, account.Period(t0), t0, req); err != nil || gs[0].Granted != 1 {
					b.Errorf("charge: %+v, %v", gs, err)
					return
				}
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(next.Load())/b.Elapsed().Seconds(), "charges/s")
	if batched {
		var charges, batches uint64
		for _, m := range meters {
			s := m.Stats()
			charges, batches = charges+s.Charges, batches+s.Batches
		}
		if batches > 0 {
			b.ReportMetric(float64(charges)/float64(batches), "charges/batch")
		}
	}
}

// BenchmarkChargeBatch is one batch as the Meter makes them on a hot key:
// one key, 20 queries, one transaction, serial, so ns/op is one batch's
// latency (four round trips and the commit's WAL flush). Each op is
// stamped a microsecond later than the one before, as a live server's
// batches are.
func BenchmarkChargeBatch(b *testing.B) {
	st := open(b, pgtest.DSN(b), pgtest.NewSchema(b), postgres.Options{})
	_, k := customer(b, st, account.MaxMonthlyLimit, account.MaxCreditChange)
	reqs := []account.ChargeRequest{{KeyID: k.ID, Hash: k.Hash, N: 20, Cost: 1}}
	ctx := context.Background()
	at := t0
	for b.Loop() {
		at = at.Add(time.Microsecond)
		if g, err := st.Charge(ctx, account.Period(at), at, reqs); err != nil || g[0].Granted != 20 {
			b.Fatalf("charge: %+v, %v", g, err)
		}
	}
}

// BenchmarkChargeQueries is a batch as the meter forms it under load on a
// hot key: 32 single queries of one key, each its own request; serial,
// so ns/op is one batch's latency.
func BenchmarkChargeQueries(b *testing.B) {
	st := open(b, pgtest.DSN(b), pgtest.NewSchema(b), postgres.Options{})
	_, k := customer(b, st, account.MaxMonthlyLimit, account.MaxCreditChange)
	reqs := make([]account.ChargeRequest, 32)
	for i := range reqs {
		reqs[i] = account.ChargeRequest{KeyID: k.ID, Hash: k.Hash, N: 1, Cost: 1}
	}
	ctx := context.Background()
	at := t0
	for b.Loop() {
		at = at.Add(time.Microsecond)
		if g, err := st.Charge(ctx, account.Period(at), at, reqs); err != nil || g[31].Granted != 1 {
			b.Fatalf("charge: %+v, %v", g, err)
		}
	}
}
