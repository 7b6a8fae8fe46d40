package geo

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/ipatlas/ipatlas"
)

// appendPrivacy writes what encoding/json writes for the same object, with
// the Tor flag known or not, and for a service name that needs escapes.
func TestAppendPrivacyMatchesEncodingJSON(t *testing.T) {
	for _, service := range []string{"", "Amazon AWS", `a "quoted" \ name`, "名字", "tab\there", "<&>"} {
		for mask := range 32 {
			p := ipatlas.Privacy{Hosting: mask&1 != 0, VPN: mask&2 != 0, Relay: mask&4 != 0, Service: service}
			tor, known := mask&8 != 0, mask&16 != 0
			if known {
				p.Tor = &tor
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&p); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			if got := appendPrivacy(nil, p, tor, known); !bytes.Equal(got, want) {
				t.Errorf("got %s, want %s", got, want)
			}
		}
	}
}

// jsonOf is what encoding/json, HTML escaping off, writes for v.
func jsonOf(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// appendJSONString and appendFloat write what encoding/json writes, on the
// strings and numbers whose encodings differ: escapes, non-ASCII, the two
// separators JSON escapes, invalid UTF-8; exponents and their zeros.
func TestAppendScalarsMatchEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "Mountain View", "北京市", "Zürich", "a\"b", `back\slash`, "tab\there", "nl\n", "\x00\x1f",
		"<&>", "del\x7f", "line\u2028sep", "para\u2029sep", "bad\xff\xfeutf8", "cut\xe4\xb8", "\u00a0nbsp", "emoji 🌏"} {
		if got, want := appendJSONString([]byte("x"), s), append([]byte("x"), jsonOf(t, s)...); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, encoding/json %s", s, got, want)
		}
	}
	for _, f := range []float64{0, -0.0, 1, -1, 37.422, -122.085, 0.1, 1e-6, 9.99e-7, -1e-7, 1.5e-9, 123456789.125, 1e20, 1e21, -2.5e22, 180, -90,
		0.000001234, 5e-324, 1.7976931348623157e308} {
		if got, want := appendFloat([]byte("x"), f), append([]byte("x"), jsonOf(t, f)...); !bytes.Equal(got, want) {
			t.Errorf("appendFloat(%v) = %s, encoding/json %s", f, got, want)
		}
	}
}

// FuzzAppendJSONString: any string, the names of an operator's geofeed
// among them, is written as encoding/json writes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "Mountain View", "北京市", "a\"b\\c", "\u2028", "\xff", "\x7f<&>", "e\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendJSONString(nil, s), jsonOf(t, s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, encoding/json %s", s, got, want)
		}
	})
}

// FuzzAppendFloat: any finite number is written as encoding/json writes it.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 37.422, -122.085, 1e-7, 1e21, 5e-324} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Skip("encoding/json refuses NaN and infinities, and compose keeps none")
		}
		if got, want := appendFloat(nil, v), jsonOf(t, v); !bytes.Equal(got, want) {
			t.Errorf("appendFloat(%v) = %s, encoding/json %s", v, got, want)
		}
	})
}
