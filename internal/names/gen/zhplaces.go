package main

import (
	"bufio"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ulikunitz/xz"
)

// zh-places is the project's shared file of Chinese-script names of
// places outside China (GeoNames' zh alternate names, Who's On First's
// name:zho_*/yue_* and, for Japan, name:jpn_x_preferred, Natural Earth's
// NAME_ZH), kept beside the repository in ../shared/data/zh-places, whose
// README gives its columns, licences and known wrong rows. The generator
// reads exactly this file: the SHA-256 of its uncompressed text is pinned
// like an npm package's integrity, so that a re-run writes the same table.
const (
	zhPlacesFile   = "zh_places.tsv.xz"
	zhPlacesSHA256 = "ae85f0ea1be2b3dbd784343748f3659ce2273c8757d17f7e16ea0c37b9626873"
	// zhPlacesOrigin says, in one line, where the file comes from.
	zhPlacesOrigin = "it is the project's shared data set of Chinese place names outside China " +
		"(GeoNames alternate names, Who's On First at the commits of wof-commits.tsv and Natural Earth's NAME_ZH, built as its README.md says), " +
		"kept in ../shared/data/zh-places/ beside the repository: put it there or pass -zh-places DIR"
)

// defaultZhPlacesDir is ../shared/data/zh-places next to the module's
// root, which is found from the working directory (the generator runs
// from the root, its test from internal/names/gen).
func defaultZhPlacesDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("..", "shared", "data", "zh-places")
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "data", "zh-places")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "..", "shared", "data", "zh-places")
		}
	}
}

// A zhPlace is one place of zh-places (one source record) with the name
// chosen among its rows.
type zhPlace struct {
	country, name string
	lat, lon      float64
	zh            string
	rank          int // pref_rank of the chosen row: 1 best
	geonameid     int
	placetype     string
	pop           int
	source        string // geonames, wof or naturalearth
	keys          []string
	used          bool // named a place of cities500
	junk          bool // its best row is one of the wrong kinds: read only as a witness (dropBorrowedNames)
}

// townKinds are the placetypes of the rows that name a town: Who's On
// First's locality, localadmin (a municipality) and borough (Tokyo's
// wards), GeoNames' populated places and Natural Earth's populated places
// and capitals. A county's, a region's or a neighbourhood's name given to
// the town it contains or lies in would be wrong, so those rows are not
// read.
var townKinds = map[string]bool{
	"locality": true, "localadmin": true, "borough": true,
	"PPL": true, "PPLA": true, "PPLA2": true, "PPLA3": true, "PPLA4": true, "PPLC": true,
	"PPLG": true, "PPLL": true, "PPLS": true, "PPLF": true, "PPLX": true,
	"Populated place": true, "Admin-0 capital": true, "Admin-1 capital": true,
	"Admin-0 capital alt": true, "Admin-0 region capital": true, "Admin-1 region capital": true,
}

// junkFlags mark the rows the file's README lists as wrong or unsafe: a
// Who's On First record whose currency is unknown (name-matching junk such
// as a person's name for a village), a name that is no place's, a name
// that a distant current record also bears.
var junkFlags = []string{"wof-current-unknown", "suspect-not-a-place-name", "name-shared-with-distant-current-record"}

// wordEndings end the Chinese words for things that some towns are
// named like: a drink's name given to its namesake town (Austria's Rum
// as 兰姆酒, rum) is a translation of the word, not the town's name.
var wordEndings = []string{"酒"}

// divisionSuffixes end the names of counties and provinces: a town's row
// with such a name carries its county's or province's name, not its own.
var divisionSuffixes = []string{"县", "省"}

