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
// Project's format) and makes it the default mirror of every command the
// tests run, so that no `db fetch` or scheduled update reaches the
// internet. It returns the server's Close.
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
	defaultMirrors = privacy.Mirrors{X4BNet: s.URL + "/" + privacy.UpstreamX4BNet, IPRanges: s.URL + "/" + privacy.UpstreamIPRanges, Tor: s.URL + "/tor"}
	// The binaries some tests build and run read the same mirrors from
	// their environment.
	os.Setenv("IPATLAS_X4BNET_URL", defaultMirrors.X4BNet)
	os.Setenv("IPATLAS_IPRANGES_URL", defaultMirrors.IPRanges)
	os.Setenv("IPATLAS_TOR_EXIT_URL", defaultMirrors.Tor)
	return s.Close
}
