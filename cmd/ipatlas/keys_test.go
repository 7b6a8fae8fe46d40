package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

type cliKey struct {
	ID        string `json:"id"`
	Secret    string `json:"key"`
	AccountID int64  `json:"account_id"`
	Prefix    string `json:"prefix"`
}

// createKey makes a key through the CLI.
func (m *mgmtEnv) createKey(accountID int64) cliKey {
	m.t.Helper()
	var k cliKey
	m.json(&k, "keys", "create", "--account", fmt.Sprint(accountID))
	if k.ID == "" || k.Secret == "" || k.AccountID != accountID {
		m.t.Fatalf("keys create --json: %+v; want id, key and account_id", k)
	}
	return k
}

func TestKeysCreate(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "k", "--tier", "free")
	k := m.createKey(id)
	if !strings.HasPrefix(k.Secret, "ipa_"+k.ID+"_") || k.Prefix != "ipa_"+k.ID {
		t.Fatalf("key %+v: want the secret ipa_<id>_...", k)
	}
	svc := m.service()
	got, acct, err := svc.Authenticate(t.Context(), k.Secret)
	if err != nil || got.ID != k.ID || acct.ID != id {
		t.Fatalf("the printed secret does not authenticate: %v", err)
	}

	// Human output shows the secret once; listings never do.
	out := m.ok("keys", "create", "--account", fmt.Sprint(id))
	if strings.Count(out, "ipa_") != 1 || !strings.Contains(out, "only this once") {
		t.Fatalf("keys create output:\n%s", out)
	}
	secret := strings.TrimSpace(strings.SplitN(out, "\n", 4)[2])
	if _, _, err := svc.Authenticate(t.Context(), secret); err != nil {
		t.Fatalf("the secret printed by keys create (%d chars) does not authenticate: %v", len(secret), err)
	}
	for _, args := range [][]string{{"keys", "list", "--account", fmt.Sprint(id)}, {"keys", "list", "--account", fmt.Sprint(id), "--json"}} {
		out := m.ok(args...)
		if strings.Contains(out, k.Secret[len(k.Prefix)+1:]) || strings.Contains(out, secret[len(k.Prefix)+1:]) || strings.Contains(out, "hash") {
			t.Fatalf("%v shows a secret or a hash:\n%s", args, out)
		}
	}
	var ks []struct {
		ID   string `json:"id"`
		Used int64  `json:"used"`
	}
	m.json(&ks, "keys", "list", "--account", fmt.Sprint(id))
	if len(ks) != 2 || ks[0].ID != k.ID {
		t.Fatalf("keys list --json: %+v", ks)
	}

	m.fails(exitUsage, "keys", "create")
	m.fails(exitUsage, "keys", "create", "--account", "x")
	m.fails(exitNotFound, "keys", "create", "--account", "999")
	m.fails(exitNotFound, "keys", "list", "--account", "999")
	m.fails(exitUsage, "keys", "list")
}

func TestKeysRotateRevoke(t *testing.T) {
	m := newMgmtEnv(t)
	id := m.createAccount("--name", "r", "--tier", "free")
	k := m.createKey(id)
	svc := m.service()
	key, _, err := svc.Authenticate(t.Context(), k.Secret)
	if err != nil {
		t.Fatal(err)
	}
	meter := account.NewMeter(svc.Store, account.MeterOptions{})
	defer meter.Close(context.Background())
	if o, err := meter.Charge(t.Context(), key); err != nil || !o.Granted {
		t.Fatalf("charge: %+v, %v", o, err)
	}

	var rk cliKey
	m.json(&rk, "keys", "rotate", k.ID)
	if rk.ID != k.ID || rk.Secret == k.Secret || !strings.HasPrefix(rk.Secret, "ipa_"+k.ID+"_") {
		t.Fatalf("keys rotate --json: %+v", rk)
	}
	// The server's cache may still know the old secret; its charge must
	// be refused all the same, and the new one must work with the usage
	// kept.
	if o, err := meter.Charge(t.Context(), key); err != nil || o.Granted || o.Deny != account.DenyKey {
		t.Fatalf("charge with the old secret after rotate: %+v, %v", o, err)
	}
	fresh := &account.Service{Store: svc.Store}
	if _, _, err := fresh.Authenticate(t.Context(), k.Secret); err != account.ErrBadKey {
		t.Fatalf("old secret after rotate: %v, want ErrBadKey", err)
	}
	nk, _, err := fresh.Authenticate(t.Context(), rk.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := meter.Charge(t.Context(), nk); err != nil || !o.Granted || o.Used != 2 {
		t.Fatalf("charge with the new secret: %+v, %v; want usage 2", o, err)
	}
	out := m.ok("keys", "rotate", k.ID)
	if !strings.Contains(out, "only this once") || !strings.Contains(out, "no longer works") {
		t.Fatalf("keys rotate output:\n%s", out)
	}

	out = m.ok("keys", "revoke", k.ID)
	if !strings.Contains(out, "Revoked key "+k.ID) {
		t.Fatalf("keys revoke output: %q", out)
	}
	if o, err := meter.Charge(t.Context(), nk); err != nil || o.Granted || o.Deny != account.DenyKey {
		t.Fatalf("charge after revoke: %+v, %v", o, err)
	}
	if out := m.ok("keys", "list", "--account", fmt.Sprint(id)); !strings.Contains(out, "revoked") {
		t.Fatalf("keys list after revoke:\n%s", out)
	}
	var rv struct {
		RevokedAt *string `json:"revoked_at"`
	}
	m.json(&rv, "keys", "revoke", k.ID)
	if rv.RevokedAt == nil {
		t.Fatal("keys revoke --json: no revoked_at")
	}
	_, err = m.fails(exitFailure, "keys", "rotate", k.ID)
	if !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("rotating a revoked key: %v", err)
	}
	m.fails(exitNotFound, "keys", "revoke", "nosuchkey123")
	m.fails(exitNotFound, "keys", "rotate", "nosuchkey123")
	m.fails(exitUsage, "keys", "revoke")
}

