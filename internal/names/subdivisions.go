package names

import (
	"strings"
	"sync"

	"github.com/ipatlas/ipatlas/internal/names/fold"
)

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

// ProvinceCode returns the ISO 3166-2 code of a country's first-level
// subdivision given by its English name, without the country's part, as
// the country's own code stands apart from it: "QC" for Quebec in CA,
// "CA" for California in US, "BJ" for Beijing in CN. It is "" for a
// name the table does not know and for a place without a code.
func ProvinceCode(country, english string) string {
	s := lookupSubdivision(country, english)
	if s == nil {
		return ""
	}
	_, code, _ := strings.Cut(s.code, "-")
	return code
}

// SubdivisionCode is ProvinceCode for a subdivision given by its name or
// by its code, with or without the country's part ("QC", "CA-QC"). A
// code is returned only when the table knows it for the country.
func SubdivisionCode(country, nameOrCode string) string {
	if c := ProvinceCode(country, nameOrCode); c != "" {
		return c
	}
	cc, ok := upper(country)
	if !ok {
		return ""
	}
	code := strings.ToUpper(strings.TrimSpace(nameOrCode))
	if p, rest, ok := strings.Cut(code, "-"); ok {
		if p != string(cc[:]) {
			return ""
		}
		code = rest
	}
	if code == "" || len(code) > 3 {
		return ""
	}
	if _, ok := subdivisionCodes()[string(cc[:])+"-"+code]; ok {
		return code
	}
	return ""
}

// subdivisionCodes is the set of the table's codes ("CA-QC").
var subdivisionCodes = sync.OnceValue(func() map[string]struct{} {
	m := make(map[string]struct{}, len(subdivisions)/2)
	for i := range subdivisions {
		if c := subdivisions[i].code; c != "" {
			m[c] = struct{}{}
		}
	}
	return m
})
