package accuracy_test

import (
	"bytes"
	"fmt"
	"go/format"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/accuracy"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/ipatlas/ipatlas/internal/score"
)

// accuracyTruth is the shared half of the RIPE Atlas ground truth, beside
// the repository (CI lays it there).
const accuracyTruth = "../../../shared/data/truth/atlas-2023.csv"

// accuracyShare is the share of truths a stated radius is to hold.
const accuracyShare = 0.85

// minClassTruths is the fewest truths a class of the model is fitted on.
const minClassTruths = 100

// accuracySample is the error of one located dataset answer that names a
// city, with its class (continent group) and its row in the truth file.
type accuracySample struct {
	row   int
	group int
	errKm float64
}

// accuracySamples looks every truth up on the real dataset and keeps the
// answers CityRadius is fitted on.
func accuracySamples(t *testing.T) []accuracySample {
	t.Helper()
	dir := os.Getenv("IPATLAS_TEST_DATA_DIR")
	if dir == "" {
		t.Skip("IPATLAS_TEST_DATA_DIR is not set: the model is fitted on the real dataset")
	}
	realdata.Whole(t)
	f, err := os.Open(accuracyTruth)
	if err != nil {
		t.Fatalf("the truth beside the repository (../shared/data/truth, laid by CI): %v", err)
	}
	defer f.Close()
	truths, err := score.ReadTruth(f)
	if err != nil {
		t.Fatal(err)
	}
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var out []accuracySample
	for i, tr := range truths {
		r, err := e.Lookup(tr.Addr, ipatlas.English)
		if err != nil {
			t.Fatal(err)
		}
		if r.Latitude == nil || r.LocationSource != geo.SourceDataset || r.City == "" {
			continue
		}
		out = append(out, accuracySample{row: i, group: accuracy.Group(r.ContinentCode),
			errKm: score.DistanceKm(*r.Latitude, *r.Longitude, tr.Lat, tr.Lon)})
	}
	return out
}

// fitCityRadius is the radius of each group: the smallest whole km that
// holds accuracyShare of its samples' errors, and how many it is fitted
// on. A group of fewer than minClassTruths is an error: its radius would
// say more than the truth does.
func fitCityRadius(samples []accuracySample) (radius, n [accuracy.Groups]int, err error) {
	var errs [accuracy.Groups][]float64
	for _, s := range samples {
		errs[s.group] = append(errs[s.group], s.errKm)
	}
	for g, es := range errs {
		n[g] = len(es)
		if len(es) < minClassTruths {
			return radius, n, fmt.Errorf("group %s: %d truths, fewer than %d", accuracy.GroupNames[g], len(es), minClassTruths)
		}
		slices.Sort(es)
		k := int(math.Ceil(accuracyShare*float64(len(es)))) - 1
		radius[g] = int(math.Ceil(es[k]))
	}
	return radius, n, nil
}

// inside is the share of samples whose error is within the radius of
// their group.
func inside(samples []accuracySample, radius [accuracy.Groups]int) float64 {
	in := 0
	for _, s := range samples {
		if s.errKm <= float64(radius[s.group]) {
			in++
		}
	}
	return float64(in) / float64(len(samples))
}

// TestRealTable derives CityRadius from the ground truth and the real
// dataset and fails when the committed table (table.go)
// differs: a new dataset or truth file changes the radii, and the table
// is then rewritten by
//
//	IPATLAS_WRITE_ACCURACY=1 go test -run TestRealTable ./internal/accuracy/
//
// It also fits the table on each half of the truth's rows (odd, even) and
// measures it on the other, as the model is measured on truth it has not
// seen.
func TestRealTable(t *testing.T) {
	samples := accuracySamples(t)
	radius, n, err := fitCityRadius(samples)
	if err != nil {
		t.Fatal(err)
	}
	for g := range accuracy.Groups {
		t.Logf("%s: %d km, %d truths", accuracy.GroupNames[g], radius[g], n[g])
	}
	for _, half := range []int{1, 0} {
		var fit, held []accuracySample
		for _, s := range samples {
			if s.row%2 == half {
				fit = append(fit, s)
			} else {
				held = append(held, s)
			}
		}
		r, _, err := fitCityRadius(fit)
		if err != nil {
			t.Fatal(err)
		}
		share := inside(held, r)
		t.Logf("fitted on the %s rows %v: %.1f%% of the other rows' truths inside", map[int]string{1: "odd", 0: "even"}[half], r, 100*share)
		if share < 0.8 || share > 0.9 {
			t.Errorf("fitted on one half, the other half's truths are inside for %.1f%%, want 80-90%%", 100*share)
		}
	}
	src := accuracyTableSource(radius, n)
	if os.Getenv("IPATLAS_WRITE_ACCURACY") == "1" {
		if err := os.WriteFile("table.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile("table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, src) {
		t.Errorf("table.go is stale: the truth and the dataset give %v (on %v truths), the table says %v; rewrite it with IPATLAS_WRITE_ACCURACY=1 go test -run TestRealTable ./internal/accuracy/",
			radius, n, accuracy.CityRadius)
	}
}

// accuracyTableSource is table.go for radii fitted on n truths.
func accuracyTableSource(radius, n [accuracy.Groups]int) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by IPATLAS_WRITE_ACCURACY=1 go test -run TestRealTable ./internal/accuracy/; DO NOT EDIT.\n\npackage accuracy\n\n")
	fmt.Fprintf(&b, "// CityRadius is the radius, in km, of a dataset answer that names a city,\n")
	fmt.Fprintf(&b, "// by continent group: the smallest that holds %.0f%% of the errors of such\n", 100*accuracyShare)
	fmt.Fprintf(&b, "// answers on the ground truth (RIPE Atlas, atlas-2023.csv).\n")
	b.WriteString("var CityRadius = [Groups]int{\n")
	for g, name := range []string{"GroupEurope", "GroupNorthAmerica", "GroupAsia", "GroupOther"} {
		fmt.Fprintf(&b, "\t%s: %d, // %d truths\n", name, radius[g], n[g])
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		panic(err)
	}
	return src
}
