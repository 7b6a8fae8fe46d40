package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	sqlite3 "modernc.org/sqlite"
)

// BackupInfo describes a backup Backup wrote.
type BackupInfo struct {
	Path          string // the backup file, absolute
	Bytes         int64
	SchemaVersion int64
	// JournalCharges is how many records of the charge journal, answered
	// but not yet in the tables, were applied to the copy; AppliedSeq is
	// the last record the copy holds (0: none ever).
	JournalCharges int
	AppliedSeq     uint64
	Attempts       int
}

// backupAttempts bounds the tries of Backup; a try is repeated only when
// the server applied its journal within the few milliseconds between the
// snapshot and the reading of the journal.
const backupAttempts = 20

// backupHook, when set by a test, runs between the reading of the journal
// and the check that the snapshot still matches it.
var backupHook func(attempt int)

// Backup writes a consistent copy of the store at dbPath to dest, a new
// file, while the store is in use, serving or not: the tables as one
// snapshot, plus the charges of the charge journal that a serving process
// has answered and not yet applied to them. Every charge answered before
// Backup started is in the copy, each once; charges answered while it runs
// may be.
//
// How: a read transaction on the database fixes a snapshot, whose
// charge_journal.applied_seq says which journal records it holds. The
// journal file is read next, and its records after that number are the
// ones the snapshot lacks. A record leaves the journal only after its
// application to the tables has committed, so if applied_seq, read again
// from the live database, has not moved, nothing the snapshot lacks was
// dropped from the journal before it was read; if it moved, Backup tries
// again. The snapshot is then copied with SQLite's online backup API inside
// the same read transaction (writers go on meanwhile: WAL), and the
// records are applied to the copy as the server applies them to the
// tables. The copy is checked, made a single file (no -wal) and renamed to
// dest; dest is never overwritten.
func Backup(ctx context.Context, dbPath, dest string) (BackupInfo, error) {
	if dbPath == "" || dest == "" {
		return BackupInfo{}, errors.New("sqlite: backup: empty path")
	}
	var err error
	if dbPath, err = filepath.Abs(dbPath); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	if dest, err = filepath.Abs(dest); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	if st, err := os.Stat(dbPath); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	} else if !st.Mode().IsRegular() {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %s is not a database file", dbPath)
	}
	if _, err := os.Lstat(dest); err == nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %s exists; name a new file", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	var suffix [6]byte
	rand.Read(suffix[:])
	tmp := dest + ".tmp-" + hex.EncodeToString(suffix[:])
	defer os.Remove(tmp)
	defer os.Remove(tmp + "-journal")

	src, err := sql.Open("sqlite", dsn(dbPath, defaultBusyTimeout, false))
	if err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	defer src.Close()
	info := BackupInfo{Path: dest}
	var tail journalTail
	for {
		info.Attempts++
		var again bool
		tail, again, err = snapshotInto(ctx, src, dbPath, tmp, info.Attempts)
		if err != nil {
			return BackupInfo{}, err
		}
		if !again {
			break
		}
		if info.Attempts == backupAttempts {
			return BackupInfo{}, fmt.Errorf("sqlite: backup: the journal was applied during each of %d tries; try again", backupAttempts)
		}
		os.Remove(tmp)
	}
	if err := finishCopy(ctx, tmp, tail, &info); err != nil {
		return BackupInfo{}, err
	}
	// A hard link is a rename that refuses an existing name; a file
	// system without links gets a rename after a last look.
	if err := os.Link(tmp, dest); err != nil {
		if _, serr := os.Lstat(dest); !errors.Is(serr, fs.ErrNotExist) {
			return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
		}
		if err := os.Rename(tmp, dest); err != nil {
			return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
		}
	}
	syncDir(filepath.Dir(dest))
	if st, err := os.Stat(dest); err == nil {
		info.Bytes = st.Size()
	}
	return info, nil
}

