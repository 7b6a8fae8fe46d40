package geo

// Corrections: locations that do not come from the dataset. Two layers sit
// above it, each a prefix table searched most specific first:
//
//   - overrides, the operator's own RFC 8805 file, trusted for any prefix;
//   - published feeds (RFC 8805, fetched by the caller), each trusted only
//     for the addresses its ASes announce in the ASN data, only for
//     entries no broader than /8 (IPv4) or /24 (IPv6), and only while it
//     claims no more than MaxFeedShare of the announced space.
//
// A lookup answers from the first layer that places the address, else from
// the dataset. A place a correction names becomes a whole record part
// (resolvePlace, then compose, the dataset's own name rules): names in
// both languages, coordinates, time zone, currency, calling code.

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gaissmai/bart"
	"github.com/ipatlas/ipatlas/internal/geofeed"
)

// Bounds on what a published feed may claim. An entry broader than /8 or
// /24 is no operator's single location; the largest networks announce a
// few percent of the address space, so a feed placing more than a
// sixteenth of what is announced in one family is broken or hostile, and
// is refused whole.
const (
	MinFeedBits4 = 8
	MinFeedBits6 = 24
	MaxFeedShare = 1.0 / 16
)

// Values of Record.LocationSource.
const (
	SourceDataset  = "dataset"
	SourceOverride = "override"
	// A published feed's records say "geofeed:" and its name.
	SourceFeedPrefix = "geofeed:"
)

// Overrides is a local corrections file, trusted for any prefix.
type Overrides struct {
	File   string
	Feed   *geofeed.Feed
	Loaded time.Time
}

// FeedInput is one configured published feed and its copy.
type FeedInput struct {
	Source geofeed.Source
	Copy   *geofeed.Copy // nil: none fetched yet
	// Error is why the last fetch failed ("" when it did not): the copy,
	// if any, is older.
	Error string
}

// PlaceHooks let data the engine does not hold complete a place that a
// correction names. Either may be nil.
type PlaceHooks struct {
	// Postal gives the postal code of a place: its country, ISO 3166-2
	// subdivision code ("" when unknown), name and coordinates (NaN when
	// unknown); "" when it has none.
	Postal func(country, subdivision, place string, lat, lon float64) string
	// Point gives the coordinates of a named place the dataset does not
	// know.
	Point func(country, subdivision, place string) (lat, lon float64, ok bool)
}

// CorrectionInfo describes one correction source in service, for `db
// info` and /admin/datasets.
type CorrectionInfo struct {
	Kind string `json:"kind"` // "override" or "geofeed"
	// Name is the feed's name as records give it (after "geofeed:"), or
	// the overrides file's path.
	Name      string    `json:"name"`
	URL       string    `json:"url,omitempty"`
	File      string    `json:"file,omitempty"` // the copy in service
	ASes      []uint32  `json:"ases,omitempty"`
	FetchedAt time.Time `json:"fetched_at,omitzero"` // a feed's copy; an overrides file: when it was read
	// Lines is the lines read; Entries the good ones; Applied the entries
	// in service (good and not refused).
	Lines   int `json:"lines"`
	Entries int `json:"entries"`
	Applied int `json:"applied"`
	// Skipped is the number of lines that could not be read, Problems
	// the first MaxProblems of them.
	Skipped  int               `json:"skipped"`
	Problems []geofeed.Problem `json:"problems,omitempty"`
	// RegionsDropped counts a feed's lines applied without their region,
	// one that is no ISO 3166-2 code of the country; DroppedRegions are
	// the first MaxProblems such regions.
	RegionsDropped int                     `json:"regions_dropped,omitempty"`
	DroppedRegions []geofeed.DroppedRegion `json:"dropped_regions,omitempty"`
	// Refused counts good entries that were not applied, by reason:
	// "too_broad" (broader than /8 or /24), "not_announced" (no address
	// of it announced by the feed's ASes), "no_asn_data", "feed_refused".
	Refused map[string]int `json:"refused,omitempty"`
	// Partial counts entries only part of which the feed's ASes
	// announce: only that part is placed.
	Partial int `json:"partial,omitempty"`
	// Share4 and Share6 are the shares of the announced IPv4 and IPv6
	// space the feed places.
	Share4 float64 `json:"share_ipv4,omitempty"`
	Share6 float64 `json:"share_ipv6,omitempty"`
	// FeedRefused says why the whole feed is refused, "" when it is not.
	FeedRefused string `json:"feed_refused,omitempty"`
	// Error is the last fetch's failure.
	Error string `json:"error,omitempty"`
	// Unlocated counts applied entries that name a city the data cannot
	// place: they answer without coordinates.
	Unlocated int `json:"unlocated,omitempty"`
}

