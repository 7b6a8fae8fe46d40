package postgres_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
)

// TestReplicasShareSessions signs a browser in on one replica and follows
// it on another, as a load balancer without affinity sends it: the
// session is found, touched and revoked there, and each change is seen
// back on the first.
func TestReplicasShareSessions(t *testing.T) {
	sts := openReplicas(t, pgtest.DSN(t), pgtest.NewSchema(t), 2, postgres.Options{MaxConns: 2})
	one, two := sts[0], sts[1]
	ctx := t.Context()
	a, _ := customer(t, one, 10, 10)
	o, err := one.CreateOwner(ctx, a.ID, "ann@example.com", t0)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("cookie secret"))
	se := account.Session{ID: "s1", Hash: h[:], Kind: account.SessionOwner, OwnerID: o.ID, CSRF: "csrf",
		CreatedAt: t0, LastSeenAt: t0, ExpiresAt: t0.Add(7 * 24 * time.Hour)}
	if err := one.CreateSession(ctx, se); err != nil {
		t.Fatal(err)
	}

	got, err := two.SessionByHash(ctx, h[:])
	if err != nil || got.ID != "s1" || got.OwnerID != o.ID || got.AccountID != a.ID || got.CSRF != "csrf" || got.RevokedAt != nil {
		t.Fatalf("the other replica reads the session as %+v, %v", got, err)
	}
	seen := t0.Add(5 * time.Minute)
	if err := two.TouchSession(ctx, "s1", seen); err != nil {
		t.Fatal(err)
	}
	if got, err := one.SessionByHash(ctx, h[:]); err != nil || !got.LastSeenAt.Equal(seen) {
		t.Fatalf("after a touch on replica two, replica one reads %+v, %v; want last seen %v", got, err, seen)
	}
	revoked := t0.Add(6 * time.Minute)
	if err := two.RevokeSession(ctx, "s1", revoked); err != nil {
		t.Fatal(err)
	}
	if got, err := one.SessionByHash(ctx, h[:]); err != nil || got.RevokedAt == nil || !got.RevokedAt.Equal(revoked) {
		t.Fatalf("after sign-out on replica two, replica one reads %+v, %v; want revoked at %v", got, err, revoked)
	}

	// Sign out everywhere on one replica ends the sessions made on the
	// other.
	h2 := sha256.Sum256([]byte("second browser"))
	se.ID, se.Hash = "s2", h2[:]
	if err := two.CreateSession(ctx, se); err != nil {
		t.Fatal(err)
	}
	if n, err := one.RevokeOwnerSessions(ctx, o.ID, revoked.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("RevokeOwnerSessions on replica one = %d, %v; want 1", n, err)
	}
	if got, err := two.SessionByHash(ctx, h2[:]); err != nil || got.RevokedAt == nil {
		t.Fatalf("replica two still reads the session as live: %+v, %v", got, err)
	}
}

// TestReplicasRedeemTokenOnce races the redemption of one token over
// replicas with their own pools: exactly one sets the password.
func TestReplicasRedeemTokenOnce(t *testing.T) {
	const n = 3
	sts := openReplicas(t, pgtest.DSN(t), pgtest.NewSchema(t), n, postgres.Options{MaxConns: 2})
	ctx := t.Context()
	a, _ := customer(t, sts[0], 10, 10)
	o, err := sts[0].CreateOwner(ctx, a.ID, "ann@example.com", t0)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("link token"))
	if err := sts[1].CreateOwnerToken(ctx, account.OwnerToken{Hash: h[:], OwnerID: o.ID, Purpose: account.TokenInvite,
		CreatedAt: t0, ExpiresAt: t0.Add(72 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	const each = 4
	errs := make([]error, n*each)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = sts[i%n].UseOwnerToken(ctx, h[:], t0.Add(time.Hour), fmt.Sprintf("$argon2id$%d", i))
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("redemptions %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, account.ErrNotFound):
			t.Fatalf("redemption %d: %v, want ErrNotFound", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no redemption succeeded")
	}
	if got, err := sts[2].Owner(ctx, o.ID); err != nil || got.PasswordHash != fmt.Sprintf("$argon2id$%d", winner) {
		t.Fatalf("owner = %+v, %v; want the password of redemption %d", got, err, winner)
	}
}
