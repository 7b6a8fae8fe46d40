package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/export"
)

// A correction's city is kept whole, brackets and all, and made harmless
// only where CSV is written: the export's cell is the whole formula,
// prefixed so that a spreadsheet reads it as text.
func TestExportCSVCorrectionCityWhole(t *testing.T) {
	dir := fixtureDataDir(t)
	overrides := filepath.Join(t.TempDir(), "overrides.csv")
	if err := os.WriteFile(overrides, []byte(`2a00:1450:4001::/48,DE,DE-BY,"=HYPERLINK(""http://evil.example/"",""x"")",`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := run(t.Context(), []string{"ipatlas", "db", "export", "--format", "csv", "--data-dir", dir, "--overrides", overrides, "--geofeed", "none", "-"},
		func(string) string { return "" }, strings.NewReader(""), &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	city, district := slices.Index(export.CSVHeader, "city"), slices.Index(export.CSVHeader, "district")
	for _, row := range rows[1:] {
		if row[0] == "2a00:1450:4001::/48" {
			if row[city] != `'=HYPERLINK("http://evil.example/","x")` || row[district] != "" {
				t.Errorf("city %q, district %q", row[city], row[district])
			}
			return
		}
	}
	t.Error("no row for the corrected network")
}

// serve's help says how large a feed may be.
func TestServeHelpFeedBounds(t *testing.T) {
	r := runCLI(t, newCLIEnv(t), "", "serve", "--help")
	help := strings.Join(strings.Fields(r.stdout+r.stderr), " ")
	for _, want := range []string{"256 MB", "100 times", "1,000,000 entries", "100,000 distinct places", "first 100 skipped lines"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help does not say %q", want)
		}
	}
}
