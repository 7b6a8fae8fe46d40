package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// tzData is read from the IANA time zone database as installed (the tzdata
// package's /usr/share/zoneinfo): zone.tab lists each zone with the one
// country it is in, iso3166.tab the ISO 3166-1 alpha-2 codes.
type tzData struct {
	version   string              // "2025b"
	zones     map[string][]string // country -> zones, in zone.tab order
	countries []string            // ISO 3166-1 alpha-2, sorted
}

func loadTZ(dir string) (*tzData, error) {
	t := &tzData{zones: map[string][]string{}}
	zi, err := os.ReadFile(filepath.Join(dir, "tzdata.zi"))
	if err != nil {
		return nil, fmt.Errorf("tz version: %w", err)
	}
	first, _, _ := bytes.Cut(zi, []byte("\n"))
	v, ok := strings.CutPrefix(string(first), "# version ")
	if !ok {
		return nil, fmt.Errorf("%s: no version line", filepath.Join(dir, "tzdata.zi"))
	}
	t.version = strings.TrimSpace(v)

	err = eachRow(filepath.Join(dir, "zone.tab"), 3, func(f []string) error {
		t.zones[f[0]] = append(t.zones[f[0]], f[2])
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachRow(filepath.Join(dir, "iso3166.tab"), 2, func(f []string) error {
		if len(f[0]) != 2 || strings.ToUpper(f[0]) != f[0] {
			return fmt.Errorf("bad country code %q", f[0])
		}
		t.countries = append(t.countries, f[0])
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(t.countries) < 240 || len(t.zones) < 200 {
		return nil, fmt.Errorf("%s: only %d countries and %d countries with zones", dir, len(t.countries), len(t.zones))
	}
	for cc := range t.zones {
		if !contains(t.countries, cc) {
			return nil, fmt.Errorf("zone.tab: country %s is not in iso3166.tab", cc)
		}
	}
	return t, nil
}

func eachRow(path string, min int, fn func([]string) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < min {
			return fmt.Errorf("%s:%d: %d fields, want at least %d", path, n, len(f), min)
		}
		if err := fn(f); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
