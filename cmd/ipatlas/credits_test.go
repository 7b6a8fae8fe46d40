package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

func TestCredits(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "c", "--tier", "free", "--credits", "100")
	ids := fmt.Sprint(id)

	var shown struct {
		Credits *int64 `json:"credits"`
	}
	m.json(&shown, "credits", "show", ids)
	if shown.Credits == nil || *shown.Credits != 100 {
		t.Fatalf("credits show --json: %+v, want credits 100", shown)
	}

	// Flags before, between and after the arguments; a negative amount is
	// an argument, not a flag.
	for _, c := range []struct {
		args    []string
		balance int64
	}{
		{[]string{"credits", "add", ids, "50", "--reason", "top up"}, 150},
		{[]string{"credits", "add", "--reason", "refund", ids, "-30"}, 120},
		{[]string{"credits", "add", ids, "--reason=bonus", "5"}, 125},
	} {
		var e account.LedgerEntry
		m.json(&e, c.args...)
		if e.Balance != c.balance {
			t.Fatalf("%v: %+v, want balance %d", c.args, e, c.balance)
		}
	}
	if out := m.ok("credits", "add", ids, "-25", "--reason", "adjust"); !strings.Contains(out, "Deducted 25") || !strings.Contains(out, "now 100") {
		t.Fatalf("credits add -25: %q", out)
	}
	if out := m.ok("credits", "show", ids); !strings.Contains(out, "100 credits") {
		t.Fatalf("credits show: %q", out)
	}

	// Below zero is refused and changes nothing.
	stderr, err := m.fails(exitQuota, "credits", "add", ids, "-101", "--reason", "too much")
	if !strings.Contains(err.Error(), "insufficient") || !strings.Contains(err.Error(), "the balance is 100, too little to deduct 101") {
		t.Fatalf("deduction below zero: %v %s", err, stderr)
	}
	m.json(&shown, "credits", "show", ids)
	if *shown.Credits != 100 {
		t.Fatalf("balance %d after a refused deduction, want 100", *shown.Credits)
	}

	for _, args := range [][]string{
		{"credits", "add", ids, "50"},
		{"credits", "add", ids, "50", "--reason", "  "},
		{"credits", "add", ids, "0", "--reason", "x"},
		{"credits", "add", ids, "ten", "--reason", "x"},
		{"credits", "add", ids, "--reason", "x"},
		{"credits", "add", "0", "5", "--reason", "x"},
		{"credits", "show"},
		{"credits", "history", ids, "--limit", "-1"},
	} {
		m.fails(exitUsage, args...)
	}
	// An unknown account is named, whatever the command.
	for _, args := range [][]string{
		{"credits", "add", "999", "5", "--reason", "x"},
		{"credits", "add", "999", "-5", "--reason", "x"},
		{"credits", "show", "999"},
		{"credits", "history", "999"},
		{"accounts", "show", "999"},
		{"accounts", "set-tier", "999", "pro"},
		{"keys", "list", "--account", "999"},
		{"keys", "create", "--account", "999"},
	} {
		if _, err := m.fails(exitNotFound, args...); err == nil || err.Error() != "no account 999" {
			t.Errorf("%q: %v, want \"no account 999\"", args, err)
		}
	}

	var es []account.LedgerEntry
	m.json(&es, "credits", "history", ids)
	wantReasons := []string{"adjust", "bonus", "refund", "top up", "initial grant"}
	if len(es) != len(wantReasons) {
		t.Fatalf("history: %+v", es)
	}
	for i, r := range wantReasons {
		if es[i].Reason != r || es[i].CreatedAt.IsZero() {
			t.Fatalf("history entry %d: %+v, want reason %q (newest first)", i, es[i], r)
		}
	}
	m.json(&es, "credits", "history", ids, "--limit", "2")
	if len(es) != 2 || es[0].Reason != "adjust" {
		t.Fatalf("history --limit 2: %+v", es)
	}
	out := m.ok("credits", "history", ids)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], "-25") || !strings.Contains(lines[1], "adjust") {
		t.Fatalf("history table:\n%s", out)
	}
	at := strings.Index(lines[0], "REASON")
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l[at:], "adjust") && !strings.HasPrefix(l[at:], "bonus") && !strings.HasPrefix(l[at:], "refund") &&
			!strings.HasPrefix(l[at:], "top up") && !strings.HasPrefix(l[at:], "initial grant") {
			t.Fatalf("REASON column not aligned:\n%s", out)
		}
	}
}

