package e2e_test

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/account"
)

// TestServerAS asks the real server for an AS in both languages: the
// answer, the credits and the quota; a malformed AS is refused before any
// request and an unknown one is the server's UnknownAS, neither charged.
func TestServerAS(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Pro, 0, 10)
	c := newClient(t, client.Config{URL: s.url, APIKey: key})
	ctx := context.Background()
	pfx := func(p, size string) ipatlas.ASPrefix {
		return ipatlas.ASPrefix{Netblock: netip.MustParsePrefix(p), Size: size}
	}
	want := ipatlas.AS{ASN: "AS15169", Name: "Google LLC", Country: "United States", CountryCode: "US", NumIPs: 256,
		Prefixes:    []ipatlas.ASPrefix{pfx("8.8.8.0/24", "256")},
		Prefixes6:   []ipatlas.ASPrefix{pfx("2001:4860::/32", "79228162514264337593543950336")},
		NumPrefixes: 1, NumPrefixes6: 1, Page: 1, Pages: 1}
	for i, tc := range []struct {
		in      string
		lang    ipatlas.Lang
		country string
	}{{"AS15169", ipatlas.English, "United States"}, {"15169", ipatlas.Chinese, "美国"}} {
		res, err := c.AS(ctx, tc.in, tc.lang)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		w := want
		w.Country = tc.country
		if !reflect.DeepEqual(res.AS, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.in, res.AS, w)
		}
		left := int64(9 - i)
		if res.Meta != (ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: left}) || res.RateLimit.Remaining != account.ProMonthlyLimit-int64(i+1) {
			t.Errorf("%s: meta %+v, rate limit %+v", tc.in, res.Meta, res.RateLimit)
		}
	}

	before := s.hits.Load()
	for _, bad := range []string{"AS", "ASx", "AS-1", "AS4294967296"} {
		_, err := c.AS(ctx, bad, ipatlas.Chinese)
		var e *ipatlas.Error
		if !errors.As(err, &e) || e.Code != ipatlas.CodeInvalidAS || e.Message != ipatlas.CodeInvalidAS.Message(ipatlas.Chinese, ipatlas.InvalidASDetail(bad, ipatlas.Chinese)) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if n := s.hits.Load() - before; n != 0 {
		t.Errorf("malformed AS numbers sent %d requests", n)
	}

	_, err := c.AS(ctx, "AS64512", ipatlas.English)
	var e *ipatlas.Error
	if !errors.Is(err, ipatlas.ErrUnknownAS) || !errors.As(err, &e) || e.Status != 404 || e.Meta == nil || e.Meta.CurrentCredits != 8 {
		t.Errorf("AS64512: %v %+v", err, e)
	}
}
