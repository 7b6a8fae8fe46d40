// Package fold turns place names into the keys the names tables are
// indexed by, so that the spellings of one name in different sources meet.
// It has two rules, one per kind of table:
//
//   - Keys, for subdivisions: words run together, with the generic words
//     that only say what kind of division a place is stripped into a
//     second key ("Gyeonggi-do", "Gyeonggi Province" and "Gyeonggi" meet);
//   - Append, for cities: words kept apart by single spaces, nothing
//     stripped ("São Paulo", "Sao Paulo" and "SAO-PAULO" all fold to
//     "sao paulo"), because a city's kind words are part of its name.
//
// The generator (package names/gen) and the lookups of package names use
// the same functions, so a key computed at generation time is found at run
// time; a change to a rule needs the tables regenerated. Neither allocates.
package fold

import "golang.org/x/text/unicode/norm"

// StrippedMark separates the country code from a stripped key in the
// tables, so that stripped keys and full keys are looked up apart.
const StrippedMark = "."

// MaxLen is the longest name, in bytes of its folded words, that has a key.
const MaxLen = 96

// Buf is the scratch space Keys needs.
type Buf [3 * MaxLen]byte

// Keys returns the two keys of name: full, its words (letters and digits,
// accents removed, lower case) run together, and stripped, the same
// without the generic words at either end ("Province of", "Oblast",
// "-ken"), which is full itself when nothing is left after stripping. ok is
// false when name has no letter or digit or is longer than MaxLen. Both
// keys are slices of buf.
func Keys(buf *Buf, name string) (full, stripped []byte, ok bool) {
	words := buf[:0:MaxLen]
	for i := 0; i < len(name); {
		c := name[i]
		var rs string // replacement letters, or "" for a separator
		n := 1
		switch {
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			rs = name[i : i+1]
		case 'A' <= c && c <= 'Z':
			rs = lower[c-'A' : c-'A'+1]
		case c >= 0x80:
			p := norm.NFD.PropertiesString(name[i:])
			n = p.Size()
			if n == 0 {
				n = 1
			}
			rs = special(name[i : i+n])
			if d := p.Decomposition(); rs == "" && len(d) > 0 {
				// The base letter of a decomposed letter ("é" is "e" and
				// an accent); decompositions start with it, itself
				// decomposed again where it carries a second accent ("ệ"
				// is "ẹ" and a circumflex).
				if d[0] >= 0x80 {
					if dd := norm.NFD.Properties(d).Decomposition(); len(dd) > 0 {
						d = dd
					}
				}
				if b := d[0]; 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' {
					rs = lower[b|0x20-'a' : b|0x20-'a'+1]
				}
			}
		}
		i += n
		if rs == "" {
			if len(words) > 0 && words[len(words)-1] != ' ' {
				if len(words) == cap(words) {
					return nil, nil, false
				}
				words = append(words, ' ')
			}
			continue
		}
		if len(words)+len(rs) > cap(words) {
			return nil, nil, false
		}
		words = append(words, rs...)
	}
	for len(words) > 0 && words[len(words)-1] == ' ' {
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return nil, nil, false
	}

	// The span of the words left once the generic ones are stripped.
	lo, hi := 0, len(words)
	for lo < hi {
		w, rest := firstWord(words[lo:hi])
		if !leading(w) || rest == 0 {
			break
		}
		lo = hi - rest
	}
	for lo < hi {
		w, rest := lastWord(words[lo:hi])
		if !trailing(w) || rest == 0 {
			break
		}
		hi = lo + rest
	}

	if w, rest := firstWord(words[lo:hi]); rest == 0 && (leading(w) || trailing(w)) {
		lo, hi = 0, len(words) // nothing but generic words: keep them all
	}

	full = squeeze(buf[MaxLen:MaxLen:2*MaxLen], words)
	stripped = squeeze(buf[2*MaxLen:2*MaxLen:3*MaxLen], words[lo:hi])
	return full, stripped, true
}

const lower = "abcdefghijklmnopqrstuvwxyz"

// special spells the letters that Unicode does not decompose into a base
// letter and a mark.
func special(r string) string {
	switch r {
	case "ß":
		return "ss"
	case "ø", "Ø":
		return "o"
	case "æ", "Æ":
		return "ae"
	case "œ", "Œ":
		return "oe"
	case "ł", "Ł":
		return "l"
	case "đ", "Đ", "ð", "Ð":
		return "d"
	case "ı":
		return "i"
	case "ħ", "Ħ":
		return "h"
	case "þ", "Þ":
		return "th"
	}
	return ""
}

// squeeze appends the words without their spaces.
func squeeze(dst, words []byte) []byte {
	for _, c := range words {
		if c != ' ' {
			dst = append(dst, c)
		}
	}
	return dst
}

// firstWord returns the first word and the length of what follows it after
// its space (0 when it is the only word).
func firstWord(s []byte) (w []byte, rest int) {
	for i, c := range s {
		if c == ' ' {
			return s[:i], len(s) - i - 1
		}
	}
	return s, 0
}

// lastWord returns the last word and the length of what precedes it before
// its space (0 when it is the only word).
func lastWord(s []byte) (w []byte, rest int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ' ' {
			return s[i+1:], i
		}
	}
	return s, 0
}

// leading reports whether a word that opens a name only says what kind of
// division it is ("Province of", "Republic of", "Departamento de").
func leading(w []byte) bool {
	switch string(w) {
	case "province", "provincia", "region", "regiao", "republic", "respublika",
		"state", "estado", "department", "departamento", "departement",
		"governorate", "muhafazat", "gouvernorat", "county", "district", "distrito",
		"municipality", "municipio", "city", "ciudad", "canton", "kanton",
		"prefecture", "voivodeship", "wojewodztwo", "emirate", "parish",
		"territory", "federal", "autonomous", "metropolitan", "special",
		"capital", "administrative", "of", "the", "de", "del", "du", "des":
		return true
	}
	return false
}

// trailing reports whether a word that closes a name only says what kind
// of division it is ("Oblast", "-ken", "-do", "Region").
func trailing(w []byte) bool {
	switch string(w) {
	case "province", "provincia", "region", "state", "department", "departement",
		"governorate", "county", "district", "municipality", "city", "canton",
		"prefecture", "voivodeship", "emirate", "parish", "territory", "federal",
		"autonomous", "community", "metropolitan", "special", "capital",
		"administrative", "republic", "oblast", "oblysy", "voblast",
		"voblasts", "voblasc", "kraj", "krai", "kray", "okrug", "raion", "rayon",
		"ken", "to", "fu", "do", "shi", "sheng", "si", "gun", "gu", "qu",
		"division", "area", "zone", "island", "islands", "council":
		return true
	}
	return false
}

// Generic reports whether a folded word only says what kind of division a
// place is ("province", "oblast", "ken").
func Generic(word string) bool {
	return leading([]byte(word)) || trailing([]byte(word))
}
