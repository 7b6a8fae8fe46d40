package main

// What the commands print for people: a count with its noun in the right
// number, and text from outside (a service's answer, an error message, a
// dataset's names) made safe to show on a terminal.

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
)

// countBar returns a progress function that draws a bar of done out of
// total on w, labelled, when w is a terminal, and does nothing otherwise
// (a log or a pipe wants no redrawn lines).
func countBar(w io.Writer, label string) func(done, total int) {
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			if !isTerminal(w) {
				return
			}
			bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(label),
				progressbar.OptionShowCount(),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetRenderBlankState(true),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
			)
		}
		bar.Set(done)
	}
}

// plural is n with the noun for its number: "1 credit", "0 credits",
// "2 credits".
func plural[N ~int | ~int64](n N, one, many string) string {
	s := strconv.FormatInt(int64(n), 10) + " "
	if n == 1 {
		return s + one
	}
	return s + many
}

// printable is s without anything a terminal would act on rather than
// show: escape sequences (CSI, OSC and the other strings of ECMA-48, in
// their 7-bit and 8-bit forms) are dropped whole, every other C0 or C1
// control and DEL is dropped, white space controls (tab, newline, CR,
// vertical tab, form feed, NEL, and the line and paragraph separators
// U+2028 and U+2029) become a space, and the invisible formatting
// characters (Unicode category Cf: the bidirectional overrides and
// isolates, which reorder what follows them on the line, zero-width
// spaces and marks, which make a name read as another) are dropped. Invalid UTF-8 becomes U+FFFD. A service or a dataset can
// hold any text; what the CLI prints of it must not move the cursor,
// retitle the window or fake a link.
func printable(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b: // ESC
			i += size + escapeLen(s[i+size:])
			continue
		case r == 0x9b: // CSI
			i += size + csiLen(s[i+size:])
			continue
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // DCS, SOS, OSC, PM, APC
			i += size + stringLen(s[i+size:])
			continue
		case r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029:
			b.WriteByte(' ')
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
		case isFormat(r):
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isPlain reports whether s is valid UTF-8 with nothing printable would
// change, so that the common case copies nothing.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			if c < 0x80 {
				return false
			}
			return utf8.ValidString(s) && !strings.ContainsFunc(s[i:], func(r rune) bool {
				return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || isFormat(r)
			})
		}
	}
	return true
}

// isFormat reports the invisible formatting characters (Unicode category
// Cf): the bidirectional embeddings, overrides, isolates and marks, the
// zero-width space, joiners and no-break space, the soft hyphen.
func isFormat(r rune) bool {
	return r >= 0xad && unicode.Is(unicode.Cf, r)
}

// escapeLen is the length of what follows an ESC and belongs to its
// sequence: a CSI's parameters and final byte, a control string up to
// its terminator, or the one byte of a two-byte sequence (with its
// intermediate bytes, as in ESC ( B).
func escapeLen(s string) int {
	if s == "" {
		return 0
	}
	switch s[0] {
	case '[':
		return 1 + csiLen(s[1:])
	case 'P', 'X', ']', '^', '_':
		return 1 + stringLen(s[1:])
	}
	n := 0
	for n < len(s) && s[n] >= 0x20 && s[n] <= 0x2f { // intermediate bytes
		n++
	}
	if n < len(s) && s[n] >= 0x30 && s[n] <= 0x7e { // final byte
		n++
	}
	return n
}

// csiLen is the length of a control sequence's parameter and
// intermediate bytes and its final byte. It stops early at anything else,
// which is then judged on its own.
func csiLen(s string) int {
	n := 0
	for n < len(s) && s[n] >= 0x20 && s[n] <= 0x3f {
		n++
	}
	if n < len(s) && s[n] >= 0x40 && s[n] <= 0x7e {
		n++
	}
	return n
}

// stringLen is the length of a control string up to and including its
// terminator: ST (ESC \ or U+009C) or, as xterm also takes for OSC, BEL.
// An unterminated string runs to the end.
func stringLen(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x07 || r == 0x9c:
			return i + size
		case r == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		}
		i += size
	}
	return len(s)
}

// jsonSafe escapes, in valid JSON, the characters that encoding/json
// leaves raw but a terminal acts on or hides: DEL, the C1 controls and
// the invisible formatting characters. They can only be inside strings,
// where \uXXXX means the same character, so a program reading the line
// gets exactly the value it had.
func jsonSafe(b []byte) []byte {
	if isPlain(string(b)) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) || isFormat(r) || r == 0x2028 || r == 0x2029 {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
