package names

import "strings"

type bracketName struct{ country, name string }

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
	_, ok := bracketNames[bracketName{string(cc[:]), name}]
	return ok
}