// snapshotInto copies one snapshot of the database to tmp and returns the
// journal records it lacks, or again when the snapshot and the journal
// read could not be matched.
func snapshotInto(ctx context.Context, src *sql.DB, dbPath, tmp string, attempt int) (tail journalTail, again bool, err error) {
	conn, err := src.Conn(ctx)
	if err != nil {
		return tail, false, fmt.Errorf("sqlite: backup: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return tail, false, fmt.Errorf("sqlite: backup: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	// The first read fixes the snapshot.
	applied, err := readAppliedSeq(ctx, conn)
	if err != nil {
		return tail, false, err
	}
	if tail, err = readJournalTail(dbPath, applied); err != nil {
		return tail, false, fmt.Errorf("sqlite: backup: %w", err)
	}
	if backupHook != nil {
		backupHook(attempt)
	}
	live, err := readAppliedSeq(ctx, src)
	if err != nil {
		return tail, false, err
	}
	if live != applied || (tail.n > 0 && tail.first != applied+1) {
		return tail, true, nil
	}
	tail.applied = applied
	// Made here, mode 0600, for SQLite to write into: the copy holds key
	// hashes and balances, as the store does.
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return tail, false, fmt.Errorf("sqlite: backup: %w", err)
	}
	f.Close()
	err = conn.Raw(func(dc any) error {
		b, ok := dc.(interface {
			NewBackup(string) (*sqlite3.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the driver's connection %T has no backup API", dc)
		}
		bk, err := b.NewBackup("file:" + (&url.URL{Path: tmp}).EscapedPath())
		if err != nil {
			return err
		}
		if _, err := bk.Step(-1); err != nil {
			bk.Finish()
			return err
		}
		return bk.Finish()
	})
	if err != nil {
		return tail, false, fmt.Errorf("sqlite: backup: copying: %w", err)
	}
	return tail, false, nil
}

// readAppliedSeq reads charge_journal.applied_seq; a store older than the
// journal has none, and 0 is its value.
func readAppliedSeq(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (uint64, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'charge_journal'").Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	var seq uint64
	if err := q.QueryRowContext(ctx, "SELECT applied_seq FROM charge_journal WHERE id = 1").Scan(&seq); err != nil {
		return 0, fmt.Errorf("sqlite: backup: %w", err)
	}
	return seq, nil
}

// finishCopy applies the journal's records to the copy at tmp, checks it,
// and leaves it one file, synced.
func finishCopy(ctx context.Context, tmp string, tail journalTail, info *BackupInfo) error {
	info.AppliedSeq = tail.applied
	if tail.n > 0 {
		// The records are applied by this binary's statements, which
		// need this binary's schema.
		s, err := Open(ctx, tmp, Options{RequireMigrated: true})
		if err != nil {
			return fmt.Errorf("sqlite: backup: the store's schema is not this program's, and %d answered charges are still in its journal: back up with the ipatlas that serves it, or stop that server first (it applies its journal on exit): %w", tail.n, err)
		}
		err = tail.apply(ctx, s)
		if err == nil {
			_, err = s.w.ExecContext(ctx, "PRAGMA journal_mode=DELETE")
		}
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sqlite: backup: applying the journal to the copy: %w", err)
		}
		info.JournalCharges, info.AppliedSeq = tail.n, tail.last
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: tmp}).EscapedPath())
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer db.Close()
	// The copy takes the source's WAL mode; a backup is one file.
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=DELETE"); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if err := integrityCheck(ctx, db); err != nil {
		return fmt.Errorf("sqlite: backup: the copy: %w", err)
	}
	v, err := schemaVersion(ctx, db)
	if err != nil {
		return fmt.Errorf("sqlite: backup: the copy: %w", err)
	}
	info.SchemaVersion = v
	if err := db.Close(); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	f, err := os.Open(tmp)
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	return nil
}

// integrityCheck runs SQLite's integrity check.
func integrityCheck(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		if s != "ok" && len(problems) < 5 {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check failed: %v", problems)
	}
	return nil
}

// schemaVersion is the goose version of an ipatlas store, or an error
// for a database that is not one.
func schemaVersion(ctx context.Context, db *sql.DB) (int64, error) {
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('accounts', 'goose_db_version')").Scan(&n); err != nil {
		return 0, err
	}
	if n != 2 {
		return 0, errors.New("not an ipatlas store (no accounts or schema version table)")
	}
	var v int64
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied").Scan(&v); err != nil {
		return 0, err
	}
	return v, nil
}

// syncDir makes a rename in dir durable, where the system allows.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// RestoreInfo describes what Restore did.
type RestoreInfo struct {
	Path          string // the store, absolute
	SchemaVersion int64
	// Replaced are the files of the store that was in place, kept under
	// new names.
	Replaced []string
}

// targetSchema is the schema version of this binary's migrations.
func targetSchema(ctx context.Context) (int64, error) {
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return 0, err
	}
	_, target, err := p.GetVersions(ctx)
	return target, err
}

