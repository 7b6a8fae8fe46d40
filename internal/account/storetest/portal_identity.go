package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// The identity side of PortalStore: owners, one-time tokens, sessions,
// tier requests and the audit log.

// sha is the SHA-256 of s, standing for a secret's stored hash.
func sha(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func newOwner(t *testing.T, st account.Store, accountID int64, email string) account.Owner {
	t.Helper()
	o, err := st.CreateOwner(ctx(t), accountID, email, t0)
	if err != nil {
		t.Fatalf("CreateOwner(%d, %s): %v", accountID, email, err)
	}
	return o
}

func ownerSession(t *testing.T, st account.Store, ownerID int64, id string, expires time.Time) account.Session {
	t.Helper()
	se := account.Session{
		ID: id, Hash: sha("session " + id), Kind: account.SessionOwner, OwnerID: ownerID,
		CSRF: "csrf-" + id, CreatedAt: t0, LastSeenAt: t0, ExpiresAt: expires,
	}
	if err := st.CreateSession(ctx(t), se); err != nil {
		t.Fatalf("CreateSession(%s): %v", id, err)
	}
	return se
}

func sameTimePtr(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func sameOwner(a, b account.Owner) bool {
	return a.ID == b.ID && a.AccountID == b.AccountID && a.Email == b.Email && a.PasswordHash == b.PasswordHash &&
		a.HasPassword == b.HasPassword && a.CreatedAt.Equal(b.CreatedAt) && a.FailedSignins == b.FailedSignins &&
		sameTimePtr(a.LockedUntil, b.LockedUntil)
}

func testOwners(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	b := newAccount(t, st, 10, 0)
	os, err := st.ListOwners(ctx(t), a.ID)
	if err != nil || os == nil || len(os) != 0 {
		t.Fatalf("ListOwners with no owners = %#v, %v; want an empty list", os, err)
	}
	o1 := newOwner(t, st, a.ID, "ann@example.com")
	if o1.ID == 0 || o1.AccountID != a.ID || o1.Email != "ann@example.com" || o1.HasPassword || o1.PasswordHash != "" ||
		!o1.CreatedAt.Equal(t0) || o1.FailedSignins != 0 || o1.LockedUntil != nil {
		t.Fatalf("CreateOwner = %+v", o1)
	}
	o2 := newOwner(t, st, a.ID, "bob@example.com")
	ob := newOwner(t, st, b.ID, "费@example.com")

	if got, err := st.Owner(ctx(t), o1.ID); err != nil || !sameOwner(got, o1) {
		t.Fatalf("Owner(%d) = %+v, %v; want %+v", o1.ID, got, err, o1)
	}
	if got, err := st.OwnerByEmail(ctx(t), "费@example.com"); err != nil || !sameOwner(got, ob) {
		t.Fatalf("OwnerByEmail = %+v, %v; want %+v", got, err, ob)
	}
	os, err = st.ListOwners(ctx(t), a.ID)
	if err != nil || len(os) != 2 || !sameOwner(os[0], o1) || !sameOwner(os[1], o2) {
		t.Fatalf("ListOwners(a) = %+v, %v; want %+v, %+v", os, err, o1, o2)
	}

	// An email owns at most one account: the same one or another.
	_, err = st.CreateOwner(ctx(t), a.ID, "ann@example.com", t0)
	isErr(t, "CreateOwner(same email, same account)", err, account.ErrConflict)
	_, err = st.CreateOwner(ctx(t), b.ID, "ann@example.com", t0)
	isErr(t, "CreateOwner(same email, other account)", err, account.ErrConflict)
	_, err = st.CreateOwner(ctx(t), 999999, "new@example.com", t0)
	isErr(t, "CreateOwner(unknown account)", err, account.ErrNotFound)
	_, err = st.CreateOwner(ctx(t), a.ID, "", t0)
	isErr(t, "CreateOwner(empty email)", err, account.ErrInvalid)
	if os, _ := st.ListOwners(ctx(t), b.ID); len(os) != 1 {
		t.Fatalf("a refused CreateOwner left owners behind: %+v", os)
	}

	_, err = st.Owner(ctx(t), 999999)
	isErr(t, "Owner(unknown)", err, account.ErrNotFound)
	_, err = st.OwnerByEmail(ctx(t), "nobody@example.com")
	isErr(t, "OwnerByEmail(unknown)", err, account.ErrNotFound)
	_, err = st.ListOwners(ctx(t), 999999)
	isErr(t, "ListOwners(unknown account)", err, account.ErrNotFound)

	// HasPassword follows the password being set.
	tok := account.OwnerToken{Hash: sha("invite o2"), OwnerID: o2.ID, Purpose: account.TokenInvite, CreatedAt: t0, ExpiresAt: t0.Add(72 * time.Hour)}
	if err := st.CreateOwnerToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UseOwnerToken(ctx(t), tok.Hash, t0.Add(time.Hour), "$argon2id$o2"); err != nil {
		t.Fatal(err)
	}
	os, err = st.ListOwners(ctx(t), a.ID)
	if err != nil || len(os) != 2 || os[0].HasPassword || !os[1].HasPassword || os[1].PasswordHash != "$argon2id$o2" {
		t.Fatalf("ListOwners after o2 set a password = %+v, %v", os, err)
	}
}

func testSignins(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	o := newOwner(t, st, a.ID, "ann@example.com")
	other := newOwner(t, st, a.ID, "bob@example.com")

	lock := t0.Add(2 * time.Second)
	for i, l := range []*time.Time{nil, nil, &lock} {
		n, err := st.SigninFailed(ctx(t), o.ID, l)
		if err != nil || n != int64(i+1) {
			t.Fatalf("SigninFailed #%d = %d, %v", i+1, n, err)
		}
	}
	got, err := st.Owner(ctx(t), o.ID)
	if err != nil || got.FailedSignins != 3 || got.LockedUntil == nil || !got.LockedUntil.Equal(lock) {
		t.Fatalf("after 3 failures: %+v, %v; want 3 failures, locked until %v", got, err, lock)
	}
	// A failure never shortens or clears a lock: nil or an earlier time
	// (a failure that read the count before a racing one) leaves it; a
	// later time moves it. The count goes on.
	early, later := t0.Add(time.Second), t0.Add(time.Minute)
	for i, l := range []*time.Time{nil, &early} {
		if n, err := st.SigninFailed(ctx(t), o.ID, l); err != nil || n != int64(4+i) {
			t.Fatalf("SigninFailed(%v) = %d, %v; want %d", l, n, err, 4+i)
		}
		if got, _ := st.Owner(ctx(t), o.ID); got.LockedUntil == nil || !got.LockedUntil.Equal(lock) {
			t.Fatalf("SigninFailed(%v) changed the lock to %v; want it kept at %v", l, got.LockedUntil, lock)
		}
	}
	if n, err := st.SigninFailed(ctx(t), o.ID, &later); err != nil || n != 6 {
		t.Fatalf("SigninFailed(later) = %d, %v", n, err)
	}
	if got, _ := st.Owner(ctx(t), o.ID); got.LockedUntil == nil || !got.LockedUntil.Equal(later) {
		t.Fatalf("SigninFailed(later) left the lock at %v; want %v", got.LockedUntil, later)
	}
	if _, err := st.SigninFailed(ctx(t), o.ID, &lock); err != nil {
		t.Fatal(err)
	}
	if err := st.SigninSucceeded(ctx(t), o.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Owner(ctx(t), o.ID); got.FailedSignins != 0 || got.LockedUntil != nil {
		t.Fatalf("after SigninSucceeded: %+v", got)
	}
	if got, _ := st.Owner(ctx(t), other.ID); got.FailedSignins != 0 {
		t.Fatalf("another owner's failures changed: %+v", got)
	}

	// Concurrent failures all count, each seeing its own place.
	const n = 16
	counts := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := st.SigninFailed(ctx(t), o.ID, nil)
			if err != nil {
				t.Errorf("concurrent SigninFailed: %v", err)
			}
			counts[i] = c
		}()
	}
	wg.Wait()
	slices.Sort(counts)
	for i, c := range counts {
		if c != int64(i+1) {
			t.Fatalf("concurrent SigninFailed returned %v, want 1..%d once each", counts, n)
		}
	}
	if got, _ := st.Owner(ctx(t), o.ID); got.FailedSignins != n {
		t.Fatalf("after %d concurrent failures the count is %d", n, got.FailedSignins)
	}

	_, err = st.SigninFailed(ctx(t), 999999, nil)
	isErr(t, "SigninFailed(unknown)", err, account.ErrNotFound)
	isErr(t, "SigninSucceeded(unknown)", st.SigninSucceeded(ctx(t), 999999), account.ErrNotFound)
}

func testOwnerTokens(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	o := newOwner(t, st, a.ID, "ann@example.com")
	other := newOwner(t, st, a.ID, "bob@example.com")
	exp := t0.Add(72 * time.Hour)
	tok := account.OwnerToken{Hash: sha("invite"), OwnerID: o.ID, Purpose: account.TokenInvite, CreatedAt: t0, ExpiresAt: exp}
	if err := st.CreateOwnerToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	isErr(t, "CreateOwnerToken(same hash)", st.CreateOwnerToken(ctx(t), tok), account.ErrConflict)
	bad := tok
	bad.Hash, bad.Purpose = sha("bad"), "login"
	isErr(t, "CreateOwnerToken(purpose login)", st.CreateOwnerToken(ctx(t), bad), account.ErrInvalid)
	bad.Purpose, bad.OwnerID = account.TokenReset, 999999
	isErr(t, "CreateOwnerToken(unknown owner)", st.CreateOwnerToken(ctx(t), bad), account.ErrNotFound)
	bad.OwnerID, bad.Hash = o.ID, nil
	isErr(t, "CreateOwnerToken(no hash)", st.CreateOwnerToken(ctx(t), bad), account.ErrInvalid)

	// The owner's state that redeeming resets, and sessions it revokes.
	lock := t0.Add(time.Hour)
	st.SigninFailed(ctx(t), o.ID, &lock)
	live1 := ownerSession(t, st, o.ID, "live1", t0.Add(7*24*time.Hour))
	live2 := ownerSession(t, st, o.ID, "live2", t0.Add(7*24*time.Hour))
	early := ownerSession(t, st, o.ID, "early", t0.Add(7*24*time.Hour))
	revokedAt := t0.Add(time.Minute)
	if err := st.RevokeSession(ctx(t), early.ID, revokedAt); err != nil {
		t.Fatal(err)
	}
	bystander := ownerSession(t, st, other.ID, "bystander", t0.Add(7*24*time.Hour))

	// Expired (expiry not after at), unknown, or empty: not found, and
	// nothing changes.
	_, err := st.UseOwnerToken(ctx(t), tok.Hash, exp, "$argon2id$x")
	isErr(t, "UseOwnerToken at its expiry", err, account.ErrNotFound)
	_, err = st.UseOwnerToken(ctx(t), sha("unknown"), t0, "$argon2id$x")
	isErr(t, "UseOwnerToken(unknown)", err, account.ErrNotFound)
	_, err = st.UseOwnerToken(ctx(t), nil, t0, "$argon2id$x")
	isErr(t, "UseOwnerToken(nil)", err, account.ErrNotFound)
	if got, _ := st.Owner(ctx(t), o.ID); got.HasPassword || got.FailedSignins != 1 {
		t.Fatalf("a refused redemption changed the owner: %+v", got)
	}

	// Another link of the same owner, and one of another owner.
	leftover := account.OwnerToken{Hash: sha("leftover"), OwnerID: o.ID, Purpose: account.TokenReset, CreatedAt: t0, ExpiresAt: exp}
	theirs := account.OwnerToken{Hash: sha("bob's invite"), OwnerID: other.ID, Purpose: account.TokenInvite, CreatedAt: t0, ExpiresAt: exp}
	for _, tk := range []account.OwnerToken{leftover, theirs} {
		if err := st.CreateOwnerToken(ctx(t), tk); err != nil {
			t.Fatal(err)
		}
	}

	at := exp.Add(-time.Microsecond) // the last moment it is valid
	got, err := st.UseOwnerToken(ctx(t), tok.Hash, at, "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA")
	if err != nil {
		t.Fatalf("UseOwnerToken: %v", err)
	}
	want := o
	want.PasswordHash, want.HasPassword = "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA", true
	if !sameOwner(got, want) {
		t.Fatalf("UseOwnerToken = %+v, want %+v", got, want)
	}
	if again, _ := st.Owner(ctx(t), o.ID); !sameOwner(again, want) {
		t.Fatalf("Owner after UseOwnerToken = %+v, want %+v", again, want)
	}
	for _, se := range []account.Session{live1, live2} {
		s, err := st.SessionByHash(ctx(t), se.Hash)
		if err != nil || s.RevokedAt == nil || !s.RevokedAt.Equal(at) {
			t.Fatalf("session %s after the password was set: %+v, %v; want revoked at %v", se.ID, s, err, at)
		}
	}
	if s, _ := st.SessionByHash(ctx(t), early.Hash); s.RevokedAt == nil || !s.RevokedAt.Equal(revokedAt) {
		t.Fatalf("a session revoked before kept %v, want its first revocation %v", s.RevokedAt, revokedAt)
	}
	if s, _ := st.SessionByHash(ctx(t), bystander.Hash); s.RevokedAt != nil {
		t.Fatalf("another owner's session was revoked: %+v", s)
	}

	// Once only; the owner's other link is spent with it, another
	// owner's is not.
	_, err = st.UseOwnerToken(ctx(t), tok.Hash, at, "$argon2id$again")
	isErr(t, "UseOwnerToken a second time", err, account.ErrNotFound)
	if lt, err := st.OwnerToken(ctx(t), leftover.Hash); err != nil || lt.UsedAt == nil || !lt.UsedAt.Equal(at) {
		t.Fatalf("the owner's other link after the password was set: %+v, %v; want used at %v", lt, err, at)
	}
	_, err = st.UseOwnerToken(ctx(t), leftover.Hash, at, "$argon2id$again")
	isErr(t, "UseOwnerToken with a link left over from before", err, account.ErrNotFound)
	if tt, err := st.OwnerToken(ctx(t), theirs.Hash); err != nil || tt.UsedAt != nil {
		t.Fatalf("another owner's link was spent: %+v, %v", tt, err)
	}
	if got, _ := st.Owner(ctx(t), o.ID); got.PasswordHash != want.PasswordHash {
		t.Fatalf("a used token changed the password: %+v", got)
	}

	// A reset token works the same way, and an empty password hash is
	// refused without using the token.
	reset := account.OwnerToken{Hash: sha("reset"), OwnerID: o.ID, Purpose: account.TokenReset, CreatedAt: t0, ExpiresAt: exp}
	if err := st.CreateOwnerToken(ctx(t), reset); err != nil {
		t.Fatal(err)
	}
	_, err = st.UseOwnerToken(ctx(t), reset.Hash, t0, "")
	isErr(t, "UseOwnerToken(empty password hash)", err, account.ErrInvalid)
	if got, err := st.UseOwnerToken(ctx(t), reset.Hash, t0, "$argon2id$reset"); err != nil || got.PasswordHash != "$argon2id$reset" {
		t.Fatalf("UseOwnerToken(reset) = %+v, %v", got, err)
	}
}

func testOwnerTokenRace(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	o := newOwner(t, st, a.ID, "ann@example.com")
	tok := account.OwnerToken{Hash: sha("race"), OwnerID: o.ID, Purpose: account.TokenReset, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := st.CreateOwnerToken(ctx(t), tok); err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.UseOwnerToken(ctx(t), tok.Hash, t0, fmt.Sprintf("$argon2id$%d", i))
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("redemptions %d and %d of one token both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, account.ErrNotFound):
			t.Fatalf("a losing redemption failed with %v, want ErrNotFound", err)
		}
	}
	if winner < 0 {
		t.Fatal("no redemption of a valid token succeeded")
	}
	if got, _ := st.Owner(ctx(t), o.ID); got.PasswordHash != fmt.Sprintf("$argon2id$%d", winner) {
		t.Fatalf("the password is %q, want the winner's (#%d)", got.PasswordHash, winner)
	}
}

func testSessions(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	o := newOwner(t, st, a.ID, "ann@example.com")
	other := newOwner(t, st, a.ID, "bob@example.com")
	exp := t0.Add(7 * 24 * time.Hour)
	se := ownerSession(t, st, o.ID, "s1", exp)
	got, err := st.SessionByHash(ctx(t), se.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "s1" || !bytes.Equal(got.Hash, se.Hash) || got.Kind != account.SessionOwner || got.OwnerID != o.ID ||
		got.AccountID != a.ID || got.CSRF != "csrf-s1" || !got.CreatedAt.Equal(t0) || !got.LastSeenAt.Equal(t0) ||
		!got.ExpiresAt.Equal(exp) || got.RevokedAt != nil {
		t.Fatalf("SessionByHash = %+v, want %+v with account %d", got, se, a.ID)
	}

	op := account.Session{ID: "op1", Hash: sha("operator"), Kind: account.SessionOperator, CSRF: "c", CreatedAt: t0, LastSeenAt: t0, ExpiresAt: t0.Add(12 * time.Hour)}
	if err := st.CreateSession(ctx(t), op); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SessionByHash(ctx(t), op.Hash); err != nil || got.Kind != account.SessionOperator || got.OwnerID != 0 || got.AccountID != 0 || got.ID != "op1" {
		t.Fatalf("operator session = %+v, %v", got, err)
	}

	// A session given without times is stamped when stored: created now,
	// last seen when created.
	before := time.Now().Add(-time.Millisecond)
	stamped := account.Session{ID: "op2", Hash: sha("operator 2"), Kind: account.SessionOperator, CSRF: "c", ExpiresAt: exp}
	if err := st.CreateSession(ctx(t), stamped); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Millisecond)
	if got, err := st.SessionByHash(ctx(t), stamped.Hash); err != nil || got.CreatedAt.Before(before) || got.CreatedAt.After(after) || !got.LastSeenAt.Equal(got.CreatedAt) {
		t.Errorf("a session stored without times = %+v, %v; want created between %v and %v, last seen then", got, err, before, after)
	}

	// Refused sessions.
	for _, c := range []struct {
		what string
		se   account.Session
		want error
	}{
		{"same ID", account.Session{ID: "s1", Hash: sha("x1"), Kind: account.SessionOwner, OwnerID: o.ID, CSRF: "c", ExpiresAt: exp}, account.ErrConflict},
		{"same hash", account.Session{ID: "x2", Hash: se.Hash, Kind: account.SessionOwner, OwnerID: o.ID, CSRF: "c", ExpiresAt: exp}, account.ErrConflict},
		{"unknown owner", account.Session{ID: "x3", Hash: sha("x3"), Kind: account.SessionOwner, OwnerID: 999999, CSRF: "c", ExpiresAt: exp}, account.ErrNotFound},
		{"owner session without owner", account.Session{ID: "x4", Hash: sha("x4"), Kind: account.SessionOwner, CSRF: "c", ExpiresAt: exp}, account.ErrInvalid},
		{"operator session with owner", account.Session{ID: "x5", Hash: sha("x5"), Kind: account.SessionOperator, OwnerID: o.ID, CSRF: "c", ExpiresAt: exp}, account.ErrInvalid},
		{"unknown kind", account.Session{ID: "x6", Hash: sha("x6"), Kind: "robot", CSRF: "c", ExpiresAt: exp}, account.ErrInvalid},
		{"no hash", account.Session{ID: "x7", Kind: account.SessionOperator, CSRF: "c", ExpiresAt: exp}, account.ErrInvalid},
		{"no CSRF token", account.Session{ID: "x8", Hash: sha("x8"), Kind: account.SessionOperator, ExpiresAt: exp}, account.ErrInvalid},
		{"no expiry", account.Session{ID: "x9", Hash: sha("x9"), Kind: account.SessionOperator, CSRF: "c"}, account.ErrInvalid},
	} {
		isErr(t, "CreateSession("+c.what+")", st.CreateSession(ctx(t), c.se), c.want)
	}
	_, err = st.SessionByHash(ctx(t), sha("x3"))
	isErr(t, "SessionByHash(refused session)", err, account.ErrNotFound)

	// Touch moves LastSeenAt forward, never back.
	later := t0.Add(10 * time.Minute)
	if err := st.TouchSession(ctx(t), se.ID, later); err != nil {
		t.Fatal(err)
	}
	if err := st.TouchSession(ctx(t), se.ID, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.SessionByHash(ctx(t), se.Hash); !got.LastSeenAt.Equal(later) {
		t.Fatalf("LastSeenAt = %v, want %v", got.LastSeenAt, later)
	}
	if got, _ := st.SessionByHash(ctx(t), op.Hash); !got.LastSeenAt.Equal(t0) {
		t.Fatalf("touching one session moved another: %+v", got)
	}

	// Revoke keeps the first time; a revoked session is still returned.
	r1 := t0.Add(20 * time.Minute)
	if err := st.RevokeSession(ctx(t), se.ID, r1); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeSession(ctx(t), se.ID, r1.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SessionByHash(ctx(t), se.Hash); err != nil || got.RevokedAt == nil || !got.RevokedAt.Equal(r1) {
		t.Fatalf("revoked session = %+v, %v; want revoked at %v", got, err, r1)
	}

	isErr(t, "TouchSession(unknown)", st.TouchSession(ctx(t), "nope", t0), account.ErrNotFound)
	isErr(t, "RevokeSession(unknown)", st.RevokeSession(ctx(t), "nope", t0), account.ErrNotFound)
	_, err = st.SessionByHash(ctx(t), sha("nope"))
	isErr(t, "SessionByHash(unknown)", err, account.ErrNotFound)

	// Sign out everywhere: the owner's live sessions only.
	now := t0.Add(time.Hour)
	l1 := ownerSession(t, st, o.ID, "l1", exp)
	l2 := ownerSession(t, st, o.ID, "l2", exp)
	expired := ownerSession(t, st, o.ID, "expired", now) // expiry not after now
	others := ownerSession(t, st, other.ID, "others", exp)
	n, err := st.RevokeOwnerSessions(ctx(t), o.ID, now)
	if err != nil || n != 2 {
		t.Fatalf("RevokeOwnerSessions = %d, %v; want 2", n, err)
	}
	for _, c := range []struct {
		se   account.Session
		want *time.Time
	}{{l1, &now}, {l2, &now}, {expired, nil}, {others, nil}, {se, &r1}, {op, nil}} {
		got, err := st.SessionByHash(ctx(t), c.se.Hash)
		if err != nil || !sameTimePtr(got.RevokedAt, c.want) {
			t.Fatalf("after RevokeOwnerSessions, %s revoked at %v (%v), want %v", c.se.ID, got.RevokedAt, err, c.want)
		}
	}
	if n, err := st.RevokeOwnerSessions(ctx(t), o.ID, now.Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("RevokeOwnerSessions again = %d, %v; want 0", n, err)
	}
	_, err = st.RevokeOwnerSessions(ctx(t), 999999, now)
	isErr(t, "RevokeOwnerSessions(unknown)", err, account.ErrNotFound)
}

func sameRequest(a, b account.TierRequest) bool {
	return a.ID == b.ID && a.AccountID == b.AccountID && a.OwnerID == b.OwnerID && a.Tier == b.Tier &&
		a.MonthlyLimit == b.MonthlyLimit && a.Note == b.Note && a.Status == b.Status &&
		a.CreatedAt.Equal(b.CreatedAt) && sameTimePtr(a.DecidedAt, b.DecidedAt)
}

func requestIDs(rs []account.TierRequest) []int64 {
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

func testTierRequests(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	b := newAccount(t, st, 10, 0)
	o := newOwner(t, st, a.ID, "ann@example.com")
	ob := newOwner(t, st, b.ID, "bob@example.com")

	r1, err := st.CreateTierRequest(ctx(t), account.TierRequest{AccountID: a.ID, OwnerID: o.ID, Tier: account.Enterprise, MonthlyLimit: 5_000_000, Note: "we grow 成长", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if r1.ID == 0 || r1.AccountID != a.ID || r1.OwnerID != o.ID || r1.Tier != account.Enterprise || r1.MonthlyLimit != 5_000_000 ||
		r1.Note != "we grow 成长" || r1.Status != account.RequestPending || !r1.CreatedAt.Equal(t0) || r1.DecidedAt != nil {
		t.Fatalf("CreateTierRequest = %+v", r1)
	}
	_, err = st.CreateTierRequest(ctx(t), account.TierRequest{AccountID: a.ID, Tier: account.Pro, CreatedAt: t0})
	isErr(t, "a second pending request", err, account.ErrConflict)
	// A limit counts for Enterprise only; the operator may file one
	// without an owner.
	rb, err := st.CreateTierRequest(ctx(t), account.TierRequest{AccountID: b.ID, Tier: account.Pro, MonthlyLimit: 77, CreatedAt: t0.Add(time.Second)})
	if err != nil || rb.MonthlyLimit != 0 || rb.OwnerID != 0 {
		t.Fatalf("CreateTierRequest(pro, limit 77) = %+v, %v; want limit 0, no owner", rb, err)
	}
	for _, c := range []struct {
		what string
		r    account.TierRequest
		want error
	}{
		{"unknown account", account.TierRequest{AccountID: 999999, Tier: account.Pro}, account.ErrNotFound},
		{"unknown owner", account.TierRequest{AccountID: b.ID, OwnerID: 999999, Tier: account.Pro}, account.ErrNotFound},
		{"owner of another account", account.TierRequest{AccountID: a.ID, OwnerID: ob.ID, Tier: account.Pro}, account.ErrInvalid},
		{"tier gold", account.TierRequest{AccountID: a.ID, Tier: "gold"}, account.ErrInvalid},
		{"negative limit", account.TierRequest{AccountID: a.ID, Tier: account.Enterprise, MonthlyLimit: -1}, account.ErrInvalid},
	} {
		_, err := st.CreateTierRequest(ctx(t), c.r)
		isErr(t, "CreateTierRequest("+c.what+")", err, c.want)
	}

	all, err := st.TierRequests(ctx(t), 0, "")
	if err != nil || !slices.Equal(requestIDs(all), []int64{rb.ID, r1.ID}) || !sameRequest(all[1], r1) {
		t.Fatalf("TierRequests(all) = %+v, %v; want %d then %d", all, err, rb.ID, r1.ID)
	}
	if rs, err := st.TierRequests(ctx(t), a.ID, ""); err != nil || !slices.Equal(requestIDs(rs), []int64{r1.ID}) {
		t.Fatalf("TierRequests(a) = %+v, %v", rs, err)
	}
	if rs, err := st.TierRequests(ctx(t), 0, account.RequestApproved); err != nil || rs == nil || len(rs) != 0 {
		t.Fatalf("TierRequests(approved) before any decision = %#v, %v; want an empty list", rs, err)
	}
	_, err = st.TierRequests(ctx(t), 999999, "")
	isErr(t, "TierRequests(unknown account)", err, account.ErrNotFound)
	_, err = st.TierRequests(ctx(t), 0, "maybe")
	isErr(t, "TierRequests(status maybe)", err, account.ErrInvalid)

	// Approval sets the tier and the limit with the decision.
	d1 := t0.Add(time.Hour)
	r, acct, err := st.DecideTierRequest(ctx(t), r1.ID, true, d1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != account.RequestApproved || r.DecidedAt == nil || !r.DecidedAt.Equal(d1) || r.ID != r1.ID {
		t.Fatalf("approved request = %+v", r)
	}
	if acct.ID != a.ID || acct.Tier != account.Enterprise || acct.CustomLimit != 5_000_000 || acct.MonthlyLimit != 5_000_000 {
		t.Fatalf("account after approval = %+v", acct)
	}
	if again, err := st.Account(ctx(t), a.ID); err != nil || !sameAccount(again, acct) {
		t.Fatalf("Account after approval = %+v, %v; want %+v", again, err, acct)
	}
	_, _, err = st.DecideTierRequest(ctx(t), r1.ID, false, d1)
	isErr(t, "deciding an approved request", err, account.ErrConflict)
	_, _, err = st.DecideTierRequest(ctx(t), 999999, true, d1)
	isErr(t, "DecideTierRequest(unknown)", err, account.ErrNotFound)

	// Refusal leaves the account as it was.
	before, _ := st.Account(ctx(t), b.ID)
	r, acct, err = st.DecideTierRequest(ctx(t), rb.ID, false, d1)
	if err != nil || r.Status != account.RequestRefused || !sameAccount(acct, before) {
		t.Fatalf("refusal = %+v, %+v, %v; want the account unchanged %+v", r, acct, err, before)
	}
	if now, _ := st.Account(ctx(t), b.ID); !sameAccount(now, before) {
		t.Fatalf("a refusal changed the account: %+v", now)
	}
	_, _, err = st.DecideTierRequest(ctx(t), rb.ID, true, d1)
	isErr(t, "approving a refused request", err, account.ErrConflict)
	if now, _ := st.Account(ctx(t), b.ID); !sameAccount(now, before) {
		t.Fatalf("approving a refused request changed the account: %+v", now)
	}

	// Once decided, the account may ask again; approving Pro drops the
	// custom limit.
	r2, err := st.CreateTierRequest(ctx(t), account.TierRequest{AccountID: a.ID, OwnerID: o.ID, Tier: account.Pro, CreatedAt: d1})
	if err != nil {
		t.Fatalf("a new request after a decision: %v", err)
	}
	if _, acct, err := st.DecideTierRequest(ctx(t), r2.ID, true, d1); err != nil || acct.Tier != account.Pro || acct.CustomLimit != 0 || acct.MonthlyLimit != account.ProMonthlyLimit {
		t.Fatalf("approving pro = %+v, %v", acct, err)
	}
	rs, err := st.TierRequests(ctx(t), a.ID, account.RequestApproved)
	if err != nil || !slices.Equal(requestIDs(rs), []int64{r2.ID, r1.ID}) {
		t.Fatalf("TierRequests(a, approved) = %+v, %v", rs, err)
	}
	if rs, _ := st.TierRequests(ctx(t), 0, account.RequestPending); len(rs) != 0 {
		t.Fatalf("pending requests left: %+v", rs)
	}
}

func testTierRequestRace(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.CreateTierRequest(ctx(t), account.TierRequest{AccountID: a.ID, Tier: account.Pro, Note: fmt.Sprint(i), CreatedAt: t0})
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, account.ErrConflict):
			t.Fatalf("a losing request failed with %v, want ErrConflict", err)
		}
	}
	rs, err := st.TierRequests(ctx(t), a.ID, account.RequestPending)
	if won != 1 || err != nil || len(rs) != 1 {
		t.Fatalf("%d of %d concurrent requests succeeded, %d pending (%v); want exactly one", won, n, len(rs), err)
	}

	// Racing decisions on the request: one wins, the account follows it.
	type decision struct {
		r   account.TierRequest
		a   account.Account
		err error
	}
	ds := make([]decision, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, acct, err := st.DecideTierRequest(ctx(t), rs[0].ID, i%2 == 0, t0.Add(time.Hour))
			ds[i] = decision{r, acct, err}
		}()
	}
	wg.Wait()
	var win *decision
	for i := range ds {
		switch d := &ds[i]; {
		case d.err == nil && win != nil:
			t.Fatalf("two concurrent decisions of one request succeeded: %+v and %+v", win.r, d.r)
		case d.err == nil:
			win = d
		case !errors.Is(d.err, account.ErrConflict):
			t.Fatalf("a losing decision failed with %v, want ErrConflict", d.err)
		}
	}
	if win == nil {
		t.Fatal("no decision of a pending request succeeded")
	}
	wantTier := account.Enterprise // newAccount's
	if win.r.Status == account.RequestApproved {
		wantTier = account.Pro
	}
	if got, err := st.Account(ctx(t), a.ID); err != nil || got.Tier != wantTier || !sameAccount(got, win.a) {
		t.Fatalf("after the %s decision the account is %+v (%v), want tier %s", win.r.Status, got, err, wantTier)
	}
}

func sameAudit(a, b account.AuditEntry) bool {
	ta, tb := a.At, b.At
	a.At, b.At = time.Time{}, time.Time{}
	return a == b && ta.Equal(tb)
}

func auditIDs(es []account.AuditEntry) []int64 {
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

func testAudit(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	b := newAccount(t, st, 10, 0)
	if es, err := st.Audit(ctx(t), 0, 0, 10); err != nil || es == nil || len(es) != 0 {
		t.Fatalf("Audit of an empty log = %#v, %v; want an empty list", es, err)
	}
	var ids []int64 // oldest first
	var entries []account.AuditEntry
	for i, e := range []account.AuditEntry{
		{Actor: "cli", Action: "account.create", AccountID: a.ID, Detail: `{"name":"acct"}`},
		{Actor: "token", Action: "credits.add", AccountID: b.ID, Detail: `{"delta":5}`},
		{Actor: "session:abc", Action: "key.revoke", AccountID: a.ID, Target: "k1"},
		{Actor: "owner:1/session:def", Action: "tier.request", AccountID: a.ID, Target: "7"},
		{Actor: "session:abc", Action: "console.signin"}, // no account
		{Actor: "cli", Action: "owner.invite", AccountID: a.ID, Target: "ann@example.com"},
	} {
		e.At = t0.Add(time.Duration(i) * time.Second)
		got, err := st.AppendAudit(ctx(t), e)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID == 0 || (len(ids) > 0 && got.ID <= ids[len(ids)-1]) {
			t.Fatalf("AppendAudit gave ID %d after %v", got.ID, ids)
		}
		e.ID = got.ID
		if !sameAudit(got, e) {
			t.Fatalf("AppendAudit = %+v, want %+v", got, e)
		}
		ids = append(ids, got.ID)
		entries = append(entries, e)
	}
	rev := func(idx ...int) []int64 {
		out := make([]int64, len(idx))
		for i, j := range idx {
			out[i] = ids[j]
		}
		return out
	}

	all, err := st.Audit(ctx(t), 0, 0, 0)
	if err != nil || !slices.Equal(auditIDs(all), rev(5, 4, 3, 2, 1, 0)) {
		t.Fatalf("Audit(all) = %v, %v; want %v", auditIDs(all), err, rev(5, 4, 3, 2, 1, 0))
	}
	for i, e := range all {
		if w := entries[len(entries)-1-i]; !sameAudit(e, w) {
			t.Fatalf("Audit entry %+v, want %+v", e, w)
		}
	}
	// Paging an account's entries by the before cursor.
	p1, err := st.Audit(ctx(t), a.ID, 0, 2)
	if err != nil || !slices.Equal(auditIDs(p1), rev(5, 3)) {
		t.Fatalf("Audit(a, page 1) = %v, %v; want %v", auditIDs(p1), err, rev(5, 3))
	}
	p2, err := st.Audit(ctx(t), a.ID, p1[1].ID, 2)
	if err != nil || !slices.Equal(auditIDs(p2), rev(2, 0)) {
		t.Fatalf("Audit(a, page 2) = %v, %v; want %v", auditIDs(p2), err, rev(2, 0))
	}
	if p3, err := st.Audit(ctx(t), a.ID, p2[1].ID, 2); err != nil || len(p3) != 0 {
		t.Fatalf("Audit(a, page 3) = %v, %v; want none", auditIDs(p3), err)
	}
	if es, err := st.Audit(ctx(t), b.ID, 0, 10); err != nil || !slices.Equal(auditIDs(es), rev(1)) {
		t.Fatalf("Audit(b) = %v, %v", auditIDs(es), err)
	}
	if es, err := st.Audit(ctx(t), 0, ids[2], 10); err != nil || !slices.Equal(auditIDs(es), rev(1, 0)) {
		t.Fatalf("Audit(all, before %d) = %v, %v", ids[2], auditIDs(es), err)
	}

	_, err = st.Audit(ctx(t), 999999, 0, 10)
	isErr(t, "Audit(unknown account)", err, account.ErrNotFound)
	_, err = st.AppendAudit(ctx(t), account.AuditEntry{Action: "x", At: t0})
	isErr(t, "AppendAudit(no actor)", err, account.ErrInvalid)
	_, err = st.AppendAudit(ctx(t), account.AuditEntry{Actor: "cli", At: t0})
	isErr(t, "AppendAudit(no action)", err, account.ErrInvalid)
}

func testPurgeEnded(t *testing.T, st account.Store) {
	a := newAccount(t, st, 10, 0)
	ann := newOwner(t, st, a.ID, "ann@example.com")
	bob := newOwner(t, st, a.ID, "bob@example.com")
	before := t0.Add(2 * time.Hour)

	live := ownerSession(t, st, bob.ID, "live", t0.Add(7*24*time.Hour))
	expired := ownerSession(t, st, bob.ID, "expired", t0.Add(time.Hour))
	revokedOld := ownerSession(t, st, bob.ID, "revoked-old", t0.Add(7*24*time.Hour))
	revokedNew := ownerSession(t, st, bob.ID, "revoked-new", t0.Add(7*24*time.Hour))
	operator := account.Session{ID: "operator", Hash: sha("session operator"), Kind: account.SessionOperator,
		CSRF: "csrf-operator", CreatedAt: t0, LastSeenAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := st.CreateSession(ctx(t), operator); err != nil {
		t.Fatal(err)
	}
	for id, at := range map[string]time.Time{revokedOld.ID: t0.Add(time.Minute), revokedNew.ID: t0.Add(3 * time.Hour)} {
		if err := st.RevokeSession(ctx(t), id, at); err != nil {
			t.Fatal(err)
		}
	}

	used := account.OwnerToken{Hash: sha("used"), OwnerID: ann.ID, Purpose: account.TokenInvite, CreatedAt: t0, ExpiresAt: t0.Add(72 * time.Hour)}
	lapsed := account.OwnerToken{Hash: sha("lapsed"), OwnerID: bob.ID, Purpose: account.TokenReset, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	open := account.OwnerToken{Hash: sha("open"), OwnerID: bob.ID, Purpose: account.TokenReset, CreatedAt: t0, ExpiresAt: t0.Add(72 * time.Hour)}
	for _, tk := range []account.OwnerToken{used, lapsed, open} {
		if err := st.CreateOwnerToken(ctx(t), tk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.UseOwnerToken(ctx(t), used.Hash, t0.Add(time.Minute), "$argon2id$x"); err != nil {
		t.Fatal(err)
	}

	sessions, tokens, err := st.PurgeEnded(ctx(t), before)
	if err != nil || sessions != 3 || tokens != 2 {
		t.Fatalf("PurgeEnded = %d sessions, %d tokens, %v; want 3 (expired, revoked before, operator's expired) and 2 (used, lapsed)", sessions, tokens, err)
	}
	for _, se := range []account.Session{expired, revokedOld, operator} {
		_, err := st.SessionByHash(ctx(t), se.Hash)
		isErr(t, "SessionByHash(purged "+se.ID+")", err, account.ErrNotFound)
	}
	for _, se := range []account.Session{live, revokedNew} {
		if _, err := st.SessionByHash(ctx(t), se.Hash); err != nil {
			t.Errorf("session %s ended after the cut or not at all, yet: %v", se.ID, err)
		}
	}
	for _, tk := range []account.OwnerToken{used, lapsed} {
		_, err := st.OwnerToken(ctx(t), tk.Hash)
		isErr(t, "OwnerToken(purged)", err, account.ErrNotFound)
	}
	if _, err := st.OwnerToken(ctx(t), open.Hash); err != nil {
		t.Errorf("a live link was purged: %v", err)
	}
	// Nothing more to purge: a second call deletes nothing.
	if s, k, err := st.PurgeEnded(ctx(t), before); err != nil || s != 0 || k != 0 {
		t.Errorf("second PurgeEnded = %d, %d, %v; want 0, 0", s, k, err)
	}
}
