package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

func testAccounts(t *testing.T, st account.Store) {
	as, err := st.ListAccounts(ctx(t))
	if err != nil || len(as) != 0 {
		t.Fatalf("ListAccounts on an empty store: %v, %v", as, err)
	}
	free, err := st.CreateAccount(ctx(t), account.NewAccount{Name: "Alpha", Tier: account.Free, InitialCredits: 1000, Reason: "welcome", At: t0})
	if err != nil {
		t.Fatal(err)
	}
	if free.ID == 0 || free.Name != "Alpha" || free.Tier != account.Free || free.Credits != 1000 ||
		!free.CreatedAt.Equal(t0) || free.MonthlyLimit != account.FreeMonthlyLimit {
		t.Fatalf("created %+v", free)
	}
	ent, err := st.CreateAccount(ctx(t), account.NewAccount{Name: "Ent 企业", Tier: account.Enterprise, CustomLimit: 123456, At: t0.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if ent.ID == free.ID || ent.Credits != 0 || ent.CustomLimit != 123456 || ent.MonthlyLimit != 123456 || ent.Name != "Ent 企业" {
		t.Fatalf("created %+v", ent)
	}

	got, err := st.Account(ctx(t), free.ID)
	if err != nil || !sameAccount(got, free) {
		t.Fatalf("Account(%d) = %+v, %v; want %+v", free.ID, got, err, free)
	}
	as, err = st.ListAccounts(ctx(t))
	if err != nil || len(as) != 2 || !sameAccount(as[0], free) || !sameAccount(as[1], ent) {
		t.Fatalf("ListAccounts = %+v, %v", as, err)
	}

	// The initial grant is a ledger entry; no grant, no entry.
	es, err := st.Ledger(ctx(t), free.ID, 0)
	if err != nil || len(es) != 1 {
		t.Fatalf("Ledger = %+v, %v", es, err)
	}
	if e := es[0]; e.Delta != 1000 || e.Balance != 1000 || e.Reason != "welcome" || !e.CreatedAt.Equal(t0) || e.KeyID != "" {
		t.Fatalf("initial ledger entry %+v", e)
	}
	if es, err := st.Ledger(ctx(t), ent.ID, 0); err != nil || len(es) != 0 {
		t.Fatalf("Ledger of an account without credits = %+v, %v", es, err)
	}

	_, err = st.Account(ctx(t), 999999)
	isErr(t, "Account(unknown)", err, account.ErrNotFound)
	_, err = st.CreateAccount(ctx(t), account.NewAccount{Name: "x", Tier: "gold", At: t0})
	isErr(t, "CreateAccount(tier gold)", err, account.ErrInvalid)
}

func testSetTier(t *testing.T, st account.Store) {
	a := newAccount(t, st, 50, 10)
	got, err := st.SetTier(ctx(t), a.ID, account.Pro, 0)
	if err != nil || got.Tier != account.Pro || got.MonthlyLimit != account.ProMonthlyLimit || got.Credits != 10 {
		t.Fatalf("SetTier(pro) = %+v, %v", got, err)
	}
	got, err = st.SetTier(ctx(t), a.ID, account.Enterprise, 777)
	if err != nil || got.Tier != account.Enterprise || got.MonthlyLimit != 777 {
		t.Fatalf("SetTier(enterprise, 777) = %+v, %v", got, err)
	}
	if again, err := st.Account(ctx(t), a.ID); err != nil || !sameAccount(again, got) {
		t.Fatalf("Account after SetTier = %+v, %v; want %+v", again, err, got)
	}
	_, err = st.SetTier(ctx(t), 999999, account.Pro, 0)
	isErr(t, "SetTier(unknown)", err, account.ErrNotFound)
	_, err = st.SetTier(ctx(t), a.ID, "gold", 0)
	isErr(t, "SetTier(gold)", err, account.ErrInvalid)

	// The new limit applies to this month's usage at once.
	k := newKey(t, st, a.ID)
	got, err = st.SetTier(ctx(t), a.ID, account.Enterprise, 3)
	if err != nil {
		t.Fatal(err)
	}
	if g := charge(t, st, period0, req(k, 5, 1))[0]; g.Granted != 3 || g.Deny != account.DenyQuota || g.Limit != 3 {
		t.Fatalf("after lowering the limit to 3: %+v", g)
	}
	if _, err := st.SetTier(ctx(t), a.ID, account.Enterprise, 5); err != nil {
		t.Fatal(err)
	}
	if g := charge(t, st, period0, req(k, 5, 1))[0]; g.Granted != 2 || g.Used != 5 || g.Limit != 5 {
		t.Fatalf("after raising the limit to 5: %+v", g)
	}
}

func testKeys(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 10)
	b := newAccount(t, st, 10, 10)
	ks, err := st.ListKeys(ctx(t), a.ID)
	if err != nil || len(ks) != 0 {
		t.Fatalf("ListKeys with no keys = %+v, %v", ks, err)
	}
	k1 := newKey(t, st, a.ID)
	k2 := account.GenerateKey(a.ID, t0.Add(time.Minute))
	if err := st.CreateKey(ctx(t), k2.Key); err != nil {
		t.Fatal(err)
	}
	kb := newKey(t, st, b.ID)

	got, err := st.Key(ctx(t), k1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != k1.ID || got.AccountID != a.ID || !bytes.Equal(got.Hash, k1.Hash) ||
		got.Prefix != "ipa_"+k1.ID || !got.CreatedAt.Equal(t0) || got.Revoked() {
		t.Fatalf("Key = %+v, want %+v", got, k1.Key)
	}
	ks, err = st.ListKeys(ctx(t), a.ID)
	if err != nil || len(ks) != 2 || ks[0].ID != k1.ID || ks[1].ID != k2.ID {
		t.Fatalf("ListKeys(a) = %+v, %v; want %s, %s", ks, err, k1.ID, k2.ID)
	}
	ks, err = st.ListKeys(ctx(t), b.ID)
	if err != nil || len(ks) != 1 || ks[0].ID != kb.ID {
		t.Fatalf("ListKeys(b) = %+v, %v", ks, err)
	}

	_, err = st.Key(ctx(t), "nosuchkey123")
	isErr(t, "Key(unknown)", err, account.ErrNotFound)
	_, err = st.ListKeys(ctx(t), 999999)
	isErr(t, "ListKeys(unknown account)", err, account.ErrNotFound)
	err = st.CreateKey(ctx(t), account.GenerateKey(999999, t0).Key)
	isErr(t, "CreateKey(unknown account)", err, account.ErrNotFound)
	if err := st.CreateKey(ctx(t), k1.Key); err == nil {
		t.Fatal("CreateKey accepted a duplicate ID")
	}
	if n := usage(t, st, k1.ID, period0); n != 0 {
		t.Fatalf("Usage of a new key = %d", n)
	}
	_, err = st.Usage(ctx(t), "nosuchkey123", period0)
	isErr(t, "Usage(unknown)", err, account.ErrNotFound)
}

func testRevokeRotate(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 10)
	k := newKey(t, st, a.ID)
	charge(t, st, period0, req(k, 2, 1))

	newHash := account.HashSecret("ipa_" + k.ID + "_another-secret")
	rk, err := st.RotateKey(ctx(t), k.ID, newHash)
	if err != nil || rk.ID != k.ID || !bytes.Equal(rk.Hash, newHash) || rk.AccountID != a.ID {
		t.Fatalf("RotateKey = %+v, %v", rk, err)
	}
	if got, _ := st.Key(ctx(t), k.ID); !bytes.Equal(got.Hash, newHash) {
		t.Fatal("RotateKey did not store the new hash")
	}
	if n := usage(t, st, k.ID, period0); n != 2 {
		t.Fatalf("usage after rotation = %d, want 2 (kept)", n)
	}

	at := t0.Add(time.Hour)
	rv, err := st.RevokeKey(ctx(t), k.ID, at)
	if err != nil || rv.RevokedAt == nil || !rv.RevokedAt.Equal(at) {
		t.Fatalf("RevokeKey = %+v, %v", rv, err)
	}
	rv, err = st.RevokeKey(ctx(t), k.ID, at.Add(time.Hour))
	if err != nil || rv.RevokedAt == nil || !rv.RevokedAt.Equal(at) {
		t.Fatalf("second RevokeKey = %+v, %v; want the first revocation time kept", rv, err)
	}
	if got, _ := st.Key(ctx(t), k.ID); !got.Revoked() {
		t.Fatal("Key after RevokeKey is not revoked")
	}
	_, err = st.RotateKey(ctx(t), k.ID, account.HashSecret("x"))
	isErr(t, "RotateKey(revoked)", err, account.ErrRevoked)
	if got, _ := st.Key(ctx(t), k.ID); !bytes.Equal(got.Hash, newHash) {
		t.Fatal("RotateKey of a revoked key changed its hash")
	}
	_, err = st.RotateKey(ctx(t), "nosuchkey123", newHash)
	isErr(t, "RotateKey(unknown)", err, account.ErrNotFound)
	_, err = st.RevokeKey(ctx(t), "nosuchkey123", at)
	isErr(t, "RevokeKey(unknown)", err, account.ErrNotFound)
}

func testCredits(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 100)
	e, err := st.AddCredits(ctx(t), a.ID, 50, "top-up", t0.Add(time.Minute))
	if err != nil || e.ID == 0 || e.Delta != 50 || e.Balance != 150 || e.Reason != "top-up" || !e.CreatedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("AddCredits(+50) = %+v, %v", e, err)
	}
	e, err = st.AddCredits(ctx(t), a.ID, -150, "refund", t0.Add(2*time.Minute))
	if err != nil || e.Delta != -150 || e.Balance != 0 {
		t.Fatalf("AddCredits(-150) = %+v, %v", e, err)
	}
	_, err = st.AddCredits(ctx(t), a.ID, -1, "too much", t0)
	isErr(t, "AddCredits below zero", err, account.ErrInsufficient)
	_, err = st.AddCredits(ctx(t), 999999, 5, "x", t0)
	isErr(t, "AddCredits(unknown)", err, account.ErrNotFound)
	_, err = st.Ledger(ctx(t), 999999, 0)
	isErr(t, "Ledger(unknown)", err, account.ErrNotFound)

	if b := balance(t, st, a.ID); b != 0 {
		t.Fatalf("balance = %d, want 0", b)
	}
	es, err := st.Ledger(ctx(t), a.ID, 0)
	if err != nil || len(es) != 3 {
		t.Fatalf("Ledger = %+v, %v; want 3 entries (the refused deduction leaves none)", es, err)
	}
	if es[0].Reason != "refund" || es[1].Reason != "top-up" || es[2].Reason != "initial grant" {
		t.Fatalf("Ledger not newest first: %+v", es)
	}
	es, err = st.Ledger(ctx(t), a.ID, 2)
	if err != nil || len(es) != 2 || es[0].Reason != "refund" {
		t.Fatalf("Ledger(limit 2) = %+v, %v", es, err)
	}
	checkLedger(t, st, a.ID, 1)
}

// sameAccount compares accounts, times by instant: a store may return
// them in any location.
func sameAccount(a, b account.Account) bool {
	ta, tb := a.CreatedAt, b.CreatedAt
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return a == b && ta.Equal(tb)
}
