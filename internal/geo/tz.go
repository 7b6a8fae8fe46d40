package geo

import (
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ringsaturn/tzf"
	tzfrellite "github.com/ringsaturn/tzf-rel-lite"
	tzfpb "github.com/ringsaturn/tzf/gen/go/tzf/v1"
	"google.golang.org/protobuf/proto"
)

// Time zones for data without them (DB-IP Lite has none in any record).
//
// A country with a single zone in zone.tab answers that zone whatever its
// coordinates say: 41% of DB-IP's distinct locations, and for them the
// country is better evidence than a point near a border (tzf puts northern
// Viet Nam in Asia/Bangkok; the country's zone is Asia/Ho_Chi_Minh). Only
// the records of countries with several zones need the coordinates, so
// the finders hold only those countries' zones: 202 of tzf's 444, about
// half the polygon data and 28% of the tiles, 13.6 MB of heap instead of
// 31 MB (and as much again in the GC's headroom). Over every distinct
// record of the default dataset this answers as all zones would for all
// but 0.24% (1,693 of 703,356): mostly the Viet Nam case and zones that
// keep the country's time (Europe/Mariehamn, Asia/Hong_Kong in a record
// of China); a handful of records whose country is FR but whose point is
// overseas (Guadeloupe) get Europe/Paris.
//
// The finders are tzf's DefaultFinder split in two so that each half is
// built only when needed: the tile index (~1 µs a lookup) answers most
// points; the polygon finder (~11 µs a lookup) answers the rest, near zone
// borders. Both are process-wide: they never change, and a reload must not
// pay for them again. Lookups reach them only when a record is composed,
// not for cached records, and only for a record that its file's zone
// index (zoneindex.go), written when the data is installed, does not
// answer: with the index the serving process never builds them.
var (
	tzTiles    = lazyFinder(buildTiles)
	tzPolygons = lazyFinder(buildPolygons)
)

// finderLookups counts the lookups that reach the process-wide finders:
// a record whose zone comes from its file's zone index never does.
var finderLookups atomic.Int64

// buildTiles builds the tile index of the multi-zone countries' zones.
func buildTiles() (tzf.F, error) {
	in := &tzfpb.PreindexTimezones{}
	if err := proto.Unmarshal(tzfrellite.PreindexData, in); err != nil {
		return nil, err
	}
	keep := multiZoneNames()
	in.Keys = slices.DeleteFunc(in.Keys, func(k *tzfpb.PreindexTimezone) bool { return !keep[k.Name] })
	return tzf.NewFuzzyFinderFromPB(in)
}

// buildPolygons builds the polygon finder of the multi-zone countries'
// zones.
func buildPolygons() (tzf.F, error) {
	in := &tzfpb.CompressedTimezones{}
	if err := proto.Unmarshal(tzfrellite.LiteCompressData, in); err != nil {
		return nil, err
	}
	keep := multiZoneNames()
	in.Timezones = slices.DeleteFunc(in.Timezones, func(z *tzfpb.CompressedTimezone) bool { return !keep[z.Name] })
	f, err := tzf.NewFinderFromCompressed(in, tzf.SetDropPBTZ)
	// Building decompresses tens of MB that are garbage right after:
	// give them back to the OS now rather than carry them in RSS.
	debug.FreeOSMemory()
	return f, err
}

// multiZoneNames is the set of zones of every country with more than one.
var multiZoneNames = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool)
	var code [2]byte
	for code[0] = 'A'; code[0] <= 'Z'; code[0]++ {
		for code[1] = 'A'; code[1] <= 'Z'; code[1]++ {
			if zones := names.TimeZones(string(code[:])); len(zones) > 1 {
				for _, z := range zones {
					m[z] = true
				}
			}
		}
	}
	return m
})

// nonISOZones gives the zone of a code that IP data uses outside ISO
// 3166-1, and so outside zone.tab, where the place has one zone.
var nonISOZones = map[string]string{
	"XK": "Europe/Belgrade", // Kosovo, in tzf's polygons
}

// finderBuilds counts the finders built in this process: 0 in a server
// whose city files all have zone indexes.
var finderBuilds atomic.Int64

func lazyFinder(build func() (tzf.F, error)) func() tzf.F {
	return sync.OnceValue(func() tzf.F {
		finderBuilds.Add(1)
		f, err := build()
		if err != nil {
			// The data is embedded in the binary: failing to read it is
			// a build defect; time zones then fall back to the
			// country's only zone.
			return nil
		}
		return f
	})
}

