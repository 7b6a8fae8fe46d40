package geo

import (
	"runtime/debug"
	"sync"

	"github.com/ringsaturn/tzf"
	tzfrellite "github.com/ringsaturn/tzf-rel-lite"
	tzfpb "github.com/ringsaturn/tzf/gen/go/tzf/v1"
	"google.golang.org/protobuf/proto"
)

// Time zones from coordinates, for data without them (DB-IP Lite has
// none). This is tzf's DefaultFinder split in two so that each half is
// built only when needed: the tile index (about 80 ms and 11 MB to build,
// about 1 µs a lookup) answers ~89% of DB-IP's distinct locations; the
// polygon finder (about 1 s and 37 MB, ~11 µs a lookup) answers the rest,
// near zone borders. Both are process-wide: they never change, and a
// reload must not pay for them again. Lookups reach them only when a
// record is composed, not for cached records.
var (
	tzTiles = lazyFinder(func() (tzf.F, error) {
		in := &tzfpb.PreindexTimezones{}
		if err := proto.Unmarshal(tzfrellite.PreindexData, in); err != nil {
			return nil, err
		}
		return tzf.NewFuzzyFinderFromPB(in)
	})
	tzPolygons = lazyFinder(func() (tzf.F, error) {
		in := &tzfpb.CompressedTimezones{}
		if err := proto.Unmarshal(tzfrellite.LiteCompressData, in); err != nil {
			return nil, err
		}
		f, err := tzf.NewFinderFromCompressed(in, tzf.SetDropPBTZ)
		// Building decompresses ~80 MB that is garbage right after: give
		// it back to the OS now rather than carry it in RSS.
		debug.FreeOSMemory()
		return f, err
	})
)

func lazyFinder(build func() (tzf.F, error)) func() tzf.F {
	return sync.OnceValue(func() tzf.F {
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

// warmTimeZones builds both finders now.
func warmTimeZones() {
	tzTiles()
	tzPolygons()
}

// timeZoneAt returns the IANA zone at a point, "" when none is found.
func timeZoneAt(lat, lon float64) string {
	if f := tzTiles(); f != nil {
		if z := f.GetTimezoneName(lon, lat); z != "" {
			return z
		}
	}
	f := tzPolygons()
	if f == nil {
		return ""
	}
	if z := f.GetTimezoneName(lon, lat); z != "" {
		return z
	}
	// As tzf's DefaultFinder does: a point on a coastline or border may
	// fall just outside every simplified polygon.
	for _, dx := range []float64{-0.02, 0, 0.02} {
		for _, dy := range []float64{-0.02, 0, 0.02} {
			if z := f.GetTimezoneName(lon+dx, lat+dy); z != "" {
				return z
			}
		}
	}
	return ""
}