// TestCLIWhileServing changes balances and keys through the CLI while a
// "server" (a Meter on its own connection to the same file) charges
// queries: nothing fails on a lock, and the ledger accounts for it all.
func TestCLIWhileServing(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "busy", "--tier", "enterprise", "--monthly-limit", "1000000", "--credits", "100000")
	k := m.createKey(id)
	svc := m.service()
	key, _, err := svc.Authenticate(t.Context(), k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	meter := account.NewMeter(svc.Store, account.MeterOptions{})

	stop := make(chan struct{})
	var charged atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				o, err := meter.Charge(context.Background(), key)
				if err != nil || !o.Granted {
					t.Errorf("charge while the CLI works: %+v, %v", o, err)
					return
				}
				charged.Add(1)
			}
		}()
	}
	for i := range 10 {
		m.ok("credits", "add", fmt.Sprint(id), "1", "--reason", fmt.Sprint("concurrent ", i))
		m.createKey(id)
	}
	close(stop)
	wg.Wait()
	if err := meter.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	var es []account.LedgerEntry
	m.json(&es, "credits", "history", fmt.Sprint(id))
	var queries, bal int64
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Balance != bal+es[i].Delta {
			t.Fatalf("ledger chain broken at %+v", es[i])
		}
		bal = es[i].Balance
		queries += es[i].Queries
	}
	if queries != charged.Load() || bal != 100000+10-charged.Load() {
		t.Fatalf("ledger: %d queries, balance %d; charged %d", queries, bal, charged.Load())
	}
}

// One credit, one query, one reply: the noun agrees with the number in
// what the commands print.
func TestOutputSingular(t *testing.T) {
	m := newMgmtEnv(t)
	out := m.ok("accounts", "create", "--name", "one", "--tier", "enterprise", "--monthly-limit", "1", "--credits", "1")
	if !strings.Contains(out, "1 query per key and month, 1 credit.") {
		t.Errorf("accounts create: %q", out)
	}
	id := "1"
	if out := m.ok("accounts", "show", id); !strings.Contains(out, "1 query per key and month") {
		t.Errorf("accounts show: %q", out)
	}
	if out := m.ok("accounts", "set-tier", id, "enterprise", "--monthly-limit", "1"); !strings.Contains(out, ": 1 query per key and month.") {
		t.Errorf("accounts set-tier: %q", out)
	}
	if out := m.ok("credits", "show", id); !strings.Contains(out, "has 1 credit.") {
		t.Errorf("credits show: %q", out)
	}
	if out := m.ok("credits", "add", id, "1", "--reason", "one more"); !strings.HasPrefix(out, "Added 1 credit (account 1)") {
		t.Errorf("credits add: %q", out)
	}
	if out := m.ok("credits", "add", id, "-1", "--reason", "one less"); !strings.HasPrefix(out, "Deducted 1 credit (account 1)") {
		t.Errorf("credits add -1: %q", out)
	}
	if out := m.ok("credits", "add", id, "2", "--reason", "two"); !strings.HasPrefix(out, "Added 2 credits") {
		t.Errorf("credits add 2: %q", out)
	}
}

// A top-up made with the CLI beside a running server reports a balance
// with every charge the server answered before it, and the history lists
// those charges below the top-up: the server applies its charges to the
// tables once a second, and the CLI waits for that.
func TestCreditsAddBesideServer(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "c", "--tier", "free", "--credits", "100")
	ids := fmt.Sprint(id)
	// The server's store, as serve opens it: charges go to its journal
	// and reach the tables within a second.
	srv, err := sqlite.Open(t.Context(), m.path, sqlite.Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	now := time.Now()
	nk := account.GenerateKey(id, now)
	if err := srv.CreateKey(t.Context(), nk.Key); err != nil {
		t.Fatal(err)
	}
	if g, err := srv.Charge(t.Context(), account.Period(now), now, []account.ChargeRequest{{KeyID: nk.ID, Hash: nk.Hash, N: 1, Cost: 1}}); err != nil || g[0].Granted != 1 {
		t.Fatalf("charge: %+v, %v", g, err)
	}
	if out := m.ok("credits", "add", ids, "5000", "--reason", "top up"); !strings.Contains(out, "the balance is now 5099.") {
		t.Errorf("credits add beside the server: %q, want the balance 5099 (100 - 1 + 5000)", out)
	}
	hist := strings.Split(strings.TrimSpace(m.ok("credits", "history", ids)), "\n")
	if len(hist) != 4 || !strings.Contains(hist[1], "+5000") || !strings.Contains(hist[2], "-1") || !strings.Contains(hist[3], "+100") {
		t.Errorf("credits history, newest first: want the top-up, the charge, the grant:\n%s", strings.Join(hist, "\n"))
	}
}
