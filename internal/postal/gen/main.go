// Command gen writes the postal code snapshot built into the binary
// (internal/postal/snapshot/postal-codes.txt.xz), which serves where
// GeoNames cannot be reached and no copy was fetched before.
//
// Its input is the project's copy of GeoNames' postal codes in GeoNames'
// own format, ../shared/data/postal/geonames-postal-allCountries.txt.xz
// beside the repository, pinned by its SHA-256. GeoNames has 1.2 million
// codes; the snapshot must stay under 1 MiB, so it keeps one code per
// place (the code nearest the middle of the place's codes), for the
// places with the most codes first (a city has hundreds, a village one),
// as many as fit, every place of the countries with few codes, and the
// code of a territory that has only one. Its rows are GeoNames' rows, in
// GeoNames' format, less what package postal does not read (see encode).
//
// Usage, from the repository root:
//
//	go run ./internal/postal/gen -out internal/postal/snapshot
package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/names/fold"
	"github.com/ipatlas/ipatlas/internal/postal"
	"github.com/ulikunitz/xz"
)

const (
	inputFile = "geonames-postal-allCountries.txt.xz"
	// pinnedSHA256 is the SHA-256 of the input the committed snapshot
	// was written from.
	pinnedSHA256 = "b8638e61f3e30dc276336fde7bddfe3c04aad8e27fd3f256032768b0e24e3882"
	// snapshotFile is the snapshot's name in its directory.
	snapshotFile = "postal-codes.txt.xz"
	// budget bounds the snapshot: no tracked file may exceed 1 MiB.
	budget = 1000 * 1000
	// smallCountry is the most places a country may have for the
	// snapshot to keep every one of them.
	smallCountry = 3000
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	out := fs.String("out", ".", "directory of the snapshot")
	in := fs.String("in", filepath.Join(defaultSharedDir(), inputFile), "GeoNames' postal codes in GeoNames' format (xz, gzip, zip or text)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != pinnedSHA256 {
		return fmt.Errorf("%s has SHA-256 %x, not the pinned %s: a new input needs the pin moved and the snapshot regenerated", *in, sum, pinnedSHA256)
	}
	b, stats, err := build(raw)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, snapshotFile), b, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "gen:", stats)
	return nil
}

// defaultSharedDir is ../shared/data/postal beside the repository.
func defaultSharedDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("..", "shared", "data", "postal")
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "data", "postal")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "..", "shared", "data", "postal")
		}
	}
}

// group is one place of the input: the rows of one name in one
// subdivision of one country.
type group struct {
	cc, admin, key string
	rows           []postal.Row
}

// build selects the snapshot's rows from the input and writes them,
// xz-compressed, within budget.
func build(raw []byte) ([]byte, string, error) {
	r, err := postal.Open(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, "", err
	}
	groups := map[string]*group{}
	codes := map[string]map[string]bool{} // country: its codes
	total := 0
	err = postal.Read(r, func(row *postal.Row) error {
		if !postal.Usable(row) {
			return nil
		}
		total++
		k := row.Country + "\x00" + row.Admin1 + "\x00" + fold.String(row.Place)
		g := groups[k]
		if g == nil {
			g = &group{cc: row.Country, admin: row.Admin1, key: fold.String(row.Place)}
			groups[k] = g
		}
		g.rows = append(g.rows, *row)
		if codes[row.Country] == nil {
			codes[row.Country] = map[string]bool{}
		}
		codes[row.Country][row.Code] = true
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	list := make([]*group, 0, len(groups))
	for _, g := range groups {
		list = append(list, g)
	}
	// A territory with one code first, then every place of a country
	// with few codes (China's 2,352 cities and counties, Canada's
	// 1,657 areas: most of their places have one code, so a count would
	// rank them last), then the places with the most codes; ties in a
	// fixed order.
	places := map[string]int{}
	for _, g := range groups {
		places[g.cc]++
	}
	rank := func(g *group) int {
		switch {
		case len(codes[g.cc]) == 1:
			return math.MaxInt
		case places[g.cc] <= smallCountry:
			return math.MaxInt - 1
		}
		return len(g.rows)
	}
	slices.SortFunc(list, func(a, b *group) int {
		return cmp.Or(cmp.Compare(rank(b), rank(a)), cmp.Compare(a.cc, b.cc), cmp.Compare(a.admin, b.admin), cmp.Compare(a.key, b.key))
	})
	reps := make([]postal.Row, len(list))
	for i, g := range list {
		reps[i] = representative(g.rows)
	}
	// The most places whose snapshot fits the budget.
	lo, hi := 0, len(reps)
	var best []byte
	for lo < hi {
		mid := (lo + hi + 1) / 2
		b, err := encode(reps[:mid])
		if err != nil {
			return nil, "", err
		}
		if len(b) <= budget {
			lo, best = mid, b
		} else {
			hi = mid - 1
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("not even one place fits %d bytes", budget)
	}
	stats := fmt.Sprintf("%d of %d places (%d codes of %d countries in the input), down to places of %d codes; %d bytes",
		lo, len(list), total, len(codes), len(list[lo-1].rows), len(best))
	return best, stats, nil
}

// representative is the row of a place whose point is nearest the middle
// of the place's points; ties go to the lowest code.
func representative(rows []postal.Row) postal.Row {
	var lat, lon float64
	for _, r := range rows {
		lat, lon = lat+r.Lat, lon+r.Lon
	}
	lat, lon = lat/float64(len(rows)), lon/float64(len(rows))
	best := 0
	for i, r := range rows {
		d, bd := postal.Km(lat, lon, r.Lat, r.Lon), postal.Km(lat, lon, rows[best].Lat, rows[best].Lon)
		if d < bd || d == bd && r.Code < rows[best].Code {
			best = i
		}
	}
	return rows[best]
}

// subdivisionOf is the ISO 3166-2 code (without the country's part) that
// package postal reads a row's subdivision as, "" when it knows none.
func subdivisionOf(r postal.Row) string {
	if r.Admin1 != "" {
		if c := names.SubdivisionCode(r.Country, r.Admin1); c != "" {
			return c
		}
	}
	if r.Admin1Code != "" {
		return names.SubdivisionCode(r.Country, r.Admin1Code)
	}
	return ""
}

// encode writes rows in GeoNames' format, sorted by country, code and
// place, and compresses them with xz. To fit more places it writes less
// than GeoNames: coordinates to three decimals (about 100 m), no
// accuracy, and for a subdivision the names tables know, its ISO 3166-2
// code in the admin code column in place of its name and GeoNames' code
// (which package postal reads alike).
func encode(rows []postal.Row) ([]byte, error) {
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b postal.Row) int {
		return cmp.Or(cmp.Compare(a.Country, b.Country), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Place, b.Place))
	})
	var text bytes.Buffer
	round := func(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }
	for _, r := range rows {
		admin, code := r.Admin1, r.Admin1Code
		if iso := subdivisionOf(r); iso != "" {
			admin, code = "", iso
		}
		fmt.Fprintf(&text, "%s\t%s\t%s\t%s\t%s\t\t\t\t\t%s\t%s\t\n", r.Country, r.Code, r.Place, admin, code, round(r.Lat), round(r.Lon))
	}
	var out bytes.Buffer
	w, err := xz.NewWriter(&out)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(text.Bytes()); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if strings.Count(text.String(), "\n") != len(rows) {
		return nil, fmt.Errorf("a row holds a newline")
	}
	return out.Bytes(), nil
}
