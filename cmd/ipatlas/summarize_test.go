package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"golang.org/x/sys/unix"
)

// startPrivacyService is a CLI test service whose data has privacy
// lists: Google's 8.8.8.0/24 on Google's own ranges (hosting, service
// "Google"), Hetzner's AS on the datacenter AS list, Shenzhen's network
// as iCloud Private Relay, Google's IPv6 network on the VPN list, and
// the Beijing address a Tor exit.
func startPrivacyService(t *testing.T) *cliService {
	t.Helper()
	p := servertest.New(t, func() time.Time { return cliServerNow })
	dir := filepath.Join(p.Dir, "data")
	now := time.Now()
	geotest.WritePrivacyList(t, dir, "ipranges-google-ipv4", "8.8.8.0/24\n", now)
	geotest.WritePrivacyList(t, dir, "x4bnet-datacenter-asn", "AS24940\n", now)
	geotest.WritePrivacyList(t, dir, "ipranges-apple-proxy-ipv4", "113.88.0.0/16\n", now)
	geotest.WritePrivacyList(t, dir, "x4bnet-vpn-ipv6", "2001:4860::/32\n", now)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(200, geotest.Beijing.IP), now)
	if err := p.Geo.ReloadPrivacy(); err != nil {
		t.Fatal(err)
	}
	return startCLIServiceOn(t, p)
}

// summaryInput is every known place, 8.8.8.8 twice, an address in no
// network, and two failures; as a file, with a comment and a blank line.
func summaryInput(t *testing.T) (path string, n int) {
	var lines []string
	for _, k := range geotest.Places {
		lines = append(lines, k.IP)
	}
	lines = append(lines, geotest.MountainView.IP, geotest.UncoveredIP, "10.0.0.1", "bogus")
	path = filepath.Join(t.TempDir(), "ips.txt")
	if err := os.WriteFile(path, []byte("# addresses\n\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, len(lines)
}

func TestLookupCSV(t *testing.T) {
	s := startPrivacyService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	path, n := summaryInput(t)

	// Arguments, then standard input, then the file: in that order.
	r := runCLI(t, e, geotest.Nuremberg.IP+"\n", "lookup", "--csv", geotest.Beijing.IP, "-", "--file", path)
	if r.code != exitInput {
		t.Fatalf("exit %d (the first failure is PrivateIP): %v\n%s", r.code, r.err, r.stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2+n {
		t.Fatalf("%d rows for %d addresses:\n%s", len(rows), 2+n, r.stdout)
	}
	head := rows[0]
	wantHead := append(append([]string{"input"}, ipatlas.RecordFields()[:19]...), "hosting", "vpn", "tor", "relay", "service", "location_source", "accuracy_radius", "confidence", "error_code", "error")
	if !reflect.DeepEqual(head, wantHead) {
		t.Fatalf("header %q\nwant %q", head, wantHead)
	}
	byInput := map[string]map[string]string{}
	for i, row := range rows[1:] {
		m := map[string]string{}
		for j, h := range head {
			m[h] = row[j]
		}
		if i < 2 {
			byInput["pos"+strconv.Itoa(i)] = m
		}
		byInput[row[0]] = m
	}
	if byInput["pos0"]["input"] != geotest.Beijing.IP || byInput["pos1"]["input"] != geotest.Nuremberg.IP {
		t.Errorf("input order: %q, %q", byInput["pos0"]["input"], byInput["pos1"]["input"])
	}
	for _, tc := range []struct {
		input string
		want  map[string]string
	}{
		{geotest.MountainView.IP, map[string]string{"ip": "8.8.8.8", "country_code": "US", "asn": "AS15169", "route": "8.8.8.0/24",
			"hosting": "true", "vpn": "false", "tor": "false", "relay": "false", "service": "Google", "error_code": "", "error": ""}},
		{geotest.Beijing.IP, map[string]string{"tor": "true", "hosting": "false", "service": "", "route": "202.106.0.0/20"}},
		{geotest.Shenzhen.IP, map[string]string{"relay": "true", "service": "iCloud Private Relay"}},
		{geotest.Nuremberg.IP, map[string]string{"hosting": "true", "latitude": "49.4521", "district": "Middle Franconia"}},
		{geotest.GoogleV6.IP, map[string]string{"vpn": "true", "hosting": "false"}},
		{"10.0.0.1", map[string]string{"ip": "", "country": "", "hosting": "", "error_code": "PrivateIP",
			"error": "Private IP address not supported: 10.0.0.1 is a private-use address (RFC 1918)"}},
		{"bogus", map[string]string{"ip": "", "error_code": "InvalidIP"}},
	} {
		got := byInput[tc.input]
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.input, k, got[k], v)
			}
		}
	}

	// --fields selects columns; privacy stays five.
	r = runCLI(t, e, "", "lookup", "--csv", "--fields", "country_code,privacy", geotest.Shenzhen.IP, "bogus")
	want := "input,ip,country_code,hosting,vpn,tor,relay,service,error_code,error\n" +
		geotest.Shenzhen.IP + "," + geotest.Shenzhen.IP + ",CN,false,false,false,true,iCloud Private Relay,,\n"
	if !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, "\nbogus,,,,,,,,InvalidIP,") {
		t.Errorf("--fields:\n%s\nwant first:\n%s", r.stdout, want)
	}
	if r = runCLI(t, e, "", "lookup", "--csv", "--json", "8.8.8.8"); r.code != exitUsage {
		t.Errorf("--csv --json: exit %d", r.code)
	}
	if r = runCLI(t, e, "", "lookup", "--csv", "--file", filepath.Join(t.TempDir(), "none")); r.code != exitFailure || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("missing file: exit %d %s", r.code, r.stderr)
	}
	if r = runCLI(t, e, "# nothing\n", "lookup", "--csv", "-"); r.code != exitUsage || !strings.Contains(r.stderr, "holds no address") {
		t.Errorf("empty input: exit %d %s", r.code, r.stderr)
	}
}

