package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// testOwnerTokenRead: OwnerToken reads a token as stored, used and
// expired ones included, and an unknown hash is ErrNotFound.
func testOwnerTokenRead(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	o := newOwner(t, st, a.ID, "tess@example.com")
	exp := t0.Add(72 * time.Hour)
	tok := account.OwnerToken{Hash: sha("read"), OwnerID: o.ID, Purpose: account.TokenReset, CreatedAt: t0, ExpiresAt: exp}
	if err := st.CreateOwnerToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	got, err := st.OwnerToken(ctx(t), tok.Hash)
	if err != nil || !bytes.Equal(got.Hash, tok.Hash) || got.OwnerID != o.ID || got.Purpose != account.TokenReset ||
		!got.CreatedAt.Equal(t0) || !got.ExpiresAt.Equal(exp) || got.UsedAt != nil {
		t.Fatalf("OwnerToken = %+v, %v; want %+v", got, err, tok)
	}
	at := t0.Add(time.Hour)
	if _, err := st.UseOwnerToken(ctx(t), tok.Hash, at, "$argon2id$x"); err != nil {
		t.Fatal(err)
	}
	if got, err := st.OwnerToken(ctx(t), tok.Hash); err != nil || got.UsedAt == nil || !got.UsedAt.Equal(at) {
		t.Fatalf("OwnerToken after use = %+v, %v; want used at %v", got, err, at)
	}
	_, err = st.OwnerToken(ctx(t), sha("unknown"))
	isErr(t, "OwnerToken(unknown)", err, account.ErrNotFound)
	_, err = st.OwnerToken(ctx(t), nil)
	isErr(t, "OwnerToken(nil)", err, account.ErrNotFound)
}