// loadZhPlaces reads dir/zh_places.tsv.xz, checks it against its pinned
// hash and returns its places, each with its best row.
func loadZhPlaces(dir string) ([]*zhPlace, error) {
	path := filepath.Join(dir, zhPlacesFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s not found: %s", path, zhPlacesOrigin)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	xr, err := xz.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h := sha256.New()
	places, err := parseZhPlaces(io.TeeReader(xr, h))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != zhPlacesSHA256 {
		return nil, fmt.Errorf("%s: the uncompressed text has SHA-256 %s, want %s: %s", path, got, zhPlacesSHA256, zhPlacesOrigin)
	}
	if len(places) < 50000 {
		return nil, fmt.Errorf("%s: only %d places", path, len(places))
	}
	return places, nil
}

// parseZhPlaces reads the TSV: drops the rows of junkFlags, of kinds other
// than townKinds, of towns named like counties and of mainland China, and
// keeps the best row of each place: the lowest pref_rank, then a name the
// source marks preferred over a variant.
func parseZhPlaces(r io.Reader) ([]*zhPlace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		return nil, errors.New("empty file")
	}
	col := map[string]int{}
	for i, name := range strings.Split(sc.Text(), "\t") {
		col[name] = i
	}
	for _, name := range []string{"country", "name_en", "lat", "lon", "zh_hans", "pref_rank", "flags", "geonameid", "placetype", "population", "source", "source_id", "alt_names_en"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("no column %s", name)
		}
	}
	type best struct {
		p         *zhPlace
		preferred bool
	}
	byRecord := map[string]*best{}
	var order []string
	for n := 2; sc.Scan(); n++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != len(col) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", n, len(f), len(col))
		}
		get := func(name string) string { return f[col[name]] }
		flags := strings.Split(get("flags"), ";")
		cc := get("country")
		if len(cc) != 2 || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' || cc == "CN" || !townKinds[get("placetype")] {
			continue
		}
		zh := get("zh_hans")
		if !isHan(zh) || slices.ContainsFunc(divisionSuffixes, func(s string) bool { return strings.HasSuffix(zh, s) }) {
			continue
		}
		p := &zhPlace{country: cc, name: get("name_en"), zh: zh, placetype: get("placetype"),
			junk: slices.ContainsFunc(junkFlags, func(j string) bool { return slices.Contains(flags, j) }) ||
				slices.ContainsFunc(wordEndings, func(s string) bool { return strings.HasSuffix(zh, s) })}
		var errs [4]error
		p.lat, errs[0] = strconv.ParseFloat(get("lat"), 64)
		p.lon, errs[1] = strconv.ParseFloat(get("lon"), 64)
		p.rank, errs[2] = strconv.Atoi(get("pref_rank"))
		if s := get("geonameid"); s != "" {
			p.geonameid, errs[3] = strconv.Atoi(s)
		}
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		p.pop, _ = strconv.Atoi(get("population")) // often empty
		p.source, _, _ = strings.Cut(get("source"), ":")
		p.keys, _ = latinKeys(p.name, p.name, strings.Split(get("alt_names_en"), "|"))
		if len(p.keys) == 0 {
			continue
		}
		id := get("source") + "\t" + get("source_id")
		preferred := !slices.Contains(flags, "variant")
		b := byRecord[id]
		if b == nil {
			byRecord[id] = &best{p, preferred}
			order = append(order, id)
			continue
		}
		if c := cmp.Or(cmp.Compare(p.rank, b.p.rank), -cmpBool(preferred, b.preferred), cmp.Compare(p.zh, b.p.zh)); c < 0 {
			*b = best{p, preferred}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	places := make([]*zhPlace, 0, len(order))
	for _, id := range order {
		places = append(places, byRecord[id].p)
	}
	places = dropBorrowedNames(places)
	return slices.DeleteFunc(places, func(p *zhPlace) bool { return p.junk }), nil
}

