package fold

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Append appends the key of s to dst and returns it:
//   - letters lose their accents (NFD, then the base letter) and their case;
//     the Latin letters without a decomposition become their usual ASCII
//     spelling (ß ss, æ ae, ø o, ł l, đ d, þ th, ı i);
//   - apostrophes vanish ("N'Djamena" and "Ndjamena" meet);
//   - hyphens, dots, commas, slashes and underscores are spaces, and runs
//     of spaces are one space, none at either end ("Saint-Denis" is
//     "saint denis", as is "St.-Denis" not);
//   - any other rune is kept, lower-cased, so that a name in another
//     script folds to itself and matches no Latin key.
//
// Append allocates only when dst lacks the room.
func Append(dst []byte, s string) []byte {
	start := len(dst)
	space := false // a separator is pending
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= utf8.RuneSelf {
			if d := norm.NFD.PropertiesString(s[i:]).Decomposition(); len(d) > 0 && d[0] < utf8.RuneSelf {
				r = rune(d[0])
			}
		}
		i += n
		var ascii string
		switch r {
		case '\'', '’', 'ʼ', 'ʻ', '`', '´', 'ʹ':
			continue
		case ' ', '-', '‐', '‑', '–', '—', '.', ',', '/', '_', '\t':
			space = len(dst) > start
			continue
		case 'ß':
			ascii = "ss"
		case 'æ', 'Æ':
			ascii = "ae"
		case 'œ', 'Œ':
			ascii = "oe"
		case 'ø', 'Ø':
			ascii = "o"
		case 'ł', 'Ł':
			ascii = "l"
		case 'đ', 'Đ', 'ð', 'Ð':
			ascii = "d"
		case 'þ', 'Þ':
			ascii = "th"
		case 'ı':
			ascii = "i"
		case 'ħ', 'Ħ':
			ascii = "h"
		}
		if space {
			dst = append(dst, ' ')
			space = false
		}
		switch {
		case ascii != "":
			dst = append(dst, ascii...)
		case r < utf8.RuneSelf:
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			dst = append(dst, byte(r))
		default:
			dst = utf8.AppendRune(dst, unicode.ToLower(r))
		}
	}
	return dst
}

// String is Append for a new string.
func String(s string) string { return string(Append(nil, s)) }

// Latin reports whether a key is all ASCII: a name in the Latin script.
func Latin(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
