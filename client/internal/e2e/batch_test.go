package e2e_test

// LookupBatch and LookupFields against the real server (see
// server_test.go for the service these tests start).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

func rawKeys(t *testing.T, r client.LookupResult) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Raw(), &m); err != nil {
		t.Fatalf("raw %s: %v", r.Raw(), err)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (s *service) used(t *testing.T, c *client.Client) int64 {
	t.Helper()
	u, err := c.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u.Used
}

// TestServerLookupBatch: results in order, local refusals not sent,
// repeats sent once, one request for the lot, successes cached (a second
// batch and a single lookup make no request), both languages.
func TestServerLookupBatch(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Pro, 0, 1000)
	c := newClient(t, client.Config{URL: s.url, APIKey: key})
	ctx := context.Background()

	type want struct {
		rec  func(ipatlas.Lang) ipatlas.Record
		code ipatlas.ErrorCode
	}
	var ips []string
	var wants []want
	for i, p := range geotest.Places {
		ips = append(ips, p.IP)
		wants = append(wants, want{rec: p.Want})
		if i == 1 {
			ips = append(ips, "10.0.0.1", "not an address", "", p.IP) // a repeat of Beijing
			wants = append(wants, want{code: ipatlas.CodePrivateIP}, want{code: ipatlas.CodeInvalidIP}, want{code: ipatlas.CodeInvalidIP}, want{rec: p.Want})
		}
	}
	ips = append(ips, geotest.UncoveredIP)
	wants = append(wants, want{rec: func(ipatlas.Lang) ipatlas.Record {
		return ipatlas.Record{IP: geotest.UncoveredIP, Network: netip.MustParsePrefix(geotest.UncoveredNetwork)}
	}})
	distinct := int64(len(geotest.Places) + 1)

	for n, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		hits := s.hits.Load()
		res, err := c.LookupBatch(ctx, ips, lang)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.hits.Load() - hits; got != 1 {
			t.Fatalf("%v: %d requests for one batch", lang, got)
		}
		if len(res) != len(ips) {
			t.Fatalf("%d results for %d addresses", len(res), len(ips))
		}
		for i, r := range res {
			if r.IP != ips[i] {
				t.Errorf("result %d: IP %q, want %q", i, r.IP, ips[i])
			}
			w := wants[i]
			if w.rec == nil {
				var e *ipatlas.Error
				if !errors.As(r.Err, &e) || e.Code != w.code || e.Status != 0 {
					t.Errorf("result %d (%q): %v, want a local %s", i, ips[i], r.Err, w.code)
				}
				continue
			}
			if r.Err != nil {
				t.Errorf("result %d (%s): %v", i, ips[i], r.Err)
				continue
			}
			if !reflect.DeepEqual(r.Result.Record, w.rec(lang)) {
				t.Errorf("result %d:\n got %+v\nwant %+v", i, r.Result.Record, w.rec(lang))
			}
			if r.Result.Cached || r.Result.RateLimit.Limit != account.ProMonthlyLimit {
				t.Errorf("result %d: cached %v, rate limit %+v", i, r.Result.Cached, r.Result.RateLimit)
			}
			if want := 1000 - distinct*int64(n+1); r.Result.Meta.CurrentCredits != want {
				t.Errorf("result %d: credits %d, want %d (the balance after the batch)", i, r.Result.Meta.CurrentCredits, want)
			}
		}
		if u := s.used(t, c); u != distinct*int64(n+1) {
			t.Fatalf("used %d, want %d: each distinct valid address charged once", u, distinct*int64(n+1))
		}
	}

	// Everything is cached now: no request, the same records.
	hits := s.hits.Load()
	res, err := c.LookupBatch(ctx, ips, ipatlas.Chinese)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if wants[i].rec != nil && (r.Err != nil || !r.Result.Cached || !reflect.DeepEqual(r.Result.Record, wants[i].rec(ipatlas.Chinese))) {
			t.Errorf("cached result %d: %+v %v", i, r.Result, r.Err)
		}
	}
	if rec, _, err := c.Lookup(ctx, geotest.Nuremberg.IP, ipatlas.English); err != nil || rec.City != geotest.Nuremberg.City {
		t.Errorf("single lookup after a batch: %+v %v", rec, err)
	}
	if s.hits.Load() != hits {
		t.Errorf("%d requests for cached addresses", s.hits.Load()-hits)
	}
}

