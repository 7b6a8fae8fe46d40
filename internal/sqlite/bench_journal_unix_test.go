//go:build unix

package sqlite

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// BenchmarkChargeBatchJournal is BenchmarkChargeBatch's group commit on
// the charge journal: the grant decided in memory, one record written and
// fdatasync'ed. The catch-up is left out (it runs once an hour here):
// BenchmarkJournalCatchUp measures it.
func BenchmarkChargeBatchJournal(b *testing.B) {
	st, nk := BenchStore(b, Options{Journal: true, ApplyEvery: time.Hour})
	ctx := context.Background()
	reqs := []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 20, Cost: 1}}
	for b.Loop() {
		now := time.Now()
		g, err := st.Charge(ctx, account.Period(now), now, reqs)
		if err != nil || g[0].Granted != 20 {
			b.Fatalf("charge: %+v, %v", g, err)
		}
	}
}

// BenchmarkJournalCatchUp is the applier's share of a batch: 1,000
// records of one key applied in one transaction, per record.
func BenchmarkJournalCatchUp(b *testing.B) {
	st, nk := BenchStore(b, Options{Journal: true, ApplyEvery: time.Hour})
	ctx := context.Background()
	reqs := []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 20, Cost: 1}}
	const perApply = 1000
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		for range perApply {
			now := time.Now()
			if _, err := st.Charge(ctx, account.Period(now), now, reqs); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		cpu0 := rusageCPU(b)
		if err := st.jm.catchUp(ctx); err != nil {
			b.Fatal(err)
		}
		cpu += rusageCPU(b) - cpu0
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N*perApply), "cpu-µs/record")
}

func rusageCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChargeTableInsert is the other journal form, measured and not
// kept: the batch's record as one INSERT into an insert-only table, in a
// transaction of its own, instead of an append to a file.
func BenchmarkChargeTableInsert(b *testing.B) {
	st, nk := BenchStore(b, Options{})
	ctx := context.Background()
	if _, err := st.w.ExecContext(ctx, "CREATE TABLE charge_log (seq INTEGER PRIMARY KEY, record BLOB NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	ins, err := st.w.PrepareContext(ctx, "INSERT INTO charge_log (seq, record) VALUES (?, ?)")
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	var seq uint64
	var buf []byte
	for b.Loop() {
		seq++
		now := time.Now()
		r := jRecord{seq: seq, period: account.Period(now), at: now,
			grants: []jGrant{{keyID: nk.ID, accountID: nk.AccountID, n: 20, cost: 1}}}
		buf = appendRecord(buf[:0], r)
		tx, err := st.w.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.StmtContext(ctx, ins).ExecContext(ctx, seq, buf[8:]); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
