package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// runLocal runs `ipatlas lookup --local args...` with env vars from vars.
func runLocal(t *testing.T, vars map[string]string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return vars[k] }
	err = run(context.Background(), append([]string{"ipatlas", "lookup", "--local"}, args...), getenv,
		strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), err
}

func fixtureDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	return dir
}

// jsonLines decodes one JSON object per line.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func decodeRecords(t *testing.T, s string) []ipatlas.Record {
	t.Helper()
	var out []ipatlas.Record
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var r ipatlas.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

func TestLookupLocalJSONBothLanguages(t *testing.T) {
	dir := fixtureDataDir(t)
	places := []geotest.Known{geotest.MountainView, geotest.Beijing, geotest.GoogleV6, geotest.Nuremberg, geotest.Singapore}
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		args := []string{"--data-dir", dir, "--json"}
		for _, k := range places {
			args = append(args, k.IP)
		}
		// Flags after the addresses count too.
		args = append(args, "--lang", lang.String())
		out, stderr, err := runLocal(t, nil, "", args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", lang, err, stderr)
		}
		got := decodeRecords(t, out)
		if len(got) != len(places) {
			t.Fatalf("%s: %d lines for %d addresses:\n%s", lang, len(got), len(places), out)
		}
		for i, k := range places {
			// A local lookup answers the privacy flags from the built-in
			// lists; the engine's tests check their values.
			if got[i].Privacy == nil {
				t.Errorf("%s %s: no privacy object", lang, k.IP)
			}
			got[i].Privacy = nil
			want := k.Want(lang)
			// The lists' ranges may cut the place's network smaller.
			if n := got[i].Network; !n.Contains(netip.MustParseAddr(k.IP)) || n.Bits() < want.Network.Bits() || !want.Network.Contains(n.Addr()) {
				t.Errorf("%s %s: network %s, want %s or a network inside it", lang, k.IP, n, want.Network)
			}
			got[i].Network = want.Network
			if !reflect.DeepEqual(got[i], want) {
				t.Errorf("%s %s:\n got %+v\nwant %+v", lang, k.IP, got[i], want)
			}
		}
	}
}

