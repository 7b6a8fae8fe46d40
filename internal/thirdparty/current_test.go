package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// THIRD_PARTY.md names every module the binary links, with a licence the
// project may ship; a new or updated dependency changes it.
func TestThirdPartyCurrent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: it lists the binary's modules")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	out := filepath.Join(t.TempDir(), "THIRD_PARTY.md")
	var log bytes.Buffer
	if err := run([]string{"-out", out}, &log); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("THIRD_PARTY.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Errorf("THIRD_PARTY.md differs from the generator's output: run go run ./internal/thirdparty and commit the result")
	}
	if !bytes.Contains(committed, []byte("| github.com/oschwald/maxminddb-golang/v2 |")) || !bytes.Contains(committed, []byte("| modernc.org/sqlite |")) {
		t.Errorf("THIRD_PARTY.md lacks the binary's MMDB reader or SQLite driver:\n%s", committed)
	}
}

// A licence the project may not ship is refused, with the module named.
func TestThirdPartyRefuses(t *testing.T) {
	dir := t.TempDir()
	gpl := "                    GNU GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007\n\n Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>\n Everyone is permitted to copy and distribute verbatim copies\n of this license document, but changing it is not allowed.\n"
	if err := os.WriteFile(filepath.Join(dir, "LICENSE"), []byte(gpl), 0o644); err != nil {
		t.Fatal(err)
	}
	m := module{Path: "example.com/copyleft", Dir: dir}
	if err := classify(&m); err == nil {
		t.Errorf("a GPL module was accepted as %q", m.Licence)
	}
	empty := t.TempDir()
	m = module{Path: "example.com/none", Dir: empty}
	if err := classify(&m); err == nil {
		t.Error("a module without a licence file was accepted")
	}
}
