package netaddr

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"
)

// Seeds beyond testdata/fuzz: a few awkward spellings worth mutating.
var fuzzSeeds = []string{
	"1.2.3.4", "::ffff:10.0.0.1", "64:ff9b::c0a8:101", "2002:c0a8:101::1",
	"fe80::1%eth0", "[::1]:80", "010.1.1.1", " 2001:DB8::1\n",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Reason == "" || pe.ReasonZh == "" {
				t.Fatalf("Parse(%q): error %#v without a reason", s, err)
			}
			if a.IsValid() {
				t.Fatalf("Parse(%q) returned %v with an error", s, a)
			}
			msg := err.Error()
			if !utf8.ValidString(msg) || len(msg) > 4*maxLen+200 {
				t.Fatalf("Parse(%q): error message unbounded or not UTF-8: %q", s, msg)
			}
			// Nothing netip accepts (zones aside) may be refused.
			tr := trim(s)
			if n, nerr := netip.ParseAddr(tr); nerr == nil && n.Zone() == "" {
				t.Fatalf("Parse(%q) refused %v: %v", s, n, err)
			}
			return
		}
		if !a.IsValid() || a.Zone() != "" {
			t.Fatalf("Parse(%q) = %#v", s, a)
		}
		text := a.String()
		if text != strings.ToLower(text) {
			t.Fatalf("Parse(%q) prints upper case: %s", s, text)
		}
		again, err := Parse(text)
		if err != nil || again != a {
			t.Fatalf("Parse(%q) = %v, but Parse(%q) = %v, %v", s, a, text, again, err)
		}
		if n, nerr := netip.ParseAddr(trim(s)); nerr != nil || n != a {
			t.Fatalf("Parse(%q) = %v, netip says %v, %v", s, a, n, nerr)
		}
	})
}

func FuzzParseClassify(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			return
		}
		b, ok := Classify(a)
		e := Embedded(a)
		if eb, eok := Classify(e); eb != b || eok != ok {
			t.Fatalf("Classify(%v) = %+v %v, but Classify(Embedded = %v) = %+v %v", a, b, ok, e, eb, eok)
		}
		if e != a && !e.Is4() {
			t.Fatalf("Embedded(%v) = %v, not IPv4", a, e)
		}
		if a.Is4In6() {
			if e != a.Unmap() {
				t.Fatalf("Embedded(%v) = %v, want %v", a, e, a.Unmap())
			}
			if Family(a) != "IPv4" {
				t.Fatalf("Family(%v) = %q", a, Family(a))
			}
		}
		if rb, rok := refClassify(a); rb != b || rok != ok {
			t.Fatalf("Classify(%v) = %+v %v, reference %+v %v", a, b, ok, rb, rok)
		}
		if !ok {
			if b != (Block{}) {
				t.Fatalf("Classify(%v) public but returned %+v", a, b)
			}
			return
		}
		if b.Name == "" || b.NameZh == "" || b.RFC == "" {
			t.Fatalf("Classify(%v) = %+v: incomplete block", a, b)
		}
		// The block must hold the address, its embedded IPv4 address, or
		// for 6to4 the IPv4 address in bits 16-47.
		b16 := a.As16()
		sixToFour := netip.AddrFrom4([4]byte(b16[2:6]))
		if !b.Prefix.Contains(e) && !(a.Is6() && b16[0] == 0x20 && b16[1] == 0x02 && b.Prefix.Contains(sixToFour)) {
			t.Fatalf("Classify(%v) = %s, which does not hold it", a, b.Prefix)
		}
	})
}
