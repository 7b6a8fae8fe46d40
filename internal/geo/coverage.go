package geo

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/oschwald/maxminddb-golang/v2"
)

// Coverage goals, in percent of the answers a measure counts: what a
// complete Chinese answer needs. A measure without a goal (0) is reported
// only.
const (
	// GoalProvinceZh: outside China, a province of the data gets a
	// Chinese name.
	GoalProvinceZh = 95.0
	// GoalCityZh: outside China, a city of the data gets a Chinese name.
	GoalCityZh = 80.0
	// GoalChinaCityZh: in China, every city of the data gets a Chinese
	// name.
	GoalChinaCityZh = 100.0
	// GoalChinaAreaCode: in China, every city of the data gets its own
	// long-distance code, not the country's 86.
	GoalChinaAreaCode = 100.0
	// GoalCityPlain: no English city keeps the data's "City (District)"
	// form (a place whose own name has brackets, "Frankfurt (Oder)", is
	// whole).
	GoalCityPlain = 100.0
)

// FloorCityZh is the share of GoalCityZh's measure below which the test
// of the real dataset fails even on a sample that may miss the goal by
// chance: GeoNames' cities500, CLDR and zh-places (GeoNames' alternate
// names, Who's On First, Natural Earth) name about 83% of sampled cities
// outside China (83.2% of 23,470 on seed 19), and the test's sample of
// 1,300 addresses varies by about ±2.2 points, so a share under 79% is a
// regression, not chance. The rest (Whitehall OH, Doraville, St Leonards
// NSW, Fornebu) have no Chinese name in any of the sources.
const FloorCityZh = 79.0

// Names of the coverage measures, in report order.
const (
	MeasureLocated       = "located (country known)"
	MeasureProvinceZh    = "zh province in Chinese, outside CN"
	MeasureCityZh        = "zh city in Chinese, outside CN"
	MeasureChinaCityZh   = "zh city in Chinese, CN"
	MeasureChinaAreaCode = "city area code (not 86), CN"
	MeasureCityPlain     = "en city without '('"
	MeasureDistrict      = "en answers with a district"
	MeasureDistrictZh    = "zh district in Chinese"
)

// CoverageOptions says how many addresses MeasureCoverage draws.
type CoverageOptions struct {
	IPv4, IPv6 int    // addresses per family
	Seed       uint64 // the same seed draws the same addresses from the same data
}

// CoverageReport is what MeasureCoverage found.
type CoverageReport struct {
	Seed     uint64            `json:"seed,string"`
	IPv4     int               `json:"ipv4"`
	IPv6     int               `json:"ipv6"`
	ASNFiles []string          `json:"asn_files"` // the files the addresses were drawn from
	Measures []CoverageMeasure `json:"measures"`
}

// CoverageMeasure is one share of the sample: Hit of the Of answers it
// counts are as they should be.
type CoverageMeasure struct {
	Name string  `json:"name"`
	Hit  int     `json:"hit"`
	Of   int     `json:"of"`
	Goal float64 `json:"goal,omitempty"` // percent; 0 for none
	// Missing are the most frequent values of the answers that are not as
	// they should be, with how many answers of the sample had each.
	Missing []CoverageValue `json:"missing,omitempty"`

	missing map[string]int
}

// CoverageValue is one missing value and its count in the sample.
type CoverageValue struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// Share is Hit/Of in percent; 0 when the measure counted nothing.
func (m *CoverageMeasure) Share() float64 {
	if m.Of == 0 {
		return 0
	}
	return 100 * float64(m.Hit) / float64(m.Of)
}

// Met reports whether the measure reaches its goal; a measure without a
// goal, or one that counted no answer, meets it.
func (m *CoverageMeasure) Met() bool {
	return m.Goal == 0 || m.Of == 0 || m.Share() >= m.Goal
}

// margin is the half-width of the 95% confidence interval of Share
// (normal approximation), in points: how far the sample's share may be
// from the data's.
func (m *CoverageMeasure) margin() float64 {
	if m.Of == 0 {
		return 0
	}
	p := float64(m.Hit) / float64(m.Of)
	return 100 * 1.96 * math.Sqrt(p*(1-p)/float64(m.Of))
}

func (m *CoverageMeasure) count(ok bool, missing string) {
	m.Of++
	if ok {
		m.Hit++
		return
	}
	if missing != "" {
		if m.missing == nil {
			m.missing = map[string]int{}
		}
		m.missing[missing]++
	}
}

// topMissing is how many missing values a measure keeps.
const topMissing = 15