func TestSummarize(t *testing.T) {
	s := startPrivacyService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	path, n := summaryInput(t)

	r := runCLI(t, e, "", "summarize", "--json", "--file", path)
	if r.code != exitInput {
		t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.stderr)
	}
	var got summary
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	want := summary{
		Addresses: n, Answered: n - 2, Failed: 2,
		Failures:  []codeCount{{ipatlas.CodeInvalidIP, 1}, {ipatlas.CodePrivateIP, 1}},
		Countries: []countryCount{{"US", "United States", 3}, {"CN", "China", 2}, {"", "", 1}, {"DE", "Germany", 1}, {"SG", "Singapore", 1}},
		ASNs: []asnCount{{"AS15169", "Google LLC", 3}, {"", "", 2}, {"AS24940", "Hetzner Online GmbH", 1}, {"AS4134", "CHINANET-BACKBONE", 1},
			{"AS4808", "China Unicom Beijing Province Network", 1}},
		Routes: []routeCount{{"", "", 2}, {"8.8.8.0/24", "AS15169", 2}, {"113.88.0.0/16", "AS4134", 1}, {"2001:4860::/32", "AS15169", 1},
			{"202.106.0.0/20", "AS4808", 1}, {"2a01:4f8::/32", "AS24940", 1}},
		Privacy: privacyCount{Known: n - 2, Hosting: 3, VPN: 1, Relay: 1, TorKnown: n - 2, Tor: 1,
			Services: []serviceCount{{"Google", 2}, {"iCloud Private Relay", 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary\n got %+v\nwant %+v", got, want)
	}
	// Every address looked up once, in one batch, charged once: 8.8.8.8
	// twice is one query.
	if h := s.hits.Load(); h != 1 {
		t.Errorf("%d requests, want one batch", h)
	}

	// For a person, in Chinese, from standard input: a second language is
	// a second batch.
	in, _ := os.ReadFile(path)
	r = runCLI(t, e, string(in), "summarize", "--lang", "zh", "--top", "2", "-")
	var norm []string // each line with its runs of spaces made one
	for _, l := range strings.Split(r.stdout, "\n") {
		norm = append(norm, strings.Join(strings.Fields(l), " "))
	}
	text := strings.Join(norm, "\n")
	for _, want := range []string{
		"addresses 10\nanswered 8 80.0%\nfailed 2 20.0%\nInvalidIP 1 10.0%\nPrivateIP 1 10.0%\n",
		"\nby country\nUS 美国 3 37.5%\nCN 中国 2 25.0%\n(3 more)\n",
		"\nby AS\nAS15169 Google LLC 3 37.5%\n(none) 2 25.0%\n(3 more)\n",
		"\nby route\n(none) 2 25.0%\n8.8.8.0/24 AS15169 2 25.0%\n(4 more)\n",
		"\nprivacy of 8\nhosting 3 37.5%\nvpn 1 12.5%\ntor 1 12.5% of 8\nrelay 1 12.5%\nservice Google 2 25.0%\nservice iCloud Private Relay 1 12.5%\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, r.stdout)
		}
	}
	if h := s.hits.Load(); h != 2 {
		t.Errorf("%d requests after a run in another language, want 2", h)
	}
	// The same again: the disk cache answers.
	r = runCLI(t, e, string(in), "summarize", "--lang", "zh", "-")
	if h := s.hits.Load(); h != 2 || r.code != exitInput {
		t.Errorf("%d requests after the same run again, want the disk cache to answer (exit %d)", h, r.code)
	}
}

// openPTY opens a pseudo-terminal pair: what a program writes to tty, a
// terminal, is read back from the returned buffer's function.
func openPTY(t *testing.T) (tty *os.File, output func() string) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	var mu sync.Mutex
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := ptm.Read(b)
			mu.Lock()
			buf.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { ptm.Close() })
	return tty, func() string {
		tty.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

// TestProgressOnTerminal: a long list gets a progress bar on standard
// error when that is a terminal and the output goes elsewhere; none when
// standard error is a file, or for a short list.
func TestProgressOnTerminal(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Pro, 0, 1000)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	var ips []string
	for i := range 250 {
		ips = append(ips, geotest.Places[i%len(geotest.Places)].IP)
	}
	in := strings.Join(ips, "\n")

	for _, cmd := range [][]string{{"lookup", "--csv", "--no-cache", "-"}, {"summarize", "--json", "--no-cache", "-"}} {
		tty, output := openPTY(t)
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"ipatlas"}, cmd...), e.getenv, strings.NewReader(in), &out, tty)
		if err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
		bar := output()
		if !strings.Contains(bar, "looking up") || !strings.Contains(bar, "100%") || !strings.Contains(bar, "250/250") || !strings.Contains(bar, "\r") {
			t.Errorf("%v: no progress bar on the terminal:\n%q", cmd, bar)
		}
		if strings.Contains(out.String(), "looking up") || strings.Contains(out.String(), "\r") {
			t.Errorf("%v: the bar reached the output", cmd)
		}
	}

	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"ipatlas", "lookup", "--csv", "-"}, e.getenv, strings.NewReader(in), io.Discard, &stderr); err != nil {
		t.Fatal(err)
	}
	tty, output := openPTY(t)
	if err := run(context.Background(), []string{"ipatlas", "lookup", "--csv", "8.8.8.8", "1.1.1.1"}, e.getenv, strings.NewReader(""), io.Discard, tty); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 || output() != "" {
		t.Errorf("a bar without a terminal, or for two addresses: %q", stderr.String())
	}
}

