package account_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

var t0 = time.Date(2026, 5, 20, 8, 0, 0, 0, time.UTC)

func newStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "a.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// countingStore counts the key lookups that reach the real store, and
// records the reads of keys and accounts in order.
type countingStore struct {
	account.Store
	keyReads atomic.Int64

	mu    sync.Mutex
	reads []string
}

func (c *countingStore) Key(ctx context.Context, id string) (account.Key, error) {
	c.keyReads.Add(1)
	c.record("key")
	return c.Store.Key(ctx, id)
}

func (c *countingStore) Account(ctx context.Context, id int64) (account.Account, error) {
	c.record("account")
	return c.Store.Account(ctx, id)
}

func (c *countingStore) record(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = append(c.reads, what)
}

// take returns the reads recorded since the last take.
func (c *countingStore) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reads
	c.reads = nil
	return r
}

func int64p(n int64) *int64 { return &n }

func TestCreateAccount(t *testing.T) {
	svc := &account.Service{Store: newStore(t), Now: storetest.NewClock(t0).Now}
	for _, c := range []struct {
		p                    account.AccountParams
		wantLimit, wantCreds int64
	}{
		{account.AccountParams{Name: "f", Tier: account.Free}, 1000, 1000},
		{account.AccountParams{Name: "p", Tier: account.Pro}, 10000, 10000},
		{account.AccountParams{Name: "e", Tier: account.Enterprise, MonthlyLimit: 250000}, 250000, 250000},
		{account.AccountParams{Name: "  spaced  ", Tier: account.Pro, Credits: int64p(42)}, 10000, 42},
		{account.AccountParams{Name: "zero", Tier: account.Free, Credits: int64p(0)}, 1000, 0},
	} {
		a, err := svc.CreateAccount(t.Context(), c.p)
		if err != nil {
			t.Fatalf("CreateAccount(%+v): %v", c.p, err)
		}
		if a.MonthlyLimit != c.wantLimit || a.Credits != c.wantCreds || a.Name != strings.TrimSpace(c.p.Name) || !a.CreatedAt.Equal(t0) {
			t.Fatalf("CreateAccount(%+v) = %+v; want limit %d, credits %d", c.p, a, c.wantLimit, c.wantCreds)
		}
		es, err := svc.Ledger(t.Context(), a.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if c.wantCreds == 0 && len(es) != 0 || c.wantCreds > 0 && (len(es) != 1 || es[0].Delta != c.wantCreds || es[0].Reason != "initial grant") {
			t.Fatalf("ledger of %+v: %+v", a, es)
		}
	}

	for _, p := range []account.AccountParams{
		{Name: "", Tier: account.Free},
		{Name: "   ", Tier: account.Free},
		{Name: "tab\there", Tier: account.Free},
		{Name: strings.Repeat("x", account.MaxNameLen+1), Tier: account.Free},
		{Name: "bad\xff", Tier: account.Free},
		{Name: "x", Tier: "gold"},
		{Name: "x", Tier: ""},
		{Name: "x", Tier: account.Enterprise},
		{Name: "x", Tier: account.Enterprise, MonthlyLimit: -5},
		{Name: "x", Tier: account.Enterprise, MonthlyLimit: account.MaxMonthlyLimit + 1},
		{Name: "x", Tier: account.Free, MonthlyLimit: 5000},
		{Name: "x", Tier: account.Free, Credits: int64p(-1)},
		{Name: "x", Tier: account.Free, Credits: int64p(account.MaxCreditChange + 1)},
	} {
		if _, err := svc.CreateAccount(t.Context(), p); !errors.Is(err, account.ErrInvalid) {
			t.Errorf("CreateAccount(%+v) = %v, want ErrInvalid", p, err)
		}
	}
	if as, _ := svc.Accounts(t.Context()); len(as) != 5 {
		t.Fatalf("%d accounts, want the 5 valid ones", len(as))
	}
}

func TestSetTierAndCredits(t *testing.T) {
	svc := &account.Service{Store: newStore(t), Now: storetest.NewClock(t0).Now}
	a, err := svc.CreateAccount(t.Context(), account.AccountParams{Name: "a", Tier: account.Free})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetTier(t.Context(), a.ID, account.Enterprise, 0); !errors.Is(err, account.ErrInvalid) {
		t.Fatalf("SetTier(enterprise, 0) = %v, want ErrInvalid", err)
	}
	if _, err := svc.SetTier(t.Context(), a.ID, account.Pro, 77); !errors.Is(err, account.ErrInvalid) {
		t.Fatalf("SetTier(pro, 77) = %v, want ErrInvalid", err)
	}
	if _, err := svc.SetTier(t.Context(), 424242, account.Pro, 0); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("SetTier(unknown) = %v, want ErrNotFound", err)
	}
	got, err := svc.SetTier(t.Context(), a.ID, account.Enterprise, 5000)
	if err != nil || got.MonthlyLimit != 5000 || got.Credits != 1000 {
		t.Fatalf("SetTier(enterprise, 5000) = %+v, %v", got, err)
	}

	for _, c := range []struct {
		amount int64
		reason string
		want   error
	}{
		{0, "nothing", account.ErrInvalid},
		{5, "", account.ErrInvalid},
		{5, "   ", account.ErrInvalid},
		{account.MaxCreditChange + 1, "huge", account.ErrInvalid},
		{-1001, "too much", account.ErrInsufficient},
	} {
		if _, err := svc.AddCredits(t.Context(), a.ID, c.amount, c.reason); !errors.Is(err, c.want) {
			t.Errorf("AddCredits(%d, %q) = %v, want %v", c.amount, c.reason, err, c.want)
		}
	}
	if _, err := svc.AddCredits(t.Context(), 424242, 5, "x"); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("AddCredits(unknown) = %v, want ErrNotFound", err)
	}
	e, err := svc.AddCredits(t.Context(), a.ID, -1000, " refund ")
	if err != nil || e.Balance != 0 || e.Reason != "refund" || !e.CreatedAt.Equal(t0) {
		t.Fatalf("AddCredits(-1000) = %+v, %v", e, err)
	}
	if _, err := svc.Ledger(t.Context(), a.ID, -1); !errors.Is(err, account.ErrInvalid) {
		t.Fatalf("Ledger(limit -1) = %v, want ErrInvalid", err)
	}
}

