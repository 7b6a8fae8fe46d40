package main

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// hostileRecord is what a hostile service answers for any address: cells
// a spreadsheet would run as formulas, terminal escape sequences (a new
// window title, a cleared screen, a hidden link, colours in 7-bit and
// 8-bit form) and a bidi override; a coordinate that is negative.
var hostileRecord = map[string]any{
	"ip":        "8.8.8.8",
	"country":   `=HYPERLINK("http://evil.example/","click")`,
	"city":      "+cmd|' /C calc'!A0",
	"province":  "-2+3",
	"isp":       "@SUM(1+1)*cmd|' /C calc'!A0",
	"district":  "\x1b]0;pwned\x07\x1b[2JKreuzberg",
	"asn":       "AS1\u009b31m",
	"time_zone": "\tEurope/Berlin",
	"zip_code":  "\r=1+1",
	"currency":  "EUR\u202e",
	"area_code": "\x1b]8;;http://evil.example/\x1b\\030\x1b]8;;\x1b\\",
	"latitude":  -33.5,
	"longitude": 151.25,
}

// startHostileService answers every lookup with hostileRecord, and a
// failure whose text holds escape sequences for the address 9.9.9.9.
func startHostileService(t *testing.T) string {
	t.Helper()
	const badText = "\x1b[2J\x1b]0;pwned\x07bad \u009b1maddress"
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q struct {
			IP  string
			IPs []string
		}
		json.NewDecoder(r.Body).Decode(&q)
		w.Header().Set("Content-Type", "application/json")
		meta := map[string]any{"isLoggedIn": true, "isApiRequest": true, "currentCredits": 5}
		if r.URL.Path == "/api/ip-query/batch" {
			var items []map[string]any
			for _, ip := range q.IPs {
				if ip == "9.9.9.9" {
					items = append(items, map[string]any{"success": false, "ip": ip, "code": "InvalidIP", "error": badText})
					continue
				}
				items = append(items, map[string]any{"success": true, "ip": ip, "data": hostileRecord})
			}
			json.NewEncoder(w).Encode(map[string]any{"success": true, "data": items, "meta": meta})
			return
		}
		if q.IP == "9.9.9.9" {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"success": false, "code": "InvalidIP", "error": badText, "meta": meta})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"success": true, "data": hostileRecord, "meta": meta})
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// noControl fails when s holds a control character other than the line
// ends and tabs of the format, or a bidi control.
func noControl(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || isFormat(r) {
			t.Errorf("%s holds %U:\n%q", what, r, s)
			return
		}
	}
}

// What a hostile service sends reaches no terminal as escape sequences,
// in any format of lookup, nor in its error; a CSV file opens in a
// spreadsheet as text, not formulas, and the coordinates stay numbers.
func TestLookupHostileService(t *testing.T) {
	e := newCLIEnv(t, "IPATLAS_URL", startHostileService(t), "IPATLAS_API_KEY", "ipa_anykeyanyk_"+strings.Repeat("x", 43), "IPATLAS_CACHE_TTL", "off")

	r := runCLI(t, e, "", "lookup", "--csv", "8.8.8.8")
	if r.err != nil {
		t.Fatal(r.err)
	}
	noControl(t, "csv", r.stdout)
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv: %v\n%s", err, r.stdout)
	}
	got := map[string]string{}
	for i, h := range rows[0] {
		got[h] = rows[1][i]
	}
	for col, want := range map[string]string{
		"country":   `'=HYPERLINK("http://evil.example/","click")`,
		"city":      "'+cmd|' /C calc'!A0",
		"province":  "'-2+3",
		"isp":       "'@SUM(1+1)*cmd|' /C calc'!A0",
		"district":  "Kreuzberg",
		"asn":       "AS1",
		"time_zone": " Europe/Berlin", // the tab is a space, and no formula
		"zip_code":  "' =1+1",
		"currency":  "EUR",
		"area_code": "030",
		"latitude":  "-33.5",
		"longitude": "151.25",
		"input":     "8.8.8.8",
	} {
		if got[col] != want {
			t.Errorf("csv %s: %q, want %q", col, got[col], want)
		}
	}

	for _, format := range []string{"table", "tsv"} {
		r := runCLI(t, e, "", "lookup", "--format", format, "8.8.8.8", "9.9.9.9")
		noControl(t, format, r.stdout)
		if !strings.Contains(r.stdout, "Europe/Berlin") || !strings.Contains(r.stdout, "bad address") {
			t.Errorf("%s lost the text around the sequences:\n%s", format, r.stdout)
		}
		noControl(t, format+" error", errorLine(r.err))
	}

	// JSON keeps every value exactly, with the controls escaped.
	r = runCLI(t, e, "", "lookup", "--json", "8.8.8.8", "9.9.9.9")
	noControl(t, "json", r.stdout)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	var rec map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &rec) != nil {
		t.Fatalf("json:\n%s", r.stdout)
	}
	for _, k := range []string{"district", "asn", "currency", "area_code"} {
		if rec[k] != hostileRecord[k] {
			t.Errorf("json %s: %q, want %q", k, rec[k], hostileRecord[k])
		}
	}

	// A single failure is the error main prints.
	r = runCLI(t, e, "", "lookup", "9.9.9.9")
	if r.err == nil {
		t.Fatal("no error")
	}
	line := errorLine(r.err)
	noControl(t, "error line", line)
	if !strings.Contains(line, "bad address") {
		t.Errorf("error line %q", line)
	}
}
