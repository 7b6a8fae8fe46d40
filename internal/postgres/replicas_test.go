package postgres_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/prometheus/client_golang/prometheus"
)

const replicas = 3

// openReplicas opens n stores on one schema, each with its own pool, as
// n ipatlas processes would.
func openReplicas(t testing.TB, dsn, schema string, n int, opts postgres.Options) []*postgres.Store {
	t.Helper()
	sts := make([]*postgres.Store, n)
	for i := range sts {
		sts[i] = open(t, dsn, schema, opts)
	}
	return sts
}

// TestReplicasExact races hundreds of goroutines over three replicas,
// each a store with its own pool and its own batching Meter, on one
// schema: exactly what the quotas and the balance allow is granted, each
// success sees its own place in line, and counters, balance and ledger
// agree with what the callers saw.
func TestReplicasExact(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		keys                 int
		quota, credits, cost int64
	}{
		{"balance smaller than quota", 1, 60, 45, 1},
		{"quota smaller than balance", 1, 40, 1000, 1},
		{"cost 3", 1, 100, 100, 3}, // 33 queries, 1 credit left
		{"two keys share the balance", 2, 50, 70, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testReplicasExact(t, tc.keys, tc.quota, tc.credits, tc.cost)
		})
	}
}

func testReplicasExact(t *testing.T, nkeys int, quota, credits, cost int64) {
	dsn := pgtest.DSN(t)
	sts := openReplicas(t, dsn, pgtest.NewSchema(t), replicas, postgres.Options{MaxConns: 2})
	a, k0 := customer(t, sts[0], quota, credits)
	keys := []account.Key{k0.Key}
	for range nkeys - 1 {
		k, err := (&account.Service{Store: sts[1], Now: func() time.Time { return t0 }}).CreateKey(t.Context(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.Key)
	}
	clock := storetest.NewClock(t0)
	meters := make([]*account.Meter, replicas)
	for i, st := range sts {
		// Small batches: many of them, racing between replicas as well
		// as within each.
		meters[i] = account.NewMeter(st, account.MeterOptions{Cost: cost, MaxBatch: 8, Now: clock.Now})
		t.Cleanup(func() { meters[i].Close(context.Background()) })
	}

	const goroutines, each = 240, 2
	tallies := make([]*tally, nkeys)
	for i := range tallies {
		tallies[i] = newTally()
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, ki := meters[g%replicas], (g/replicas)%nkeys
			for range each {
				tallies[ki].record(m.Charge(t.Context(), keys[ki]))
			}
		}()
	}
	wg.Wait()

	want := min(int64(nkeys)*quota, credits/cost)
	var granted int64
	for i, tl := range tallies {
		if tl.failed != 0 {
			t.Fatalf("key %d: %d charges failed", i, tl.failed)
		}
		granted += int64(len(tl.used))
		// Each key's successes saw 1, 2, 3... once each, whichever
		// replica served them.
		slices.Sort(tl.used)
		for j, u := range tl.used {
			if u != int64(j+1) {
				t.Fatalf("key %d: the successes saw usage %v, want 1..%d once each", i, tl.used, len(tl.used))
			}
		}
		if got := usage(t, sts[2], keys[i].ID); got != int64(len(tl.used)) {
			t.Fatalf("key %d: usage counter %d, the callers saw %d successes", i, got, len(tl.used))
		}
		wantDeny := account.DenyCredits
		if nkeys == 1 && quota <= credits/cost {
			wantDeny = account.DenyQuota
		}
		for d, n := range tl.denied {
			if d != wantDeny {
				t.Fatalf("key %d: %d charges denied for %v, want only %v", i, n, d, wantDeny)
			}
		}
	}
	if granted != want {
		t.Fatalf("%d charges granted over %d replicas, want exactly %d", granted, replicas, want)
	}
	if b := balance(t, sts[1], a.ID); b != credits-want*cost {
		t.Fatalf("balance %d, want %d", b, credits-want*cost)
	}
	q := ledgerQueries(t, sts[0], a.ID, cost)
	for i, k := range keys {
		if q[k.ID] != int64(len(tallies[i].used)) {
			t.Fatalf("key %d: the ledger charges %d queries, the callers saw %d", i, q[k.ID], len(tallies[i].used))
		}
	}
	for i, m := range meters {
		if s := m.Stats(); s.Batches < 2 || s.Failed != 0 {
			t.Fatalf("replica %d: meter stats %+v, want several batches, none failed", i, s)
		}
	}
}

