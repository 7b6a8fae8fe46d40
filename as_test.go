package ipatlas_test

import (
	"errors"
	"net/netip"
	"strconv"
	"testing"

	"github.com/ipatlas/ipatlas"
)

func TestParseAS(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
	}{{"AS15169", 15169}, {"as15169", 15169}, {"15169", 15169}, {"AS0", 0}, {"AS4294967295", 4294967295}} {
		got, err := ipatlas.ParseAS(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseAS(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "AS", "ASx", "AS-1", "AS+1", "AS4294967296", "AS 1", "AS1 ", "A15169", "AS15169x", "AS99999999999"} {
		_, err := ipatlas.ParseAS(in)
		if !errors.Is(err, ipatlas.ErrInvalidAS) {
			t.Errorf("ParseAS(%q) = %v, want InvalidAS", in, err)
		}
	}
}

func TestPrefixSize(t *testing.T) {
	for _, c := range []struct{ p, want string }{
		{"8.8.8.0/24", "256"}, {"1.2.3.4/32", "1"}, {"0.0.0.0/0", "4294967296"},
		{"2001:db8::/64", "18446744073709551616"}, {"2001:db8::/32", "79228162514264337593543950336"},
		{"2001:db8::1/128", "1"},
	} {
		if got := ipatlas.PrefixSize(netip.MustParsePrefix(c.p)); got != c.want {
			t.Errorf("PrefixSize(%s) = %s, want %s", c.p, got, c.want)
		}
	}
}

func TestASCodes(t *testing.T) {
	if ipatlas.CodeInvalidAS.HTTPStatus() != 400 || ipatlas.CodeUnknownAS.HTTPStatus() != 404 {
		t.Error("AS codes have the wrong statuses")
	}
}

// FuzzParseAS: ParseAS accepts exactly "AS" (any case) or nothing, then 1
// to 10 decimal digits of a number up to MaxASN, and FormatAS writes back
// what it read.
func FuzzParseAS(f *testing.F) {
	for _, s := range []string{"AS15169", "as0", "15169", "AS", "ASx", "AS-1", "AS4294967296", "AS+1", "ＡＳ1", "AS０", "AS00000000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ipatlas.ParseAS(s)
		digits := s
		if len(s) >= 2 && (s[0] == 'A' || s[0] == 'a') && (s[1] == 'S' || s[1] == 's') {
			digits = s[2:]
		}
		want := digits != "" && len(digits) <= 10
		var v uint64
		for i := 0; want && i < len(digits); i++ {
			want = digits[i] >= '0' && digits[i] <= '9'
			v = v*10 + uint64(digits[i]-'0')
		}
		want = want && v <= ipatlas.MaxASN
		switch {
		case want && err != nil:
			t.Fatalf("ParseAS(%q): %v, want %d", s, err, v)
		case !want && !errors.Is(err, ipatlas.ErrInvalidAS):
			t.Fatalf("ParseAS(%q) = %d, %v; want InvalidAS", s, n, err)
		case want && (uint64(n) != v || ipatlas.FormatAS(n) != "AS"+strconv.FormatUint(v, 10)):
			t.Fatalf("ParseAS(%q) = %d (%s), want %d", s, n, ipatlas.FormatAS(n), v)
		}
	})
}