// MaxProblems bounds the problems a CorrectionInfo lists; Skipped counts
// them all.
const MaxProblems = geofeed.MaxProblems

// localValue is what a correction answers for its prefix.
type localValue struct {
	city   *cityData
	source string   // Record.LocationSource
	region string   // the ISO 3166-2 code the correction names
	ases   []uint32 // a feed's ASes, sorted; empty: any announced address
	feed   bool     // the address's AS is checked at lookup
}

// allows reports whether the value may answer an address of AS asn.
func (v *localValue) allows(asn uint32) bool {
	if !v.feed {
		return true
	}
	if len(v.ases) == 0 {
		return asn != 0
	}
	_, ok := slices.BinarySearch(v.ases, asn)
	return ok
}

// overlay is the corrections in service: overrides, then feeds.
type overlay struct {
	layers [2]*bart.Table[*localValue] // nil: an empty layer
}

const (
	layerOverrides = 0
	layerFeeds     = 1
)

// lookup returns the correction that places addr (in AS asn), or nil.
func (o *overlay) lookup(addr netip.Addr, asn uint32) *localValue {
	for _, t := range o.layers {
		if t == nil {
			continue
		}
		if v, ok := t.Lookup(addr); ok && v.allows(asn) {
			return v
		}
	}
	return nil
}

// lookupNet is lookup that also bounds a network around addr: given bits,
// the length of a network around addr within which asn is the same, it
// returns the length of the largest network within it over which the
// answer of every layer consulted is the same. That is within the prefix
// that answered in each layer, and clear of every more specific prefix of
// it (of the whole layer, where no prefix holds addr), which would answer
// in its place.
func (o *overlay) lookupNet(addr netip.Addr, asn uint32, bits int) (*localValue, int) {
	for _, t := range o.layers {
		if t == nil {
			continue
		}
		lpm, v, ok := t.LookupPrefixLPM(netip.PrefixFrom(addr, addr.BitLen()))
		if ok {
			bits = max(bits, lpm.Bits())
		}
		bits = clearOf(t, addr, bits)
		if ok && v.allows(asn) {
			return v, bits
		}
	}
	return nil, bits
}

// clearOf is the length of the largest network around addr, no larger
// than the one of length bits, that overlaps no prefix of t except those
// that hold addr.
func clearOf(t *bart.Table[*localValue], addr netip.Addr, bits int) int {
	for {
		p, _ := addr.Prefix(bits)
		if !t.OverlapsPrefix(p) {
			return bits
		}
		next := bits
		for q := range t.Subnets(p) {
			if !q.Contains(addr) {
				// The longest network around addr that q leaves out:
				// one bit longer than the bits addr and q share.
				next = commonBits(addr, q.Addr()) + 1
				break
			}
		}
		if next == bits {
			return bits
		}
		bits = next
	}
}

// commonBits is the number of leading bits a and b, of one family, share.
func commonBits(a, b netip.Addr) int {
	x, y := a.As16(), b.As16()
	n := 0
	for i := range x {
		if d := x[i] ^ y[i]; d != 0 {
			n += bits.LeadingZeros8(d)
			break
		}
		n += 8
	}
	if a.Is4() {
		n -= 96
	}
	return n
}

// localState is the engine's corrections: their inputs and the layers
// built from them, guarded by Engine.lmu.
type localState struct {
	overrides *Overrides
	feeds     []FeedInput
	tables    [2]*bart.Table[*localValue]
	infos     [2][]CorrectionInfo
}

// SetOverrides puts a local corrections file in service in place of the
// previous one (nil removes it). It returns when the new layer answers.
func (e *Engine) SetOverrides(o *Overrides) {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	e.localIn.overrides = o
	e.rebuildLocked(layerOverrides)
}

// SetFeeds puts published feeds in service in place of the previous ones,
// in order of precedence (the first that places an address answers it).
func (e *Engine) SetFeeds(feeds []FeedInput) {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	e.localIn.feeds = slices.Clone(feeds)
	e.rebuildLocked(layerFeeds)
}

