package postal

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

// rows are codes in GeoNames' exact format: twelve tab-separated columns.
const rows = "US\t94035\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.3861\t-122.0839\t4\n" +
	"US\t94040\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.3855\t-122.088\t4\n" +
	"US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4056\t-122.0775\t4\n" +
	"US\t72560\tMountain View\tArkansas\tAR\tStone\t137\t\t\t35.8208\t-92.0389\t4\n" +
	"US\t95014\tCupertino\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.318\t-122.0449\t4\n" +
	"FR\t75001\tParis 01\tÎle-de-France\t11\tParis\t75\tParis\t751\t48.8592\t2.3417\t5\n" +
	"FR\t75021 CEDEX 01\tParis 01\tÎle-de-France\t11\tParis\t75\tParis\t751\t48.8592\t2.3417\t5\n" +
	"FR\t75007\tParis 07\tÎle-de-France\t11\tParis\t75\tParis\t751\t48.8565\t2.3119\t5\n" +
	"CN\t250000\tJinan\tShandong\t25\tJinan Shi\t3701\t\t\t36.6683\t116.9972\t\n" +
	"CN\t250200\tZhangqiu\tShandong\t25\tJinan Shi\t3701\tZhangqiu Shi\t3701\t36.7167\t117.5\t\n" +
	"CN\t231100\tChangfeng County\tAnhui\t01\tHefei Shi\t3401\tChangfeng Xian\t3401\t31.0391\t116.9737\t\n" +
	"CA\tT0C\tCentral Alberta (Stettler)\tAlberta\tAB\t\t\t\t\t52.1431\t-111.6941\t\n" +
	"CA\tT0A\tEastern Alberta (St. Paul)\tAlberta\tAB\t\t\t\t\t54.766\t-111.7174\t\n" +
	"GI\tGX11 1AA\tGibraltar\t\t\t\t\t\t\t36.1333\t-5.35\t\n" +
	"HK\t999077\tHong Kong Special Administrative Region\t\t\t\t\t\t\t22.25\t114.1667\t\n"

