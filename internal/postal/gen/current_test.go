package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSnapshotCurrent runs the generator on the pinned input and checks
// that the committed snapshot is what it writes: a hand edit of the
// snapshot, or a generator change whose output was not committed, fails
// here. The input is the project's shared copy of GeoNames' postal codes
// beside the repository.
func TestSnapshotCurrent(t *testing.T) {
	in := filepath.Join(defaultSharedDir(), inputFile)
	if _, err := os.Stat(in); err != nil {
		t.Skipf("%s is not there (the shared data beside the repository): nothing to regenerate the snapshot from", in)
	}
	if raceEnabled {
		t.Skip("built with -race, which slows the generator tenfold: .ci/run runs this test without it")
	}
	out := t.TempDir()
	if err := run([]string{"-out", out, "-in", in}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, snapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join("..", "snapshot", snapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Errorf("internal/postal/snapshot/%s differs from the generator's output: run go run ./internal/postal/gen -out internal/postal/snapshot and commit the result", snapshotFile)
	}
	if len(committed) > budget {
		t.Errorf("the snapshot is %d bytes, over its budget of %d", len(committed), budget)
	}
	t.Logf("the snapshot (%d bytes) matches the generator's output", len(committed))
}
