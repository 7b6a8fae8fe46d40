//go:build unix

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// Building the corrections does not delay serving: with an overrides file
// whose reading does not end (a named pipe nobody writes yet), the server
// listens and answers from the dataset; the overrides apply once they can
// be read.
func TestServeAnswersBeforeOverrides(t *testing.T) {
	fx := newServeFixture(t)
	file := filepath.Join(t.TempDir(), "overrides.csv")
	if err := syscall.Mkfifo(file, 0o644); err != nil {
		t.Fatal(err)
	}
	written := false
	write := func(body string) {
		t.Helper()
		if written {
			return
		}
		written = true
		// Opening for writing waits for the reader, which the server is.
		f, err := os.OpenFile(file, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(body); err != nil {
			t.Fatal(err)
		}
	}
	// The server's reader ends before the server does.
	t.Cleanup(func() { write("") })
	s := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "ipatlas.db"), "--overrides", file, "--geofeed", "none",
		"--trusted-proxy", "127.0.0.1", "--me-rate", "0")...)
	c := &http.Client{Timeout: 10 * time.Second}
	rec, err := meRecord(c, "http://"+s.public, geotest.MountainView.IP)
	if err != nil || rec.LocationSource != "dataset" || rec.City != "Mountain View" {
		t.Fatalf("before the overrides can be read: %+v %v\n%s", rec, err, s.stderr)
	}
	write("8.8.8.0/24,DE,DE-BY,Nuremberg,\n")
	waitUntil(t, "the overrides in service once written", func() bool {
		rec, err = meRecord(c, "http://"+s.public, geotest.MountainView.IP)
		return err == nil && rec.LocationSource == "override" && rec.City == "Nuremberg"
	})
}