// TestServerLookupBatchSplits: 230 addresses go as 100 + 100 + 30, and
// each is charged once.
func TestServerLookupBatchSplits(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Enterprise, 1000, 1000)
	c := newClient(t, client.Config{URL: s.url, APIKey: key, DisableCache: true})
	var ips []string
	for i := range 230 {
		ips = append(ips, fmt.Sprintf("9.9.%d.%d", i/200, i%200+1)) // public, outside the fixture
	}
	hits := s.hits.Load()
	res, err := c.LookupBatch(context.Background(), ips, ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.hits.Load() - hits; n != 3 {
		t.Errorf("%d requests for 230 addresses, want 3", n)
	}
	for i, r := range res {
		if r.Err != nil || r.Result.Record.IP != ips[i] {
			t.Fatalf("result %d: %+v %v", i, r.Result.Record, r.Err)
		}
	}
	if u := s.used(t, c); u != 230 {
		t.Errorf("used %d, want 230", u)
	}
	// The last request's answer carries the balance after all three.
	if got := res[229].Result.Meta.CurrentCredits; got != 770 {
		t.Errorf("credits after 230: %d", got)
	}
}

// TestServerLookupBatchQuota: at the quota's edge the first items succeed
// and the rest fail item by item; once nothing can be charged the request
// fails as a whole, its items carry that error, and no further request is
// sent.
func TestServerLookupBatchQuota(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Enterprise, 3, 100)
	c := newClient(t, client.Config{URL: s.url, APIKey: key, DisableCache: true})
	ctx := context.Background()
	ips := []string{geotest.MountainView.IP, geotest.Beijing.IP, "127.0.0.1", geotest.Shenzhen.IP, geotest.Singapore.IP, geotest.GoogleV6.IP}
	res, err := c.LookupBatch(ctx, ips, ipatlas.English)
	if err != nil {
		t.Fatalf("a partly granted batch: %v", err)
	}
	for i, want := range []error{nil, nil, ipatlas.ErrPrivateIP, nil, ipatlas.ErrRateLimitExceeded, ipatlas.ErrRateLimitExceeded} {
		if (want == nil) != (res[i].Err == nil) || (want != nil && !errors.Is(res[i].Err, want)) {
			t.Errorf("result %d: %v, want %v", i, res[i].Err, want)
		}
	}
	var e *ipatlas.Error
	if errors.As(res[4].Err, &e) && (e.Status != 429 || e.RetryAfter <= 0 || e.Meta == nil || e.Meta.CurrentCredits != 97) {
		t.Errorf("item over quota: %+v", e)
	}

	// 250 addresses would be 3 requests; the first is refused (429) and
	// the others are not sent.
	var many []string
	for i := range 250 {
		many = append(many, fmt.Sprintf("9.9.%d.%d", i/200, i%200+1))
	}
	hits := s.hits.Load()
	res, err = c.LookupBatch(ctx, many, ipatlas.English)
	if !errors.Is(err, ipatlas.ErrRateLimitExceeded) || !errors.As(err, &e) || e.RetryAfter <= 0 {
		t.Fatalf("exhausted quota: %v", err)
	}
	if n := s.hits.Load() - hits; n != 1 {
		t.Errorf("%d requests after the quota ran out, want 1", n)
	}
	for i, r := range res {
		if !errors.Is(r.Err, ipatlas.ErrRateLimitExceeded) {
			t.Fatalf("result %d: %v", i, r.Err)
		}
	}

	// A bad key: one request, every item carries InvalidAPIKey.
	bad := newClient(t, client.Config{URL: s.url, APIKey: "ipa_nope_nope"})
	res, err = bad.LookupBatch(ctx, ips, ipatlas.English)
	if !errors.Is(err, ipatlas.ErrInvalidAPIKey) || !errors.Is(res[0].Err, ipatlas.ErrInvalidAPIKey) || !errors.Is(res[2].Err, ipatlas.ErrPrivateIP) {
		t.Errorf("bad key: %v; items %v, %v", err, res[0].Err, res[2].Err)
	}
}

