package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// closedURL is an http URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := netListen4()
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

func TestLookupJSONInInputOrder(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	var args []string
	for _, k := range geotest.Places {
		args = append(args, k.IP)
	}
	args = append(args, args...) // twice: 12 addresses, 6 distinct
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		r := runCLI(t, e, "", append([]string{"lookup", "--json", "--lang", lang.String()}, args...)...)
		if r.err != nil {
			t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.stderr)
		}
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != len(args) {
			t.Fatalf("%d lines for %d addresses:\n%s", len(lines), len(args), r.stdout)
		}
		for i, k := range append(geotest.Places, geotest.Places...) {
			var rec ipatlas.Record
			var keys map[string]any
			if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
				t.Fatalf("line %d: %v: %s", i, err, lines[i])
			}
			json.Unmarshal([]byte(lines[i]), &keys)
			if want := k.Want(lang); !reflect.DeepEqual(rec, want) {
				t.Errorf("line %d (%s, %v):\n got %+v\nwant %+v", i, k.Label, lang, rec, want)
			}
			if _, has := keys["latitude"]; has != k.HasLocation {
				t.Errorf("%s: latitude key present %v, data has a location %v: absent must stay absent", k.Label, has, k.HasLocation)
			}
		}
	}
	// One batch request per run, one at a time.
	if p := s.peak.Load(); p != 1 {
		t.Errorf("%d requests in flight at once, want 1", p)
	}
	if h := s.hits.Load(); h != 2 {
		t.Errorf("%d requests for two runs of 12 addresses, want one batch each", h)
	}
	// Each distinct address and language was asked once: repeats were
	// sent once.
	u := runCLI(t, e, "", "usage", "--json")
	var usage ipatlas.Usage
	if err := json.Unmarshal([]byte(u.stdout), &usage); err != nil || usage.Used != int64(2*len(geotest.Places)) {
		t.Errorf("usage %+v (%v), want %d queries charged", usage, err, 2*len(geotest.Places))
	}
}