// TestLookupShowsPrivacyAndRoute: the table and the tab-separated output
// show the route and the privacy flags as the service sent them.
func TestLookupShowsPrivacyAndRoute(t *testing.T) {
	s := startPrivacyService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	r := runCLI(t, e, "", "lookup", "--format", "table", geotest.MountainView.IP, geotest.Beijing.IP, geotest.Singapore.IP)
	if r.err != nil {
		t.Fatal(r.err)
	}
	lines := strings.Split(r.stdout, "\n")
	if !strings.Contains(lines[0], "ROUTE") || !strings.Contains(lines[0], "PRIVACY") {
		t.Fatalf("header %q", lines[0])
	}
	for i, want := range []string{"8.8.8.0/24 .* hosting \\(Google\\)$", "202.106.0.0/20 .* tor$", " - .* none$"} {
		if !regexp.MustCompile(want).MatchString(strings.TrimRight(lines[i+1], " ")) {
			t.Errorf("row %d %q does not match %q", i+1, lines[i+1], want)
		}
	}
	r = runCLI(t, e, "", "lookup", "--fields", "route,privacy", geotest.Shenzhen.IP)
	if want := "ip\troute\tprivacy\terror\n" + geotest.Shenzhen.IP + "\t113.88.0.0/16\trelay (iCloud Private Relay)\t\n"; r.stdout != want {
		t.Errorf("tsv %q, want %q", r.stdout, want)
	}
}

// TestLongListWaitsOutTheBurstLimit: a list of several batches against a
// key limited to two requests a second is answered whole: the burst
// limit's 429, which charges nothing, is waited out and retried.
func TestLongListWaitsOutTheBurstLimit(t *testing.T) {
	start := time.Now()
	p := servertest.New(t, func() time.Time { return cliServerNow.Add(time.Since(start)) })
	s := startCLIServiceOn(t, p, func(c *server.Config) { c.KeyRate, c.KeyBurst, c.LimitTableSize = 2, 1, 100 })
	key := s.key(t, account.Pro, 0, 1000)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	var ips []string
	for i := range 3 * ipatlas.MaxBatchSize {
		ips = append(ips, "8.8."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256))
	}
	r := runCLI(t, e, strings.Join(ips, "\n"), "summarize", "--json", "--no-cache", "-")
	var got summary
	if err := json.Unmarshal([]byte(r.stdout), &got); r.err != nil || err != nil || got.Answered != len(ips) {
		t.Fatalf("exit %d %v: %s %s", r.code, r.err, r.stdout, r.stderr)
	}
	if h := s.hits.Load(); h < 4 {
		t.Errorf("%d requests for three batches at two a second: the limit was never met", h)
	}
}

// TestSummarizeWithoutPrivacyData: a service without privacy lists leaves
// the flags unknown, and the summary says so instead of counting zeros.
func TestSummarizeWithoutPrivacyData(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	r := runCLI(t, e, "", "summarize", geotest.MountainView.IP, geotest.Beijing.IP)
	if r.err != nil || !strings.Contains(r.stdout, "\nprivacy") || !strings.Contains(r.stdout, "unknown (the service has no privacy data)") {
		t.Errorf("exit %d %v:\n%s", r.code, r.err, r.stdout)
	}
	r = runCLI(t, e, "", "summarize", "--json", geotest.MountainView.IP)
	var got summary
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.Privacy.Known != 0 || got.Privacy.Hosting != 0 || got.Privacy.Services == nil {
		t.Errorf("%v: %s", err, r.stdout)
	}
}
