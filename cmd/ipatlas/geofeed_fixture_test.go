package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipatlas/ipatlas/internal/geofeed"
)

// serveGeofeedFixture serves the fixtures of internal/geofeed/testdata,
// each in its publisher's layout, at the URLs of the built-in list, so that
// no server a test starts fetches a feed from the internet; the binaries
// some tests build and run are told to use no feed. It returns the
// server's Close.
func serveGeofeedFixture() func() {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		b, err := os.ReadFile(filepath.Join("..", "..", "internal", "geofeed", "testdata", filepath.Base(name)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	for i := range geofeed.Builtin {
		geofeed.Builtin[i].URL = s.URL + "/" + geofeed.Builtin[i].Name + ".csv"
	}
	os.Setenv("IPATLAS_GEOFEED", geofeed.None)
	return s.Close
}
