package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// isoCodes are every ISO 3166-2 code CLDR knows, of every level, in upper
// case without the hyphen ("USCA", "GBBST", "ITRM"), and how many of them
// ISO 3166-2 has withdrawn.
type isoCodes struct {
	codes      []string
	deprecated int
	source     string
}

// loadISOCodes reads cldr-core's supplemental subdivisionContainment.json,
// which places every current ISO 3166-2 code, of every level, in its
// country or parent subdivision, and its aliases.json, whose subdivision
// aliases are the codes ISO 3166-2 has withdrawn ("CN-11", now "CN-BJ";
// "FR-A", now "FR-GES") or that CLDR writes as a region ("CN-TW", "US-PR").
// Both kinds are kept: a withdrawn code still names its place, and feeds
// lag behind ISO's changes.
func loadISOCodes(dir, registry string) (*isoCodes, error) {
	tgz, err := cldrCorePackage.load(dir, registry)
	if err != nil {
		return nil, err
	}
	const (
		containment = "package/supplemental/subdivisionContainment.json"
		aliases     = "package/supplemental/aliases.json"
	)
	files, err := untar(tgz, containment, aliases)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cldrCorePackage.name, err)
	}
	var sc struct {
		Supplemental struct {
			Containment map[string]struct {
				Contains []string `json:"_contains"`
			} `json:"subdivisionContainment"`
		} `json:"supplemental"`
	}
	if err := json.Unmarshal(files[containment], &sc); err != nil {
		return nil, fmt.Errorf("%s: %w", cldrCorePackage.name, err)
	}
	var al struct {
		Supplemental struct {
			Metadata struct {
				Alias struct {
					Subdivision map[string]json.RawMessage `json:"subdivisionAlias"`
				} `json:"alias"`
			} `json:"metadata"`
		} `json:"supplemental"`
	}
	if err := json.Unmarshal(files[aliases], &al); err != nil {
		return nil, fmt.Errorf("%s: %w", cldrCorePackage.name, err)
	}
	set := map[string]bool{}
	add := func(cldr string) error {
		code := strings.ToUpper(cldr)
		if len(code) < 3 || len(code) > 5 || !isAlpha(code[:2]) || !isAlnum(code[2:]) {
			return fmt.Errorf("%s: %q is no ISO 3166-2 code", cldrCorePackage.name, cldr)
		}
		set[code] = true
		return nil
	}
	for _, c := range sc.Supplemental.Containment {
		for _, code := range c.Contains {
			if err := add(code); err != nil {
				return nil, err
			}
		}
	}
	current := len(set)
	for code := range al.Supplemental.Metadata.Alias.Subdivision {
		if err := add(code); err != nil {
			return nil, err
		}
	}
	out := &isoCodes{deprecated: len(set) - current, source: cldrCorePackage.String()}
	for code := range set {
		out.codes = append(out.codes, code)
	}
	if current < 4500 || out.deprecated < 50 {
		return nil, fmt.Errorf("%s: only %d current and %d withdrawn subdivision codes", cldrCorePackage.name, current, out.deprecated)
	}
	sort.Slice(out.codes, func(i, j int) bool { return isoRecord(out.codes[i]) < isoRecord(out.codes[j]) })
	return out, nil
}

// isoRecord is a code's record in the generated table: five bytes, the
// country's two letters and the code's own part padded with spaces.
func isoRecord(code string) string {
	return code + "   "[:5-len(code)]
}

func isAlpha(s string) bool {
	for _, c := range []byte(s) {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func isAlnum(s string) bool {
	for _, c := range []byte(s) {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func emitISOCodes(c *isoCodes) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, `//
// Source: CLDR's supplemental subdivisionContainment (every current code)
// and subdivision aliases (the withdrawn ones), %s,
// Unicode-3.0; see internal/names/gen/isocodes.go.

package names

// isoSubdivisions holds every ISO 3166-2 code, of every level, current
// (%d) or withdrawn (%d): records of five bytes, the country code and
// the code's own part padded with spaces ("USCA ", "GBBST"), sorted,
// one line a country.
const isoSubdivisions = "" +
`, c.source, len(c.codes)-c.deprecated, c.deprecated)
	for i := 0; i < len(c.codes); {
		j := i
		var line strings.Builder
		for ; j < len(c.codes) && c.codes[j][:2] == c.codes[i][:2]; j++ {
			line.WriteString(isoRecord(c.codes[j]))
		}
		fmt.Fprintf(&b, "\t%q", line.String())
		if j < len(c.codes) {
			b.WriteString(" +")
		}
		b.WriteString("\n")
		i = j
	}
	return b.Bytes()
}
