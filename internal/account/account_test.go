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
