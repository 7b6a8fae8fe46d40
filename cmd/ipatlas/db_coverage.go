package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"

	"github.com/ipatlas/ipatlas/internal/geo"
)

const dbCoverageHelp = `usage: ipatlas db coverage [--data-dir DIR] [--n 1000] [--n6 300] [--seed S] [--json]

Measures how complete the answers of the data dir are: draws addresses at
random from the networks of its ASN data (each weighted by its size), looks
each up in English and Chinese with the engine the service uses, and prints
the share of answers with Chinese province and city names, China's city
area codes, English cities without a "(District)" part and districts, each
against its goal, with the most frequent values still missing.

Each run draws a new sample and prints its seed; --seed repeats a sample.

Flags:
  --config FILE    config file (env IPATLAS_CONFIG; see 'ipatlas --help')
  --data-dir DIR   data directory (env IPATLAS_DATA_DIR, else the config
                   file; default $XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas)
  --n N            IPv4 addresses to draw (default 1000)
  --n6 N           IPv6 addresses to draw (default 300)
  --seed S         seed of the draw, an unsigned integer (default: a new one)
  --json           print one JSON object
`

// maxCoverageSample bounds a sample: two lookups per address, and a
// sample beyond this measures no better for its cost.
const maxCoverageSample = 10_000_000

func runDBCoverage(_ context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("db coverage", flag.ContinueOnError)
	dirFlag := fs.String("data-dir", "", "data directory")
	configFlag := fs.String("config", "", "config file")
	n4 := fs.Int("n", 1000, "IPv4 addresses")
	n6 := fs.Int("n6", 300, "IPv6 addresses")
	seed := fs.Uint64("seed", 0, "seed")
	jsonOut := fs.Bool("json", false, "print JSON")
	if err := parseDBFlags(fs, args, e, dbCoverageHelp); err != nil {
		return err
	}
	ls, err := resolveLocal(e, *configFlag, *dirFlag, "")
	if err != nil {
		return err
	}
	dir := &ls.dataDir
	if *n4 < 0 || *n6 < 0 || *n4+*n6 == 0 || *n4 > maxCoverageSample || *n6 > maxCoverageSample {
		return usageError(fmt.Sprintf("db coverage: --n %d --n6 %d: want 0 to %d each, and some addresses", *n4, *n6, maxCoverageSample))
	}
	seeded := false
	fs.Visit(func(f *flag.Flag) { seeded = seeded || f.Name == "seed" })
	if !seeded {
		*seed = rand.Uint64()
	}
	engine, err := geo.Open(*dir, geo.Options{})
	if err != nil {
		return fmt.Errorf("db coverage: %w (fetch the datasets with 'ipatlas db fetch --data-dir %s')", err, *dir)
	}
	defer engine.Close()
	rep, err := engine.MeasureCoverage(geo.CoverageOptions{IPv4: *n4, IPv6: *n6, Seed: *seed})
	if err != nil {
		return fmt.Errorf("db coverage: %w", err)
	}
	if *jsonOut {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if err := rep.Write(e.stdout); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "\nrepeat this sample with --seed %d\n", rep.Seed)
	return err
}
