package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/export"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/oschwald/maxminddb-golang/v2"
)

// exportFixture is a data dir with the fixture dataset and an overrides
// file, and the engine a server on them answers with.
type exportFixture struct {
	dir, overrides string
	engine         *geo.Engine
}

const exportOverrides = `198.51.99.0/24,JP,JP-13,Tokyo,
2a00:1450:4001::/48,DE,DE-BY,"=cmd|' /C calc'!A0",
`

func newExportFixture(t *testing.T) exportFixture {
	t.Helper()
	fx := exportFixture{dir: fixtureDataDir(t)}
	fx.overrides = filepath.Join(t.TempDir(), "overrides.csv")
	if err := os.WriteFile(fx.overrides, []byte(exportOverrides), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := openConfiguredEngine(fx.dir, fx.overrides, nil, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	fx.engine = e
	return fx
}

// export runs db export with args and returns the file it wrote.
func (fx exportFixture) export(t *testing.T, format string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ipatlas."+format)
	_, stderr, err := runDBTest(t, nil, "db", "export", "--format", format, "--data-dir", fx.dir,
		"--overrides", fx.overrides, "--geofeed", "none", out)
	if err != nil {
		t.Fatalf("db export: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "wrote "+out) {
		t.Errorf("stderr %q", stderr)
	}
	return out
}

// sample is addresses to ask readers about: every known place, the
// override, an address of no network, a private one, and the first and
// last address of up to n networks of the export drawn at random.
func (fx exportFixture) sample(t *testing.T, file string, n int) []string {
	t.Helper()
	ips := []string{geotest.UncoveredIP, "198.51.99.1", "2a00:1450:4001::7", "10.1.2.3"}
	for _, k := range geotest.Places {
		ips = append(ips, k.IP)
	}
	r, err := maxminddb.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var nets []netip.Prefix
	for res := range r.Networks() {
		nets = append(nets, res.Prefix())
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for range n {
		p := nets[rng.IntN(len(nets))]
		ips = append(ips, p.Masked().Addr().String(), lastIP(p).String())
	}
	return ips
}

func lastIP(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// want is the engine's country code and English city of ip; both empty
// for an address ipatlas refuses.
func (fx exportFixture) want(t *testing.T, ip string) (country, city string) {
	t.Helper()
	a := netip.MustParseAddr(ip)
	if _, err := checkAddress(ip, ipatlas.English); err != nil {
		return "", ""
	}
	rec, err := fx.engine.Lookup(a, ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	return rec.CountryCode, rec.City
}

func TestDBExportUsage(t *testing.T) {
	for _, args := range [][]string{
		{"db", "export"},
		{"db", "export", "a", "b"},
		{"db", "export", "--format", "json", "x"},
		{"db", "export", "-"}, // an MMDB to standard output
	} {
		_, _, err := runDBTest(t, nil, args...)
		if exitCode(err) != exitUsage {
			t.Errorf("%q: %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
}

// TestDBExportCSV reads the CSV back: a header, one row per network with
// the engine's answer, formula cells neutralised.
func TestDBExportCSV(t *testing.T) {
	fx := newExportFixture(t)
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"ipatlas", "db", "export", "--format", "csv", "--data-dir", fx.dir, "--overrides", fx.overrides, "--geofeed", "none", "-"},
		func(string) string { return "" }, strings.NewReader(""), &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows[0], ",") != strings.Join(export.CSVHeader, ",") {
		t.Fatalf("header %q", rows[0])
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	byNet := map[string][]string{}
	for _, row := range rows[1:] {
		byNet[row[0]] = row
		p := netip.MustParsePrefix(row[0])
		want, err := export.Lookup(fx.engine, p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if row[col["country_code"]] != want.CountryCode || row[col["city_zh"]] != want.CityZH && !strings.HasPrefix(row[col["city_zh"]], "'") ||
			row[col["location_source"]] != want.Source {
			t.Errorf("%s: row %q, engine %+v", row[0], row, want)
		}
	}
	for _, k := range geotest.Places {
		var row []string
		for net, r := range byNet {
			if netip.MustParsePrefix(net).Contains(netip.MustParseAddr(k.IP)) {
				row = r
			}
		}
		if row == nil {
			t.Errorf("no row for %s", k.Network)
			continue
		}
		if row[col["city"]] != k.City || row[col["asn"]] != k.ASN {
			t.Errorf("%s: %q", k.Label, row)
		}
	}
	if got := byNet["2a00:1450:4001::/48"][col["city"]]; got != `'=cmd|' /C calc'!A0` {
		t.Errorf("a formula city is written %q", got)
	}
}

// TestDBExportMMDBLookup asks Debian's mmdblookup (libmaxminddb, the
// library nginx's and HAProxy's modules use) about a sample of addresses.
func TestDBExportMMDBLookup(t *testing.T) {
	bin, err := exec.LookPath("mmdblookup")
	if err != nil {
		t.Skip("mmdblookup is not installed (Debian package mmdb-bin; .ci/run installs it)")
	}
	fx := newExportFixture(t)
	file := fx.export(t, "mmdb")
	value := regexp.MustCompile(`"((?:[^"\\]|\\.)*)" <utf8_string>`)
	lookup := func(ip string, path ...string) string {
		out, err := exec.Command(bin, append([]string{"--file", file, "--ip", ip}, path...)...).CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee) && (strings.Contains(string(out), "Could not find an entry") || strings.Contains(string(out), "lookup path does not match")):
			return ""
		default:
			t.Fatalf("mmdblookup %s %v: %v\n%s", ip, path, err, out)
		}
		m := value.FindSubmatch(out)
		if m == nil {
			t.Fatalf("mmdblookup %s %v: no string in %q", ip, path, out)
		}
		return string(m[1])
	}
	for _, ip := range fx.sample(t, file, 20) {
		country, city := fx.want(t, ip)
		if got := lookup(ip, "country", "iso_code"); got != country {
			t.Errorf("%s: country %q, ipatlas %q", ip, got, country)
		}
		if got := lookup(ip, "city", "names", "en"); got != city {
			t.Errorf("%s: city %q, ipatlas %q", ip, got, city)
		}
	}
	k := geotest.Beijing
	rec, err := fx.engine.Lookup(netip.MustParseAddr(k.IP), ipatlas.Chinese)
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(k.IP, "city", "names", "zh-CN"); got != rec.City || got == "" {
		t.Errorf("%s: zh-CN city %q, ipatlas %q", k.IP, got, rec.City)
	}
}

// nginxModule is where Debian's libnginx-mod-http-geoip2 installs the
// module.
const nginxModule = "/usr/lib/nginx/modules/ngx_http_geoip2_module.so"

// TestDBExportNginx starts Debian's nginx with its GeoIP2 module on the
// export, behind the realip module, and checks that for a sample of
// addresses sent as X-Forwarded-For nginx answers what ipatlas answers.
func TestDBExportNginx(t *testing.T) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (Debian packages nginx and libnginx-mod-http-geoip2; .ci/run installs them)")
		}
		bin = "/usr/sbin/nginx"
	}
	if _, err := os.Stat(nginxModule); err != nil {
		t.Skipf("nginx's GeoIP2 module is not installed at %s (Debian package libnginx-mod-http-geoip2; .ci/run installs it)", nginxModule)
	}
	fx := newExportFixture(t)
	file := fx.export(t, "mmdb")
	port := freePort(t)
	prefix := t.TempDir()
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the workers read nothing but need no other user
	}
	conf := fmt.Sprintf(`load_module %s;
%s
pid %[3]s/nginx.pid;
error_log %[3]s/error.log;
events {}
http {
    access_log off;
    client_body_temp_path %[3]s/body;
    proxy_temp_path %[3]s/proxy;
    fastcgi_temp_path %[3]s/fastcgi;
    uwsgi_temp_path %[3]s/uwsgi;
    scgi_temp_path %[3]s/scgi;
    geoip2 %[4]s {
        $geoip2_data_country_iso_code country iso_code;
        $geoip2_data_city_name city names en;
    }
    server {
        listen 127.0.0.1:%[5]d;
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Forwarded-For;
        location / {
            default_type text/plain;
            add_header X-Country $geoip2_data_country_iso_code always;
            return 200 "$geoip2_data_country_iso_code|$geoip2_data_city_name";
        }
    }
}
`, nginxModule, user, prefix, file, port)
	confPath := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	cmd := exec.Command(bin, "-p", prefix, "-c", confPath, "-e", filepath.Join(prefix, "error.log"), "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	ask := func(ip string) (string, error) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		if h := resp.Header.Get("X-Country"); !strings.HasPrefix(string(b), h+"|") {
			return "", fmt.Errorf("header X-Country %q, body %q", h, b)
		}
		return string(b), err
	}
	for start := time.Now(); ; {
		if _, err := ask("8.8.8.8"); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("nginx exited: %v\n%s", err, log.String())
		default:
		}
		if time.Since(start) > 30*time.Second {
			errLog, _ := os.ReadFile(filepath.Join(prefix, "error.log"))
			t.Fatalf("nginx does not answer on %s\n%s\n%s", url, log.String(), errLog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, ip := range fx.sample(t, file, 30) {
		got, err := ask(ip)
		if err != nil {
			t.Fatalf("%s: %v", ip, err)
		}
		country, city := fx.want(t, ip)
		if want := country + "|" + city; got != want {
			t.Errorf("X-Forwarded-For %s: nginx answers %q, ipatlas %q", ip, got, want)
		}
	}
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDBExportLists writes the country lists: the CIDR list is the
// engine's networks of the country, the nft script passes Debian's
// nft -c (check mode), the ipset file fills and swaps its sets; a bad
// --country, --family or --set is a usage error.
func TestDBExportLists(t *testing.T) {
	fx := newExportFixture(t)
	args := []string{"db", "export", "--data-dir", fx.dir, "--overrides", fx.overrides, "--geofeed", "none"}

	stdout, stderr, err := runDBTest(t, nil, append(args, "--format", "cidr", "--country", "jp,cn", "-")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var cidrs []netip.Prefix
	for line := range strings.Lines(stdout) {
		p, err := netip.ParsePrefix(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		cidrs = append(cidrs, p)
	}
	// The override's Tokyo network and Beijing are in it, Mountain View
	// is not.
	in := func(ip string) bool {
		for _, p := range cidrs {
			if p.Contains(netip.MustParseAddr(ip)) {
				return true
			}
		}
		return false
	}
	if !in("198.51.99.7") || !in(geotest.Beijing.IP) || in(geotest.MountainView.IP) {
		t.Errorf("the list of JP and CN: %v", cidrs)
	}
	for _, p := range cidrs {
		if cc, _ := fx.want(t, p.Addr().String()); cc != "JP" && cc != "CN" {
			t.Errorf("%s is in the list, its country is %q", p, cc)
		}
	}

	nft := filepath.Join(t.TempDir(), "countries.nft")
	if _, stderr, err := runDBTest(t, nil, append(args, "--format", "nft", "--country", "CN", "--set", "china", nft)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	} else if !strings.Contains(stderr, "wrote "+nft) {
		t.Errorf("stderr %q", stderr)
	}
	b, err := os.ReadFile(nft)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"add set inet ipatlas china_v4 { type ipv4_addr; flags interval; }", "add set inet ipatlas china_v6 {"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the nft script lacks %q:\n%s", want, b)
		}
	}
	if bin, err := exec.LookPath("nft"); err != nil {
		t.Log("nft is not installed (Debian package nftables; .ci/run installs it): its check is skipped")
	} else if out, err := exec.Command(bin, "-c", "-f", nft).CombinedOutput(); err != nil {
		t.Errorf("nft -c -f: %v\n%s\n%s", err, out, b)
	}

	stdout, stderr, err = runDBTest(t, nil, append(args, "--format", "ipset", "--country", "US", "--family", "4", "-")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "create ipatlas-v4 hash:net family inet ") || !strings.Contains(stdout, "swap ipatlas-v4-new ipatlas-v4\n") ||
		strings.Contains(stdout, "ipatlas-v6") || !strings.Contains(stdout, "add ipatlas-v4-new 8.8.8.0/") {
		t.Errorf("the ipset file of US's IPv4:\n%s", stdout)
	}

	for _, bad := range [][]string{
		{"--format", "cidr", "--country", "CHN", "-"},
		{"--format", "cidr", "--country", "CN,", "-"},
		{"--format", "cidr", "--family", "5", "-"},
		{"--format", "nft", "--set", "no space", "-"},
		{"--format", "mmdb", "--country", "CN", "x.mmdb"},
		{"--format", "csv", "--family", "4", "-"},
	} {
		if _, _, err := runDBTest(t, nil, append(args, bad...)...); exitCode(err) != exitUsage {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}