// MeasureCoverage draws addresses at random from the networks of the ASN
// data in service (the space that has an AS number, each network weighted
// by its size), looks each up in English and in Chinese, and measures how
// complete the answers are. It reads no file but the engine's own.
func (e *Engine) MeasureCoverage(opts CoverageOptions) (*CoverageReport, error) {
	if opts.IPv4 < 0 || opts.IPv6 < 0 || opts.IPv4+opts.IPv6 == 0 {
		return nil, errors.New("geo: coverage needs a positive number of addresses")
	}
	g := e.acquire()
	if g == nil {
		return nil, ErrClosed
	}
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9E3779B97F4A7C15))
	rep := &CoverageReport{Seed: opts.Seed, IPv4: opts.IPv4, IPv6: opts.IPv6}
	var addrs []netip.Addr
	for _, fam := range []struct {
		v4   bool
		n    int
		list []*source
	}{{true, opts.IPv4, g.asn4}, {false, opts.IPv6, g.asn6}} {
		if fam.n == 0 {
			continue
		}
		if len(fam.list) == 0 {
			g.release()
			return nil, fmt.Errorf("geo: no ASN data for IPv%d to draw addresses from", map[bool]int{true: 4, false: 6}[fam.v4])
		}
		s := fam.list[0]
		if !slices.Contains(rep.ASNFiles, s.info.File) {
			rep.ASNFiles = append(rep.ASNFiles, s.info.File)
		}
		drawn, err := drawAnnounced(s.r, fam.v4, fam.n, rng)
		if err != nil {
			g.release()
			return nil, fmt.Errorf("geo: drawing from %s: %w", s.info.File, err)
		}
		addrs = append(addrs, drawn...)
	}
	g.release()

	t := newCoverageTally()
	for _, a := range addrs {
		en, err := e.Lookup(a, ipatlas.English)
		if err != nil {
			return nil, err
		}
		zh, err := e.Lookup(a, ipatlas.Chinese)
		if err != nil {
			return nil, err
		}
		t.add(&en, &zh)
	}
	rep.Measures = t.measures()
	return rep, nil
}

// coverageTally counts the answers of one address after another.
type coverageTally struct {
	located, provZh, cityZh, cnCityZh, cnArea, plain, district, districtZh CoverageMeasure
}

func newCoverageTally() *coverageTally {
	return &coverageTally{
		located:    CoverageMeasure{Name: MeasureLocated},
		provZh:     CoverageMeasure{Name: MeasureProvinceZh, Goal: GoalProvinceZh},
		cityZh:     CoverageMeasure{Name: MeasureCityZh, Goal: GoalCityZh},
		cnCityZh:   CoverageMeasure{Name: MeasureChinaCityZh, Goal: GoalChinaCityZh},
		cnArea:     CoverageMeasure{Name: MeasureChinaAreaCode, Goal: GoalChinaAreaCode},
		plain:      CoverageMeasure{Name: MeasureCityPlain, Goal: GoalCityPlain},
		district:   CoverageMeasure{Name: MeasureDistrict},
		districtZh: CoverageMeasure{Name: MeasureDistrictZh},
	}
}

// add counts one address's answers in English and Chinese. A measure of
// a field counts only the answers whose data has that field (an English
// name): a name the data lacks cannot be translated. A missing value is
// written with its country code and the English names above it.
func (t *coverageTally) add(en, zh *ipatlas.Record) {
	t.located.count(en.CountryCode != "", "")
	if en.CountryCode == "" {
		return
	}
	cc := en.CountryCode
	place := strings.Join(nonEmpty(en.Province, en.City), " / ")
	if cc == "CN" {
		if en.City != "" {
			t.cnCityZh.count(isChinese(zh.City), place)
			t.cnArea.count(zh.AreaCode != "" && zh.AreaCode != "86", place)
		}
	} else {
		if en.Province != "" {
			t.provZh.count(isChinese(zh.Province), cc+" "+en.Province)
		}
		if en.City != "" {
			t.cityZh.count(isChinese(zh.City), cc+" "+place)
		}
	}
	if en.City != "" {
		t.plain.count(!strings.Contains(en.City, "(") || names.WholeName(cc, en.City), cc+" "+en.City)
	}
	t.district.count(en.District != "", "")
	if en.District != "" {
		t.districtZh.count(isChinese(zh.District), cc+" "+strings.Join(nonEmpty(en.Province, en.City, en.District), " / "))
	}
}

// measures returns the measures in report order, each with its most
// frequent missing values.
func (t *coverageTally) measures() []CoverageMeasure {
	out := []CoverageMeasure{t.located, t.provZh, t.cityZh, t.cnCityZh, t.cnArea, t.plain, t.district, t.districtZh}
	for i := range out {
		out[i].Missing = top(out[i].missing, topMissing)
		out[i].missing = nil
	}
	return out
}

