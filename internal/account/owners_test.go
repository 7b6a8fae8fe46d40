package account_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
	"golang.org/x/crypto/argon2"
)

const goodPassword = "correct horse battery stapler"

func TestPasswordHash(t *testing.T) {
	h := account.HashPassword(goodPassword)
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q: want PHC argon2id with m=19456,t=2,p=1", h)
	}
	if h2 := account.HashPassword(goodPassword); h2 == h {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	for _, c := range []struct {
		pw   string
		want bool
	}{
		{goodPassword, true},
		{goodPassword + " ", false},
		{"Correct horse battery stapler", false},
		{"", false},
	} {
		if ok, err := account.CheckPassword(h, c.pw); err != nil || ok != c.want {
			t.Errorf("CheckPassword(%q) = %v, %v; want %v", c.pw, ok, err, c.want)
		}
	}
	// NFKC: a full-width password matches its ASCII twin.
	h = account.HashPassword("ｆｕｌｌｗｉｄｔｈ ｐａｓｓｗｏｒｄ")
	if ok, _ := account.CheckPassword(h, "fullwidth password"); !ok {
		t.Error("a full-width password does not match its NFKC form")
	}

	// The parameters are read from the hash, not assumed.
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte("other parameters here"), salt, 1, 8*1024, 2, 24)
	b64 := base64.RawStdEncoding
	other := fmt.Sprintf("$argon2id$v=19$m=8192,t=1,p=2$%s$%s", b64.EncodeToString(salt), b64.EncodeToString(key))
	if ok, err := account.CheckPassword(other, "other parameters here"); err != nil || !ok {
		t.Errorf("hash with m=8192,t=1,p=2 and a 24-byte key: %v, %v", ok, err)
	}
	if ok, _ := account.CheckPassword(other, "other parameters herE"); ok {
		t.Error("a wrong password matches the m=8192 hash")
	}
	for _, bad := range []string{
		"",
		"plain",
		strings.Replace(other, "argon2id", "argon2i", 1),
		strings.Replace(other, "v=19", "v=16", 1),
		strings.Replace(other, "m=8192", "m=99999999", 1),
		strings.Replace(other, "t=1", "t=0", 1),
		strings.Replace(other, "p=2", "p=300", 1),
		strings.Replace(other, "m=8192,", "", 1),
		strings.Replace(other, "t=1", "x=1", 1),
		other[:strings.LastIndexByte(other, '$')] + "$!!",
		other + "$extra",
	} {
		if ok, err := account.CheckPassword(bad, "other parameters here"); err == nil || ok {
			t.Errorf("CheckPassword(%q) = %v, %v; want an error", bad, ok, err)
		}
	}
}

func TestPasswordRules(t *testing.T) {
	const email = "alice.smith@example.com"
	for _, c := range []struct {
		pw     string
		reason string // a part of the refusal's reason; "" when accepted
	}{
		{goodPassword, ""},
		{"fifteen chars!!", ""},           // exactly 15
		{"fourteen chars", "at least 15"}, // 14
		{"密码密码密码密码密码密码密码", "at least 15"}, // 14 code points, 42 bytes
		{"我的密码是一首很长的诗歌而且没有人知道", ""},       // 19 code points
		{"ﬃﬃﬃ ligatures here", ""},        // NFKC makes it longer, not shorter
		{strings.Repeat("long phrase ", 11) + "ok", "at most 128"},
		{strings.Repeat("abcd ", 25) + "xyz", ""}, // 128
		{"PasswordPassword", "common passwords"},
		{"password password", "common passwords"},
		{"123456789012345", "common passwords"},
		{"correct horse battery staple", "common passwords"},
		{"aaaaaaaaaaaaaaa", "common passwords"},
		{"aaaaaaaaaaaaaaaaaaaa", "too few characters"},
		{"bbbbbbbbbbbbbbbbbbbb", "too few characters"},
		{"abababababababab", "too few characters"},
		{"abcdefghijklmnop", "common passwords"},
		{"bcdefghijklmnopqr", "too few characters"},
		{"alice.smith@example.com", "email"},
		{"Alice.Smith@Example.com!!", "email"},
		{"alice.smith2026!", "email"},
		{"ipatlas ipatlas 2026", "service's name"},
		{"IPATLAS-password", "service's name"},
		{"my ipatlas account is mine alone", ""},
		{"alice.smith and a long tail", ""},
		{"bad\xffutf8 but long enough", "UTF-8"},
	} {
		err := account.CheckPasswordRules(c.pw, email)
		var we *account.WeakPasswordError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%q refused: %v", c.pw, err)
		case c.reason != "" && (!errors.As(err, &we) || !strings.Contains(we.Reason, c.reason)):
			t.Errorf("%q: got %v, want a refusal mentioning %q", c.pw, err, c.reason)
		case c.reason != "" && !errors.Is(err, account.ErrInvalid):
			t.Errorf("%q: the refusal does not match ErrInvalid", c.pw)
		}
	}
}

