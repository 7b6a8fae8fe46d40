package rdns

import (
	"strings"
	"testing"
)

// validName reports whether s is what hostName promises: lower case
// letters, digits, '-', '_' in labels of 1 to 63, at most 253 bytes.
func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if len(l) == 0 || len(l) > 63 || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}

// Whatever a PTR record holds, a name that comes out is a plain host
// name, and reading it again changes nothing.
func FuzzHostName(f *testing.F) {
	for _, s := range []string{"Dns.Google.", "a\\007b.example.", "a\\.b.", "caf\\195\\169.example", "..", longestName + ".", "x.<y>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := hostName(s)
		if !ok {
			if n != "" {
				t.Fatalf("%q: not ok but %q", s, n)
			}
			return
		}
		if !validName(n) {
			t.Fatalf("%q gave %q", s, n)
		}
		if again, ok := hostName(n); !ok || again != n {
			t.Fatalf("%q gave %q, then %q %v", s, n, again, ok)
		}
	})
}

// A domain query's name is asked only in the plain form.
func FuzzQueryName(f *testing.F) {
	for _, s := range []string{"example.com", "Bücher.example.", "xn--bcher-kva.example", "a..b", "ä", "\u200d.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, ok := queryName(s); ok && !validName(n) {
			t.Fatalf("%q gave %q", s, n)
		}
	})
}