func TestLookupTSVAndTable(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)

	// Not a terminal: tab-separated, every field, a header.
	r := runCLI(t, e, "", "lookup", geotest.Nuremberg.IP, "10.0.0.1")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != exitInput || len(lines) != 3 {
		t.Fatalf("exit %d, output:\n%s", r.code, r.stdout)
	}
	head := strings.Split(lines[0], "\t")
	row := strings.Split(lines[1], "\t")
	bad := strings.Split(lines[2], "\t")
	if len(head) != 24 || len(row) != 24 || len(bad) != 24 || head[23] != "error" {
		t.Fatalf("columns: %d %d %d", len(head), len(row), len(bad))
	}
	want := geotest.Nuremberg.Want(ipatlas.English)
	got := map[string]string{}
	for i, h := range head {
		got[h] = row[i]
	}
	if got["ip"] != want.IP || got["district"] != want.District || got["zip_code"] != want.ZipCode || got["latitude"] != "49.4521" ||
		got["route"] != "2a01:4f8::/32" || got["network"] != "2a01:4f8::/32" || got["location_source"] != "dataset" || got["error"] != "" ||
		got["accuracy_radius"] != strconv.Itoa(want.AccuracyRadius) || got["confidence"] != "medium" {
		t.Errorf("row: %v", got)
	}
	if bad[0] != "10.0.0.1" || !strings.Contains(bad[23], "PrivateIP") {
		t.Errorf("error row: %q", bad)
	}

	// The table, in Chinese: columns line up by display width.
	r = runCLI(t, e, "", "lookup", "--format", "table", "--lang", "zh", geotest.Beijing.IP, geotest.MountainView.IP, geotest.Singapore.IP)
	if r.err != nil {
		t.Fatal(r.err)
	}
	lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "IP ") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	col := func(line, cell string) int {
		i := strings.Index(line, cell)
		if i < 0 {
			t.Fatalf("%q not in %q", cell, line)
		}
		return displayWidth(line[:i])
	}
	// The location with its radius and confidence, compactly.
	if want := "39.9075,116.3970 ±" + strconv.Itoa(geotest.Beijing.Want(ipatlas.Chinese).AccuracyRadius) + "km medium"; !strings.Contains(lines[1], want) {
		t.Errorf("Beijing's row lacks %q: %q", want, lines[1])
	}
	asnCol := col(lines[0], "ASN")
	for i, k := range []geotest.Known{geotest.Beijing, geotest.MountainView, geotest.Singapore} {
		if !strings.Contains(lines[i+1], k.Want(ipatlas.Chinese).Country) {
			t.Errorf("row %d lacks the Chinese country name: %q", i+1, lines[i+1])
		}
		want := k.ASN
		if want == "" {
			want = "-"
		}
		if got := cellAt(lines[i+1], asnCol); got != want {
			t.Errorf("row %d: %q under the ASN header, want %q:\n%s", i+1, got, want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "credits: ") {
		t.Errorf("no credits line on stderr: %q", r.stderr)
	}
}

func TestLookupErrorsAndExitCodes(t *testing.T) {
	s := startCLIService(t)
	good := s.key(t, account.Free, 0, 10)
	broke := s.key(t, account.Free, 0, 0)
	oneLeft := s.key(t, account.Enterprise, 1, 10)
	ip := geotest.MountainView.IP
	for _, tc := range []struct {
		name   string
		url    string
		key    string
		args   []string
		code   int
		inJSON ipatlas.ErrorCode
	}{
		{"private", s.url, good, []string{"192.168.0.1"}, exitInput, ipatlas.CodePrivateIP},
		{"malformed", s.url, good, []string{"1.2.3.04"}, exitInput, ipatlas.CodeInvalidIP},
		{"bad key", s.url, "ipa_bad_key", []string{ip}, exitAuth, ipatlas.CodeInvalidAPIKey},
		{"no credits", s.url, broke, []string{ip}, exitQuota, ipatlas.CodeInsufficientCredits},
		{"quota", s.url, oneLeft, []string{ip, geotest.Beijing.IP}, exitQuota, ipatlas.CodeRateLimitExceeded},
		{"unreachable", closedURL(t), good, []string{ip}, exitNetwork, ""},
		{"first failure decides", s.url, good, []string{ip, "127.0.0.1", "bad"}, exitInput, ipatlas.CodePrivateIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCLIEnv(t, "IPATLAS_URL", tc.url, "IPATLAS_API_KEY", tc.key)
			r := runCLI(t, e, "", append([]string{"lookup", "--json", "--no-cache"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d (%v), want %d", r.code, r.err, tc.code)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if len(lines) != len(tc.args) {
				t.Fatalf("%d lines for %d addresses: %q", len(lines), len(tc.args), r.stdout)
			}
			var v struct {
				IP    string            `json:"ip"`
				Error string            `json:"error"`
				Code  ipatlas.ErrorCode `json:"code"`
			}
			for _, l := range lines {
				v.Error = ""
				json.Unmarshal([]byte(l), &v)
				if v.Error != "" {
					break
				}
			}
			if v.Code != tc.inJSON || v.Error == "" {
				t.Errorf("error line: %+v", v)
			}
		})
	}
	// Local refusals made no request at all.
	before := s.hits.Load()
	runCLI(t, newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", good), "", "lookup", "10.1.1.1", "::1", "fe80::1%eth0")
	if s.hits.Load() != before {
		t.Fatal("a locally refused address reached the server")
	}
}

// With a service URL but no API key, lookup and summarize stop before
// any request, as usage does: the request could only fail.
func TestLookupWithoutKeyAsksNothing(t *testing.T) {
	s := startCLIService(t)
	e := newCLIEnv(t, "IPATLAS_URL", s.url)
	for _, args := range [][]string{
		{"lookup", geotest.MountainView.IP},
		{"lookup", "--json", geotest.MountainView.IP, geotest.Beijing.IP},
		{"summarize", geotest.MountainView.IP},
		{"usage"},
	} {
		before := s.hits.Load()
		r := runCLI(t, e, "", args...)
		if r.code != exitAuth || r.err == nil || !strings.Contains(r.err.Error(), "no API key") || !strings.Contains(r.err.Error(), "IPATLAS_API_KEY") {
			t.Errorf("%q: exit %d (%v), want %d saying how to set a key", args, r.code, r.err, exitAuth)
		}
		if n := s.hits.Load() - before; n != 0 {
			t.Errorf("%q: %d requests reached the service", args, n)
		}
		if r.stdout != "" {
			t.Errorf("%q: printed %q", args, r.stdout)
		}
	}
}

func TestLookupUsageErrors(t *testing.T) {
	e := newCLIEnv(t)
	for _, args := range [][]string{
		{"lookup"},
		{"lookup", "--lang", "fr", "8.8.8.8"},
		{"lookup", "--format", "xml", "8.8.8.8"},
		{"lookup", "--url", "ftp://x", "8.8.8.8"},
	} {
		if r := runCLI(t, e, "", args...); r.code != exitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, r.code, r.err, exitUsage)
		}
	}
}

func TestLookupStdin(t *testing.T) {
	s := startCLIService(t)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", s.key(t, account.Free, 0, 10))
	r := runCLI(t, e, "# addresses\n"+geotest.Singapore.IP+"\n\n"+geotest.Shenzhen.IP+"\n", "lookup", "--json", "-")
	if r.err != nil || strings.Count(r.stdout, "\n") != 2 ||
		!strings.Contains(r.stdout, geotest.Singapore.City) || strings.Index(r.stdout, geotest.Singapore.City) > strings.Index(r.stdout, geotest.Shenzhen.City) {
		t.Fatalf("%v\n%s", r.err, r.stdout)
	}
}

func TestLookupDiskCache(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Free, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	ip := geotest.Nuremberg.IP
	lookup := func(args ...string) string {
		t.Helper()
		r := runCLI(t, e, "", append([]string{"lookup", "--json"}, append(args, ip)...)...)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.stdout
	}
	used := func() int64 {
		t.Helper()
		r := runCLI(t, e, "", "usage", "--json")
		var u ipatlas.Usage
		if err := json.Unmarshal([]byte(r.stdout), &u); err != nil {
			t.Fatalf("%v: %s", err, r.stdout)
		}
		return u.Used
	}

	first := lookup()
	file := filepath.Join(e["XDG_CACHE_HOME"], "ipatlas", "lookups", strings.ReplaceAll(ip, ":", "_")+".en.json")
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("no cache file: %v", err)
	}
	hits := s.hits.Load()
	if again := lookup(); again != first {
		t.Fatalf("cached output differs:\n%s\n%s", first, again)
	}
	if s.hits.Load() != hits {
		t.Fatal("a cached lookup made a request")
	}
	if used() != 1 {
		t.Fatal("want 1 charged query")
	}
	// Another language is another entry.
	lookup("--lang", "zh")
	if used() != 2 {
		t.Fatal("want 2 charged queries after --lang zh")
	}
	lookup("--no-cache")
	if used() != 3 {
		t.Fatal("--no-cache did not ask the service")
	}

	// Age the entry past 24h: the default lifetime refuses it, a 48h
	// lifetime still takes it.
	age := func(d time.Duration) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ent diskEntry
		if err := json.Unmarshal(b, &ent); err != nil {
			t.Fatal(err)
		}
		ent.Result.FetchedAt = time.Now().Add(-d)
		b, _ = json.Marshal(ent)
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	age(25 * time.Hour)
	e["IPATLAS_CACHE_TTL"] = "48h"
	hits = s.hits.Load()
	lookup()
	if s.hits.Load() != hits {
		t.Fatal("a 25h-old entry was not used with a 48h lifetime")
	}
	delete(e, "IPATLAS_CACHE_TTL")
	lookup()
	if used() != 4 {
		t.Fatal("a 25h-old entry was used with the default 24h lifetime")
	}
	// A corrupt entry is a miss, not a failure.
	os.WriteFile(file, []byte("{not json"), 0o600)
	if out := lookup(); out != first {
		t.Fatalf("after a corrupt entry: %s", out)
	}
	// Caching off writes nothing.
	e2 := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key, "IPATLAS_CACHE_TTL", "off")
	if r := runCLI(t, e2, "", "lookup", "--json", ip); r.err != nil {
		t.Fatal(r.err)
	}
	if _, err := os.Stat(filepath.Join(e2["XDG_CACHE_HOME"], "ipatlas")); !os.IsNotExist(err) {
		t.Fatalf("cache off but the cache dir exists: %v", err)
	}
}

