package account_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// TestAllow is the one grant rule both stores apply: quota first, then
// credits, all or nothing per query.
func TestAllow(t *testing.T) {
	for _, c := range []struct {
		name                 string
		n, cost              int64
		limit, used, credits int64
		want                 int64
		deny                 account.Deny
	}{
		{"all granted", 5, 1, 10, 0, 100, 5, account.DenyNone},
		{"exactly the quota left", 5, 1, 10, 5, 100, 5, account.DenyNone},
		{"quota short", 5, 1, 10, 7, 100, 3, account.DenyQuota},
		{"quota used up", 5, 1, 10, 10, 100, 0, account.DenyQuota},
		{"over the quota already", 1, 1, 10, 12, 100, 0, account.DenyQuota},
		{"credits short", 5, 1, 10, 0, 2, 2, account.DenyCredits},
		{"no credits", 1, 1, 10, 0, 0, 0, account.DenyCredits},
		{"cost 3, credits for 2", 5, 3, 10, 0, 7, 2, account.DenyCredits},
		// Both short at the same point: the client meets the quota first.
		{"quota and credits end together", 5, 1, 10, 8, 2, 2, account.DenyQuota},
		{"credits end before the quota", 5, 1, 10, 8, 1, 1, account.DenyCredits},
		{"free queries", 5, 0, 10, 0, 0, 5, account.DenyNone},
	} {
		n, deny := account.Allow(account.ChargeRequest{N: c.n, Cost: c.cost}, c.limit, c.used, c.credits)
		if n != c.want || deny != c.deny {
			t.Errorf("%s: Allow = %d, %v; want %d, %v", c.name, n, deny, c.want, c.deny)
		}
	}
}

// TestDecide is the grant decision of every store's charge: a key that
// is unknown, revoked or has another hash is DenyKey with nothing else
// filled in; a live key gets Allow's answer, and Used and Credits after
// the grant.
func TestDecide(t *testing.T) {
	hash := []byte("0123456789abcdef0123456789abcdef")
	other := []byte("fedcba9876543210fedcba9876543210")
	live := &account.ChargedKey{AccountID: 7, Hash: hash, Tier: account.Pro, Limit: 10}
	revoked := &account.ChargedKey{AccountID: 7, Hash: hash, Revoked: true, Tier: account.Pro, Limit: 10}
	r := account.ChargeRequest{KeyID: "k", Hash: hash, N: 5, Cost: 2}
	for _, c := range []struct {
		name string
		r    account.ChargeRequest
		k    *account.ChargedKey
		want account.Grant
	}{
		{"unknown key", r, nil, account.Grant{KeyID: "k", Deny: account.DenyKey}},
		{"revoked key", r, revoked, account.Grant{KeyID: "k", Deny: account.DenyKey}},
		{"another hash", account.ChargeRequest{KeyID: "k", Hash: other, N: 5, Cost: 2}, live, account.Grant{KeyID: "k", Deny: account.DenyKey}},
		{"no hash", account.ChargeRequest{KeyID: "k", N: 5, Cost: 2}, live, account.Grant{KeyID: "k", Deny: account.DenyKey}},
		{"granted", r, live, account.Grant{KeyID: "k", AccountID: 7, Tier: account.Pro, Limit: 10, Granted: 5, Used: 9, Credits: 90}},
	} {
		if got := account.Decide(c.r, c.k, 4, 100); got != c.want {
			t.Errorf("%s: Decide = %+v, want %+v", c.name, got, c.want)
		}
	}
	// Part of it: the quota's rest, and what is left as it was.
	if got := account.Decide(r, live, 8, 100); got.Granted != 2 || got.Deny != account.DenyQuota || got.Used != 10 || got.Credits != 96 {
		t.Errorf("quota short: %+v", got)
	}
	if got := account.Decide(r, live, 0, 1); got.Granted != 0 || got.Deny != account.DenyCredits || got.Used != 0 || got.Credits != 1 {
		t.Errorf("no credits: %+v", got)
	}
}

func TestNewAccountNormalized(t *testing.T) {
	at := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	na, err := account.NewAccount{Name: "a", Tier: account.Pro, CustomLimit: 99, InitialCredits: 5, At: at}.Normalized()
	if err != nil || na.CustomLimit != 0 || na.Reason != account.DefaultGrantReason || !na.At.Equal(at) {
		t.Errorf("pro: %+v, %v; want no custom limit and the default reason", na, err)
	}
	na, err = account.NewAccount{Name: "e", Tier: account.Enterprise, CustomLimit: 99, Reason: "deal"}.Normalized()
	if err != nil || na.CustomLimit != 99 || na.Reason != "deal" || na.At.IsZero() {
		t.Errorf("enterprise: %+v, %v; want its limit, its reason and a time", na, err)
	}
	for _, bad := range []account.NewAccount{
		{Name: "x", Tier: "gold"},
		{Name: "x", Tier: account.Enterprise, CustomLimit: -1},
		{Name: "x", Tier: account.Free, InitialCredits: -1},
	} {
		if _, err := bad.Normalized(); !errors.Is(err, account.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}
