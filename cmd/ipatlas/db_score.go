package main

// db score: how right the answers of the data dir are, against a file of
// ground truth.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/score"
)

const dbScoreHelp = `usage: ipatlas db score --truth FILE [--data-dir DIR] [--overrides FILE] [--geofeed FEED] [--json]

Scores the answers of the data dir against ground truth: looks each
address of FILE up with the engine a server with the same settings
answers from (every dataset of the data dir, the overrides file, the
published feeds' copies, the privacy lists) and compares the answer with
where the address really is.

FILE is a CSV of ip,country,latitude,longitude[,kind], with or without that
header; kind is a label of your own ("probe", "anchor"). Ground truth that
none of the data's sources wrote, such as RIPE Atlas probes' registered
locations, measures best.

For every truth, then by the truth's continent, by the answer's network
kind (hosting by the privacy flags, or other), by the file's kind and by
the answer's confidence, it prints: the share answered, the share with the
right country, the median and 90th-percentile distance between the answered
and the true point, the shares within 10, 40 and 100 km, and, where answers
state an accuracy radius, the share of truths inside it. Shares are of all
the truths of the row: an address without an answer is neither right nor
near; the distances are of the answers with a point.

Flags (each also read from its environment variable, then the config file;
see 'ipatlas --help'):
  --truth FILE     the ground truth (required)
  --config FILE    config file (IPATLAS_CONFIG)
  --data-dir DIR   data directory (IPATLAS_DATA_DIR; default
                   $XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas)
  --overrides FILE the local corrections file (IPATLAS_OVERRIDES)
  --geofeed FEED   a published feed, "URL [AS...]" (repeatable;
                   IPATLAS_GEOFEED; default the built-in list, "none" for
                   no feed): its copy in the data dir, as 'db fetch' or a
                   running server left it (score fetches nothing)
  --json           print one JSON object
`

// dbScore is the --json output of db score: what was scored against
// what, then the scorecard.
type dbScore struct {
	TruthFile string `json:"truth_file"`
	DataDir   string `json:"data_dir"`
	// Sources are the location and AS files the answers came from.
	Sources []scoreSource `json:"sources"`
	// Corrections are the overrides file and feeds in service, with how
	// many entries of each were applied.
	Corrections []scoreCorrection `json:"corrections"`
	score.Report
}

type scoreSource struct {
	File         string `json:"file"`
	DatabaseType string `json:"database_type"`
	BuildTime    string `json:"build_time"`
	// Package and Version name the fetched package that installed the
	// file; empty for a file put in the data dir by hand.
	Package string `json:"package,omitempty"`
	Version string `json:"version,omitempty"`
}

type scoreCorrection struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Applied int    `json:"applied"`
}

func runDBScore(_ context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("db score", flag.ContinueOnError)
	truthFlag := fs.String("truth", "", "truth file")
	dirFlag := fs.String("data-dir", "", "data directory")
	configFlag := fs.String("config", "", "config file")
	overridesFlag := fs.String("overrides", "", "overrides file")
	jsonOut := fs.Bool("json", false, "print JSON")
	var feedFlags feedFlag
	fs.Var(&feedFlags, "geofeed", "a published RFC 8805 feed: \"URL [AS...]\", or none")
	if err := parseDBFlags(fs, args, e, dbScoreHelp); err != nil {
		return err
	}
	if *truthFlag == "" {
		return usageError("db score: --truth FILE is required")
	}
	ls, err := resolveLocal(e, *configFlag, *dirFlag, "")
	if err != nil {
		return err
	}
	overrides, feeds, err := correctionSettings(ls, e.getenv, *overridesFlag, feedFlags)
	if err != nil {
		return usageError("db score: --geofeed: " + err.Error())
	}
	// The truth is read before the data dir is opened, so that a mistake
	// in it is reported as such even without a dataset.
	truths, err := readTruthFile(*truthFlag)
	if err != nil {
		return fmt.Errorf("db score: %w", err)
	}
	engine, err := openConfiguredEngine(ls.dataDir, overrides, feeds, geo.Options{})
	if err != nil {
		return fmt.Errorf("db score: %w", err)
	}
	defer engine.Close()

	progress := countBar(e.stderr, "scoring")
	start := time.Now()
	rep, err := score.Run(truths, func(a netip.Addr) (score.Answer, error) {
		r, err := engine.Lookup(a, ipatlas.English)
		return score.FromRecord(r), err
	}, score.Options{Progress: progress})
	if err != nil {
		return fmt.Errorf("db score: %w", err)
	}
	out := dbScore{TruthFile: *truthFlag, DataDir: ls.dataDir, Report: rep}
	if out.Sources, err = scoreSources(ls.dataDir, engine); err != nil {
		return fmt.Errorf("db score: %w", err)
	}
	out.Corrections = []scoreCorrection{}
	for _, c := range engine.Corrections() {
		out.Corrections = append(out.Corrections, scoreCorrection{Kind: c.Kind, Name: c.Name, Applied: c.Applied})
	}
	if *jsonOut {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return printDBScore(e.stdout, out, time.Since(start))
}

func readTruthFile(name string) ([]score.Truth, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	truths, err := score.ReadTruth(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return truths, nil
}

// scoreSources lists the engine's location and AS files with the package
// that installed each.
func scoreSources(dir string, engine *geo.Engine) ([]scoreSource, error) {
	m, err := dataset.ReadManifest(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := []scoreSource{}
	for _, s := range engine.Datasets() {
		if !slices.Contains([]string{"city", "country", "asn", "isp"}, s.Kind) {
			continue
		}
		src := scoreSource{File: s.File, DatabaseType: s.DatabaseType, BuildTime: s.BuildTime}
		for _, p := range m.Packages {
			if slices.ContainsFunc(p.Files, func(f dataset.File) bool { return f.Name == s.File }) {
				src.Package, src.Version = p.Name, p.Version
			}
		}
		out = append(out, src)
	}
	return out, nil
}

func printDBScore(w io.Writer, s dbScore, took time.Duration) error {
	fmt.Fprintf(w, "%s truths of %s scored against %s in %s\n", groupThousands(s.Overall.Truths), s.TruthFile, s.DataDir,
		took.Round(10*time.Millisecond))
	for _, src := range s.Sources {
		built := src.BuildTime
		if t, err := time.Parse(time.RFC3339, src.BuildTime); err == nil {
			built = t.UTC().Format(time.DateOnly)
		}
		what := src.DatabaseType
		if src.Package != "" {
			what = src.Package + " " + src.Version
		}
		fmt.Fprintf(w, "  %s: %s, built %s\n", src.File, what, built)
	}
	for _, c := range s.Corrections {
		fmt.Fprintf(w, "  %s %s: %s applied\n", c.Kind, c.Name, plural(c.Applied, "entry", "entries"))
	}
	fmt.Fprintln(w)
	return s.Report.Write(w)
}
