// Package realdata holds the rule for the tests that read the real
// dataset (a data dir filled by `ipatlas db fetch`, named by
// IPATLAS_TEST_DATA_DIR) whole: every record of a file, or samples of
// thousands of addresses, single threaded.
//
// Such a test finds no race, and the race detector makes it ten times
// slower, so it skips under -race; .ci/run runs the packages that hold
// such tests again without -race (the step "The real dataset, whole"),
// where they run.
package realdata

import "testing"

// Whole skips t when the test binary was built with the race detector,
// saying where the test runs instead.
func Whole(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("reads the real dataset whole, single threaded: the race detector finds nothing there and slows it tenfold, so it runs without -race (.ci/run's step \"The real dataset, whole\")")
	}
}