// httpReplica is one ipatlas server of the HTTP-level tests: its own
// store (pool), Service and Meter behind a real listener.
type httpReplica struct {
	store *postgres.Store
	srv   *httptest.Server
	admin *httptest.Server
}

var (
	geoOnce   sync.Once
	geoDir    string
	geoEngine *geo.Engine
	geoErr    error
)

// testGeo is one engine over the geotest fixture, shared by the
// replicas: the data is not what these tests are about.
func testGeo(t testing.TB) *geo.Engine {
	geoOnce.Do(func() {
		geoDir, geoErr = os.MkdirTemp("", "ipatlas-postgres-geo-")
		if geoErr != nil {
			return
		}
		geotest.WriteFixture(t, geoDir)
		geoEngine, geoErr = geo.Open(geoDir, geo.Options{})
	})
	if geoErr != nil {
		t.Fatal(geoErr)
	}
	return geoEngine
}

func TestMain(m *testing.M) {
	code := m.Run()
	if geoEngine != nil {
		geoEngine.Close()
	}
	if geoDir != "" {
		os.RemoveAll(geoDir)
	}
	os.Exit(code)
}

func startReplicas(t *testing.T, dsn, schema string, n int, opts postgres.Options) []*httpReplica {
	t.Helper()
	engine := testGeo(t)
	now := func() time.Time { return t0 }
	rs := make([]*httpReplica, n)
	for i := range rs {
		st := open(t, dsn, schema, opts)
		svc := &account.Service{Store: st, Now: now}
		meter := account.NewMeter(st, account.MeterOptions{Now: now, MaxBatch: 16})
		t.Cleanup(func() { meter.Close(context.Background()) })
		s, err := server.New(server.Config{
			Version: "test", Now: now,
			Logger: slog.New(slog.DiscardHandler),
		}, server.Deps{Geo: engine, Accounts: svc, Meter: meter, Registry: prometheus.NewRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		rs[i] = &httpReplica{store: st, srv: httptest.NewServer(s.Handler()), admin: httptest.NewServer(s.AdminHandler())}
		t.Cleanup(rs[i].srv.Close)
		t.Cleanup(rs[i].admin.Close)
	}
	return rs
}

var httpClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// query posts a location query and returns the status and the envelope.
func query(t testing.TB, base, secret string) (int, ipatlas.Envelope) {
	req, err := http.NewRequest("POST", base+"/api/ip-query", strings.NewReader(`{"ip":"`+geotest.MountainView.IP+`"}`))
	if err != nil {
		t.Error(err)
		return 0, ipatlas.Envelope{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+secret)
	return doJSON(t, req)
}

func get(t testing.TB, url string) int {
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Error(err)
		return 0
	}
	status, _ := doJSON(t, req)
	return status
}

func doJSON(t testing.TB, req *http.Request) (int, ipatlas.Envelope) {
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", req.Method, req.URL, err)
		return 0, ipatlas.Envelope{}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("%s %s: reading: %v", req.Method, req.URL, err)
	}
	var env ipatlas.Envelope
	if req.URL.Path == "/api/ip-query" {
		if err := json.Unmarshal(body, &env); err != nil {
			t.Errorf("%s %s: %d, not an envelope: %q", req.Method, req.URL, resp.StatusCode, body)
		}
	}
	return resp.StatusCode, env
}

// TestHTTPReplicasExact is issue 5's first proof: three servers, each
// with its own pool, on one database; one key with a small quota and an
// account with a smaller balance; many concurrent clients spread over
// the three. Exactly the allowed number succeed, every other answer is
// 402 or 429, and the counter and the ledger agree with the 200s.
func TestHTTPReplicasExact(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	rs := startReplicas(t, dsn, schema, replicas, postgres.Options{MaxConns: 4})
	const quota, credits = 80, 55
	a, k := customer(t, rs[0].store, quota, credits)

	const clients, each = 150, 2
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		codes    = map[ipatlas.ErrorCode]int{}
		wg       sync.WaitGroup
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := rs[c%replicas].srv.URL
			for range each {
				status, env := query(t, base, k.Secret)
				mu.Lock()
				statuses[status]++
				codes[env.Code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if statuses[200] != credits || statuses[402] != clients*each-credits || len(statuses) != 2 {
		t.Fatalf("statuses %v, want exactly %d 200s and the rest 402", statuses, credits)
	}
	if codes[ipatlas.CodeInsufficientCredits] != clients*each-credits {
		t.Fatalf("error codes %v", codes)
	}
	checkBooks(t, rs[1].store, a.ID, k.ID, statuses[200], 0)

	// The quota: a fresh account whose balance is ample.
	const quota2 = 5
	b, kb := customer(t, rs[2].store, quota2, 1000)
	clear(statuses)
	for c := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, env := query(t, rs[c%replicas].srv.URL, kb.Secret)
			mu.Lock()
			statuses[status]++
			if status == 429 && env.Code != ipatlas.CodeRateLimitExceeded {
				t.Errorf("429 with code %q", env.Code)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if statuses[200] != quota2 || statuses[429] != 30-quota2 || len(statuses) != 2 {
		t.Fatalf("statuses %v, want exactly %d 200s and the rest 429", statuses, quota2)
	}
	checkBooks(t, rs[0].store, b.ID, kb.ID, quota2, 0)
}

// checkBooks compares a key's counter and its account's ledger with the
// successes clients saw: equal, or above by at most unanswered (requests
// that failed, whose charge may have committed unseen).
func checkBooks(t testing.TB, st account.Store, accountID int64, keyID string, ok, unanswered int) {
	t.Helper()
	used := usage(t, st, keyID)
	if used < int64(ok) || used > int64(ok+unanswered) {
		t.Fatalf("usage %d; clients saw %d successes and %d failures", used, ok, unanswered)
	}
	if q := ledgerQueries(t, st, accountID, 1); q[keyID] != used {
		t.Fatalf("the ledger charges %d queries, the counter %d", q[keyID], used)
	}
}

// TestHTTPOutage is issue 5's second and fourth proofs at the HTTP level:
// the database goes away under load (as a restart: connections closed,
// new ones refused), then as a network partition. Queries answer 503
// ServiceUnavailable envelopes (bounded by the store's timeout), Get my
// IP and ping keep answering, /readyz says the store is down; afterwards
// the same servers serve again, and the ledger matches the 200s.
func TestHTTPOutage(t *testing.T) {
	t.Parallel() // mostly waiting for timeouts
	dsn := pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	direct := open(t, dsn, schema, postgres.Options{})
	px := pgtest.NewProxy(t, dsn)
	rs := startReplicas(t, px.DSN(t, dsn), schema, replicas, postgres.Options{Timeout: outageTimeout, MaxConns: 4})
	a, k := customer(t, direct, 1_000_000, 1_000_000)

	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	count := func(s int) int { mu.Lock(); defer mu.Unlock(); return statuses[s] }
	for c := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := rs[c%replicas].srv.URL
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, env := query(t, base, k.Secret)
				if status == 503 && env.Code != ipatlas.CodeServiceUnavailable {
					t.Errorf("503 with code %q", env.Code)
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		}()
	}

	for _, mode := range []pgtest.Mode{pgtest.Down, pgtest.Blackhole} {
		name := mode.String()
		at200 := count(200)
		waitFor(t, "200s before the "+name, func() bool { return count(200) >= at200+50 })
		px.Cut(mode)
		at503 := count(503)
		waitFor(t, "503s in the "+name, func() bool { return count(503) >= at503+replicas })
		for i, r := range rs {
			status, env := query(t, r.srv.URL, k.Secret)
			if status != 503 || env.Code != ipatlas.CodeServiceUnavailable {
				t.Fatalf("%s, replica %d: query answered %d %q, want 503 ServiceUnavailable", name, i, status, env.Code)
			}
			for _, path := range []string{"/api/ip/myip", "/api/ping"} {
				if s := get(t, r.srv.URL+path); s != 200 {
					t.Fatalf("%s, replica %d: GET %s answered %d, want 200: it needs no store", name, i, path, s)
				}
			}
			if s := get(t, r.admin.URL+"/readyz"); s != 503 {
				t.Fatalf("%s, replica %d: /readyz answered %d, want 503", name, i, s)
			}
		}
		px.Restore()
		at200 = count(200)
		waitFor(t, "200s after the "+name, func() bool { return count(200) >= at200+50 })
		for i, r := range rs {
			if s := get(t, r.admin.URL+"/readyz"); s != 200 {
				t.Fatalf("after the %s, replica %d: /readyz answered %d, want 200", name, i, s)
			}
		}
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if statuses[200]+statuses[503] != total(statuses) {
		t.Fatalf("statuses %v: want only 200 and 503", statuses)
	}
	checkBooks(t, direct, a.ID, k.ID, statuses[200], statuses[503])
	t.Logf("statuses %v", statuses)
}

func total(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestReplicasMonthBoundary moves one injected clock, shared by two
// replicas, across midnight UTC on the first of the month: the quota one
// replica used up in January is whole again in February on both.
func TestReplicasMonthBoundary(t *testing.T) {
	dsn := pgtest.DSN(t)
	sts := openReplicas(t, dsn, pgtest.NewSchema(t), 2, postgres.Options{MaxConns: 2})
	_, k := customer(t, sts[0], 3, 100)
	clock := storetest.NewClock(time.Date(2026, 1, 31, 23, 59, 59, 999_999_000, time.UTC))
	ms := make([]*account.Meter, len(sts))
	for i, st := range sts {
		ms[i] = account.NewMeter(st, account.MeterOptions{Now: clock.Now})
		t.Cleanup(func() { ms[i].Close(context.Background()) })
	}
	ctx := t.Context()
	for i := int64(1); i <= 3; i++ {
		if o, err := ms[0].Charge(ctx, k.Key); err != nil || !o.Granted || o.Used != i {
			t.Fatalf("January charge %d on replica 0: %+v, %v", i, o, err)
		}
	}
	if o, err := ms[1].Charge(ctx, k.Key); err != nil || o.Granted || o.Deny != account.DenyQuota {
		t.Fatalf("January charge on replica 1: %+v, %v; want DenyQuota", o, err)
	}
	clock.Set(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	mar := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, m := range []*account.Meter{ms[1], ms[0]} {
		if o, err := m.Charge(ctx, k.Key); err != nil || !o.Granted || o.Used != int64(i+1) || !o.Reset.Equal(mar) {
			t.Fatalf("February charge %d: %+v, %v; want granted, usage %d, reset %v", i+1, o, err, i+1, mar)
		}
	}
	for period, want := range map[string]int64{"2026-01": 3, "2026-02": 2} {
		if n, err := sts[1].Usage(ctx, k.ID, period); err != nil || n != want {
			t.Fatalf("usage of %s: %d, %v; want %d", period, n, err, want)
		}
	}
}