// Restore puts the backup at backupPath in the place of the store at
// dbPath. It takes the store's writer lock, so it fails with
// ErrStoreLocked while a server runs on the store: stop it first (and
// every other command using the store). The backup is checked first (an
// ipatlas store, intact, not newer than this binary). The store's files
// in place, the database, its -wal and -shm and its charge journal, are
// kept, renamed with the suffix ".replaced-TIME"; the backup is copied in
// under a temporary name and renamed into place. The next serve starts
// from the backup with an empty journal (an older schema is migrated as
// usual).
func Restore(ctx context.Context, backupPath, dbPath string, now time.Time) (RestoreInfo, error) {
	if backupPath == "" || dbPath == "" {
		return RestoreInfo{}, errors.New("sqlite: restore: empty path")
	}
	var err error
	if backupPath, err = filepath.Abs(backupPath); err != nil {
		return RestoreInfo{}, fmt.Errorf("sqlite: restore: %w", err)
	}
	if dbPath, err = filepath.Abs(dbPath); err != nil {
		return RestoreInfo{}, fmt.Errorf("sqlite: restore: %w", err)
	}
	// The files are named from the database's real path, as SQLite names
	// its -wal and the server its journal: a symlink is kept, its target
	// replaced.
	if real, err := filepath.EvalSymlinks(dbPath); err == nil {
		dbPath = real
	}
	if real, err := filepath.EvalSymlinks(backupPath); err == nil && real == dbPath {
		return RestoreInfo{}, errors.New("sqlite: restore: the backup is the store itself")
	}
	info := RestoreInfo{Path: dbPath}
	if info.SchemaVersion, err = checkBackup(ctx, backupPath); err != nil {
		return RestoreInfo{}, fmt.Errorf("sqlite: restore: %s: %w", backupPath, err)
	}
	if err := os.MkdirAll(filepath.Dir(dbPath), 0o750); err != nil {
		return RestoreInfo{}, fmt.Errorf("sqlite: restore: %w", err)
	}
	_, statErr := os.Stat(dbPath)
	existed := statErr == nil
	lock, err := lockStore(dbPath)
	if err != nil {
		if errors.Is(err, ErrStoreLocked) {
			return RestoreInfo{}, fmt.Errorf("%w: stop the server first", err)
		}
		return RestoreInfo{}, err
	}
	if lock != nil {
		defer lock.Close()
	}

	tmp := dbPath + ".restore-tmp"
	if err := copyFile(backupPath, tmp); err != nil {
		os.Remove(tmp)
		return RestoreInfo{}, fmt.Errorf("sqlite: restore: %w", err)
	}
	// Every name is checked before anything moves: a database must not be
	// parted from its -wal.
	aside := dbPath + ".replaced-" + now.UTC().Format("20060102T150405Z")
	var moves []string // suffixes of the files in place
	for _, suffix := range []string{"-wal", "-shm", "-charges.journal", ""} {
		if suffix == "" && !existed {
			break // the empty file the lock made: the backup replaces it
		}
		if _, err := os.Lstat(dbPath + suffix); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if _, err := os.Lstat(aside + suffix); err == nil {
			os.Remove(tmp)
			return RestoreInfo{}, fmt.Errorf("sqlite: restore: %s exists: try again in a second", aside+suffix)
		}
		moves = append(moves, suffix)
	}
	for _, suffix := range moves {
		if err := os.Rename(dbPath+suffix, aside+suffix); err != nil {
			os.Remove(tmp)
			return RestoreInfo{}, fmt.Errorf("sqlite: restore: keeping the replaced store (moved so far: %v): %w", info.Replaced, err)
		}
		info.Replaced = append(info.Replaced, aside+suffix)
	}
	if err := os.Rename(tmp, dbPath); err != nil {
		return RestoreInfo{}, fmt.Errorf("sqlite: restore: %w", err)
	}
	syncDir(filepath.Dir(dbPath))
	return info, nil
}

// checkBackup checks that path is an intact ipatlas store this binary can
// serve, and returns its schema version. It is opened read-only, as an
// immutable file: nothing is written beside it.
func checkBackup(ctx context.Context, path string) (int64, error) {
	if st, err := os.Stat(path); err != nil {
		return 0, err
	} else if !st.Mode().IsRegular() {
		return 0, errors.New("not a file")
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&immutable=1")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	v, err := schemaVersion(ctx, db)
	if err != nil {
		return 0, err
	}
	if err := integrityCheck(ctx, db); err != nil {
		return 0, err
	}
	target, err := targetSchema(ctx)
	if err != nil {
		return 0, err
	}
	if v > target {
		return 0, fmt.Errorf("its schema version %d is newer than this program's %d: restore with the ipatlas that made it", v, target)
	}
	return v, nil
}

// copyFile copies from to a new file to (mode 0600: a store holds key
// hashes and balances) and syncs it.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
