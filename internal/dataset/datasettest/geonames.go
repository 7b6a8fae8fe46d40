package datasettest

import (
	"archive/zip"
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// GeoNamesPath is where GeoNames publishes all countries' postal codes,
// relative to its download server.
const GeoNamesPath = "/export/zip/allCountries.zip"

// GeoNamesRows are postal codes in GeoNames' exact format (twelve
// tab-separated columns, accuracy last) for the places of CityIPv4 and
// CityIPv6: Mountain View has several codes, the nearest of which to the
// fixture's coordinates is 94043; Nanjing and Hangzhou one each; Sydney's
// codes are under another name (the nearest within reach serves).
const GeoNamesRows = "US\t94035\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4178\t-122.0449\t4\n" +
	"US\t94040\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.3855\t-122.088\t4\n" +
	"US\t94043\tMountain View\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.4056\t-122.0775\t4\n" +
	"US\t95014\tCupertino\tCalifornia\tCA\tSanta Clara\t085\t\t\t37.318\t-122.0449\t4\n" +
	"CN\t210000\tNanjing\tJiangsu\t04\tNanjing Shi\t3201\t\t\t32.0617\t118.7778\t\n" +
	"CN\t310000\tHangzhou\tZhejiang\t02\tHangzhou Shi\t3301\t\t\t30.2936\t120.1614\t\n" +
	"AU\t2000\tThe Rocks\tNew South Wales\tNSW\tSydney\t\t\t\t-33.8617\t151.2064\t4\n" +
	"AU\t2026\tBondi\tNew South Wales\tNSW\tWaverley\t\t\t\t-33.8936\t151.2625\t4\n"

// GeoNamesZip is rows as GeoNames publishes them: a zip holding
// allCountries.txt and a readme.
func GeoNamesZip(rows string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"readme.txt", "GeoNames postal codes, CC BY 4.0 (datasettest fixture)\n"},
		{"allCountries.txt", rows},
	} {
		w, err := zw.Create(f.name)
		if err == nil {
			_, err = w.Write([]byte(f.body))
		}
		if err != nil {
			panic(err) // a zip in memory cannot fail
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// GeoNames is an httptest server laid out like download.geonames.org: the
// postal codes of all countries at GeoNamesPath, 404 until published. URL
// is the download's own URL, as FetchOptions.PostalURL takes it.
type GeoNames struct {
	URL string
	fs  *fileServer
}

// NewGeoNames starts a GeoNames download server publishing GeoNamesRows;
// it stops when the test ends.
func NewGeoNames(t testing.TB) *GeoNames {
	t.Helper()
	g, stop := StartGeoNames()
	t.Cleanup(stop)
	return g
}

// StartGeoNames is NewGeoNames for a TestMain: stop stops the server.
func StartGeoNames() (g *GeoNames, stop func()) {
	g = &GeoNames{fs: &fileServer{files: map[string][]byte{}, drop: map[string]int64{}, gets: map[string]int{}}}
	g.fs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.fs.serveFile(w, r.URL.Path, "application/zip")
	}))
	g.URL = g.fs.srv.URL + GeoNamesPath
	g.Publish(GeoNamesZip(GeoNamesRows))
	return g, g.fs.srv.Close
}

// Publish replaces the zip served.
func (g *GeoNames) Publish(body []byte) {
	g.fs.mu.Lock()
	defer g.fs.mu.Unlock()
	g.fs.files[GeoNamesPath] = body
	delete(g.fs.drop, GeoNamesPath)
}

// Unpublish makes the download answer 404.
func (g *GeoNames) Unpublish() {
	g.fs.mu.Lock()
	defer g.fs.mu.Unlock()
	delete(g.fs.files, GeoNamesPath)
}

// Drop cuts the download after n bytes, until the next Publish.
func (g *GeoNames) Drop(n int64) {
	g.fs.mu.Lock()
	defer g.fs.mu.Unlock()
	g.fs.drop[GeoNamesPath] = n
}

// Downloads is how many times the zip was asked for.
func (g *GeoNames) Downloads() int {
	g.fs.mu.Lock()
	defer g.fs.mu.Unlock()
	return g.fs.gets[GeoNamesPath]
}
