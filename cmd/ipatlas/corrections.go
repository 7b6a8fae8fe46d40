package main

// The corrections as the db commands read and describe them.

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geofeed"
)

// feedFlag collects the repeatable --geofeed of the db commands.
type feedFlag []string

func (f *feedFlag) String() string { return strings.Join(*f, ", ") }
func (f *feedFlag) Set(v string) error {
	*f = append(*f, splitList(v)...)
	if *f == nil {
		*f = []string{}
	}
	return nil
}

// correctionSettings resolves --overrides and --geofeed for the db
// commands by serve's precedence rule: the flag, its environment
// variable, the config file, the default (no overrides, the built-in
// feeds).
func correctionSettings(ls localSettings, getenv func(string) string, overridesFlag string, feeds feedFlag) (string, []geofeed.Source, error) {
	overrides := ls.file.value(getenv, overridesFlag, "overrides", "")
	vals := []string(feeds)
	if vals == nil {
		if v := getenv(envName("geofeed")); v != "" {
			vals = splitList(v)
		} else if v, ok := ls.file.values["geofeed"]; ok {
			vals = v
		}
	}
	sources, err := geofeed.ParseSources(vals)
	return overrides, sources, err
}

// describeCorrections opens the data dir's dataset with the corrections
// put in service as serve would (the overrides file, the feeds' copies)
// and describes them; maxShare is geo.Options.MaxFeedShare.
func describeCorrections(dir, overrides string, sources []geofeed.Source, maxShare float64) ([]geo.CorrectionInfo, error) {
	if overrides == "" && len(sources) == 0 {
		return []geo.CorrectionInfo{}, nil
	}
	e, err := geo.Open(dir, geo.Options{MaxFeedShare: maxShare})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if overrides != "" {
		f, err := geofeed.LoadFile(overrides)
		if err != nil {
			return nil, fmt.Errorf("overrides: %w", err)
		}
		e.SetOverrides(&geo.Overrides{File: overrides, Feed: f})
	}
	feeds := make([]geo.FeedInput, len(sources))
	for i, s := range sources {
		feeds[i].Source = s
		cp, err := geofeed.Load(dir, s)
		if err != nil {
			feeds[i].Error = err.Error()
		}
		feeds[i].Copy = cp
		// The last try of a server or of db fetch, when it failed.
		if f, err := geofeed.LastFailure(dir, s); err != nil && feeds[i].Error == "" {
			feeds[i].Error = err.Error()
		} else if f != nil && feeds[i].Error == "" {
			feeds[i].Error = f.At.Format(time.RFC3339) + ": " + f.Error
		}
	}
	e.SetFeeds(feeds)
	return e.Corrections(), nil
}

// printCorrections writes the corrections section of db info.
func printCorrections(w io.Writer, infos []geo.CorrectionInfo) {
	if len(infos) == 0 {
		return
	}
	fmt.Fprintf(w, "\ncorrections (they win over the dataset: the overrides file, then each feed; within each the most specific prefix)\n")
	for _, c := range infos {
		if c.Kind == "override" {
			fmt.Fprintf(w, "  overrides %s: %s in service, %s skipped\n", c.File, plural(c.Applied, "entry", "entries"), plural(c.Skipped, "line", "lines"))
		} else {
			ases := "any announced address"
			if len(c.ASes) > 0 {
				var b strings.Builder
				for i, n := range c.ASes {
					if i > 0 {
						b.WriteString(" ")
					}
					fmt.Fprintf(&b, "AS%d", n)
				}
				ases = b.String()
			}
			fmt.Fprintf(w, "  geofeed %s (%s) for %s\n", c.Name, c.URL, ases)
			switch {
			case c.File == "" && c.Error != "":
				fmt.Fprintf(w, "      no copy: every try failed ('ipatlas db fetch' or a running server tries again)\n")
			case c.File == "":
				fmt.Fprintf(w, "      not fetched yet ('ipatlas db fetch' or a running server fetches it)\n")
			default:
				fmt.Fprintf(w, "      fetched %s: %s, %d in service, %s skipped\n", c.FetchedAt.UTC().Format(time.RFC3339), plural(c.Entries, "entry", "entries"), c.Applied, plural(c.Skipped, "line", "lines"))
			}
			if len(c.Refused) > 0 {
				keys := make([]string, 0, len(c.Refused))
				for k := range c.Refused {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				var parts []string
				for _, k := range keys {
					parts = append(parts, fmt.Sprintf("%s %d", k, c.Refused[k]))
				}
				fmt.Fprintf(w, "      refused entries: %s\n", strings.Join(parts, ", "))
			}
			if c.Partial > 0 {
				fmt.Fprintf(w, "      %s only partly announced by its ASes: only that part is placed\n", plural(c.Partial, "entry", "entries"))
			}
			if c.FeedRefused != "" {
				fmt.Fprintf(w, "      REFUSED: %s\n", c.FeedRefused)
			}
			if c.Error != "" {
				fmt.Fprintf(w, "      last fetch failed: %s\n", c.Error)
			}
		}
		if c.RegionsDropped > 0 {
			parts := make([]string, len(c.DroppedRegions))
			listed := 0
			for i, d := range c.DroppedRegions {
				parts[i] = fmt.Sprintf("%s (%s, first line %d)", d.Region, plural(d.Lines, "line", "lines"), d.FirstLine)
				listed += d.Lines
			}
			if more := c.RegionsDropped - listed; more > 0 {
				parts = append(parts, plural(more, "more line", "more lines")+" of other regions")
			}
			fmt.Fprintf(w, "      %s read without its region, no ISO 3166-2 code of the country: %s\n",
				plural(c.RegionsDropped, "line", "lines"), strings.Join(parts, ", "))
		}
		if c.Unlocated > 0 {
			fmt.Fprintf(w, "      %s a city no data places: they answer without coordinates\n", plural(c.Unlocated, "entry names", "entries name"))
		}
		for _, p := range c.Problems {
			fmt.Fprintf(w, "      %s\n", p)
		}
		if c.Skipped > len(c.Problems) {
			fmt.Fprintf(w, "      ... and %s\n", plural(c.Skipped-len(c.Problems), "more skipped line", "more skipped lines"))
		}
	}
}