// indexFinderIdle is how long the index finders outlive the last zone
// index built with them.
const indexFinderIdle = 2 * time.Minute

// The index finders are the finders BuildZoneIndex looks zones up with,
// apart from the serving engine's (which, with every city file indexed,
// builds none). Building them takes about a second, and ten times as long
// under the race detector; holding them takes some 30 MB. So they are
// built at the first index that needs them, shared by the indexes built
// after it (the IPv4 and IPv6 city files of one release, an install after
// a failed one), and dropped indexFinderIdle after the last one ends, so
// that a serving process carries them only around its installs.
var indexFinders struct {
	mu    sync.Mutex
	cur   *zoneFinders
	users int
	drop  *time.Timer
}

// zoneFinders is one set of index finders, each built at its first use.
type zoneFinders struct {
	tiles    func() (tzf.F, error)
	polygons func() tzf.F
}

// indexFinderSets counts the sets of index finders made in this process.
var indexFinderSets atomic.Int64

func newZoneFinders() *zoneFinders {
	indexFinderSets.Add(1)
	return &zoneFinders{
		tiles: sync.OnceValues(buildTiles),
		polygons: sync.OnceValue(func() tzf.F {
			f, err := buildPolygons()
			if err != nil {
				return nil
			}
			return f
		}),
	}
}

// acquireIndexFinders returns the index finders, keeping them until the
// matching releaseIndexFinders.
func acquireIndexFinders() *zoneFinders {
	f := &indexFinders
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drop != nil {
		f.drop.Stop()
		f.drop = nil
	}
	if f.cur == nil {
		f.cur = newZoneFinders()
	}
	f.users++
	return f.cur
}

// releaseIndexFinders ends a use of the index finders; the last one
// schedules their drop.
func releaseIndexFinders() {
	f := &indexFinders
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users--
	if f.users > 0 {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(indexFinderIdle, func() { dropIndexFinders(t) })
	f.drop = t
}

// dropIndexFinders lets the index finders go when drop is still their
// scheduled drop and nothing uses them.
func dropIndexFinders(drop *time.Timer) {
	f := &indexFinders
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drop == drop && f.users == 0 {
		f.cur, f.drop = nil, nil
	}
}

// warmTimeZones builds both finders now.
func warmTimeZones() {
	tzTiles()
	tzPolygons()
}

// timeZoneOf returns the IANA zone of a place in country cc (upper case,
// "" when unknown) at lat, lon (valid only when hasCoords), or "" when
// neither tells.
func timeZoneOf(cc string, lat, lon float64, hasCoords bool) string {
	if z, ok := countryZone(cc); ok {
		return z
	}
	if !hasCoords {
		return ""
	}
	return timeZoneAt(lat, lon)
}

// countryZone returns the zone that country cc alone decides (ok), or
// reports that a place in cc takes the zone at its coordinates.
func countryZone(cc string) (zone string, ok bool) {
	if z := names.OnlyZone(cc); z != "" {
		return z, true
	}
	if z, ok := nonISOZones[cc]; ok {
		return z, true
	}
	return "", false
}

// timeZoneAt returns the zone at a point among the zones of countries with
// several, "" when none is found, from the process-wide finders.
func timeZoneAt(lat, lon float64) string {
	finderLookups.Add(1)
	return zoneAt(tzTiles(), tzPolygons, lat, lon)
}

// zoneAt returns the zone at a point from a tile index and a polygon
// finder, got only when the tiles do not answer (either may be nil), ""
// when neither finds one.
func zoneAt(tiles tzf.F, polygonFinder func() tzf.F, lat, lon float64) string {
	if tiles != nil {
		if z := tiles.GetTimezoneName(lon, lat); z != "" {
			return z
		}
	}
	polygons := polygonFinder()
	if polygons == nil {
		return ""
	}
	if z := polygons.GetTimezoneName(lon, lat); z != "" {
		return z
	}
	// As tzf's DefaultFinder does: a point on a coastline or border may
	// fall just outside every simplified polygon.
	for _, dx := range []float64{-0.02, 0, 0.02} {
		for _, dy := range []float64{-0.02, 0, 0.02} {
			if z := polygons.GetTimezoneName(lon+dx, lat+dy); z != "" {
				return z
			}
		}
	}
	return ""
}
