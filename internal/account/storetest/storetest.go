// Package storetest is the contract test suite of account.Store. Every
// store (SQLite, PostgreSQL) runs it against a real database:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) account.Store { ... a fresh, empty store ... })
//	}
//
// It checks the management methods, the exact semantics of Charge (quota
// first, then credits; keys re-checked in the transaction; one ledger
// entry per charged key), isolation under concurrent Charge calls, and the
// Meter and Service on top of the store: the concurrency exactness test
// and the month boundary with an injected clock.
package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// Opener returns a fresh, empty, migrated store for one test and arranges
// for it to be closed with t.Cleanup. The suite may Close it earlier (to
// test failures), so Close must tolerate being called twice.
type Opener func(t *testing.T) account.Store

// Run runs the whole suite, each test on its own store from open.
func Run(t *testing.T, open func(t *testing.T) account.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st account.Store)
	}{
		{"Accounts", testAccounts},
		{"SetTier", testSetTier},
		{"Keys", testKeys},
		{"RevokeRotate", testRevokeRotate},
		{"Credits", testCredits},
		{"ChargeQuota", testChargeQuota},
		{"ChargeCredits", testChargeCredits},
		{"ChargeQuotaBeforeCredits", testChargeQuotaBeforeCredits},
		{"ChargeDeniesKeys", testChargeDeniesKeys},
		{"ChargeSharedCredits", testChargeSharedCredits},
		{"ChargeLedgerMerges", testChargeLedgerMerges},
		{"ChargeAccountsInOneBatch", testChargeAccountsInOneBatch},
		{"ChargePeriods", testChargePeriods},
		{"ChargeEdgeCases", testChargeEdgeCases},
		{"ChargeConcurrentCalls", testChargeConcurrentCalls},
		{"MeterExactQuota", func(t *testing.T, st account.Store) { testMeterExact(t, st, 40, 1000, 1) }},
		{"MeterExactCredits", func(t *testing.T, st account.Store) { testMeterExact(t, st, 1000, 75, 2) }},
		{"MeterMonthBoundary", testMeterMonthBoundary},
		{"MeterRevokeRotate", testMeterRevokeRotate},
		{"MeterCloseFlushes", testMeterCloseFlushes},
		{"MeterStoreDown", testMeterStoreDown},
		{"ServiceAuthenticate", testServiceAuthenticate},
		{"Owners", testOwners},
		{"Signins", testSignins},
		{"OwnerTokens", testOwnerTokens},
		{"OwnerTokenRace", testOwnerTokenRace},
		{"Sessions", testSessions},
		{"TierRequests", testTierRequests},
		{"TierRequestRace", testTierRequestRace},
		{"Audit", testAudit},
		{"PurgeEnded", testPurgeEnded},
		{"OwnerTokenRead", testOwnerTokenRead},
		{"KeyLabel", testKeyLabel},
		{"KeyLastUsed", testKeyLastUsed},
		{"DailyUsage", testDailyUsage},
		{"DailyUsageGranted", testDailyUsageGranted},
		{"DailyUsageConcurrent", testDailyUsageConcurrent},
		{"KeyUsages", testKeyUsages},
		{"LedgerPage", testLedgerPage},
		{"SearchAccounts", testSearchAccounts},
		{"TopConsumers", testTopConsumers},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// t0 is the suite's "now": mid-month, microsecond precision, UTC, so
// times survive any store that keeps microseconds.
var t0 = time.Date(2026, 3, 15, 12, 30, 45, 123456000, time.UTC)

const period0 = "2026-03"

// Clock is an injectable clock for Service.Now and MeterOptions.Now.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func ctx(t *testing.T) context.Context { return t.Context() }

// newAccount creates an enterprise account with a custom limit, the
// simplest way to get a small quota.
func newAccount(t *testing.T, st account.Store, limit, credits int64) account.Account {
	t.Helper()
	a, err := st.CreateAccount(ctx(t), account.NewAccount{
		Name: "acct", Tier: account.Enterprise, CustomLimit: limit,
		InitialCredits: credits, Reason: "initial grant", At: t0,
	})
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	return a
}

func newKey(t *testing.T, st account.Store, accountID int64) account.NewKey {
	t.Helper()
	nk := account.GenerateKey(accountID, t0)
	if err := st.CreateKey(ctx(t), nk.Key); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return nk
}

func charge(t *testing.T, st account.Store, period string, reqs ...account.ChargeRequest) []account.Grant {
	t.Helper()
	gs, err := st.Charge(ctx(t), period, t0, reqs)
	if err != nil {
		t.Fatalf("Charge: %v", err)
	}
	if len(gs) != len(reqs) {
		t.Fatalf("Charge returned %d grants for %d requests", len(gs), len(reqs))
	}
	return gs
}

func req(k account.NewKey, n, cost int64) account.ChargeRequest {
	return account.ChargeRequest{KeyID: k.ID, Hash: k.Hash, N: n, Cost: cost}
}

func usage(t *testing.T, st account.Store, keyID, period string) int64 {
	t.Helper()
	u, err := st.Usage(ctx(t), keyID, period)
	if err != nil {
		t.Fatalf("Usage(%s, %s): %v", keyID, period, err)
	}
	return u
}

func balance(t *testing.T, st account.Store, id int64) int64 {
	t.Helper()
	a, err := st.Account(ctx(t), id)
	if err != nil {
		t.Fatalf("Account(%d): %v", id, err)
	}
	return a.Credits
}

// checkLedger checks that the ledger tells the account's whole story: each
// entry's balance is the previous one plus its delta, the last is the
// current balance, and each usage entry charges its queries at cost
// (not checked when cost is 0). It returns the usage entries' query
// count per key, for comparison with the counters.
func checkLedger(t *testing.T, st account.Store, accountID, cost int64) map[string]int64 {
	t.Helper()
	es, err := st.Ledger(ctx(t), accountID, 0)
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	queries := map[string]int64{}
	var bal int64
	for i := len(es) - 1; i >= 0; i-- { // oldest first
		e := es[i]
		if e.AccountID != accountID {
			t.Fatalf("ledger entry %d belongs to account %d, want %d", e.ID, e.AccountID, accountID)
		}
		if e.Balance != bal+e.Delta {
			t.Fatalf("ledger entry %d: balance %d, want previous %d + delta %d", e.ID, e.Balance, bal, e.Delta)
		}
		bal = e.Balance
		if e.Reason == "usage" {
			if e.KeyID == "" || e.Queries <= 0 || cost > 0 && e.Delta != -e.Queries*cost {
				t.Fatalf("usage entry %+v: want a key, queries > 0 and delta = -queries*%d", e, cost)
			}
			queries[e.KeyID] += e.Queries
		}
		if i > 0 && es[i-1].ID <= e.ID {
			t.Fatalf("ledger not newest first: id %d before %d", es[i-1].ID, e.ID)
		}
	}
	if got := balance(t, st, accountID); got != bal {
		t.Fatalf("balance %d, but the ledger ends at %d", got, bal)
	}
	return queries
}

func isErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}
