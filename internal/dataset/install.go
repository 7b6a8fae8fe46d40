package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tmpPrefix starts the name of every file a fetch writes before it is
// verified. The names never end in .mmdb, so nothing that scans the data
// directory for databases picks up a half-written one, and a later fetch
// can recognize and delete what a killed one left behind.
const tmpPrefix = ".ipatlas-tmp-"

// lockName is the file a fetch holds an exclusive lock on, so that two
// fetches into one directory never delete each other's temporary files.
const lockName = ".ipatlas-fetch.lock"

// stagedFile is a verified file under its temporary name, ready to be
// renamed into place.
type stagedFile struct {
	tmp  string // full path
	name string // final base name
	size int64
	sum  string // sha256, hex
}

// tempFile is a file being written under a temporary name, hashed on the
// way. Abort removes it; Finish syncs and closes it.
type tempFile struct {
	f    *os.File
	h    hash.Hash
	name string
	size int64
}

func createTemp(dir, name string) (*tempFile, error) {
	f, err := os.CreateTemp(dir, tmpPrefix+name+"-*")
	if err != nil {
		return nil, err
	}
	// CreateTemp makes files private; the installed data is read by the
	// server, which may run as another user.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &tempFile{f: f, h: sha256.New(), name: name}, nil
}

func (t *tempFile) Write(p []byte) (int, error) {
	n, err := t.f.Write(p)
	t.h.Write(p[:n])
	t.size += int64(n)
	return n, err
}

// finish makes the contents durable and closes the file.
func (t *tempFile) finish() (stagedFile, error) {
	if err := t.f.Sync(); err != nil {
		t.abort()
		return stagedFile{}, err
	}
	if err := t.f.Close(); err != nil {
		os.Remove(t.f.Name())
		return stagedFile{}, err
	}
	return stagedFile{tmp: t.f.Name(), name: t.name, size: t.size, sum: hex.EncodeToString(t.h.Sum(nil))}, nil
}

func (t *tempFile) abort() {
	t.f.Close()
	os.Remove(t.f.Name())
}

// removeStaged deletes staged files that will not be installed.
func removeStaged(files []stagedFile) {
	for _, s := range files {
		os.Remove(s.tmp)
	}
}

// install renames verified files into place and makes the renames durable.
// Each rename is atomic: a reader opening a name sees either the old file or
// the new one, and a reader that already has the old one open keeps it.
func install(dir string, files []stagedFile) error {
	for i, s := range files {
		if err := os.Rename(s.tmp, filepath.Join(dir, s.name)); err != nil {
			removeStaged(files[i:])
			return fmt.Errorf("installing %s: %w", s.name, err)
		}
	}
	return syncDir(dir)
}

// writeFileAtomic replaces dir/name with data.
func writeFileAtomic(dir, name string, data []byte) error {
	t, err := createTemp(dir, name)
	if err != nil {
		return err
	}
	if _, err := t.Write(data); err != nil {
		t.abort()
		return err
	}
	s, err := t.finish()
	if err != nil {
		return err
	}
	return install(dir, []stagedFile{s})
}

// cleanStale removes the temporary files of fetches that were killed before
// they could clean up. The caller holds the directory lock, so none of them
// belongs to a running fetch.
func cleanStale(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// filesPresent reports whether every file of an installed package is in dir
// with the size the manifest recorded. Sizes rather than hashes: this runs
// on every fetch, and a file replaced behind the manifest's back almost
// never keeps its size.
func filesPresent(dir string, p Package) bool {
	if len(p.Files) == 0 {
		return false
	}
	for _, f := range p.Files {
		st, err := os.Stat(filepath.Join(dir, f.Name))
		if err != nil || !st.Mode().IsRegular() || st.Size() != f.Size {
			return false
		}
	}
	return true
}

// isNotExist reports a missing file or directory.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