func TestLookupLocalRefusals(t *testing.T) {
	dir := fixtureDataDir(t)
	out, _, err := runLocal(t, nil, "", "--data-dir", dir, "--json", "1.2.3", "10.0.0.1", "::ffff:192.168.1.1", geotest.MappedIP, "8.8.8.8%eth0")
	if code := exitCode(err); code != exitInput {
		t.Errorf("exit code %d (%v), want %d", code, err, exitInput)
	}
	lines := jsonLines(t, out)
	want := []struct{ ip, code string }{
		{"1.2.3", "InvalidIP"}, {"10.0.0.1", "PrivateIP"}, {"::ffff:192.168.1.1", "PrivateIP"}, {geotest.MappedIP, ""}, {"8.8.8.8%eth0", "InvalidIP"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		l := lines[i]
		if l["ip"] != w.ip {
			t.Errorf("line %d: ip %v, want %s", i, l["ip"], w.ip)
		}
		if w.code == "" {
			if l["city"] != geotest.MountainView.City || l["asn"] != geotest.MountainView.ASN {
				t.Errorf("mapped address looked up wrong: %v", l)
			}
			continue
		}
		if l["code"] != w.code || l["error"] == "" || l["error"] == nil {
			t.Errorf("line %d: %v, want code %s with an error text", i, l, w.code)
		}
	}
}

func TestLookupLocalRefusalNeedsNoData(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	_, _, err := runLocal(t, nil, "", "--data-dir", missing, "127.0.0.1")
	if code := exitCode(err); code != exitInput {
		t.Errorf("loopback without a data dir: exit %d (%v), want %d", code, err, exitInput)
	}
	_, _, err = runLocal(t, nil, "", "--data-dir", missing, "8.8.8.8")
	if code := exitCode(err); code != exitFailure || !strings.Contains(err.Error(), "db fetch") {
		t.Errorf("missing data dir: exit %d (%v), want %d and a hint", code, err, exitFailure)
	}
}

func TestLookupLocalChineseRefusal(t *testing.T) {
	out, _, err := runLocal(t, nil, "", "--data-dir", t.TempDir(), "--lang", "zh", "--json", "192.168.0.1")
	if exitCode(err) != exitInput {
		t.Fatalf("exit %d: %v", exitCode(err), err)
	}
	l := jsonLines(t, out)
	if len(l) != 1 || l[0]["code"] != "PrivateIP" || l[0]["error"] != "不支持私有 IP 地址：192.168.0.1 是私有地址（RFC 1918）" {
		t.Errorf("Chinese refusal: %v", l)
	}
	// A malformed address is explained in Chinese too, not in English
	// inside Chinese brackets.
	out, _, _ = runLocal(t, nil, "", "--data-dir", t.TempDir(), "--lang", "zh", "--json", "garbage")
	l = jsonLines(t, out)
	if len(l) != 1 || l[0]["code"] != "InvalidIP" || l[0]["error"] != `无效的 IP 地址格式："garbage"：含有不应出现的字符 'g'` {
		t.Errorf("Chinese InvalidIP: %v", l)
	}
}

// lookup --local takes lookup's flags (--file, --fields, --csv, --format,
// --json) and prints what the remote lookup prints for the same data, its
// refusals and its error included: the two modes share that code.
func TestLookupLocalSameAsRemote(t *testing.T) {
	s := startCLIService(t)
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_API_KEY", s.key(t, account.Pro, 0, 1000))
	dir := fixtureDataDir(t)
	list := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(list, []byte("# list\n"+geotest.Beijing.IP+"\n10.0.0.1\n\n"+geotest.Nuremberg.IP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The privacy flags are left out: the local engine reads its built-in
	// lists, the test service none.
	for _, args := range [][]string{
		{"--csv", "--fields", "country,city,asn,latitude,longitude", geotest.MountainView.IP, "--file", list},
		{"--format", "table", "--lang", "zh", "--fields", "country,city,route", "--file", list},
		{"--fields", "city,zip_code,time_zone,area_code", "--file", list},
		{"--json", "--fields", "city,latitude,district", "--file", list},
		{"--format", "csv", "--lang", "zh", "--fields", "province", geotest.Shenzhen.IP},
		{"--json", "--lang", "zh", "192.168.0.1"},
		{"--csv", "1.2.3.04"},
	} {
		remote := runCLI(t, e, "", append([]string{"lookup", "--no-cache"}, args...)...)
		local := runCLI(t, e, "", append([]string{"lookup", "--local", "--data-dir", dir}, args...)...)
		if local.stdout != remote.stdout {
			t.Errorf("%q: the output differs\nlocal:\n%s\nremote:\n%s", args, local.stdout, remote.stdout)
		}
		if local.code != remote.code {
			t.Errorf("%q: exit %d, remote %d", args, local.code, remote.code)
		}
		if local.err == nil || remote.err == nil {
			if local.err != remote.err {
				t.Errorf("%q: error %v, remote %v", args, local.err, remote.err)
			}
			continue
		}
		if errorLine(local.err) != errorLine(remote.err) {
			t.Errorf("%q: error\n  %s\nremote\n  %s", args, errorLine(local.err), errorLine(remote.err))
		}
	}
}

// A table with every field, on the real engine: the columns a person
// reads first, "-" where a value is unknown.
func TestLookupLocalTable(t *testing.T) {
	dir := fixtureDataDir(t)
	out, stderr, err := runLocal(t, nil, "", "--data-dir", dir, "--format", "table", "8.8.8.8", "--lang", "zh", geotest.Singapore.IP)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := geotest.MountainView.Want(ipatlas.Chinese)
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "IP ") || !strings.Contains(lines[1], want.Country+" (US)") ||
		!strings.Contains(lines[1], "AS15169") || !strings.Contains(lines[1], fmt.Sprintf("37.4220,-122.0850 ±%dkm medium", want.AccuracyRadius)) {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(lines[2], "Asia/Singapore") || !strings.Contains(lines[2], " - ") || strings.Contains(lines[2], "±") {
		t.Errorf("record without location:\n%s", lines[2])
	}
}

func TestLookupLocalStdinAndDefaultDir(t *testing.T) {
	dir := fixtureDataDir(t)
	out, stderr, err := runLocal(t, map[string]string{"IPATLAS_DATA_DIR": dir}, "# addresses\n8.8.8.8\n\n  2a01:4f8:c0c:1234::1  \n", "--json", "-")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	got := decodeRecords(t, out)
	if len(got) != 2 || got[0].City != geotest.MountainView.City || got[1].City != geotest.Nuremberg.City || got[1].District != geotest.Nuremberg.District {
		t.Errorf("stdin addresses: %+v", got)
	}
}

func TestLookupLocalUsage(t *testing.T) {
	if stdout, _, err := runLocal(t, nil, "", "-h"); err != nil || !strings.Contains(stdout, "usage: ipatlas lookup --local") {
		t.Errorf("-h: %v\n%s", err, stdout)
	}
	for _, args := range [][]string{{"--lang", "fr", "8.8.8.8"}, {"--bogus"}, {}} {
		if _, _, err := runLocal(t, nil, "", args...); exitCode(err) != exitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, exitCode(err), err, exitUsage)
		}
	}
}

// --fields network prints the network of the answer, in JSON and in
// the tab-separated form.
func TestLookupLocalNetworkField(t *testing.T) {
	dir := fixtureDataDir(t)
	out, stderr, err := runLocal(t, nil, "", "--data-dir", dir, "--json", "--fields", "network", geotest.Beijing.IP, geotest.MappedIP)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := `{"ip":"202.106.0.20","network":"202.106.0.0/20"}` + "\n" + `{"ip":"::ffff:8.8.8.8","network":"::ffff:8.8.8.0/120"}` + "\n"
	if out != want {
		t.Errorf("--json --fields network:\n%s\nwant\n%s", out, want)
	}
	out, stderr, err = runLocal(t, nil, "", "--data-dir", dir, "--fields", "network", geotest.Beijing.IP)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "network") || !strings.Contains(out, "202.106.0.0/20") {
		t.Errorf("--fields network:\n%s", out)
	}
}
