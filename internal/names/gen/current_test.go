package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedTablesCurrent runs the generator on the pinned packages and
// checks that every file it writes, Go tables and the data files they
// embed, is committed in package names as it writes it: a hand edit of a
// generated file, or a generator change whose output was not committed,
// fails here. tz_gen.go is left out: it is generated from
// the machine's own IANA database, whose version is not pinned.
//
// IPATLAS_NPM_DIR names a directory of the pinned tarballs; those missing
// are downloaded into it from the npm registry (CI keeps it in its cache).
func TestGeneratedTablesCurrent(t *testing.T) {
	npmDir := os.Getenv("IPATLAS_NPM_DIR")
	if npmDir == "" {
		t.Skip("IPATLAS_NPM_DIR is not set: set it to a directory for the pinned npm tarballs (downloaded into it when missing) to regenerate the tables")
	}
	if raceEnabled {
		t.Skip("built with -race, which slows the generator tenfold: .ci/run runs this test without it")
	}
	if err := os.MkdirAll(npmDir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := run([]string{"-out", out, "-npm-dir", npmDir}); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, e := range written {
		name := e.Name()
		if name == "tz_gen.go" {
			continue
		}
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Errorf("%s is generated but not committed: %v", name, err)
			continue
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("internal/names/%s differs from the generator's output: run go run ./internal/names/gen -out internal/names and commit the result", name)
		}
		compared++
	}
	if compared < 12 {
		t.Errorf("compared only %d generated files", compared)
	}
	t.Logf("%d generated files match the committed ones", compared)
}
