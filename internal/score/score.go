// Package score measures how right the engine's answers are against
// ground truth that none of its sources wrote: for each address of a truth
// file, the answer's country and point against the real ones, and whether
// the truth lies inside the radius the answer states. It knows nothing of
// how answers are made; a lookup function gives them.
package score

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
)

// The network kinds of an answer, by the service's own privacy flags.
const (
	NetworkHosting = "hosting" // a data-centre, cloud or hosting network
	NetworkOther   = "other"   // on none of the hosting lists
	NetworkUnknown = "unknown" // no privacy data loaded: the flags are unknown
)

// Answer is what one lookup says about where an address is.
type Answer struct {
	// Country is the ISO 3166-1 alpha-2 code answered, "" for none.
	Country string
	// Located: Lat and Lon hold the answered point.
	Located  bool
	Lat, Lon float64
	// RadiusKm is the stated accuracy radius, 0 when the answer states
	// none.
	RadiusKm float64
	// Confidence is the stated confidence level, "" when none.
	Confidence string
	// Network is one of the Network* kinds.
	Network string
}

// FromRecord is the Answer of a record of the engine.
func FromRecord(r ipatlas.Record) Answer {
	a := Answer{Country: r.CountryCode, Network: NetworkUnknown}
	if r.Latitude != nil && r.Longitude != nil {
		a.Located, a.Lat, a.Lon = true, *r.Latitude, *r.Longitude
		a.RadiusKm, a.Confidence = float64(r.AccuracyRadius), r.Confidence
	}
	if r.Privacy != nil {
		a.Network = NetworkOther
		if r.Privacy.Hosting {
			a.Network = NetworkHosting
		}
	}
	return a
}

// Figures are the measures of one set of truths. Shares are fractions of
// Truths unless said otherwise; an address not answered is not right, and
// one not located is not within any distance.
type Figures struct {
	Truths   int `json:"truths"`
	Answered int `json:"answered"` // answers naming a country
	Located  int `json:"located"`  // answers with a point
	// RightCountry is the share of truths answered with their country.
	RightCountry float64 `json:"right_country"`
	// MedianKm and P90Km are the error distances of the located answers;
	// absent when none is located.
	MedianKm *float64 `json:"median_km,omitempty"`
	P90Km    *float64 `json:"p90_km,omitempty"`
	// Within10, Within40 and Within100 are the shares of truths answered
	// with a point within that many km of theirs.
	Within10  float64 `json:"within_10km"`
	Within40  float64 `json:"within_40km"`
	Within100 float64 `json:"within_100km"`
	// WithRadius counts the located answers that state a radius; the
	// measures below are of those answers, and absent when none does.
	WithRadius int `json:"with_radius"`
	// InsideRadius is the share of them whose truth lies inside it.
	InsideRadius *float64 `json:"inside_radius,omitempty"`
	// MeanRadiusKm is their mean stated radius.
	MeanRadiusKm *float64 `json:"mean_radius_km,omitempty"`
	// ConstantRadiusKm is the one radius that, stated for each of them,
	// would hold as many truths inside as theirs do: a stated radius is
	// only worth its variation if its mean is well below this.
	ConstantRadiusKm *float64 `json:"constant_radius_km,omitempty"`
}

// Group is the figures of the truths that share one value of a
// breakdown.
type Group struct {
	Name string `json:"name"`
	Figures
}

// Report is a scorecard: the figures of every truth, then broken down.
type Report struct {
	Overall Figures `json:"overall"`
	// Continents groups by the continent of the true country.
	Continents []Group `json:"continents"`
	// Networks groups by the answer's network kind (Network*).
	Networks []Group `json:"networks"`
	// Kinds groups by the truth file's kind column; absent without one.
	Kinds []Group `json:"kinds,omitempty"`
	// Confidence groups by the answer's stated confidence; absent when no
	// answer states one. Answers that state none are "none".
	Confidence []Group `json:"confidence,omitempty"`
}

// Options tune Run.
type Options struct {
	// Progress, when not nil, is told how many of total truths have been
	// looked up, now and then and once at the end.
	Progress func(done, total int)
}

// outcome is one truth against its answer.
type outcome struct {
	truth  *Truth
	answer Answer
	// errKm is the distance between the answered and the true point, NaN
	// when the answer has none.
	errKm float64
}

// progressEvery is how many lookups pass between calls of Progress.
const progressEvery = 1024