// Corrections describes the corrections in service: the overrides file,
// then each feed. It does not wait for a build in progress.
func (e *Engine) Corrections() []CorrectionInfo {
	if p := e.localInfo.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// rebuildCorrections builds both layers again, against the dataset now in
// service (after a reload: the ASN data and the places may have changed).
func (e *Engine) rebuildCorrections() {
	e.lmu.Lock()
	defer e.lmu.Unlock()
	if e.localIn.overrides == nil && len(e.localIn.feeds) == 0 {
		return
	}
	e.rebuildLocked(layerOverrides, layerFeeds)
}

// rebuildLocked builds the given layers from their inputs and swaps the
// new overlay in.
func (e *Engine) rebuildLocked(layers ...int) {
	g := e.acquire()
	if g == nil {
		return
	}
	defer g.release()
	start := time.Now()
	for _, l := range layers {
		var t *bart.Table[*localValue]
		var infos []CorrectionInfo
		if l == layerOverrides {
			t, infos = e.buildOverrides(g, e.localIn.overrides)
		} else {
			t, infos = e.buildFeeds(g, e.localIn.feeds)
		}
		e.localIn.tables[l], e.localIn.infos[l] = t, infos
	}
	infos := slices.Concat(e.localIn.infos[layerOverrides], e.localIn.infos[layerFeeds])
	e.localInfo.Store(&infos)
	if e.localIn.tables[0] == nil && e.localIn.tables[1] == nil {
		e.local.Store(nil)
	} else {
		e.local.Store(&overlay{layers: e.localIn.tables})
	}
	e.log.Info("corrections in service", "overrides", size(e.localIn.tables[layerOverrides]),
		"feed_entries", size(e.localIn.tables[layerFeeds]), "took", time.Since(start).Round(time.Millisecond))
}

func size(t *bart.Table[*localValue]) int {
	if t == nil {
		return 0
	}
	return t.Size()
}

// layerFeed is a parsed file's entries accepted into a layer: every one,
// or those of accept.
type layerFeed struct {
	feed   *geofeed.Feed
	accept []uint64 // a bit per entry; nil: all
	source string
	ases   []uint32
	isFeed bool
	info   *CorrectionInfo
}

func (lf *layerFeed) accepted(i int) bool {
	return lf.accept == nil || lf.accept[i>>6]&(1<<(i&63)) != 0
}

func (e *Engine) buildOverrides(g *generation, o *Overrides) (*bart.Table[*localValue], []CorrectionInfo) {
	if o == nil {
		return nil, nil
	}
	infos := []CorrectionInfo{{Kind: "override", Name: o.File, File: o.File, FetchedAt: o.Loaded}}
	var list []layerFeed
	if o.Feed != nil {
		info := &infos[0]
		info.Lines, info.Entries = o.Feed.Lines, o.Feed.Len()
		info.Skipped, info.Problems = o.Feed.Skipped, firstProblems(o.Feed.Problems)
		logProblems(e.log, "overrides: skipped a line", o.Feed)
		list = append(list, layerFeed{feed: o.Feed, source: SourceOverride, info: info})
	}
	return e.buildTable(g, list), infos
}

// logProblems logs a file's first skipped lines, and how many more there
// are.
func logProblems(log *slog.Logger, msg string, f *geofeed.Feed) {
	for _, p := range f.Problems {
		log.Warn(msg, "problem", p.String())
	}
	if more := f.Skipped - len(f.Problems); more > 0 {
		log.Warn(msg, "more_skipped_lines", more)
	}
}

func (e *Engine) buildFeeds(g *generation, feeds []FeedInput) (*bart.Table[*localValue], []CorrectionInfo) {
	if len(feeds) == 0 {
		return nil, nil
	}
	infos := make([]CorrectionInfo, len(feeds))
	ann := g.announced()
	maxShare := e.opts.MaxFeedShare
	if maxShare <= 0 {
		maxShare = MaxFeedShare
	}
	var list []layerFeed
	var numbers [2]map[uintptr]uint32 // per family: the files may differ
	for i, f := range feeds {
		info := &infos[i]
		*info = CorrectionInfo{Kind: "geofeed", Name: f.Source.Name, URL: f.Source.URL, ASes: f.Source.ASes, Error: f.Error,
			Refused: map[string]int{}}
		if f.Copy == nil || f.Copy.Feed == nil {
			continue
		}
		c := f.Copy
		info.File, info.FetchedAt = c.File, c.FetchedAt
		info.Lines, info.Entries = c.Feed.Lines, c.Feed.Len()
		info.Skipped, info.Problems = c.Feed.Skipped, firstProblems(c.Feed.Problems)
		info.RegionsDropped, info.DroppedRegions = c.Feed.RegionsDropped, slices.Clone(c.Feed.DroppedRegions)
		lf := layerFeed{feed: c.Feed, accept: make([]uint64, (c.Feed.Len()+63)/64), source: SourceFeedPrefix + f.Source.Name,
			ases: sortedUnique(f.Source.ASes), isFeed: true, info: info}
		// The entries come in address order, a prefix before those it
		// contains: what an entry within an earlier one claims, the
		// earlier one claimed already (the same ASes announce it), so the
		// space claimed is the sum over the outermost entries.
		var claimed [2]float64
		var outer netip.Prefix
		accepted := 0
		for i := range c.Feed.Len() {
			p, _ := c.Feed.At(i)
			if p.Addr().Is4() && p.Bits() < MinFeedBits4 || p.Addr().Is6() && p.Bits() < MinFeedBits6 {
				info.Refused["too_broad"]++
				continue
			}
			n, whole, ok := g.announcedBy(p, lf.ases, &numbers)
			switch {
			case !ok:
				info.Refused["no_asn_data"]++
				continue
			case n == 0:
				info.Refused["not_announced"]++
				continue
			case !whole:
				info.Partial++
			}
			if !outer.IsValid() || outer.Bits() > p.Bits() || !outer.Contains(p.Addr()) {
				outer = p
				if p.Addr().Is4() {
					claimed[0] += n
				} else {
					claimed[1] += n
				}
			}
			lf.accept[i>>6] |= 1 << (i & 63)
			accepted++
		}
		if ann[0] > 0 {
			info.Share4 = claimed[0] / ann[0]
		}
		if ann[1] > 0 {
			info.Share6 = claimed[1] / ann[1]
		}
		if info.Share4 > maxShare || info.Share6 > maxShare {
			info.FeedRefused = fmt.Sprintf("it places %.2f%% of the announced IPv4 space and %.2f%% of the IPv6 space: more than the %.2f%% a single operator may plausibly hold",
				100*info.Share4, 100*info.Share6, 100*maxShare)
			info.Refused["feed_refused"] += accepted
			e.log.Warn("refusing a geofeed", "feed", f.Source.Name, "url", f.Source.URL, "reason", info.FeedRefused)
			continue
		}
		for k, n := range info.Refused {
			e.log.Warn("geofeed entries refused", "feed", f.Source.Name, "reason", k, "entries", n)
		}
		list = append(list, lf)
	}
	for i := range infos {
		if len(infos[i].Refused) == 0 {
			infos[i].Refused = nil
		}
	}
	return e.buildTable(g, list), infos
}

func firstProblems(ps []geofeed.Problem) []geofeed.Problem {
	return slices.Clone(ps[:min(len(ps), MaxProblems)])
}

// buildTable resolves and composes the places of the accepted entries
// and puts them in a prefix table. Of two entries for one prefix the
// first wins; each distinct place of a file is resolved and composed once,
// and an entry costs the table nothing more than its prefix.
func (e *Engine) buildTable(g *generation, list []layerFeed) *bart.Table[*localValue] {
	used := make([][]bool, len(list))
	var qs []placeQuery
	any := false
	for k := range list {
		lf := &list[k]
		places := lf.feed.Places()
		used[k] = make([]bool, len(places))
		for i := range lf.feed.Len() {
			if lf.accepted(i) {
				_, pi := lf.feed.At(i)
				if !used[k][pi] {
					used[k][pi] = true
					qs = append(qs, queryOf(places[pi]))
				}
				any = true
			}
		}
	}
	if !any {
		return nil
	}
	found := g.datasetPlaces(qs, e.log)
	var countries countryTable
	t := new(bart.Table[*localValue])
	for k := range list {
		lf := &list[k]
		places := lf.feed.Places()
		values := make([]*localValue, len(places))
		unlocated := make([]bool, len(places))
		for i := range lf.feed.Len() {
			if !lf.accepted(i) {
				continue
			}
			p, pi := lf.feed.At(i)
			if _, dup := t.Get(p); dup {
				continue
			}
			v := values[pi]
			if v == nil {
				q := queryOf(places[pi])
				in, located := resolvePlace(q, found, e.opts.Places)
				in.wholeCity = true
				d := compose(in, &countries)
				if cc, code, ok := strings.Cut(q.region, "-"); ok && strings.EqualFold(cc, q.cc) && code != "" {
					// The region code the correction names is the record's,
					// whatever level it is (IT-RM, a province, where the
					// dataset names the region, IT-62).
					d.provinceCode = strings.ToUpper(code)
				}
				v = &localValue{city: &d, source: lf.source, region: q.region, ases: lf.ases, feed: lf.isFeed}
				values[pi] = v
				unlocated[pi] = q.city != "" && !located
			}
			t.Insert(p, v)
			lf.info.Applied++
			if unlocated[pi] {
				lf.info.Unlocated++
			}
		}
	}
	return t
}

func prefixSize(p netip.Prefix) float64 {
	return math.Ldexp(1, p.Addr().BitLen()-p.Bits())
}

// announcedBy is the number of addresses of p announced by one of ases
// (any AS when empty) in the ASN data that answers p's family, and
// whether all of p is; ok is false when no ASN data answers the family.
//
// numbers caches the AS number of each ASN record by its offset: the
// entries of a feed fall in few networks, and a record decoded once per
// build is no garbage per entry.
func (g *generation) announcedBy(p netip.Prefix, ases []uint32, numbers *[2]map[uintptr]uint32) (n float64, whole, ok bool) {
	list, cache := g.asn6, &numbers[1]
	if p.Addr().Is4() {
		list, cache = g.asn4, &numbers[0]
	}
	if *cache == nil {
		*cache = map[uintptr]uint32{}
	}
	if len(list) == 0 {
		return 0, false, false
	}
	s := list[0]
	for res := range s.r.NetworksWithin(p) {
		if res.Err() != nil || !res.Found() {
			continue
		}
		number, seen := (*cache)[res.Offset()]
		if !seen {
			var v struct {
				Number uint64 `maxminddb:"autonomous_system_number"`
			}
			if res.Decode(&v) == nil && v.Number <= math.MaxUint32 {
				number = uint32(v.Number)
			}
			(*cache)[res.Offset()] = number
		}
		if number == 0 {
			continue
		}
		if len(ases) > 0 {
			if _, in := slices.BinarySearch(ases, number); !in {
				continue
			}
		}
		part := res.Prefix()
		if part.Bits() < p.Bits() {
			part = p // p lies inside one announced network
		}
		n += prefixSize(part)
	}
	return n, n >= prefixSize(p), true
}

// announced is the number of announced IPv4 and IPv6 addresses in the
// ASN data (those with an AS), counted once per generation.
func (g *generation) announced() [2]float64 {
	g.local.annOnce.Do(func() {
		for fam, list := range [][]*source{g.asn4, g.asn6} {
			if len(list) == 0 {
				continue
			}
			s := list[0]
			root := netip.MustParsePrefix("0.0.0.0/0")
			if fam == 1 {
				root = netip.MustParsePrefix("::/0")
			}
			has := map[uintptr]bool{}
			for res := range s.r.NetworksWithin(root) {
				if res.Err() != nil {
					break
				}
				p := res.Prefix()
				if fam == 1 && (p.Addr().Is4() || p.Addr().Is4In6()) {
					continue
				}
				h, seen := has[res.Offset()]
				if !seen {
					d, err := decodeASN(res)
					h = err == nil && d.number != 0
					has[res.Offset()] = h
				}
				if h {
					g.local.ann[fam] += prefixSize(p)
				}
			}
		}
	})
	return g.local.ann
}

// queryOf is the place a correction names.
func queryOf(p geofeed.Place) placeQuery {
	return placeQuery{cc: p.Country, region: p.Region, city: p.City, postal: p.Postal}
}

// sortedUnique sorts and compacts ASes.
func sortedUnique(a []uint32) []uint32 {
	a = slices.Clone(a)
	slices.SortFunc(a, cmp.Compare)
	return slices.Compact(a)
}
