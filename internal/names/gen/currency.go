package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// cldrCorePackage holds CLDR's supplemental data (Unicode-3.0); its
// currencyData lists, per region, every currency with the period it was
// tender in.
var cldrCorePackage = pinned{
	name:      "cldr-core",
	version:   "48.2.0",
	integrity: "sha512-zfmLothncSwfv2jlevoSrgI2VGgH8SDGHXst6jUEotHA8nq9Igeg9jzdJDFtBso9pgJuG89DK16TzrmZDdo2Bg==",
}

// currencyDate is the day the table answers for: a fixed date, so that a
// re-run gives the same table, moved forward when CLDR is.
const currencyDate = "2026-11-01"

type tender struct{ region, code string }

// loadCurrencies chooses each region's currency on currencyDate: of the
// currencies CLDR lists for the region, those that are tender (not marked
// _tender "false"), whose period has begun (_from on or before the date, or
// none) and has not ended (no _to, or a _to after the date); of those the
// first CLDR lists, its primary one (PAB before USD in Panama). Bulgaria
// gives EUR: CLDR 48 lists EUR from 2026-01-01 and BGN until 2026-01-31.
func loadCurrencies(dir, registry string) ([]tender, string, error) {
	tgz, err := cldrCorePackage.load(dir, registry)
	if err != nil {
		return nil, "", err
	}
	const file = "package/supplemental/currencyData.json"
	files, err := untar(tgz, file)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", cldrCorePackage.name, err)
	}
	var data struct {
		Supplemental struct {
			CurrencyData struct {
				Region map[string][]map[string]struct {
					From   string `json:"_from"`
					To     string `json:"_to"`
					Tender string `json:"_tender"`
				} `json:"region"`
			} `json:"currencyData"`
		} `json:"supplemental"`
	}
	if err := json.Unmarshal(files[file], &data); err != nil {
		return nil, "", fmt.Errorf("%s: %w", cldrCorePackage.name, err)
	}
	var out []tender
	for region, list := range data.Supplemental.CurrencyData.Region {
		if len(region) != 2 || region == "ZZ" {
			continue
		}
	entries:
		for _, entry := range list {
			for code, c := range entry {
				if c.Tender != "false" && c.From <= currencyDate && (c.To == "" || c.To > currencyDate) {
					out = append(out, tender{region, code})
					break entries
				}
			}
		}
	}
	if len(out) < 240 {
		return nil, "", fmt.Errorf("%s: only %d regions with a currency", cldrCorePackage.name, len(out))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].region < out[j].region })
	return out, cldrCorePackage.String(), nil
}

func emitCurrencies(ts []tender, source string) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, `//
// Source: CLDR's supplemental currencyData, %s,
// Unicode-3.0. The rule that chooses a currency is loadCurrencies in
// internal/names/gen/currency.go.

package names

// currencyDate is the day the table gives each region's tender for.
const currencyDate = %q

// tenders is each region's ISO 4217 tender on currencyDate, sorted by region.
var tenders = [...]struct{ region, code string }{
`, source, currencyDate)
	for _, t := range ts {
		fmt.Fprintf(&b, "\t{%q, %q},\n", t.region, t.code)
	}
	b.WriteString("}\n")
	return b.Bytes()
}