// Run looks every truth up and scores the answers.
func Run(truths []Truth, lookup func(netip.Addr) (Answer, error), opts Options) (Report, error) {
	if len(truths) == 0 {
		return Report{}, errors.New("score: no truths")
	}
	out := make([]outcome, len(truths))
	for i := range truths {
		t := &truths[i]
		a, err := lookup(t.Addr)
		if err != nil {
			return Report{}, fmt.Errorf("%s: %w", t.Addr, err)
		}
		out[i] = outcome{truth: t, answer: a, errKm: math.NaN()}
		if a.Located {
			out[i].errKm = DistanceKm(a.Lat, a.Lon, t.Lat, t.Lon)
		}
		if opts.Progress != nil && (i+1)%progressEvery == 0 {
			opts.Progress(i+1, len(truths))
		}
	}
	if opts.Progress != nil {
		opts.Progress(len(truths), len(truths))
	}
	rep := Report{
		Overall: figures(out),
		Continents: groups(out, func(o *outcome) string {
			if c := names.ContinentCode(o.truth.Country); c != "" {
				return c
			}
			return "unknown"
		}, nil),
		Networks: groups(out, func(o *outcome) string { return o.answer.Network },
			[]string{NetworkHosting, NetworkOther, NetworkUnknown}),
	}
	if slices.ContainsFunc(truths, func(t Truth) bool { return t.Kind != "" }) {
		rep.Kinds = groups(out, func(o *outcome) string {
			if o.truth.Kind == "" {
				return "none"
			}
			return o.truth.Kind
		}, nil)
	}
	if slices.ContainsFunc(out, func(o outcome) bool { return o.answer.Confidence != "" }) {
		rep.Confidence = groups(out, func(o *outcome) string {
			if o.answer.Confidence == "" {
				return "none"
			}
			return o.answer.Confidence
		}, []string{"high", "medium", "low"})
	}
	return rep, nil
}

// groups splits out by key and measures each part: the names of first in
// that order, then the others in alphabetical order.
func groups(out []outcome, key func(*outcome) string, first []string) []Group {
	parts := map[string][]outcome{}
	for i := range out {
		k := key(&out[i])
		parts[k] = append(parts[k], out[i])
	}
	var keys []string
	for k := range parts {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if i := slices.Index(first, k); i >= 0 {
			return i
		}
		return len(first)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	gs := make([]Group, len(keys))
	for i, k := range keys {
		gs[i] = Group{Name: k, Figures: figures(parts[k])}
	}
	return gs
}

func figures(out []outcome) Figures {
	f := Figures{Truths: len(out)}
	var right, w10, w40, w100, inside int
	var errs, radiusErrs []float64
	var radiusSum float64
	for i := range out {
		o := &out[i]
		if o.answer.Country != "" {
			f.Answered++
			if o.answer.Country == o.truth.Country {
				right++
			}
		}
		if !o.answer.Located {
			continue
		}
		f.Located++
		d := o.errKm
		errs = append(errs, d)
		if d <= 10 {
			w10++
		}
		if d <= 40 {
			w40++
		}
		if d <= 100 {
			w100++
		}
		if r := o.answer.RadiusKm; r > 0 {
			f.WithRadius++
			radiusSum += r
			radiusErrs = append(radiusErrs, d)
			if d <= r {
				inside++
			}
		}
	}
	n := float64(f.Truths)
	f.RightCountry = float64(right) / n
	f.Within10, f.Within40, f.Within100 = float64(w10)/n, float64(w40)/n, float64(w100)/n
	if len(errs) > 0 {
		slices.Sort(errs)
		f.MedianKm = ptr(quantile(errs, 0.5))
		f.P90Km = ptr(quantile(errs, 0.9))
	}
	if f.WithRadius > 0 {
		f.InsideRadius = ptr(float64(inside) / float64(f.WithRadius))
		f.MeanRadiusKm = ptr(radiusSum / float64(f.WithRadius))
		if inside > 0 {
			slices.Sort(radiusErrs)
			f.ConstantRadiusKm = ptr(radiusErrs[inside-1])
		}
	}
	return f
}

// quantile is the q-quantile of sorted, interpolated between the two
// nearest ranks.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

func ptr(v float64) *float64 { return &v }

// earthRadiusKm is the mean radius of the Earth (IUGG).
const earthRadiusKm = 6371.0088

// DistanceKm is the great-circle distance between two points in degrees,
// on a sphere of the Earth's mean radius.
func DistanceKm(lat1, lon1, lat2, lon2 float64) float64 {
	const rad = math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLon := (lon2 - lon1) * rad
	s := math.Sin(dLat/2)*math.Sin(dLat/2) +
		math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadiusKm * math.Asin(math.Sqrt(math.Min(1, s)))
}
