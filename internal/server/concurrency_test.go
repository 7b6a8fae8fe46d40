package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// TestConcurrentMetering races many requests on one key (or two keys of
// one account) with a small quota and a small balance. Exactly the allowed
// number succeed, the others get 429 or 402 as the order of checks says,
// every success saw a distinct balance and quota count, and the ledger, the
// usage counters and the balance agree with what the clients saw.
func TestConcurrentMetering(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     int64 // per key (enterprise)
		credits   int64
		keys      int
		requests  int // per key
		successes int64
		denied    []ipatlas.ErrorCode
	}{
		{"quota runs out", 10, 1000, 1, 60, 10, []ipatlas.ErrorCode{ipatlas.CodeRateLimitExceeded}},
		{"credits run out", 1000, 7, 1, 60, 7, []ipatlas.ErrorCode{ipatlas.CodeInsufficientCredits}},
		{"fewer credits than quota", 10, 7, 1, 60, 7, []ipatlas.ErrorCode{ipatlas.CodeInsufficientCredits}},
		// Whichever key reaches 10 first is refused by its quota, the
		// other by the shared balance.
		{"shared credits, two keys", 10, 15, 2, 30, 15, []ipatlas.ErrorCode{ipatlas.CodeInsufficientCredits, ipatlas.CodeRateLimitExceeded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			acct, err := e.svc.CreateAccount(ctx, account.AccountParams{Name: "race", Tier: account.Enterprise, MonthlyLimit: tc.limit, Credits: &tc.credits})
			if err != nil {
				t.Fatal(err)
			}
			var keys []account.NewKey
			for range tc.keys {
				k, err := e.svc.CreateKey(ctx, acct.ID)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}

			type result struct {
				key       int
				status    int
				code      ipatlas.ErrorCode
				credits   int64
				remaining int64
			}
			results := make(chan result, tc.keys*tc.requests)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for ki, k := range keys {
				for range tc.requests {
					wg.Go(func() {
						<-start
						r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
						env := r.env()
						rem, _ := strconv.ParseInt(r.Header().Get("RateLimit-Remaining"), 10, 64)
						results <- result{ki, r.Code, env.Code, env.Meta.CurrentCredits, rem}
					})
				}
			}
			close(start)
			wg.Wait()
			close(results)

			var ok int64
			okPerKey := make([]int64, tc.keys)
			var balances []int64
			remainingPerKey := make([][]int64, tc.keys)
			for r := range results {
				switch {
				case r.status == http.StatusOK:
					ok++
					okPerKey[r.key]++
					balances = append(balances, r.credits)
					remainingPerKey[r.key] = append(remainingPerKey[r.key], r.remaining)
				case slices.Contains(tc.denied, r.code) && r.status == r.code.HTTPStatus():
				default:
					t.Errorf("unexpected answer %d %s", r.status, r.code)
				}
			}
			if ok != tc.successes {
				t.Fatalf("%d successes, want exactly %d", ok, tc.successes)
			}
			// Each success saw the balance after its own charge: all
			// distinct, from credits-1 down to credits-successes.
			slices.Sort(balances)
			for i, b := range balances {
				if want := tc.credits - tc.successes + int64(i); b != want {
					t.Fatalf("balances seen by the successes: %v", balances)
				}
			}
			for ki, rems := range remainingPerKey {
				slices.Sort(rems)
				for i, r := range rems {
					if want := tc.limit - okPerKey[ki] + int64(i); r != want {
						t.Fatalf("key %d: remaining seen by the successes: %v", ki, rems)
					}
				}
			}

			// The store agrees.
			checkLedger(t, e, acct.ID, tc.credits, tc.successes)
			for ki, k := range keys {
				u, err := e.svc.Usage(ctx, k.ID)
				if err != nil {
					t.Fatal(err)
				}
				if u.Used != okPerKey[ki] {
					t.Errorf("key %d: usage %d, successes %d", ki, u.Used, okPerKey[ki])
				}
			}
		})
	}
}
