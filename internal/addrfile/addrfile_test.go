package addrfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "addrs.json")
	if _, err := Read(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("before writing: %v, want fs.ErrNotExist", err)
	}
	want := Addrs{Public: "127.0.0.1:41234", Admin: "[::1]:41235"}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"public":"127.0.0.1:41234","admin":"[::1]:41235"}`+"\n" {
		t.Errorf("file holds %q", got)
	}
	if got, err := Read(path); err != nil || got != want {
		t.Errorf("Read = %+v, %v; want %+v", got, err, want)
	}
	// A second write replaces the first; no temporary file stays.
	want = Addrs{Public: "127.0.0.1:5000"}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(path); err != nil || got != want {
		t.Errorf("after rewrite: Read = %+v, %v; want %+v", got, err, want)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %v, want only addrs.json", entries)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "a.json"), Addrs{Admin: "127.0.0.1:1"}); err == nil {
		t.Error("Write without a public address: no error")
	}
	if err := Write(filepath.Join(dir, "missing", "a.json"), Addrs{Public: "127.0.0.1:1"}); err == nil {
		t.Error("Write into a missing directory: no error")
	}
	for name, content := range map[string]string{"garbage": "listening on 127.0.0.1:1", "empty": "{}"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if a, err := Read(path); err == nil {
			t.Errorf("Read of %s = %+v, want an error", name, a)
		}
	}
}
