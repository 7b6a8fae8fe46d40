package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/ipatlas/ipatlas/internal/privacy"
)

// servePrivacyFixture serves every privacy list as its upstream lays it
// out (the built-in snapshot's copies, and a Tor exit list in the Tor
// Project's format) and names it in the process environment as the
// mirror of every list (IPATLAS_X4BNET_URL, ...): the binaries some tests
// build and run read it there, and the in-process commands through the
// tests' getenv (fixtureEnv), so that no `db fetch` or scheduled update
// reaches the internet. It returns the server's Close.
func servePrivacyFixture() func() {
	files := map[string][]byte{}
	for _, l := range privacy.Lists {
		if b, ok, err := privacy.Snapshot(l.Name); err == nil && ok {
			files["/"+l.Upstream+"/"+l.Path] = b
		}
	}
	var tor strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&tor, "185.220.%d.%d\n", 100+i/256, i%256)
	}
	files["/tor"] = []byte(tor.String())
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	os.Setenv("IPATLAS_X4BNET_URL", s.URL+"/"+privacy.UpstreamX4BNet)
	os.Setenv("IPATLAS_IPRANGES_URL", s.URL+"/"+privacy.UpstreamIPRanges)
	os.Setenv("IPATLAS_TOR_EXIT_URL", s.URL+"/tor")
	return s.Close
}

// fixtureEnv is the value of k in the process environment when k names
// one of the local servers TestMain starts in place of an upstream (the
// privacy lists' mirrors, GeoNames' postal codes); the tests' getenv
// functions fall back to it, so that a command a test runs in-process
// fetches from them as the built binaries do.
func fixtureEnv(k string) (string, bool) {
	switch k {
	case "IPATLAS_X4BNET_URL", "IPATLAS_IPRANGES_URL", "IPATLAS_TOR_EXIT_URL", "IPATLAS_POSTAL_URL":
		return os.Getenv(k), true
	}
	return "", false
}
