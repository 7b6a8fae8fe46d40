package account_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// NewService takes its settings once, by the rule of every setting: 0
// turns the key cache off, and a number a feature that is on needs is
// refused when missing rather than defaulted.
func TestNewServiceOptions(t *testing.T) {
	st := newStore(t)
	for _, tc := range []struct {
		name string
		edit func(*account.Options)
		want string
	}{
		{"negative cache TTL", func(o *account.Options) { o.KeyCacheTTL = -time.Second }, "KeyCacheTTL"},
		{"cache without a size", func(o *account.Options) { o.KeyCacheSize = 0 }, "KeyCacheSize"},
		{"owner sessions without idle", func(o *account.Options) { o.OwnerSessions.Idle = 0 }, "OwnerSessions"},
		{"operator sessions without max", func(o *account.Options) { o.OperatorSessions = account.SessionPolicy{} }, "OperatorSessions"},
	} {
		o := account.DefaultOptions()
		tc.edit(&o)
		if svc, err := account.NewService(st, o); err == nil || svc != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want an error naming %s", tc.name, svc, err, tc.want)
		}
	}

	// The cache off (0) needs no size; the settings land in the service.
	o := account.DefaultOptions()
	o.KeyCacheTTL, o.KeyCacheSize = 0, 0
	o.OwnerSessions = account.SessionPolicy{Idle: time.Hour, Max: 2 * time.Hour}
	svc, err := account.NewService(st, o)
	if err != nil {
		t.Fatal(err)
	}
	if svc.KeyCacheTTL >= 0 || svc.OwnerSessions != o.OwnerSessions || svc.OperatorSessions != account.DefaultOperatorSessions {
		t.Errorf("service %+v from %+v", svc, o)
	}
}