// dropBorrowedNames drops the records whose Chinese name belongs to
// another town. Where records of one country give one Chinese name to
// towns of different English names (no key in common), the name is the
// town's with the most records (its GeoNames, Who's On First and Natural
// Earth records agree) and the others borrowed it: Argentina's Adrogué
// given Buenos Aires' 布宜诺斯艾利斯, Bangladesh's Tongi given Nayabazar's
// 纳耶巴扎尔. Towns with as many records keep it when they lie within
// matchKm of each other (one town under two names), and none keeps it
// otherwise. Records of the wrong kinds (junk) count as witnesses here.
func dropBorrowedNames(places []*zhPlace) []*zhPlace {
	type cz struct{ country, zh string }
	groups := map[cz][]int{}
	for i, p := range places {
		groups[cz{p.country, p.zh}] = append(groups[cz{p.country, p.zh}], i)
	}
	drop := map[int]bool{}
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		// Records sharing a key are one town: union-find over g.
		parent := make([]int, len(g))
		for i := range parent {
			parent[i] = i
		}
		var find func(int) int
		find = func(i int) int {
			for parent[i] != i {
				i = parent[i]
			}
			return i
		}
		for i := range g {
			for j := i + 1; j < len(g); j++ {
				if slices.ContainsFunc(places[g[i]].keys, func(k string) bool { return slices.Contains(places[g[j]].keys, k) }) {
					parent[find(j)] = find(i)
				}
			}
		}
		towns := map[int][]int{}
		for i := range g {
			towns[find(i)] = append(towns[find(i)], g[i])
		}
		if len(towns) < 2 {
			continue
		}
		far := func(a, b []int) bool {
			for _, i := range a {
				for _, j := range b {
					if distanceKm(places[i].lat, places[i].lon, places[j].lat, places[j].lon) <= matchKm {
						return false
					}
				}
			}
			return true
		}
		for ra, a := range towns {
			for rb, b := range towns {
				if ra != rb && (len(b) > len(a) || len(b) == len(a) && far(a, b)) {
					for _, i := range a {
						drop[i] = true
					}
				}
			}
		}
	}
	kept := places[:0]
	for i, p := range places {
		if !drop[i] {
			kept = append(kept, p)
		}
	}
	return kept
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// kindSuffixes are the words Japanese and Korean place names take in
// English after the name, by the character that ends the Chinese name:
// IP data calls Tokyo's 千代田区 "Chiyoda City", "Chiyoda-ku" or
// "Chiyoda", and Korea's 城南市 "Seongnam-si".
var kindSuffixes = map[string]map[string][]string{
	"JP": {
		"区": {"city", "ku", "ward"},
		"市": {"city", "shi"},
		"町": {"town", "machi", "cho"},
		"村": {"village", "mura", "son"},
	},
	"KR": {
		"市": {"si", "city"},
		"区": {"gu"},
		"郡": {"gun", "county"},
	},
}

// withKindSuffixes adds to a Japanese or Korean place's keys the forms
// with the suffix of its kind ("chiyoda" gives "chiyoda city",
// "chiyoda ku", "chiyoda ward"), inserted among its own names.
func withKindSuffixes(country, zh string, keys []string, primary int) ([]string, int) {
	var words []string
	for end, ws := range kindSuffixes[country] {
		if strings.HasSuffix(zh, end) {
			words = ws
		}
	}
	if words == nil {
		return keys, primary
	}
	var add []string
	for _, k := range keys[:primary] {
		// A name that already ends in a word of its kind, apart
		// ("chiyoda ku") or run together ("chiyodacho"), has its suffix.
		if slices.ContainsFunc(words, func(w string) bool { return strings.HasSuffix(k, w) }) {
			continue
		}
		for _, w := range words {
			if s := k + " " + w; len(s) <= maxKey && !slices.Contains(keys, s) && !slices.Contains(add, s) {
				add = append(add, s)
			}
		}
	}
	out := slices.Concat(keys[:primary], add, keys[primary:])
	return out, primary + len(add)
}

// kindTier orders the kinds of rows when several name one place: a town
// or municipality record first, then a populated place of GeoNames or
// Natural Earth (whose point may be the municipality's or the town's).
func kindTier(placetype string) int {
	switch placetype {
	case "locality", "localadmin", "borough":
		return 0
	}
	return 1
}

// sourceOrder breaks ties between equally ranked rows: GeoNames' own
// names, then Who's On First's, then Natural Earth's.
func sourceOrder(s string) int {
	switch s {
	case "geonames":
		return 0
	case "wof":
		return 1
	}
	return 2
}

// zhMatch is what nameFromZhPlaces found for one place of cities500.
type zhMatch struct {
	zh     string
	source string
	byID   bool
}

