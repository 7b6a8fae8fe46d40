package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

const regenerate = "run `npm ci` in web/, then `go generate ./internal/web`, and commit internal/web/dist"

func root(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	r, err := ModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func committedManifest(t *testing.T, r string) Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r, "internal", "web", "dist", "manifest.json"))
	if err != nil {
		t.Fatalf("%v: %s", err, regenerate)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCommittedBundleIsFresh fails when web/ or this generator changed
// after internal/web/dist was generated: the binary would serve a page
// that is not the one in the sources.
func TestCommittedBundleIsFresh(t *testing.T) {
	r := root(t)
	m := committedManifest(t, r)
	got, err := InputsHash(r)
	if err != nil {
		t.Fatal(err)
	}
	if got != m.Inputs {
		t.Fatalf("internal/web/dist was built from other sources than web/ and internal/web/build hold now (inputs %s, dist says %s): %s", got, m.Inputs, regenerate)
	}
}

// TestBundleReproducesCommittedDist rebuilds the page and compares every
// file with the committed ones, which catches a dist/ edited by hand or
// built from other npm packages than the lock file names.
func TestBundleReproducesCommittedDist(t *testing.T) {
	r := root(t)
	if _, err := os.Stat(filepath.Join(r, "web", "node_modules")); err != nil {
		t.Skip("web/node_modules is missing, so the bundle cannot be rebuilt and compared; run `npm ci` in web/ (CI does) to run this test")
	}
	out := t.TempDir()
	if _, err := Bundle(r, out); err != nil {
		t.Fatal(err)
	}
	want := readTree(t, filepath.Join(r, "internal", "web", "dist"))
	got := readTree(t, out)
	for name, b := range got {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("the generator writes %s, which is not committed: %s", name, regenerate)
		case !bytes.Equal(b, w):
			t.Errorf("%s differs from the committed file: %s", name, regenerate)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s is committed but the generator no longer writes it: %s", name, regenerate)
		}
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestInputsHashSeesEveryChange checks the staleness detector itself on a
// copy of the inputs: editing, adding or renaming a source or a generator
// file changes the hash; node_modules and the generator's tests do not.
func TestInputsHashSeesEveryChange(t *testing.T) {
	r := root(t)
	tmp := t.TempDir()
	copyTree(t, filepath.Join(r, "web"), filepath.Join(tmp, "web"))
	copyTree(t, filepath.Join(r, "internal", "web", "build"), filepath.Join(tmp, "internal", "web", "build"))
	base, err := InputsHash(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if real, _ := InputsHash(r); real != base {
		t.Fatal("the copy hashes differently from the tree it copies")
	}

	change := func(name string, f func()) {
		t.Helper()
		f()
		h, err := InputsHash(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if h == base {
			t.Errorf("%s: hash unchanged", name)
		}
		base = h
	}
	same := func(name string, f func()) {
		t.Helper()
		f()
		h, err := InputsHash(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if h != base {
			t.Errorf("%s: hash changed", name)
		}
	}
	write := func(rel, s string) {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	appendTo := func(rel, s string) {
		p := filepath.Join(tmp, filepath.FromSlash(rel))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		write(rel, string(b)+s)
	}
	change("edit a script", func() { appendTo("web/src/main.js", "\n// x\n") })
	change("edit the style", func() { appendTo("web/src/style.css", "\n/* x */\n") })
	change("edit the page", func() { appendTo("web/index.html", "\n") })
	change("edit the lock file", func() { appendTo("web/package-lock.json", " ") })
	change("add a source", func() { write("web/src/extra.js", "export const x = 1;\n") })
	change("rename a source", func() {
		os.Rename(filepath.Join(tmp, "web/src/extra.js"), filepath.Join(tmp, "web/src/extra2.js"))
	})
	change("edit the generator", func() { appendTo("internal/web/build/main.go", "\n// x\n") })
	same("install packages", func() { write("web/node_modules/d3-geo/index.js", "x") })
	same("edit the generator's tests", func() { appendTo("internal/web/build/main_test.go", "\n// x\n") })
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPackageOf(t *testing.T) {
	for in, want := range map[string]string{
		"node_modules/d3-geo/src/path/index.js":        "d3-geo",
		"node_modules/@scope/pkg/index.js":             "@scope/pkg",
		"node_modules/a/node_modules/b/x.js":           "b",
		"src/main.js":                                  "",
		"node_modules/world-atlas/countries-110m.json": "world-atlas",
	} {
		got, ok := packageOf(in)
		if got != want || ok != (want != "") {
			t.Errorf("packageOf(%q) = %q, %v", in, got, ok)
		}
	}
}
