package names

import "strings"

// WholeName reports whether a place name ending in brackets is the
// place's own name ("Frankfurt (Oder)", "Kempten (Allgäu)"), which must
// stay whole, rather than the IP data's "City (District)". country is an
// ISO 3166-1 alpha-2 code, upper or lower case.
func WholeName(country, name string) bool {
	if len(country) != 2 || !strings.HasSuffix(name, ")") {
		return false
	}
	var cc [2]byte
	for i := range 2 {
		c := country[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		cc[i] = c
	}
	lo, hi := 0, len(bracketNames)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compareBracket(bracketNames[m], cc, name) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(bracketNames) && compareBracket(bracketNames[lo], cc, name) == 0
}

// compareBracket compares a line of bracketNames, "CC\tname", with cc
// and name, like strings.Compare.
func compareBracket(line string, cc [2]byte, name string) int {
	if d := (int(line[0])<<8 | int(line[1])) - (int(cc[0])<<8 | int(cc[1])); d != 0 {
		return d
	}
	return strings.Compare(line[3:], name)
}