func testIndex(t *testing.T) *Index {
	t.Helper()
	ix, err := Load(strings.NewReader(rows), int64(len(rows)))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

var nan = math.NaN()

func TestLookup(t *testing.T) {
	ix := testIndex(t)
	for _, c := range []struct {
		name           string
		cc, sub, place string
		lat, lon       float64
		want           string
		byName         bool
	}{
		{"by name, nearest of three", "US", "California", "Mountain View", 37.422, -122.085, "94043", true},
		{"the code of the subdivision asked for", "US", "CA", "Mountain View", 37.3855, -122.088, "94040", true},
		{"a homonym elsewhere is another place", "US", "Arkansas", "Mountain View", 35.82, -92.04, "72560", true},
		{"the same name too far is another place, and nothing is near", "US", "", "Mountain View", 40.0, -100.0, "", false},
		{"the subdivision rules out a homonym", "US", "US-AR", "Mountain View", nan, nan, "72560", true},
		{"no coordinates: the code nearest the middle of the place's", "US", "California", "Mountain View", nan, nan, "94035", true},
		{"no code of that name: the nearest within reach", "US", "California", "Monta Vista", 37.32, -122.03, "95014", false},
		{"nothing within reach", "US", "California", "Palo Alto", 37.47, -122.2, "", false},
		{"a trailing number is the same place", "FR", "Ile-de-France", "Paris", 48.857, 2.31, "75007", true},
		{"CEDEX codes are no place's", "FR", "", "Paris", 48.8592, 2.3417, "75001", true},
		{"a kind word is the same place", "CN", "Anhui", "Changfeng", nan, nan, "231100", true},
		{"a county before its city", "CN", "Shandong", "Zhangqiu", 36.7, 117.5, "250200", true},
		{"a bracketed name", "CA", "Alberta", "Stettler", 52.2, -111.8, "T0C", true},
		{"a territory of one code", "GI", "", "Anywhere", nan, nan, "GX11 1AA", false},
		{"Hong Kong has no postal codes", "HK", "", "Hong Kong", 22.25, 114.1667, "", false},
		{"a country without codes", "DE", "Bavaria", "Nuremberg", 49.45, 11.08, "", false},
		{"lower case country", "us", "california", "mountain view", 37.422, -122.085, "94043", true},
	} {
		m, ok := ix.Lookup(Place{Country: c.cc, Subdivision: c.sub, Names: []string{c.place}, Lat: c.lat, Lon: c.lon})
		if m.Code != c.want || ok != (c.want != "") || ok && m.ByName != c.byName {
			t.Errorf("%s: Lookup(%s, %q, %q, %v, %v) = %+v, %v; want %q (by name %v)", c.name, c.cc, c.sub, c.place, c.lat, c.lon, m, ok, c.want, c.byName)
		}
		if got := ix.Code(c.cc, c.sub, c.place, c.lat, c.lon); got != c.want {
			t.Errorf("%s: Code = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestLookupMaxKmAndOrder(t *testing.T) {
	ix := testIndex(t)
	// Jinan's one point is 60 km off: NameRadius rules it out, a caller
	// whose names were resolved from the coordinates may allow more.
	p := Place{Country: "CN", Subdivision: "Shandong", Names: []string{"Lixia", "Jinan"}, Lat: 36.2, Lon: 117.1}
	if m, ok := ix.Lookup(p); ok {
		t.Errorf("60 km off within NameRadius: %+v", m)
	}
	p.MaxKm = 150
	if m, ok := ix.Lookup(p); !ok || m.Code != "250000" || !m.ByName || m.Km < 50 || m.Km > 60 {
		t.Errorf("with MaxKm 150: %+v, %v", m, ok)
	}
	if m := ix.Code("XX", "", "Jinan", 36.6, 117); m != "" {
		t.Errorf("unknown country: %q", m)
	}
	if m := ix.Code("CHN", "", "Jinan", 36.6, 117); m != "" {
		t.Errorf("three-letter country: %q", m)
	}
}

func TestIndexDescribesItself(t *testing.T) {
	ix := testIndex(t)
	if got := strings.Join(ix.Countries(), " "); got != "CA CN FR GI US" {
		t.Errorf("Countries() = %q", got)
	}
	if ix.Len() != 13 || !ix.Has("us") || ix.Has("HK") {
		t.Errorf("Len %d, Has(us) %v, Has(HK) %v", ix.Len(), ix.Has("us"), ix.Has("HK"))
	}
	again := testIndex(t)
	if ix.ID == 0 || ix.ID != again.ID {
		t.Errorf("ID %x, again %x", ix.ID, again.ID)
	}
	var nilIx *Index
	if nilIx.Code("US", "", "Mountain View", 37.4, -122) != "" || nilIx.Len() != 0 {
		t.Error("a nil Index answers")
	}
}

// Every form GeoNames or a copy keeps the file in reads the same.
func TestOpenForms(t *testing.T) {
	var zipped, gzipped, xzed bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, _ := zw.Create("readme.txt")
	w.Write([]byte("readme\n"))
	w, _ = zw.Create("allCountries.txt")
	w.Write([]byte(rows))
	zw.Close()
	gw := gzip.NewWriter(&gzipped)
	gw.Write([]byte(rows))
	gw.Close()
	xw, _ := xz.NewWriter(&xzed)
	xw.Write([]byte(rows))
	xw.Close()
	for name, b := range map[string][]byte{"zip": zipped.Bytes(), "gzip": gzipped.Bytes(), "xz": xzed.Bytes(), "text": []byte(rows)} {
		ix, err := Load(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if ix.Len() != 13 || ix.Code("US", "CA", "Mountain View", 37.422, -122.085) != "94043" {
			t.Errorf("%s: %d codes", name, ix.Len())
		}
	}
	var other bytes.Buffer
	zw = zip.NewWriter(&other)
	w, _ = zw.Create("DE.txt")
	w.Write([]byte(rows))
	zw.Close()
	if _, err := Load(bytes.NewReader(other.Bytes()), int64(other.Len())); !errors.Is(err, ErrFormat) {
		t.Errorf("a zip without allCountries.txt: %v", err)
	}
}

func TestReadIsStrict(t *testing.T) {
	good := "US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4056\t-122.0775\t4"
	if _, err := ParseLine(good); err != nil {
		t.Fatalf("good line: %v", err)
	}
	for name, line := range map[string]string{
		"11 columns":     "US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4056\t-122.0775",
		"13 columns":     good + "\tx",
		"no country":     "\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4056\t-122.0775\t4",
		"lower country":  "us\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4056\t-122.0775\t4",
		"no code":        "US\t\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4056\t-122.0775\t4",
		"latitude 91":    "US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t91\t-122.0775\t4",
		"longitude text": "US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4\tWest\t4",
		"NaN":            "US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\tNaN\t-122.0775\t4",
		"accuracy":       "US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4\t-122.0775\thigh",
		"not UTF-8":      "US\t94043\tMountain \xffView\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4\t-122.0775\t4",
		"control":        "US\t94043\tMountain\x00View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4\t-122.0775\t4",
		"html":           "<html><body>Service Unavailable</body></html>",
	} {
		if _, err := ParseLine(line); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
	if err := Read(strings.NewReader("\n\n"), func(*Row) error { return nil }); !errors.Is(err, ErrFormat) {
		t.Errorf("no rows: %v", err)
	}
	err := Read(strings.NewReader(good+"\n"+"US\t1\n"), func(*Row) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad second line: %v, want it named", err)
	}
	if err := Read(strings.NewReader(strings.Repeat("x", maxLine+10)), func(*Row) error { return nil }); !errors.Is(err, ErrFormat) {
		t.Errorf("a line too long: %v", err)
	}
}

// FuzzParseLine: any line is a row or ErrFormat, never a panic, and a row
// is within the format's bounds.
func FuzzParseLine(f *testing.F) {
	for _, l := range strings.Split(rows, "\n") {
		f.Add(l)
	}
	f.Add("US\t1\t\t\t\t\t\t\t\t0\t0\t")
	f.Fuzz(func(t *testing.T, line string) {
		r, err := ParseLine(line)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v is not ErrFormat", err)
			}
			return
		}
		if len(r.Country) != 2 || r.Code == "" || math.Abs(r.Lat) > 90 || math.Abs(r.Lon) > 180 {
			t.Fatalf("row out of bounds: %+v", r)
		}
		b := NewBuilder()
		b.Add(&r)
		ix := b.Index()
		ix.Code(r.Country, r.Admin1, r.Place, r.Lat, r.Lon)
	})
}
