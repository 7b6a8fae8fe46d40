package main

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"github.com/nyaruka/phonenumbers"
)

type callingCode struct{ region, code string }

// loadCallingCodes lists every region libphonenumber knows with its
// international calling code, sorted by region. The table spares the
// server libphonenumber itself, whose metadata is decoded when any program
// that links it starts: milliseconds and megabytes of heap for one number
// per country.
func loadCallingCodes() ([]callingCode, error) {
	var out []callingCode
	for region := range phonenumbers.GetSupportedRegions() {
		if n := phonenumbers.GetCountryCodeForRegion(region); n > 0 {
			out = append(out, callingCode{region, strconv.Itoa(n)})
		}
	}
	if len(out) < 240 {
		return nil, fmt.Errorf("libphonenumber: only %d regions with a calling code", len(out))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].region < out[j].region })
	return out, nil
}

func emitCallingCodes(cs []callingCode) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, `//
// Source: libphonenumber's metadata (Apache-2.0), as the module
// %s embeds it, read with
// GetSupportedRegions and GetCountryCodeForRegion.

package names

// callingCodes is each region's international calling code, without "+",
// sorted by region.
var callingCodes = [...]struct{ region, code string }{
`, phonenumbersVersion())
	for _, c := range cs {
		fmt.Fprintf(&b, "\t{%q, %q},\n", c.region, c.code)
	}
	b.WriteString("}\n")
	return b.Bytes()
}