func TestUsage(t *testing.T) {
	st := newStore(t)
	clock := storetest.NewClock(t0)
	svc := &account.Service{Store: st, Now: clock.Now}
	a, _ := svc.CreateAccount(t.Context(), account.AccountParams{Name: "u", Tier: account.Enterprise, MonthlyLimit: 10, Credits: int64p(4)})
	nk, err := svc.CreateKey(t.Context(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	m := account.NewMeter(st, account.MeterOptions{Now: clock.Now})
	defer m.Close(context.Background())
	for range 3 {
		if o, err := m.Charge(t.Context(), nk.Key); err != nil || !o.Granted {
			t.Fatalf("charge: %+v, %v", o, err)
		}
	}
	u, err := svc.Usage(t.Context(), nk.ID)
	want := account.Usage{
		KeyID: nk.ID, AccountID: a.ID, Tier: account.Enterprise, Period: "2026-05",
		Used: 3, Limit: 10, Remaining: 7, Reset: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), Credits: 1,
	}
	if err != nil || u != want {
		t.Fatalf("Usage = %+v, %v; want %+v", u, err, want)
	}
	clock.Set(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if u, _ := svc.Usage(t.Context(), nk.ID); u.Used != 0 || u.Remaining != 10 || u.Period != "2026-06" {
		t.Fatalf("Usage in the next month = %+v", u)
	}
	if _, err := svc.Usage(t.Context(), "nosuchkey123"); !errors.Is(err, account.ErrNotFound) {
		t.Fatalf("Usage(unknown) = %v", err)
	}
}

func TestAuthenticateCache(t *testing.T) {
	cs := &countingStore{Store: newStore(t)}
	svc := &account.Service{Store: cs, KeyCacheTTL: time.Hour}
	a, _ := svc.CreateAccount(t.Context(), account.AccountParams{Name: "c", Tier: account.Free})
	nk, _ := svc.CreateKey(t.Context(), a.ID)

	for range 5 {
		if _, _, err := svc.Authenticate(t.Context(), nk.Secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := cs.keyReads.Load(); n != 1 {
		t.Fatalf("5 authentications read the key %d times, want 1 (then the cache)", n)
	}
	// A wrong secret for a cached ID is checked against the store (the
	// key may have been rotated) and refused.
	wrong := nk.Secret[:len(nk.Secret)-1] + "0"
	if wrong == nk.Secret {
		wrong = nk.Secret[:len(nk.Secret)-1] + "1"
	}
	if _, _, err := svc.Authenticate(t.Context(), wrong); err != account.ErrBadKey {
		t.Fatalf("wrong secret: %v", err)
	}
	// Rotation through this Service takes effect at once.
	rk, err := svc.RotateKey(t.Context(), nk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Authenticate(t.Context(), nk.Secret); err != account.ErrBadKey {
		t.Fatalf("old secret after rotation: %v, want ErrBadKey", err)
	}
	if k, _, err := svc.Authenticate(t.Context(), rk.Secret); err != nil || k.ID != nk.ID {
		t.Fatalf("new secret after rotation: %+v, %v", k, err)
	}
	if _, err := svc.RevokeKey(t.Context(), nk.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Authenticate(t.Context(), rk.Secret); err != account.ErrBadKey {
		t.Fatalf("revoked key: %v, want ErrBadKey", err)
	}
	if _, err := svc.RotateKey(t.Context(), nk.ID); !errors.Is(err, account.ErrRevoked) {
		t.Fatalf("RotateKey(revoked) = %v, want ErrRevoked", err)
	}
}

// A wrong secret costs the same reads of the store whether its key's ID
// exists or not (the key, then an account), so that the time of a
// rejection does not tell an ID that exists; with the cache on too, for
// an ID a success has cached.
func TestAuthenticateRejectionsReadAlike(t *testing.T) {
	for _, ttl := range []time.Duration{-1, time.Hour} {
		cs := &countingStore{Store: newStore(t)}
		svc := &account.Service{Store: cs, KeyCacheTTL: ttl}
		a, _ := svc.CreateAccount(t.Context(), account.AccountParams{Name: "c", Tier: account.Free})
		nk, _ := svc.CreateKey(t.Context(), a.ID)
		if _, _, err := svc.Authenticate(t.Context(), nk.Secret); err != nil {
			t.Fatal(err)
		}
		wrong := nk.Secret[:len(nk.Secret)-1] + "0"
		if wrong == nk.Secret {
			wrong = nk.Secret[:len(nk.Secret)-1] + "1"
		}
		unknown := account.GenerateKey(a.ID, t0).Secret // a well-formed key no store holds
		reads := func(secret string) []string {
			cs.take()
			if _, _, err := svc.Authenticate(t.Context(), secret); err != account.ErrBadKey {
				t.Fatalf("cache TTL %v: %v, want ErrBadKey", ttl, err)
			}
			return cs.take()
		}
		known, unknownReads := reads(wrong), reads(unknown)
		if want := []string{"key", "account"}; !slices.Equal(known, want) || !slices.Equal(unknownReads, want) {
			t.Errorf("cache TTL %v: a wrong secret of a known ID reads %v, of an unknown ID %v; want %v for both", ttl, known, unknownReads, want)
		}
	}
}

func TestAuthenticateCacheOffAndExpiry(t *testing.T) {
	cs := &countingStore{Store: newStore(t)}
	off := &account.Service{Store: cs, KeyCacheTTL: -1}
	a, _ := off.CreateAccount(t.Context(), account.AccountParams{Name: "c", Tier: account.Free})
	nk, _ := off.CreateKey(t.Context(), a.ID)
	for range 3 {
		if _, _, err := off.Authenticate(t.Context(), nk.Secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := cs.keyReads.Load(); n != 3 {
		t.Fatalf("without a cache, 3 authentications read the key %d times", n)
	}

	short := &account.Service{Store: cs, KeyCacheTTL: time.Millisecond}
	if _, _, err := short.Authenticate(t.Context(), nk.Secret); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // well past the TTL
	before := cs.keyReads.Load()
	if _, _, err := short.Authenticate(t.Context(), nk.Secret); err != nil {
		t.Fatal(err)
	}
	if cs.keyReads.Load() != before+1 {
		t.Fatal("an expired cache entry was used")
	}
}

// TestSecretsStayOutOfErrors checks the failure paths for the secret and
// its hash leaking into error text (and from there into logs).
func TestSecretsStayOutOfErrors(t *testing.T) {
	st := newStore(t)
	svc := &account.Service{Store: st}
	a, _ := svc.CreateAccount(t.Context(), account.AccountParams{Name: "s", Tier: account.Free})
	nk, _ := svc.CreateKey(t.Context(), a.ID)
	secretPart := nk.Secret[len("ipa_")+account.KeyIDLen+1:]
	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if msg := err.Error(); strings.Contains(msg, secretPart) || strings.Contains(msg, string(nk.Hash)) {
			t.Fatalf("%s: the error %q shows the secret", what, msg)
		}
	}
	_, _, err := svc.Authenticate(t.Context(), nk.Secret[:len(nk.Secret)-1]+"!")
	check("malformed", err)
	st.Close()
	_, _, err = svc.Authenticate(t.Context(), nk.Secret)
	check("store down", err)
	m := account.NewMeter(st, account.MeterOptions{})
	defer m.Close(context.Background())
	_, err = m.Charge(t.Context(), nk.Key)
	check("charge with the store down", err)
}

// TestManagementStoreDown: a store that fails is ErrUnavailable to every
// management call, not a bare driver error.
func TestManagementStoreDown(t *testing.T) {
	st := newStore(t)
	svc := &account.Service{Store: st}
	a, err := svc.CreateAccount(t.Context(), account.AccountParams{Name: "d", Tier: account.Free})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	for what, err := range map[string]error{
		"Account":    func() error { _, err := svc.Account(t.Context(), a.ID); return err }(),
		"Accounts":   func() error { _, err := svc.Accounts(t.Context()); return err }(),
		"AddCredits": func() error { _, err := svc.AddCredits(t.Context(), a.ID, 5, "x"); return err }(),
		"CreateKey":  func() error { _, err := svc.CreateKey(t.Context(), a.ID); return err }(),
		"Ledger":     func() error { _, err := svc.Ledger(t.Context(), a.ID, 0); return err }(),
	} {
		if !errors.Is(err, account.ErrUnavailable) {
			t.Errorf("%s on a closed store: %v, want ErrUnavailable", what, err)
		}
	}
}
