//go:build unix

package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// otherNames are names of the database at path (in dir) that are not its
// name: spellings that clean to it, a symlink to it, one through a
// symlinked directory, and a hard link in another directory (a path to
// the same inode with no symlink in it and nothing of the name's beside
// it, as a bind mount of the file is).
func otherNames(t *testing.T, dir, path string) map[string]string {
	t.Helper()
	other := t.TempDir()
	names := map[string]string{
		"dot":         filepath.Join(dir, ".", filepath.Base(path)),
		"sub/..":      filepath.Join(dir, "sub") + "/../" + filepath.Base(path),
		"double //":   dir + "//" + filepath.Base(path),
		"symlink":     filepath.Join(other, "link.db"),
		"symlink dir": filepath.Join(other, "dirlink", filepath.Base(path)),
		"hard link":   filepath.Join(other, "hard.db"),
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		os.Symlink(path, names["symlink"]),
		os.Symlink(dir, filepath.Join(other, "dirlink")),
		os.Link(path, names["hard link"]),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// One serving process per database file, whatever name the second one
// opens it by; the lock goes with the first, and the CLI shares the file
// meanwhile.
func TestJournalOneWriterByEveryName(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock func(string) (*os.File, error)
	}{
		{"on the file", lockInode},
		{"on a file named by its inode", lockInodeName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "on the file" {
				// The other systems' way, run here as well.
				defer func(f func(string) (*os.File, error)) { lockFileOf = f }(lockFileOf)
				lockFileOf = tc.lock
			}
			ctx := t.Context()
			path, _, _ := journalFixture(t, Options{})
			names := otherNames(t, filepath.Dir(path), path)
			srv, err := Open(ctx, path, Options{Journal: true})
			if err != nil {
				t.Fatal(err)
			}
			for what, name := range names {
				second, err := Open(ctx, name, Options{Journal: true})
				if tc.name != "on the file" && what == "hard link" {
					// A hard link in another directory is what a lock
					// file beside the real path cannot see.
					if err == nil {
						second.Close()
					}
					continue
				}
				if !errors.Is(err, ErrStoreLocked) {
					if second != nil {
						second.Close()
					}
					t.Errorf("a second serve by the %s %s: %v, want ErrStoreLocked", what, name, err)
				}
			}
			cli, err := Open(ctx, names["hard link"], Options{RequireMigrated: true})
			if err != nil {
				t.Fatalf("the CLI beside the server: %v", err)
			}
			cli.Close()
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			next, err := Open(ctx, names["symlink"], Options{Journal: true})
			if err != nil {
				t.Fatalf("serving by another name once the first has closed: %v", err)
			}
			next.Close()
		})
	}
}
