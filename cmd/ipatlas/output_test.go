package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 credits"}, {1, "1 credit"}, {2, "2 credits"}, {-1, "-1 credits"}} {
		if got := plural(tt.n, "credit", "credits"); got != tt.want {
			t.Errorf("plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Mountain View", "Mountain View"},
		{"北京市", "北京市"},
		{"São Paulo", "São Paulo"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[2J\x1b[Hcleared", "cleared"},
		{"a\x1b]0;new title\x07b", "ab"},                                     // OSC ended by BEL
		{"a\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\b", "alinkb"}, // OSC 8 hyperlink, ST
		{"a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},                                   // DCS
		{"a\x1b(Bb", "ab"},                                                   // designate G0
		{"a\x1b7b\x1b8c", "abc"},                                             // save, restore cursor
		{"a\u009b31mb", "ab"},                                                // 8-bit CSI
		{"a\u009d0;title\u009cb", "ab"},                                      // 8-bit OSC, ST
		{"a\u0085b\tc\nd\re", "a b c d e"},                                   // white space controls
		{"a\x00\x07\x08\x7fb", "ab"},                                         // NUL, BEL, BS, DEL
		{"abc\u202edcba\u202c", "abcdcba"},                                   // bidi override
		{"a\u2066b\u2069", "ab"},                                             // isolate
		{"Pa\u200bris\u200e\ufeff", "Paris"},                                 // zero-width space, LRM, BOM
		{"two\u2028lines\u2029", "two lines "},                               // line, paragraph separators
		{"bad \xff byte", "bad \ufffd byte"},                                 // invalid UTF-8
		{"unterminated \x1b]0;title", "unterminated "},                       // a string to the end
		{"trailing ESC\x1b", "trailing ESC"},
	} {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Whatever the input, printable's output holds no control character
// nor bidi control, is valid UTF-8, and is its own printable form.
func FuzzPrintable(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred", "a\x1b]0;t\x07b", "\u009b1m", "a\u202eb", "\xff\xfe", "北京\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := printable(s)
		if !utf8.ValidString(out) {
			t.Fatalf("printable(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 || (r >= 0x7f && r <= 0x9f) || isFormat(r) {
				t.Fatalf("printable(%q) = %q keeps %U", s, out, r)
			}
		}
		if again := printable(out); again != out {
			t.Fatalf("printable is not stable: %q, then %q", out, again)
		}
	})
}

// jsonSafe escapes what a terminal acts on, and the line still decodes
// to the same value.
func TestJSONSafe(t *testing.T) {
	v := map[string]string{"city": "a\u009b31mb\u007f\u202ec", "isp": "北京 \"x\""}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := jsonSafe(b)
	if strings.ContainsFunc(string(out), func(r rune) bool { return r == 0x7f || (r >= 0x80 && r <= 0x9f) || isFormat(r) }) {
		t.Errorf("raw control left in %q", out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || back["city"] != v["city"] || back["isp"] != v["isp"] {
		t.Errorf("%s decodes to %q (%v), want %q", out, back, err, v)
	}
	if plain := []byte(`{"city":"北京"}`); string(jsonSafe(plain)) != string(plain) {
		t.Errorf("a plain line changed: %s", jsonSafe(plain))
	}
}
