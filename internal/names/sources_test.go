package names

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestSourcesAreComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Sources() {
		if s.Name == "" || s.Provides == "" || s.Licence == "" || !strings.HasPrefix(s.URL, "https://") || !strings.HasPrefix(s.LicenceURL, "https://") {
			t.Errorf("incomplete source %+v", s)
		}
		if seen[s.Name] {
			t.Errorf("source %q listed twice", s.Name)
		}
		seen[s.Name] = true
	}
	// The sources whose terms ask for attribution of what is built from
	// them are there.
	for _, name := range []string{"DB-IP", "GeoNames", "Unicode CLDR", "timezone-boundary-builder", "Who's On First"} {
		if !seen[name] {
			t.Errorf("no source %q", name)
		}
	}
	s := Sources()
	s[0].Name = "changed"
	if Sources()[0].Name == "changed" {
		t.Error("Sources returns the table itself")
	}
}

// TestREADMEAttributesEverySource: the README's "Data and attribution"
// section has one table row per source, exactly as the table has it.
func TestREADMEAttributesEverySource(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Data and attribution\n")
	if !ok {
		t.Fatal("README.md has no section \"Data and attribution\"")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var want strings.Builder
	for _, s := range Sources() {
		fmt.Fprintf(&want, "| [%s](%s) | %s | [%s](%s) |\n", s.Name, s.URL, s.Provides, s.Licence, s.LicenceURL)
	}
	if !strings.Contains(section, want.String()) {
		t.Errorf("README.md's \"Data and attribution\" section does not hold the table of sources; its rows must read:\n%s", want.String())
	}
}
