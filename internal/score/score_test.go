package score_test

import (
	"bytes"
	"errors"
	"math"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/score"
)

func TestReadTruth(t *testing.T) {
	in := "ip,country,latitude,longitude,kind\n" +
		"192.0.2.1,de,52.52,13.405,probe\n" +
		"\n" +
		"2001:db8::1, JP ,35.68,139.69,anchor\n" +
		"::ffff:198.51.100.7,US,40.71,-74.01,\n"
	got, err := score.ReadTruth(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []score.Truth{
		{Addr: netip.MustParseAddr("192.0.2.1"), Country: "DE", Lat: 52.52, Lon: 13.405, Kind: "probe"},
		{Addr: netip.MustParseAddr("2001:db8::1"), Country: "JP", Lat: 35.68, Lon: 139.69, Kind: "anchor"},
		{Addr: netip.MustParseAddr("198.51.100.7"), Country: "US", Lat: 40.71, Lon: -74.01},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	// Without a header, and without the kind column.
	got, err = score.ReadTruth(strings.NewReader("192.0.2.1,FR,48.85,2.35\n"))
	if err != nil || len(got) != 1 || got[0].Country != "FR" || got[0].Kind != "" {
		t.Errorf("headless: %+v, %v", got, err)
	}
}

func TestReadTruthErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no rows"},
		{"ip,country,latitude,longitude\n", "no rows"},
		{"192.0.2.1,DE,52.5,13.4\nnot-an-ip,DE,52.5,13.4\n", "line 2: ip \"not-an-ip\""},
		{"192.0.2.1,DEU,52.5,13.4\n", "line 1: country \"DEU\""},
		{"192.0.2.1,D1,52.5,13.4\n", "line 1: country \"D1\""},
		{"192.0.2.1,DE,95,13.4\n", "line 1: latitude \"95\": out of -90 to 90"},
		{"192.0.2.1,DE,52.5,-181\n", "line 1: longitude \"-181\": out of -180 to 180"},
		{"192.0.2.1,DE,NaN,13.4\n", "line 1: latitude \"NaN\": not a number"},
		{"192.0.2.1,DE,52.5\n", "line 1: 3 fields"},
		{"192.0.2.1,DE,52.5,13.4,probe,extra\n", "line 1: 6 fields"},
		{"192.0.2.1,DE,\"52.5,13.4\n", "extraneous or missing \" in quoted-field"},
	} {
		_, err := score.ReadTruth(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.in, err, c.want)
		}
	}
}

func TestDistanceKm(t *testing.T) {
	for _, c := range []struct {
		lat1, lon1, lat2, lon2, want, tol float64
	}{
		{0, 0, 0, 0, 0, 1e-9},
		{0, 0, 1, 0, 6371.0088 * math.Pi / 180, 1e-9},          // one degree of a meridian
		{0, 0, 0, 180, 6371.0088 * math.Pi, 1e-6},              // half the equator
		{48.8566, 2.3522, 51.5074, -0.1278, 343.6, 0.5},        // Paris to London
		{40.7128, -74.0060, 34.0522, -118.2437, 3936, 2},       // New York to Los Angeles
		{0, 179, 0, -179, 2 * 6371.0088 * math.Pi / 180, 1e-6}, // across the antimeridian
	} {
		got := score.DistanceKm(c.lat1, c.lon1, c.lat2, c.lon2)
		if math.Abs(got-c.want) > c.tol {
			t.Errorf("DistanceKm(%g,%g,%g,%g) = %g, want %g", c.lat1, c.lon1, c.lat2, c.lon2, got, c.want)
		}
	}
}

// north returns the latitude km north of lat along a meridian.
func north(lat, km float64) float64 { return lat + km/(6371.0088*math.Pi/180) }