// cellAt is the text starting at display column col, up to two spaces.
func cellAt(line string, col int) string {
	w := 0
	for i, r := range line {
		if w == col {
			cell, _, _ := strings.Cut(line[i:], "  ")
			return cell
		}
		w += displayWidth(string(r))
	}
	return ""
}

func TestWriteAligned(t *testing.T) {
	var b bytes.Buffer
	writeAligned(&b, [][]string{{"a", "北京", "x"}, {"long cell", "b", "y"}, {"short", "error: runs on past the columns"}})
	want := "a          北京  x\nlong cell  b     y\nshort      error: runs on past the columns\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestLookupBatches: 250 addresses from standard input go as 3 batch
// requests of at most 100, the output keeps the input order, locally
// refused addresses are not sent, and a second run is answered from the
// disk cache without a request.
func TestLookupBatches(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Enterprise, 1000, 1000)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	var ips []string
	valid := 0
	for i := range 250 {
		switch {
		case i%50 == 7:
			ips = append(ips, "10.9.9."+strconv.Itoa(i%250)) // private
		case i%50 == 8:
			ips = append(ips, "bogus-"+strconv.Itoa(i))
		case i < len(geotest.Places):
			ips = append(ips, geotest.Places[i].IP)
			valid++
		default:
			ips = append(ips, fmt.Sprintf("9.9.%d.%d", i/200, i%200+1))
			valid++
		}
	}
	stdin := strings.Join(ips, "\n") + "\n"
	r := runCLI(t, e, stdin, "lookup", "--json", "-")
	if r.code != exitInput { // the first failure is a private address
		t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.stderr)
	}
	// The summary names the program once, not again before the first error.
	if want := "ipatlas: lookup: 10 of 250 addresses failed; the first: PrivateIP: Private IP address not supported: 10.9.9.7 is a private-use address (RFC 1918)\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	if h := s.hits.Load(); h != 3 {
		t.Errorf("%d requests for 250 addresses, want 3", h)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != len(ips) {
		t.Fatalf("%d lines for %d addresses", len(lines), len(ips))
	}
	for i, l := range lines {
		var v struct {
			IP   string            `json:"ip"`
			Code ipatlas.ErrorCode `json:"code"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil || v.IP != ips[i] {
			t.Fatalf("line %d: %s, want the address %s", i, l, ips[i])
		}
		bad := strings.HasPrefix(ips[i], "10.") || strings.HasPrefix(ips[i], "bogus")
		if bad != (v.Code != "") {
			t.Errorf("line %d: %s", i, l)
		}
	}
	used := func() int64 {
		t.Helper()
		var u ipatlas.Usage
		if err := json.Unmarshal([]byte(runCLI(t, e, "", "usage", "--json").stdout), &u); err != nil {
			t.Fatal(err)
		}
		return u.Used
	}
	if u := used(); u != int64(valid) {
		t.Errorf("used %d, want %d", u, valid)
	}
	hits := s.hits.Load()
	again := runCLI(t, e, stdin, "lookup", "--json", "-")
	if again.stdout != r.stdout {
		t.Error("the cached run printed something else")
	}
	if s.hits.Load() != hits+0 {
		t.Errorf("%d requests on a fully cached run", s.hits.Load()-hits)
	}
}

// TestLookupFields: --fields prints only those fields in every format,
// never writes partial records to the disk cache, and is answered from a
// full record already there.
func TestLookupFields(t *testing.T) {
	s := startCLIService(t)
	key := s.key(t, account.Pro, 0, 100)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", key)
	bj, nb := geotest.Beijing, geotest.Nuremberg
	keys := func(line string) []string {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	cacheFile := func(ip, lang string) string {
		return filepath.Join(e["XDG_CACHE_HOME"], "ipatlas", "lookups", strings.ReplaceAll(ip, ":", "_")+"."+lang+".json")
	}

	// Several addresses (a batch) and one (a single query).
	for _, args := range [][]string{{bj.IP, nb.IP}, {nb.IP}} {
		r := runCLI(t, e, "", append([]string{"lookup", "--json", "--lang", "zh", "--fields", " city, country "}, args...)...)
		if r.err != nil {
			t.Fatal(r.err)
		}
		for i, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
			if k := keys(l); !slices.Equal(k, []string{"city", "country", "ip"}) {
				t.Errorf("%v line %d: keys %v", args, i, k)
			}
		}
	}
	if out := runCLI(t, e, "", "lookup", "--json", "--lang", "zh", "--fields", "city", bj.IP).stdout; !strings.Contains(out, `"city":"`+bj.Want(ipatlas.Chinese).City+`"`) {
		t.Errorf("the Chinese city name is missing: %s", out)
	}
	for _, ip := range []string{bj.IP, nb.IP} {
		if _, err := os.Stat(cacheFile(ip, "zh")); !os.IsNotExist(err) {
			t.Errorf("a partial record of %s was cached on disk: %v", ip, err)
		}
	}

	// A full lookup fills the disk cache; a selection is then cut from it.
	if r := runCLI(t, e, "", "lookup", "--json", nb.IP); r.err != nil {
		t.Fatal(r.err)
	}
	hits := s.hits.Load()
	r := runCLI(t, e, "", "lookup", "--json", "--fields", "isp,zip_code", nb.IP)
	if r.err != nil || s.hits.Load() != hits {
		t.Fatalf("selection from the disk cache: %v, %d requests", r.err, s.hits.Load()-hits)
	}
	if k := keys(strings.TrimSpace(r.stdout)); !slices.Equal(k, []string{"ip", "isp", "zip_code"}) {
		t.Errorf("keys %v", k)
	}

	// TSV: the selected columns only.
	r = runCLI(t, e, "", "lookup", "--fields", "country_code,latitude", nb.IP, "10.0.0.1")
	want := "ip\tcountry_code\tlatitude\terror\n" + nb.IP + "\tDE\t49.4521\t\n"
	if !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, "10.0.0.1\t\t\t") {
		t.Errorf("tsv:\n%s", r.stdout)
	}
	// Table: the selected columns, "-" for unknown.
	r = runCLI(t, e, "", "lookup", "--format", "table", "--fields", "district,time_zone", geotest.MountainView.IP)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "IP DISTRICT TIME ZONE" ||
		strings.Join(strings.Fields(lines[1]), " ") != geotest.MountainView.IP+" - "+geotest.MountainView.TimeZone {
		t.Errorf("table:\n%s", r.stdout)
	}

	// Unknown names are a usage error, before any request.
	hits = s.hits.Load()
	for _, f := range []string{"town", "city,City"} {
		if r := runCLI(t, e, "", "lookup", "--fields", f, nb.IP); r.code != exitUsage || !strings.Contains(r.stderr+r.err.Error(), "unknown field") {
			t.Errorf("--fields %s: exit %d %v", f, r.code, r.err)
		}
	}
	if s.hits.Load() != hits {
		t.Error("an unknown field reached the server")
	}
}