func TestNormalizeEmail(t *testing.T) {
	for in, want := range map[string]string{
		"  Alice@Example.COM ": "alice@example.com",
		"a+tag@b.example":      "a+tag@b.example",
	} {
		if got, err := account.NormalizeEmail(in); err != nil || got != want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "alice", "Alice <a@b.example>", "a@b.example, c@d.example", "a b@c.example", "a@b\n.example", strings.Repeat("a", 250) + "@b.example"} {
		if _, err := account.NormalizeEmail(in); !errors.Is(err, account.ErrInvalid) {
			t.Errorf("NormalizeEmail(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

// portal is a service on a fresh SQLite store with a clock, and an
// account to work on.
type portal struct {
	svc   *account.Service
	st    account.Store
	clock *storetest.Clock
	acct  account.Account
	ctx   context.Context
}

func newPortal(t *testing.T) *portal {
	t.Helper()
	st := newStore(t)
	clock := storetest.NewClock(t0)
	p := &portal{svc: &account.Service{Store: st, Now: clock.Now}, st: st, clock: clock,
		ctx: account.WithActor(t.Context(), "test")}
	a, err := p.svc.CreateAccount(p.ctx, account.AccountParams{Name: "acme", Tier: account.Free})
	if err != nil {
		t.Fatal(err)
	}
	p.acct = a
	return p
}

func (p *portal) advance(d time.Duration) { p.clock.Set(p.clock.Now().Add(d)) }

// owner invites email and sets the password through the link.
func (p *portal) owner(t *testing.T, email, password string) account.Owner {
	t.Helper()
	l, err := p.svc.Invite(p.ctx, p.acct.ID, email)
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := p.svc.SetPassword(p.ctx, l.Token, password)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// actions lists the audit log's actions, oldest first.
func (p *portal) actions(t *testing.T) []string {
	t.Helper()
	es, err := p.svc.AuditLog(p.ctx, 0, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(es) - 1; i >= 0; i-- {
		out = append(out, es[i].Action)
	}
	return out
}

func TestInviteAndSetPassword(t *testing.T) {
	p := newPortal(t)
	l, err := p.svc.Invite(p.ctx, p.acct.ID, " Bob@Example.com ")
	if err != nil {
		t.Fatal(err)
	}
	if l.Owner.Email != "bob@example.com" || l.Owner.AccountID != p.acct.ID || l.Owner.HasPassword ||
		l.Purpose != account.TokenInvite || !l.ExpiresAt.Equal(t0.Add(account.LinkTTL)) || len(l.Token) != 43 {
		t.Fatalf("Invite = %+v", l)
	}
	// Inviting again finds the same owner and makes another link.
	l2, err := p.svc.Invite(p.ctx, p.acct.ID, "bob@example.com")
	if err != nil || l2.Owner.ID != l.Owner.ID || l2.Token == l.Token {
		t.Fatalf("second Invite = %+v, %v", l2, err)
	}
	other, err := p.svc.CreateAccount(p.ctx, account.AccountParams{Name: "other", Tier: account.Free})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.Invite(p.ctx, other.ID, "BOB@example.com"); !errors.Is(err, account.ErrConflict) {
		t.Fatalf("Invite of another account's owner = %v, want ErrConflict", err)
	}
	if _, err := p.svc.Invite(p.ctx, 4242, "c@example.com"); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("Invite to an unknown account = %v, want ErrNotFound", err)
	}
	if _, err := p.svc.Invite(p.ctx, p.acct.ID, "not an email"); !errors.Is(err, account.ErrInvalid) {
		t.Fatalf("Invite(not an email) = %v, want ErrInvalid", err)
	}

	for _, tok := range []string{"", "short", strings.Repeat("A", 43), l.Token + "x", strings.Repeat("é", 43)} {
		if _, _, err := p.svc.SetPassword(p.ctx, tok, goodPassword); !errors.Is(err, account.ErrBadToken) {
			t.Errorf("SetPassword(%q) = %v, want ErrBadToken", tok, err)
		}
	}
	// A weak password leaves the token usable.
	var we *account.WeakPasswordError
	if _, _, err := p.svc.SetPassword(p.ctx, l.Token, "bob@example.com123"); !errors.As(err, &we) {
		t.Fatalf("SetPassword(the email) = %v, want WeakPasswordError", err)
	}
	if _, _, err := p.svc.SetPassword(p.ctx, l.Token, "short"); !errors.As(err, &we) {
		t.Fatalf("SetPassword(short) = %v, want WeakPasswordError", err)
	}
	o, ended, err := p.svc.SetPassword(p.ctx, l.Token, goodPassword)
	if err != nil || !o.HasPassword || o.ID != l.Owner.ID || ended != 0 {
		t.Fatalf("SetPassword = %+v, ended %d, %v; a first password ends no session", o, ended, err)
	}
	if _, _, err := p.svc.SetPassword(p.ctx, l.Token, goodPassword+"!"); !errors.Is(err, account.ErrBadToken) {
		t.Fatalf("a used token = %v, want ErrBadToken", err)
	}
	// The second link expires after LinkTTL.
	p.advance(account.LinkTTL)
	if _, _, err := p.svc.SetPassword(p.ctx, l2.Token, goodPassword); !errors.Is(err, account.ErrBadToken) {
		t.Fatalf("an expired token = %v, want ErrBadToken", err)
	}

	// An owner with a password invited again gets a reset link.
	l3, err := p.svc.Invite(p.ctx, p.acct.ID, "bob@example.com")
	if err != nil || l3.Purpose != account.TokenReset {
		t.Fatalf("Invite of an owner with a password = %+v, %v; want a reset link", l3, err)
	}
	os, err := p.svc.Owners(p.ctx, p.acct.ID)
	if err != nil || len(os) != 1 || os[0].Email != "bob@example.com" || !os[0].HasPassword {
		t.Fatalf("Owners = %+v, %v", os, err)
	}
	if os, err := p.svc.Owners(p.ctx, other.ID); err != nil || os == nil || len(os) != 0 {
		t.Fatalf("Owners of an account without = %#v, %v; want an empty list", os, err)
	}
	if _, err := p.svc.Owners(p.ctx, 4242); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("Owners(unknown) = %v, want ErrNotFound", err)
	}

	es, err := p.svc.AuditLog(p.ctx, p.acct.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Action+" "+e.Target+" "+e.Actor)
	}
	want := []string{
		"owner.invite bob@example.com test",
		"owner.password bob@example.com test",
		"owner.invite bob@example.com test",
		"owner.invite bob@example.com test",
		"account.create  test",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log, newest first:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(es[0].Detail), &detail); err != nil || detail["purpose"] != "reset" {
		t.Fatalf("detail of the last invite: %q (%v)", es[0].Detail, err)
	}
	for _, e := range es {
		if strings.Contains(e.Detail, l.Token) || strings.Contains(e.Detail, "argon2") {
			t.Fatalf("a secret in the audit log: %+v", e)
		}
	}
}

func TestResetLink(t *testing.T) {
	p := newPortal(t)
	o := p.owner(t, "carol@example.com", goodPassword)
	s1, _, err := p.svc.SignIn(p.ctx, "carol@example.com", goodPassword)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.ResetLink(p.ctx, 4242); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("ResetLink(unknown) = %v, want ErrNotFound", err)
	}
	l, err := p.svc.ResetLink(p.ctx, o.ID)
	if err != nil || l.Purpose != account.TokenReset || l.Owner.ID != o.ID {
		t.Fatalf("ResetLink = %+v, %v", l, err)
	}
	// The old password works until the link is used.
	if _, _, err := p.svc.SignIn(p.ctx, "carol@example.com", goodPassword); err != nil {
		t.Fatal(err)
	}
	const newPassword = "a brand new passphrase"
	// Two browsers were signed in: the reset says it ended both.
	if _, ended, err := p.svc.SetPassword(context.Background(), l.Token, newPassword); err != nil || ended != 2 {
		t.Fatalf("SetPassword after two sign-ins: ended %d, %v; want 2", ended, err)
	}
	if _, _, err := p.svc.SignIn(p.ctx, "carol@example.com", goodPassword); !errors.Is(err, account.ErrSignIn) {
		t.Fatalf("the old password after a reset = %v, want ErrSignIn", err)
	}
	if _, _, err := p.svc.SignIn(p.ctx, "carol@example.com", newPassword); err != nil {
		t.Fatal(err)
	}
	// The reset signed out the sessions opened before it.
	if _, err := p.svc.CheckSession(p.ctx, s1.Secret, account.SessionOwner); !errors.Is(err, account.ErrNoSession) {
		t.Fatalf("a session from before the reset = %v, want ErrNoSession", err)
	}
	es, _ := p.svc.AuditLog(p.ctx, p.acct.ID, 0, 2)
	if es[0].Action != "owner.password" || es[0].Actor != fmt.Sprintf("owner:%d", o.ID) || es[1].Action != "owner.reset_link" {
		t.Fatalf("audit after a reset: %+v", es)
	}
}

func TestSignInBackoff(t *testing.T) {
	p := newPortal(t)
	p.owner(t, "dave@example.com", goodPassword)
	if _, err := p.svc.Invite(p.ctx, p.acct.ID, "nopass@example.com"); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{
		{"nobody@example.com", goodPassword},
		{"nopass@example.com", ""},
		{"nopass@example.com", goodPassword},
		{"", ""},
		{"dave@example.com", strings.Repeat("x", 4097)},
	} {
		_, _, err := p.svc.SignIn(p.ctx, c[0], c[1])
		var te *account.ThrottledError
		if !errors.Is(err, account.ErrSignIn) || errors.As(err, &te) || err.Error() != account.ErrSignIn.Error() {
			t.Errorf("SignIn(%q) = %v, want exactly ErrSignIn", c[0], err)
		}
	}
	ns, o, err := p.svc.SignIn(p.ctx, " DAVE@example.com", goodPassword)
	if err != nil || o.Email != "dave@example.com" || ns.Kind != account.SessionOwner || ns.OwnerID != o.ID ||
		ns.AccountID != p.acct.ID || len(ns.Secret) != 43 || ns.CSRF == "" || !ns.ExpiresAt.Equal(p.clock.Now().Add(7*24*time.Hour)) {
		t.Fatalf("SignIn = %+v, %+v, %v", ns, o, err)
	}

	// The over-long password above was refused before hashing and not
	// counted: five failures are free, then each locks for twice as long
	// as the one before.
	wrong := func() error { _, _, err := p.svc.SignIn(p.ctx, "dave@example.com", "wrong "+goodPassword); return err }
	var te *account.ThrottledError
	for i := 1; i <= 5; i++ {
		if err := wrong(); !errors.Is(err, account.ErrSignIn) || errors.As(err, &te) {
			t.Fatalf("failure %d = %v, want ErrSignIn unthrottled", i, err)
		}
	}
	if _, _, err := p.svc.SignIn(p.ctx, "dave@example.com", goodPassword); !errors.As(err, &te) || te.RetryAfter != time.Second || !errors.Is(err, account.ErrSignIn) {
		t.Fatalf("after 5 failures: %v, want throttled for 1s", err)
	}
	for _, lock := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		p.advance(lock)
		if err := wrong(); !errors.Is(err, account.ErrSignIn) || errors.As(err, &te) {
			t.Fatalf("a failure after the %v lock passed = %v", lock, err)
		}
		if err := wrong(); !errors.As(err, &te) || te.RetryAfter != 2*lock {
			t.Fatalf("right after it: %v, want throttled for %v", err, 2*lock)
		}
	}
	p.advance(8 * time.Second)
	if _, _, err := p.svc.SignIn(p.ctx, "dave@example.com", goodPassword); err != nil {
		t.Fatalf("the right password after the lock: %v", err)
	}
	// Success cleared the count: five failures again before a lock.
	for i := 1; i <= 4; i++ {
		if err := wrong(); errors.As(err, &te) {
			t.Fatalf("failure %d after a success is throttled", i)
		}
	}
	for _, a := range p.actions(t) {
		if strings.HasPrefix(a, "owner.signin") {
			t.Fatalf("a sign-in was audited: %v", p.actions(t))
		}
	}
}

func TestSignInLockCapped(t *testing.T) {
	p := newPortal(t)
	o := p.owner(t, "erin@example.com", goodPassword)
	// 30 failures recorded directly: the lock computed for the next one is
	// capped at 15 minutes.
	for range 30 {
		if _, err := p.st.SigninFailed(p.ctx, o.ID, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := p.svc.SignIn(p.ctx, "erin@example.com", "wrong "+goodPassword); !errors.Is(err, account.ErrSignIn) {
		t.Fatal(err)
	}
	var te *account.ThrottledError
	if _, _, err := p.svc.SignIn(p.ctx, "erin@example.com", goodPassword); !errors.As(err, &te) || te.RetryAfter != 15*time.Minute {
		t.Fatalf("after 31 failures: %v, want throttled for 15m", err)
	}
}

func TestSessions(t *testing.T) {
	p := newPortal(t)
	p.svc.OwnerSessions = account.SessionPolicy{Idle: time.Hour, Max: 3 * time.Hour}
	o := p.owner(t, "fay@example.com", goodPassword)
	signIn := func() account.NewSession {
		ns, _, err := p.svc.SignIn(p.ctx, "fay@example.com", goodPassword)
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	ns := signIn()
	if !ns.ExpiresAt.Equal(p.clock.Now().Add(3 * time.Hour)) {
		t.Fatalf("ExpiresAt %v, want 3h from now", ns.ExpiresAt)
	}
	check := func(secret, kind string) (account.Session, error) { return p.svc.CheckSession(p.ctx, secret, kind) }
	if s, err := check(ns.Secret, account.SessionOwner); err != nil || s.ID != ns.ID || s.OwnerID != o.ID || s.AccountID != p.acct.ID || s.CSRF != ns.CSRF {
		t.Fatalf("CheckSession = %+v, %v", s, err)
	}
	for _, c := range []struct{ secret, kind string }{
		{ns.Secret, account.SessionOperator},
		{"", account.SessionOwner},
		{ns.Secret[:42] + "x", account.SessionOwner},
		{strings.Repeat("x", 5000), account.SessionOwner},
	} {
		if _, err := check(c.secret, c.kind); !errors.Is(err, account.ErrNoSession) {
			t.Errorf("CheckSession(%q, %s) = %v, want ErrNoSession", c.secret, c.kind, err)
		}
	}

	// LastSeenAt is written at most once a minute, and keeps the session
	// alive while it is used.
	hash := account.HashSecret(ns.Secret)
	lastSeen := func() time.Time {
		s, err := p.st.SessionByHash(p.ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		return s.LastSeenAt
	}
	start := p.clock.Now()
	p.advance(59 * time.Second)
	if _, err := check(ns.Secret, account.SessionOwner); err != nil || !lastSeen().Equal(start) {
		t.Fatalf("after 59s: %v, last seen %v; want not written", err, lastSeen())
	}
	p.advance(time.Second)
	if s, err := check(ns.Secret, account.SessionOwner); err != nil || !lastSeen().Equal(p.clock.Now()) || !s.LastSeenAt.Equal(p.clock.Now()) {
		t.Fatalf("after 60s: %v, last seen %v; want now", err, lastSeen())
	}
	for range 3 {
		p.advance(59 * time.Minute)
		if _, err := check(ns.Secret, account.SessionOwner); err != nil {
			t.Fatalf("used every 59 minutes: %v", err)
		}
	}
	// ... up to its maximum, whatever the activity.
	p.advance(2*time.Minute - time.Second)
	if _, err := check(ns.Secret, account.SessionOwner); err != nil {
		t.Fatalf("just before the maximum: %v", err)
	}
	p.advance(time.Second)
	if _, err := check(ns.Secret, account.SessionOwner); !errors.Is(err, account.ErrNoSession) {
		t.Fatalf("at the maximum: %v, want ErrNoSession", err)
	}

	// Idle too long.
	ns = signIn()
	p.advance(time.Hour + time.Second)
	if _, err := check(ns.Secret, account.SessionOwner); !errors.Is(err, account.ErrNoSession) {
		t.Fatalf("idle over an hour: %v, want ErrNoSession", err)
	}

	// Sign out one; sign out everywhere.
	a, b, c := signIn(), signIn(), signIn()
	if err := p.svc.SignOut(p.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := check(a.Secret, account.SessionOwner); !errors.Is(err, account.ErrNoSession) {
		t.Fatalf("signed out: %v", err)
	}
	if _, err := check(b.Secret, account.SessionOwner); err != nil {
		t.Fatalf("another session after one signed out: %v", err)
	}
	// b, c and the idle session of before: unrevoked and before its
	// absolute expiry, it counts.
	n, err := p.svc.SignOutEverywhere(p.ctx, o.ID)
	if err != nil || n != 3 {
		t.Fatalf("SignOutEverywhere = %d, %v; want 3", n, err)
	}
	for _, s := range []account.NewSession{b, c} {
		if _, err := check(s.Secret, account.SessionOwner); !errors.Is(err, account.ErrNoSession) {
			t.Fatalf("after sign out everywhere: %v", err)
		}
	}
	if _, err := p.svc.SignOutEverywhere(p.ctx, 4242); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("SignOutEverywhere(unknown) = %v", err)
	}
	if acts := p.actions(t); acts[len(acts)-1] != "owner.signout_everywhere" {
		t.Fatalf("audit: %v", acts)
	}
}

func TestOperatorSession(t *testing.T) {
	p := newPortal(t)
	ns, err := p.svc.OperatorSession(p.ctx)
	if err != nil || ns.Kind != account.SessionOperator || ns.OwnerID != 0 || !ns.ExpiresAt.Equal(t0.Add(12*time.Hour)) {
		t.Fatalf("OperatorSession = %+v, %v", ns, err)
	}
	if _, err := p.svc.CheckSession(p.ctx, ns.Secret, account.SessionOwner); !errors.Is(err, account.ErrNoSession) {
		t.Fatalf("an operator session in the portal: %v", err)
	}
	p.advance(29 * time.Minute)
	if _, err := p.svc.CheckSession(p.ctx, ns.Secret, account.SessionOperator); err != nil {
		t.Fatal(err)
	}
	p.advance(31 * time.Minute)
	if _, err := p.svc.CheckSession(p.ctx, ns.Secret, account.SessionOperator); !errors.Is(err, account.ErrNoSession) {
		t.Fatalf("operator idle 31 minutes: %v, want ErrNoSession", err)
	}
	// A policy shortened after the session was made applies to it.
	ns, _ = p.svc.OperatorSession(p.ctx)
	p.advance(20 * time.Minute)
	p.svc.OperatorSessions = account.SessionPolicy{Max: 15 * time.Minute}
	if _, err := p.svc.CheckSession(p.ctx, ns.Secret, account.SessionOperator); !errors.Is(err, account.ErrNoSession) {
		t.Fatalf("past a shortened maximum: %v, want ErrNoSession", err)
	}
}

func TestTierRequests(t *testing.T) {
	p := newPortal(t)
	o := p.owner(t, "gus@example.com", goodPassword)
	for _, c := range []struct {
		tier  account.Tier
		limit int64
		note  string
	}{
		{account.Free, 0, ""},
		{"gold", 0, ""},
		{account.Enterprise, 0, ""},
		{account.Pro, 5, ""},
		{account.Pro, 0, strings.Repeat("n", 1001)},
	} {
		if _, err := p.svc.RequestTier(p.ctx, p.acct.ID, o.ID, c.tier, c.limit, c.note); !errors.Is(err, account.ErrInvalid) {
			t.Errorf("RequestTier(%s, %d) = %v, want ErrInvalid", c.tier, c.limit, err)
		}
	}
	if _, err := p.svc.RequestTier(p.ctx, 4242, 0, account.Pro, 0, ""); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("RequestTier(unknown account) = %v", err)
	}
	r, err := p.svc.RequestTier(p.ctx, p.acct.ID, o.ID, account.Enterprise, 50000, "  we grow  ")
	if err != nil || r.Status != account.RequestPending || r.Note != "we grow" || r.MonthlyLimit != 50000 || r.OwnerID != o.ID {
		t.Fatalf("RequestTier = %+v, %v", r, err)
	}
	if _, err := p.svc.RequestTier(p.ctx, p.acct.ID, o.ID, account.Pro, 0, ""); !errors.Is(err, account.ErrConflict) {
		t.Fatalf("a second pending request = %v, want ErrConflict", err)
	}
	if rs, err := p.svc.TierRequests(p.ctx, 0, account.RequestPending); err != nil || len(rs) != 1 || rs[0].ID != r.ID {
		t.Fatalf("TierRequests(pending) = %+v, %v", rs, err)
	}
	if _, err := p.svc.TierRequests(p.ctx, 0, "maybe"); !errors.Is(err, account.ErrInvalid) {
		t.Fatalf("TierRequests(maybe) = %v", err)
	}

	// A key authenticated before the approval sees the new tier after it.
	svcKey, err := p.svc.CreateKey(p.ctx, p.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, a, err := p.svc.Authenticate(p.ctx, svcKey.Secret); err != nil || a.Tier != account.Free {
		t.Fatalf("Authenticate = %+v, %v", a, err)
	}
	got, err := p.svc.DecideTierRequest(p.ctx, r.ID, true)
	if err != nil || got.Status != account.RequestApproved || got.DecidedAt == nil {
		t.Fatalf("approve = %+v, %v", got, err)
	}
	if _, a, _ := p.svc.Authenticate(p.ctx, svcKey.Secret); a.Tier != account.Enterprise || a.MonthlyLimit != 50000 {
		t.Fatalf("after approval Authenticate sees %+v", a)
	}
	if _, err := p.svc.DecideTierRequest(p.ctx, r.ID, false); !errors.Is(err, account.ErrConflict) {
		t.Fatalf("deciding twice = %v, want ErrConflict", err)
	}
	if _, err := p.svc.DecideTierRequest(p.ctx, 4242, true); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("deciding an unknown request = %v, want ErrNotFound", err)
	}
	if _, err := p.svc.RequestTier(p.ctx, p.acct.ID, o.ID, account.Enterprise, 50000, ""); !errors.Is(err, account.ErrInvalid) {
		t.Fatalf("asking for the current tier = %v, want ErrInvalid", err)
	}
	r2, err := p.svc.RequestTier(p.ctx, p.acct.ID, o.ID, account.Pro, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.svc.DecideTierRequest(p.ctx, r2.ID, false); err != nil || got.Status != account.RequestRefused {
		t.Fatalf("refuse = %+v, %v", got, err)
	}
	if a, _ := p.svc.Account(p.ctx, p.acct.ID); a.Tier != account.Enterprise {
		t.Fatalf("a refusal changed the tier: %+v", a)
	}
	var acts []string
	for _, a := range p.actions(t) {
		if strings.HasPrefix(a, "tier.") {
			acts = append(acts, a)
		}
	}
	if got, want := strings.Join(acts, " "), "tier.request tier.approve tier.request tier.refuse"; got != want {
		t.Fatalf("audit: %s, want %s", got, want)
	}
}

// TestEveryChangeAudited drives each mutating method once and reads the
// audit log: what, to which account and key, and by whom.
func TestEveryChangeAudited(t *testing.T) {
	p := newPortal(t)
	ctx := account.WithActor(t.Context(), "session:abc")
	k, err := p.svc.CreateKey(ctx, p.acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := p.svc.CreateLabeledKey(ctx, p.acct.ID, " prod ")
	if err != nil || lk.Label != "prod" {
		t.Fatalf("CreateLabeledKey = %+v, %v", lk, err)
	}
	if _, err := p.svc.SetKeyLabel(ctx, k.ID, "staging"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.RotateKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.AddCredits(ctx, p.acct.ID, -5, "refund"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.svc.SetTier(ctx, p.acct.ID, account.Pro, 0); err != nil {
		t.Fatal(err)
	}
	// Refused changes leave no entry.
	p.svc.AddCredits(ctx, p.acct.ID, 0, "nothing")
	p.svc.SetTier(ctx, p.acct.ID, "gold", 0)
	p.svc.RevokeKey(ctx, "nosuchkey000")

	es, err := p.svc.AuditLog(p.ctx, p.acct.ID, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%s %s %s %s", e.Action, e.Target, e.Actor, e.Detail))
	}
	want := []string{
		`account.tier  session:abc {"monthly_limit":10000,"tier":"pro"}`,
		`credits.add  session:abc {"amount":-5,"balance":995,"ledger_id":2,"reason":"refund"}`,
		`key.revoke ` + k.ID + ` session:abc `,
		`key.rotate ` + k.ID + ` session:abc `,
		`key.label ` + k.ID + ` session:abc {"label":"staging"}`,
		`key.create ` + lk.ID + ` session:abc {"label":"prod"}`,
		`key.create ` + k.ID + ` session:abc {"label":""}`,
		`account.create  test {"credits":1000,"monthly_limit":1000,"name":"acme","tier":"free"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Paging: before and limit.
	page, err := p.svc.AuditLog(p.ctx, p.acct.ID, es[2].ID, 2)
	if err != nil || len(page) != 2 || page[0].ID != es[3].ID || page[1].ID != es[4].ID {
		t.Fatalf("AuditLog(before %d, 2) = %+v, %v", es[2].ID, page, err)
	}
	for _, c := range [][3]int64{{0, 0, 0}, {0, 0, 1001}, {0, -1, 10}, {-1, 0, 10}} {
		if _, err := p.svc.AuditLog(p.ctx, c[0], c[1], int(c[2])); !errors.Is(err, account.ErrInvalid) {
			t.Errorf("AuditLog%v = %v, want ErrInvalid", c, err)
		}
	}
}

// failingAudit is a store whose audit log cannot be written.
type failingAudit struct{ account.Store }

var errAuditDown = errors.New("audit table is gone")

func (failingAudit) AppendAudit(context.Context, account.AuditEntry) (account.AuditEntry, error) {
	return account.AuditEntry{}, errAuditDown
}

func TestAuditFailureKeepsTheChange(t *testing.T) {
	st := newStore(t)
	var failed []account.AuditEntry
	svc := &account.Service{Store: failingAudit{st}, Now: storetest.NewClock(t0).Now,
		AuditFailed: func(e account.AuditEntry, err error) {
			if !errors.Is(err, errAuditDown) {
				t.Errorf("AuditFailed got %v", err)
			}
			failed = append(failed, e)
		}}
	ctx := account.WithActor(t.Context(), "cli")
	a, err := svc.CreateAccount(ctx, account.AccountParams{Name: "x", Tier: account.Free})
	if err != nil {
		t.Fatalf("CreateAccount with a failing audit log = %v; the change was made and must be reported", err)
	}
	if _, err := svc.AddCredits(ctx, a.ID, 10, "gift"); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Account(t.Context(), a.ID); got.Credits != 1010 {
		t.Fatalf("credits %d, want 1010", got.Credits)
	}
	if len(failed) != 2 || failed[0].Action != "account.create" || failed[1].Action != "credits.add" || failed[1].Actor != "cli" {
		t.Fatalf("AuditFailed got %+v", failed)
	}
}

func TestPurgeEnded(t *testing.T) {
	p := newPortal(t)
	old, err := p.svc.OperatorSession(p.ctx) // ends at t0+12h
	if err != nil {
		t.Fatal(err)
	}
	p.advance(20 * 24 * time.Hour)
	recent, err := p.svc.OperatorSession(p.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.svc.SignOut(p.ctx, recent.ID); err != nil {
		t.Fatal(err)
	}
	// 30 days and 12 hours after t0: the first session ended 30 days ago
	// (kept, just), then a day later it is gone; the one signed out on day
	// 20 stays.
	p.advance(10*24*time.Hour + 12*time.Hour)
	if s, l, err := p.svc.PurgeEnded(p.ctx); err != nil || s != 0 || l != 0 {
		t.Fatalf("PurgeEnded at the retention's edge = %d, %d, %v; want nothing", s, l, err)
	}
	p.advance(24 * time.Hour)
	if s, _, err := p.svc.PurgeEnded(p.ctx); err != nil || s != 1 {
		t.Fatalf("PurgeEnded a day later = %d sessions, %v; want 1", s, err)
	}
	if _, err := p.st.SessionByHash(p.ctx, old.Hash); !errors.Is(err, account.ErrNotFound) {
		t.Errorf("the session that ended 31 days ago: %v, want ErrNotFound", err)
	}
	if _, err := p.st.SessionByHash(p.ctx, recent.Hash); err != nil {
		t.Errorf("the session signed out 11 days ago: %v", err)
	}
}