// fixture is ten truths and their answers: errors of 1 to 1000 km, one
// address without an answer, two wrong countries, radii and confidence
// levels on some.
func fixture() ([]score.Truth, map[netip.Addr]score.Answer) {
	type row struct {
		country, kind string
		errKm         float64 // -1: no answer
		answered      string  // the country answered
		radius        float64
		conf, network string
	}
	rows := []row{
		{"DE", "probe", 1, "DE", 50, "high", score.NetworkOther},
		{"DE", "probe", 5, "DE", 50, "high", score.NetworkOther},
		{"FR", "probe", 9, "FR", 50, "high", score.NetworkOther},
		{"JP", "probe", 20, "JP", 50, "low", score.NetworkOther},
		{"JP", "anchor", 39, "JP", 50, "", score.NetworkHosting},
		{"US", "anchor", 60, "US", 50, "", score.NetworkHosting},
		{"US", "probe", 99, "CA", 0, "", score.NetworkOther},
		{"US", "probe", 200, "US", 500, "low", score.NetworkUnknown},
		{"BR", "probe", 1000, "AR", 0, "", score.NetworkOther},
		{"BR", "probe", -1, "", 0, "", score.NetworkOther},
	}
	truths := make([]score.Truth, len(rows))
	answers := map[netip.Addr]score.Answer{}
	for i, r := range rows {
		a := netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
		truths[i] = score.Truth{Addr: a, Country: r.country, Lat: 10, Lon: 20, Kind: r.kind}
		ans := score.Answer{Country: r.answered, RadiusKm: r.radius, Confidence: r.conf, Network: r.network}
		if r.errKm >= 0 {
			ans.Located, ans.Lat, ans.Lon = true, north(10, r.errKm), 20
		}
		answers[a] = ans
	}
	return truths, answers
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestRun(t *testing.T) {
	truths, answers := fixture()
	var calls [][2]int
	rep, err := score.Run(truths, func(a netip.Addr) (score.Answer, error) { return answers[a], nil },
		score.Options{Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) == 0 || calls[len(calls)-1] != [2]int{10, 10} {
		t.Errorf("progress calls %v, want the last to be 10 of 10", calls)
	}
	f := rep.Overall
	if f.Truths != 10 || f.Answered != 9 || f.Located != 9 {
		t.Errorf("counts %d/%d/%d, want 10 truths, 9 answered, 9 located", f.Truths, f.Answered, f.Located)
	}
	// Shares are of all ten truths: the one without an answer is neither
	// right nor near.
	if !near(f.RightCountry, 0.7) {
		t.Errorf("right country %g, want 0.7", f.RightCountry)
	}
	if !near(f.Within10, 0.3) || !near(f.Within40, 0.5) || !near(f.Within100, 0.7) {
		t.Errorf("within 10/40/100 km %g/%g/%g, want 0.3/0.5/0.7", f.Within10, f.Within40, f.Within100)
	}
	// The nine errors sorted: 1 5 9 20 39 60 99 200 1000. The median is
	// the fifth; the 90th percentile lies a fifth of the way from 200 to
	// 1000.
	if f.MedianKm == nil || !near(*f.MedianKm, 39) || f.P90Km == nil || !near(*f.P90Km, 360) {
		t.Errorf("median %v, p90 %v; want 39 and 360", f.MedianKm, f.P90Km)
	}
	// Seven answers state a radius; six hold their truth (60 km is outside
	// its 50). One radius for all would need 60 km to hold six.
	if f.WithRadius != 7 || f.InsideRadius == nil || !near(*f.InsideRadius, 6.0/7) ||
		!near(*f.MeanRadiusKm, 800.0/7) || !near(*f.ConstantRadiusKm, 60) {
		t.Errorf("radius: %d stated, inside %v, mean %v, constant %v; want 7, 6/7, 800/7, 60",
			f.WithRadius, deref(f.InsideRadius), deref(f.MeanRadiusKm), deref(f.ConstantRadiusKm))
	}

	names := func(gs []score.Group) string {
		var s []string
		for _, g := range gs {
			s = append(s, g.Name)
		}
		return strings.Join(s, " ")
	}
	if got := names(rep.Continents); got != "AS EU NA SA" {
		t.Errorf("continents %q", got)
	}
	if got := names(rep.Networks); got != "hosting other unknown" {
		t.Errorf("networks %q", got)
	}
	if got := names(rep.Kinds); got != "anchor probe" {
		t.Errorf("kinds %q", got)
	}
	if got := names(rep.Confidence); got != "high low none" {
		t.Errorf("confidence %q, want the levels in order, then none", got)
	}
	sa := rep.Continents[3].Figures
	if sa.Truths != 2 || sa.Answered != 1 || sa.RightCountry != 0 || sa.WithRadius != 0 || sa.InsideRadius != nil {
		t.Errorf("SA: %+v", sa)
	}
	high := rep.Confidence[0].Figures
	if high.Truths != 3 || !near(high.Within10, 1) || !near(*high.InsideRadius, 1) {
		t.Errorf("high: %+v", high)
	}
	anchors := rep.Kinds[0].Figures
	if anchors.Truths != 2 || !near(anchors.Within40, 0.5) || !near(*anchors.MedianKm, 49.5) {
		t.Errorf("anchors: %+v", anchors)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestRunWithoutKindsOrLevels(t *testing.T) {
	truths := []score.Truth{{Addr: netip.MustParseAddr("192.0.2.1"), Country: "DE", Lat: 52, Lon: 13}}
	rep, err := score.Run(truths, func(netip.Addr) (score.Answer, error) {
		return score.Answer{Country: "DE", Network: score.NetworkOther}, nil
	}, score.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// No point: no distances, and nothing within any.
	if rep.Kinds != nil || rep.Confidence != nil || rep.Overall.MedianKm != nil || rep.Overall.Within100 != 0 || rep.Overall.RightCountry != 1 {
		t.Errorf("%+v", rep)
	}
	var b bytes.Buffer
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "in radius") || strings.Contains(b.String(), "by kind") || strings.Contains(b.String(), "by confidence") {
		t.Errorf("columns or sections without data:\n%s", b.String())
	}
}

func TestRunLookupError(t *testing.T) {
	truths, _ := fixture()
	boom := errors.New("corrupt record")
	_, err := score.Run(truths, func(a netip.Addr) (score.Answer, error) {
		if a == truths[4].Addr {
			return score.Answer{}, boom
		}
		return score.Answer{}, nil
	}, score.Options{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), truths[4].Addr.String()) {
		t.Errorf("%v: want the lookup's error with its address", err)
	}
	if _, err := score.Run(nil, nil, score.Options{}); err == nil {
		t.Error("no truths: no error")
	}
}

func TestWrite(t *testing.T) {
	truths, answers := fixture()
	rep, err := score.Run(truths, func(a netip.Addr) (score.Answer, error) { return answers[a], nil }, score.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	// The header, then "all" with its figures under the header's columns.
	if f := strings.Fields(lines[1]); f[0] != "all" || f[len(f)-2] != "85.7%" || f[len(f)-1] != "114.3" {
		t.Errorf("the overall row %q: want in-radius 85.7%% and mean radius 114.3 last", lines[1])
	}
	for _, want := range []string{"right country", "in radius", "by continent", "  EU Europe", "  SA South America",
		"by network", "  hosting", "by kind", "  anchor", "by confidence", "  high", "  none",
		"70.0%", "39.0", "360.0",
		"the stated radii hold 85.7% of the truths with a mean of 114 km; one radius for every answer would need 60 km to hold as many (1.90x)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Every row of figures is as wide as the header: the columns align.
	for _, l := range lines[1:] {
		if strings.Contains(l, "%") && !strings.HasPrefix(l, "the stated") && len([]rune(l)) != len([]rune(lines[0])) {
			t.Errorf("row %q is %d wide, the header %d", l, len([]rune(l)), len([]rune(lines[0])))
		}
	}
}

func TestFromRecord(t *testing.T) {
	lat, lon := 52.5, 13.4
	yes := true
	for _, c := range []struct {
		rec  ipatlas.Record
		want score.Answer
	}{
		{ipatlas.Record{}, score.Answer{Network: score.NetworkUnknown}},
		{ipatlas.Record{CountryCode: "DE", Latitude: &lat, Longitude: &lon, Privacy: &ipatlas.Privacy{Hosting: true}},
			score.Answer{Country: "DE", Located: true, Lat: lat, Lon: lon, Network: score.NetworkHosting}},
		{ipatlas.Record{CountryCode: "DE", Latitude: &lat, Privacy: &ipatlas.Privacy{VPN: true, Tor: &yes}},
			score.Answer{Country: "DE", Network: score.NetworkOther}},
	} {
		if got := score.FromRecord(c.rec); got != c.want {
			t.Errorf("%+v: got %+v, want %+v", c.rec, got, c.want)
		}
	}
}
