package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
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
			if want := k.Want(lang); !reflect.DeepEqual(got[i], want) {
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
	if len(l) != 1 || l[0]["code"] != "PrivateIP" || l[0]["error"] != "不支持私有IP地址：192.168.0.1 是私有地址（RFC 1918）" {
		t.Errorf("Chinese refusal: %v", l)
	}
	// A malformed address is explained in Chinese too, not in English
	// inside Chinese brackets.
	out, _, _ = runLocal(t, nil, "", "--data-dir", t.TempDir(), "--lang", "zh", "--json", "garbage")
	l = jsonLines(t, out)
	if len(l) != 1 || l[0]["code"] != "InvalidIP" || l[0]["error"] != `无效的IP地址格式："garbage"：含有不应出现的字符 'g'` {
		t.Errorf("Chinese InvalidIP: %v", l)
	}
}

func TestLookupLocalHumanBlocks(t *testing.T) {
	dir := fixtureDataDir(t)
	out, stderr, err := runLocal(t, nil, "", "--data-dir", dir, "8.8.8.8", "--lang", "zh", geotest.Singapore.IP)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	blocks := strings.Split(strings.TrimSpace(out), "\n\n")
	if len(blocks) != 2 {
		t.Fatalf("%d blocks, want 2:\n%s", len(blocks), out)
	}
	want := geotest.MountainView.Want(ipatlas.Chinese)
	for _, l := range []string{
		"ip              8.8.8.8",
		"country         " + want.Country,
		"city            " + want.City,
		"asn             AS15169",
		"isp             Google LLC",
		"latitude        37.422",
		"longitude       -122.085",
		"time_zone       America/Los_Angeles",
		"currency        USD",
		"area_code       1",
		"district        -",
	} {
		if !strings.Contains(blocks[0]+"\n", l+"\n") {
			t.Errorf("block lacks %q:\n%s", l, blocks[0])
		}
	}
	if !strings.Contains(blocks[1], "latitude        -\n") || !strings.Contains(blocks[1], "time_zone       Asia/Singapore") {
		t.Errorf("record without location:\n%s", blocks[1])
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