// TestServerLookupFields: a selection returns only those fields; a partial
// answer is never taken for a full record, while a full record in the
// cache answers any selection.
func TestServerLookupFields(t *testing.T) {
	s := startService(t)
	key := s.customer(t, account.Pro, 0, 100)
	c := newClient(t, client.Config{URL: s.url, APIKey: key})
	ctx := context.Background()
	p := geotest.Beijing

	r, err := c.LookupFields(ctx, p.IP, ipatlas.Chinese, "city", "country")
	if err != nil {
		t.Fatal(err)
	}
	full := p.Want(ipatlas.Chinese)
	want := ipatlas.Record{IP: full.IP, City: full.City, Country: full.Country}
	if !reflect.DeepEqual(r.Record, want) || r.Has("isp") || !r.Has("city") || r.Cached {
		t.Errorf("partial: %+v (isp present %v)", r.Record, r.Has("isp"))
	}
	if k := rawKeys(t, r); !slices.Equal(k, []string{"city", "country", "ip"}) {
		t.Errorf("raw keys %v", k)
	}

	// The full record is not in the cache: asked for, it is fetched.
	hits := s.hits.Load()
	fr, err := c.LookupDetail(ctx, p.IP, ipatlas.Chinese)
	if err != nil || fr.Cached || !reflect.DeepEqual(fr.Record, full) || s.hits.Load() != hits+1 {
		t.Fatalf("full after partial: cached=%v %+v %v (%d requests)", fr.Cached, fr.Record, err, s.hits.Load()-hits)
	}
	// Now the full record answers a selection, cut to it.
	r, err = c.LookupFields(ctx, p.IP, ipatlas.Chinese, "isp", "latitude")
	if err != nil || !r.Cached || s.hits.Load() != hits+1 {
		t.Fatalf("selection from the cached full record: %+v %v", r, err)
	}
	lat := *full.Latitude
	if !reflect.DeepEqual(r.Record, ipatlas.Record{IP: full.IP, ISP: full.ISP, Latitude: &lat}) || r.Has("country") {
		t.Errorf("cut from the full record: %+v", r.Record)
	}
	if k := rawKeys(t, r); !slices.Equal(k, []string{"ip", "isp", "latitude"}) {
		t.Errorf("raw keys of the cut record %v", k)
	}
	// The same selection again comes from the cache of partial answers.
	if r, err := c.LookupFields(ctx, geotest.Nuremberg.IP, ipatlas.English, "zip_code"); err != nil || r.Record.ZipCode != geotest.Nuremberg.ZipCode {
		t.Fatal(r, err)
	}
	hits = s.hits.Load()
	if r, err := c.LookupFields(ctx, geotest.Nuremberg.IP, ipatlas.English, "zip_code", "ip"); err != nil || !r.Cached {
		t.Errorf("same selection: cached=%v %v", r.Cached, err)
	}
	if s.hits.Load() != hits {
		t.Error("a cached selection made a request")
	}

	// Batch with fields, then without: the partial items are not reused.
	ips := []string{geotest.Shenzhen.IP, geotest.GoogleV6.IP}
	res, err := c.LookupBatch(ctx, ips, ipatlas.English, "asn")
	if err != nil {
		t.Fatal(err)
	}
	for i, br := range res {
		w := geotest.Places[slices.IndexFunc(geotest.Places, func(k geotest.Known) bool { return k.IP == ips[i] })].Want(ipatlas.English)
		if br.Err != nil || !reflect.DeepEqual(br.Result.Record, ipatlas.Record{IP: w.IP, ASN: w.ASN}) {
			t.Errorf("batch item %d with fields: %+v %v", i, br.Result.Record, br.Err)
		}
	}
	hits = s.hits.Load()
	res, err = c.LookupBatch(ctx, ips, ipatlas.English)
	if err != nil || res[0].Result.Cached || res[0].Result.Record.City != geotest.Shenzhen.City || s.hits.Load() != hits+1 {
		t.Errorf("full batch after a partial one: %+v %v", res[0].Result, err)
	}

	// An unknown field is refused before any request.
	hits = s.hits.Load()
	if _, err := c.LookupFields(ctx, p.IP, ipatlas.English, "town"); !errors.Is(err, ipatlas.ErrInvalidRequest) {
		t.Errorf("unknown field: %v", err)
	}
	if res, err := c.LookupBatch(ctx, ips, ipatlas.English, "City"); !errors.Is(err, ipatlas.ErrInvalidRequest) || res != nil {
		t.Errorf("unknown field in a batch: %v", err)
	}
	if s.hits.Load() != hits {
		t.Error("an unknown field reached the server")
	}
	// Beijing partial and full, Nuremberg, the partial batch, the full one.
	if u := s.used(t, c); u != 1+1+1+2+2 {
		t.Errorf("used %d, want 7", u)
	}
}