// Measure returns the measure of that name, or nil.
func (r *CoverageReport) Measure(name string) *CoverageMeasure {
	for i := range r.Measures {
		if r.Measures[i].Name == name {
			return &r.Measures[i]
		}
	}
	return nil
}

// Write prints the report as a table, then each measure's most frequent
// missing values.
func (r *CoverageReport) Write(w io.Writer) error {
	var b strings.Builder
	addresses := "addresses"
	if r.IPv4+r.IPv6 == 1 {
		addresses = "address"
	}
	fmt.Fprintf(&b, "%d %s (%d IPv4, %d IPv6) drawn by size from the networks of %s, seed %d\n",
		r.IPv4+r.IPv6, addresses, r.IPv4, r.IPv6, strings.Join(r.ASNFiles, ", "), r.Seed)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tanswers\tshare\t±95%\tgoal\t")
	for i := range r.Measures {
		m := &r.Measures[i]
		goal := "-"
		if m.Goal > 0 {
			goal = fmt.Sprintf("%.0f%%", m.Goal)
			if !m.Met() {
				goal += " MISSED"
			}
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.1f%%\t%.1f\t%s\t\n", m.Name, m.Hit, m.Of, m.Share(), m.margin(), goal)
	}
	tw.Flush()
	for i := range r.Measures {
		m := &r.Measures[i]
		if len(m.Missing) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nmost frequent misses of %q:\n", m.Name)
		for _, v := range m.Missing {
			fmt.Fprintf(&b, "  %4d  %s\n", v.Count, v.Value)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// drawAnnounced draws n public addresses of one family from the networks
// of an ASN file, each network weighted by its size. IPv6 is weighed in
// /64s: a network longer than /64 (a vanishing share of the space) is
// never drawn. A draw in a special-purpose block is drawn again; a
// network wholly inside one is left out.
func drawAnnounced(r *maxminddb.Reader, v4 bool, n int, rng *rand.Rand) ([]netip.Addr, error) {
	var starts []netip.Addr
	var cum []uint64 // total weight up to and including each network
	var total uint64
	for res := range r.Networks() {
		if err := res.Err(); err != nil {
			return nil, err
		}
		p := res.Prefix()
		a := p.Addr()
		if a.Is4() != v4 || a.Is4In6() {
			continue
		}
		if b, special := netaddr.Classify(a); special && b.Prefix.Bits() <= p.Bits() && b.Prefix.Contains(a) {
			continue // wholly special: no draw in it could be kept
		}
		var w uint64
		switch {
		case v4:
			w = 1 << (32 - p.Bits())
		case p.Bits() == 0:
			return nil, errors.New("a network of all of IPv6 cannot be weighed")
		case p.Bits() <= 64:
			w = 1 << (64 - p.Bits())
		default:
			continue
		}
		var carry uint64
		if total, carry = bits.Add64(total, w, 0); carry != 0 {
			return nil, errors.New("the IPv6 networks are too large to weigh")
		}
		starts = append(starts, a)
		cum = append(cum, total)
	}
	if total == 0 {
		return nil, fmt.Errorf("no IPv%d network", map[bool]int{true: 4, false: 6}[v4])
	}
	out := make([]netip.Addr, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("only %d of %d draws were public addresses", len(out), tries)
		}
		x := rng.Uint64N(total)
		i, _ := slices.BinarySearchFunc(cum, x, func(c, x uint64) int {
			if c <= x {
				return -1
			}
			return 1
		})
		off := x
		if i > 0 {
			off -= cum[i-1]
		}
		var a netip.Addr
		if v4 {
			b := starts[i].As4()
			binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(off))
			a = netip.AddrFrom4(b)
		} else {
			b := starts[i].As16()
			binary.BigEndian.PutUint64(b[:8], binary.BigEndian.Uint64(b[:8])+off)
			binary.BigEndian.PutUint64(b[8:], rng.Uint64())
			a = netip.AddrFrom16(b)
		}
		if _, special := netaddr.Classify(a); !special {
			out = append(out, a)
		}
	}
	return out, nil
}

// isChinese reports whether s is a name written in Chinese: Han
// characters and no Latin letters.
func isChinese(s string) bool {
	han := false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			han = true
		case unicode.Is(unicode.Latin, r):
			return false
		}
	}
	return han
}

func nonEmpty(ss ...string) []string {
	return slices.DeleteFunc(ss, func(s string) bool { return s == "" })
}

// top returns the n most frequent values, ties in value order.
func top(m map[string]int, n int) []CoverageValue {
	out := make([]CoverageValue, 0, len(m))
	for v, c := range m {
		out = append(out, CoverageValue{v, c})
	}
	slices.SortFunc(out, func(a, b CoverageValue) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Value, b.Value))
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}
