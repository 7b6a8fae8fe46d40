package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
)

// createAccount makes an account through the CLI and returns its ID.
func (m *mgmtEnv) createAccount(args ...string) int64 {
	m.t.Helper()
	var a struct {
		ID *int64 `json:"id"`
	}
	m.json(&a, append([]string{"accounts", "create"}, args...)...)
	if a.ID == nil || *a.ID <= 0 {
		m.t.Fatalf("accounts create --json printed no id")
	}
	return *a.ID
}

func TestAccountsCreate(t *testing.T) {
	m := newMgmtEnv(t)
	var a account.Account
	m.json(&a, "accounts", "create", "--name", "Acme", "--tier", "free")
	if a.ID <= 0 || a.Name != "Acme" || a.Tier != account.Free || a.MonthlyLimit != 1000 || a.Credits != 1000 {
		t.Fatalf("free account: %+v; want limit 1000 and 1000 initial credits", a)
	}
	m.json(&a, "accounts", "create", "--name", "Big", "--tier", "enterprise", "--monthly-limit", "5000", "--credits", "50")
	if a.Tier != account.Enterprise || a.MonthlyLimit != 5000 || a.Credits != 50 {
		t.Fatalf("enterprise account: %+v", a)
	}
	m.json(&a, "accounts", "create", "--name", "Nil", "--tier", "pro", "--credits", "0")
	if a.MonthlyLimit != 10000 || a.Credits != 0 {
		t.Fatalf("pro account with --credits 0: %+v", a)
	}

	out := m.ok("accounts", "create", "--name", "Human", "--tier", "pro", "--store", m.dsn)
	if !strings.Contains(out, "Created account 4") || !strings.Contains(out, "ipatlas keys create --account 4") {
		t.Fatalf("human output: %q", out)
	}

	for _, args := range [][]string{
		{"accounts", "create", "--tier", "free"},
		{"accounts", "create", "--name", "x", "--tier", "gold"},
		{"accounts", "create", "--name", "x", "--tier", "enterprise"},
		{"accounts", "create", "--name", "x", "--tier", "free", "--monthly-limit", "50"},
		{"accounts", "create", "--name", "x", "--credits", "-5"},
		{"accounts", "create", "--name", "x", "extra"},
		{"accounts", "create", "--name", "x", "--bogus"},
		{"accounts", "delete", "1"},
	} {
		m.fails(exitUsage, args...)
	}
	var as []account.Account
	m.json(&as, "accounts", "list")
	if len(as) != 4 {
		t.Fatalf("%d accounts after the refused creations, want 4", len(as))
	}
	if _, _, err := m.run("accounts", "--help"); err != nil {
		t.Fatalf("accounts --help: %v", err)
	}
	if _, _, err := m.run("accounts", "create", "-h"); err != nil {
		t.Fatalf("accounts create -h: %v", err)
	}
}

func TestAccountsListTable(t *testing.T) {
	m := newMgmtEnv(t)
	if out := m.ok("accounts", "list"); !strings.Contains(out, "No accounts") {
		t.Fatalf("empty list: %q", out)
	}
	var empty []account.Account
	m.json(&empty, "accounts", "list")
	if empty == nil || len(empty) != 0 {
		t.Fatalf("empty list as JSON: %v, want []", empty)
	}
	m.createAccount("--name", "a", "--tier", "free")
	m.createAccount("--name", "a much longer name", "--tier", "enterprise", "--monthly-limit", "123456789")
	out := m.ok("accounts", "list")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and 2 rows:\n%s", out)
	}
	// Aligned: every column starts at the same offset on every line.
	header := lines[0]
	for _, col := range []string{"NAME", "TIER", "LIMIT/KEY/MONTH", "CREDITS", "CREATED"} {
		at := strings.Index(header, col)
		for _, l := range lines[1:] {
			if at <= 0 || at >= len(l) || l[at-1] != ' ' || l[at] == ' ' {
				t.Fatalf("column %s not aligned at %d:\n%s", col, at, out)
			}
		}
	}
	if !strings.Contains(lines[2], "123456789") || !strings.Contains(lines[1], "1000") {
		t.Fatalf("rows:\n%s", out)
	}
}

func TestAccountsShowAndSetTier(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "Shown", "--tier", "pro")
	key := m.createKey(id)

	var shown struct {
		account.Account
		Keys []struct {
			ID     string `json:"id"`
			Used   int64  `json:"used"`
			Period string `json:"period"`
		} `json:"keys"`
	}
	m.json(&shown, "accounts", "show", fmt.Sprint(id))
	if shown.ID != id || shown.Name != "Shown" || shown.MonthlyLimit != 10000 || len(shown.Keys) != 1 || shown.Keys[0].ID != key.ID || shown.Keys[0].Used != 0 {
		t.Fatalf("accounts show --json: %+v", shown)
	}
	out := m.ok("accounts", "show", fmt.Sprint(id))
	for _, want := range []string{"Shown", "pro", "10000", key.ID, "active"} {
		if !strings.Contains(out, want) {
			t.Fatalf("accounts show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, key.Secret) {
		t.Fatal("accounts show printed a secret")
	}

	var a account.Account
	m.json(&a, "accounts", "set-tier", fmt.Sprint(id), "enterprise", "--monthly-limit", "77")
	if a.Tier != account.Enterprise || a.MonthlyLimit != 77 {
		t.Fatalf("set-tier enterprise: %+v", a)
	}
	m.json(&a, "accounts", "set-tier", "--monthly-limit", "0", fmt.Sprint(id), "free")
	if a.Tier != account.Free || a.MonthlyLimit != 1000 {
		t.Fatalf("set-tier free: %+v", a)
	}
	if out := m.ok("accounts", "set-tier", fmt.Sprint(id), "pro"); !strings.Contains(out, "now pro") {
		t.Fatalf("set-tier human output: %q", out)
	}

	m.fails(exitNotFound, "accounts", "show", "999")
	m.fails(exitNotFound, "accounts", "set-tier", "999", "pro")
	m.fails(exitUsage, "accounts", "show", "abc")
	m.fails(exitUsage, "accounts", "show")
	m.fails(exitUsage, "accounts", "set-tier", fmt.Sprint(id), "gold")
	m.fails(exitUsage, "accounts", "set-tier", fmt.Sprint(id), "enterprise")
	m.fails(exitUsage, "accounts", "set-tier", fmt.Sprint(id), "pro", "--monthly-limit", "5")
}