// nameFromZhPlaces names the places of cities500 that neither cities500
// nor CLDR names, from zh-places, and returns the places of zh-places that
// name a town cities500 lacks, as places of their own.
//
// A cities500 place takes the name of the zh-places record with its
// GeoNames id (within bigMatchKm, and for an id of Who's On First or
// Natural Earth under a name they share: a concordance can be wrong); failing
// that, of the records of its country that share one of its folded names
// and lie within its matching radius (matchKm, bigMatchKm for a city of
// bigCity people). Among several, the best kind (kindTier), then rank,
// then source wins; when the best of them disagree, nothing is taken, and
// the data's own name stays.
//
// A zh-places town that named no place and shares no key with a cities500
// place within matchKm becomes a place; of several records of one town
// (the same key within matchKm), the best is kept.
func nameFromZhPlaces(places []*gnPlace, zp []*zhPlace) (extra []*gnPlace, named map[*gnPlace]zhMatch) {
	byID := map[int][]*zhPlace{}
	type ck struct{ country, key string }
	byKey := map[ck][]*zhPlace{}
	for _, z := range zp {
		if z.geonameid != 0 {
			byID[z.geonameid] = append(byID[z.geonameid], z)
		}
		for _, k := range z.keys {
			byKey[ck{z.country, k}] = append(byKey[ck{z.country, k}], z)
		}
	}
	better := func(a, b *zhPlace) int {
		return cmp.Or(cmp.Compare(kindTier(a.placetype), kindTier(b.placetype)), cmp.Compare(a.rank, b.rank),
			cmp.Compare(sourceOrder(a.source), sourceOrder(b.source)))
	}
	// choose returns the best candidate's name, or "" when the best
	// disagree.
	choose := func(cands []*zhPlace) (*zhPlace, bool) {
		if len(cands) == 0 {
			return nil, false
		}
		slices.SortStableFunc(cands, better)
		for _, c := range cands[1:] {
			if better(c, cands[0]) == 0 && c.zh != cands[0].zh {
				return nil, false
			}
		}
		return cands[0], true
	}
	named = map[*gnPlace]zhMatch{}
	inCities := map[int]bool{}
	gnByKey := map[ck][]*gnPlace{}
	for _, p := range places {
		inCities[p.id] = true
		for _, k := range p.keys {
			gnByKey[ck{p.country, k}] = append(gnByKey[ck{p.country, k}], p)
		}
	}
	for _, p := range places {
		limit := float64(matchKm)
		if p.pop >= bigCity {
			limit = bigMatchKm
		}
		var cands []*zhPlace
		for _, z := range byID[p.id] {
			// Who's On First's and Natural Earth's GeoNames ids are
			// concordances, sometimes of a neighbouring place (Akō's record
			// carries the id of Kariya, a village of Akō): theirs join only
			// a place of a name they share.
			sameName := z.source == "geonames" || slices.ContainsFunc(z.keys, func(k string) bool { return slices.Contains(p.keys, k) })
			if z.country == p.country && sameName && distanceKm(p.lat, p.lon, z.lat, z.lon) <= bigMatchKm {
				cands = append(cands, z)
			}
		}
		byGeonameID := len(cands) > 0
		if !byGeonameID {
			seen := map[*zhPlace]bool{}
			for _, k := range p.keys {
				for _, z := range byKey[ck{p.country, k}] {
					if !seen[z] && (z.geonameid == 0 || z.geonameid == p.id || !inCities[z.geonameid]) &&
						distanceKm(p.lat, p.lon, z.lat, z.lon) <= limit {
						seen[z] = true
						cands = append(cands, z)
					}
				}
			}
		}
		for _, z := range cands {
			z.used = true
		}
		if p.zh != "" {
			continue
		}
		if z, ok := choose(cands); ok {
			named[p] = zhMatch{zh: z.zh, source: z.source, byID: byGeonameID}
		}
	}

	// The towns cities500 lacks.
	var rest []*zhPlace
	for _, z := range zp {
		if z.used || z.geonameid != 0 && inCities[z.geonameid] {
			continue
		}
		near := false
		for _, k := range z.keys {
			for _, p := range gnByKey[ck{z.country, k}] {
				if distanceKm(p.lat, p.lon, z.lat, z.lon) <= matchKm {
					near = true
				}
			}
		}
		if !near {
			rest = append(rest, z)
		}
	}
	slices.SortStableFunc(rest, func(a, b *zhPlace) int {
		return cmp.Or(better(a, b), cmp.Compare(b.pop, a.pop), cmp.Compare(a.country, b.country), cmp.Compare(a.name, b.name))
	})
	kept := map[ck][]*zhPlace{}
	for _, z := range rest {
		dup := false
		for _, k := range z.keys {
			for _, o := range kept[ck{z.country, k}] {
				if distanceKm(o.lat, o.lon, z.lat, z.lon) <= matchKm {
					dup = true
				}
			}
		}
		if dup {
			continue
		}
		for _, k := range z.keys {
			kept[ck{z.country, k}] = append(kept[ck{z.country, k}], z)
		}
		p := &gnPlace{id: z.geonameid, name: z.name, country: z.country, code: z.placetype,
			lat: z.lat, lon: z.lon, pop: z.pop, keys: z.keys, primary: len(z.keys), zh: z.zh, from: z.source}
		extra = append(extra, p)
	}
	return extra, named
}
