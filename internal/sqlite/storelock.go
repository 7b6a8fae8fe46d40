//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// ErrStoreLocked is the error of a second serving process on one SQLite
// store: one process holds its charge journal.
var ErrStoreLocked = errors.New("the database is in use by another ipatlas serve")

// lockStore takes the store's writer lock, held until the returned
// Closer is closed or the process exits. It is two exclusive flocks:
//
//   - one on the database file itself (by its inode), so that a second
//     serve is refused whatever name it opens the file by: a symlink, a
//     hard link, a bind mount, another mount namespace. Where flock and
//     POSIX record locks are one table (see lockFileOf) that lock would
//     block SQLite's own locks in the CLI's processes, so it is taken on
//     a file named by the database's device and inode instead, beside the
//     file's real path (which misses a hard link in another directory and
//     a bind mount of the file alone);
//   - one on NAME.lock beside the name opened, so that a file put in that
//     name's place is refused too: SQLite finds its -wal and -shm files
//     by the name, so two files under one name would share them.
//
// The Closer must be closed only after every connection to the database
// is: closing any descriptor of the file drops the POSIX locks SQLite
// holds on it in this process.
func lockStore(dbPath string) (io.Closer, error) {
	byName, err := flockPath(lockPath(dbPath), "", dbPath)
	if err != nil {
		return nil, err
	}
	byFile, err := lockFileOf(dbPath)
	if err != nil {
		byName.Close()
		return nil, err
	}
	return storeLock{byFile, byName}, nil
}

type storeLock [2]*os.File

func (l storeLock) Close() error { return errors.Join(l[0].Close(), l[1].Close()) }

func lockPath(dbPath string) string { return dbPath + ".lock" }

// lockInode locks the database file itself.
func lockInode(dbPath string) (*os.File, error) {
	return flockPath(dbPath, "its file is locked, maybe under another name", dbPath)
}

// lockInodeName locks a file named by the database's device and inode,
// in the directory the database's real path is in.
func lockInodeName(dbPath string) (*os.File, error) {
	real, err := filepath.EvalSymlinks(dbPath)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		return nil, fmt.Errorf("sqlite: lock: %w", err)
	}
	p := filepath.Join(filepath.Dir(real), fmt.Sprintf(".ipatlas-%x-%x.lock", uint64(st.Dev), uint64(st.Ino)))
	return flockPath(p, "its file is locked, maybe under another name", dbPath)
}

// flockPath opens (creating) p and takes an exclusive flock on it without
// waiting; a lock another holder has is ErrStoreLocked, said of dbPath.
func flockPath(p, why, dbPath string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if why == "" {
				why = "lock " + p
			}
			return nil, fmt.Errorf("sqlite: %s: %w (%s)", dbPath, ErrStoreLocked, why)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", p, err)
	}
	return f, nil
}