// keys revoke and rotate take a key as 'keys list' shows it: the ID, the
// prefix (with or without its "…"), or an unambiguous start of the ID; a
// start that several keys share is refused naming them, and a secret is
// refused without being echoed.
func TestKeysNamedAsListed(t *testing.T) {
	m := newMgmtEnv(t)
	a := m.createAccount("--name", "a", "--tier", "free")
	b := m.createAccount("--name", "b", "--tier", "free")
	svc := m.service()
	for _, k := range []account.Key{
		{ID: "Twin1aaaaaaa", AccountID: a}, {ID: "Twin2bbbbbbb", AccountID: b}, {ID: "Solo9ccccccc", AccountID: a}, {ID: "Prefixdddddd", AccountID: b},
	} {
		k.Hash, k.CreatedAt = account.HashSecret(k.ID), time.Now()
		if err := svc.Store.CreateKey(t.Context(), k); err != nil {
			t.Fatal(err)
		}
	}
	listed := m.ok("keys", "list", "--account", fmt.Sprint(b))
	if !strings.Contains(listed, "ipa_Prefixdddddd…") {
		t.Fatalf("keys list does not show the prefix this test gives back:\n%s", listed)
	}
	for _, tc := range []struct{ ref, id string }{
		{"ipa_Prefixdddddd…", "Prefixdddddd"}, // pasted from the listing
		{"ipa_Twin1", "Twin1aaaaaaa"},
		{"Solo", "Solo9ccccccc"},
	} {
		out := m.ok("keys", "revoke", tc.ref)
		if !strings.Contains(out, "Revoked key "+tc.id) {
			t.Errorf("keys revoke %s: %q, want %s revoked", tc.ref, out, tc.id)
		}
	}
	var rk cliKey
	m.json(&rk, "keys", "rotate", "ipa_Twin2bbbbbbb")
	if rk.ID != "Twin2bbbbbbb" {
		t.Errorf("keys rotate by prefix rotated %+v", rk)
	}

	_, err := m.fails(exitUsage, "keys", "revoke", "ipa_Twin")
	if err == nil || !strings.Contains(err.Error(), "names 2 keys") || !strings.Contains(err.Error(), "Twin1aaaaaaa (account 1)") ||
		!strings.Contains(err.Error(), "Twin2bbbbbbb (account 2)") || !strings.Contains(err.Error(), "give more of the ID") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := m.fails(exitNotFound, "keys", "revoke", "ipa_Nope"); !strings.Contains(err.Error(), "no key's ID starts with Nope") {
		t.Errorf("unknown prefix: %v", err)
	}
	if _, err := m.fails(exitNotFound, "keys", "revoke", "ipa_Nope12345678"); err.Error() != "no key Nope12345678" {
		t.Errorf("unknown ID: %v", err)
	}
	m.fails(exitUsage, "keys", "revoke", "ipa_Tw")
	m.fails(exitUsage, "keys", "revoke", "not a key")
	secret := "ipa_Solo9ccccccc_" + strings.Repeat("s", 43)
	if _, err := m.fails(exitUsage, "keys", "revoke", secret); strings.Contains(err.Error(), "sss") || !strings.Contains(err.Error(), "secret") {
		t.Errorf("a secret: %v", err)
	}
}
