package names

import "github.com/ipatlas/ipatlas/internal/names/fold"

// A subdivision is one entry of the generated table subdivisions: a
// country's first-level subdivision reached by one English spelling.
type subdivision struct {
	key     string // country code + fold key of the English spelling
	code    string // ISO 3166-2 code, "" for a place without one
	chinese string
}

// lookupSubdivision finds the subdivision of country named english: by the
// full fold key of the name first, then by its key without generic words
// ("Province", "Oblast", "-ken") among the stripped keys of the table's
// spellings. The table is a sorted array of constant
// strings, compiled into the binary: it costs no heap and no start-up time,
// and a lookup is two binary searches that allocate nothing.
func lookupSubdivision(country, english string) *subdivision {
	cc, ok := upper(country)
	if !ok {
		return nil
	}
	var buf fold.Buf
	full, stripped, ok := fold.Keys(&buf, english)
	if !ok {
		return nil
	}
	var key [2 + len(fold.StrippedMark) + fold.MaxLen]byte
	copy(key[:], cc[:])
	if s := searchSubdivision(key[:2+copy(key[2:], full)]); s != nil {
		return s
	}
	n := 2 + copy(key[2:], fold.StrippedMark)
	return searchSubdivision(key[:n+copy(key[n:], stripped)])
}

func searchSubdivision(key []byte) *subdivision {
	lo, hi := 0, len(subdivisions)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if subdivisions[m].key < string(key) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(subdivisions) && subdivisions[lo].key == string(key) {
		return &subdivisions[lo]
	}
	return nil
}
