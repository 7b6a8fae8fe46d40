// Package sqlite is the embedded store of ipatlas: accounts, API keys,
// monthly usage counters and the credit ledger in one SQLite file
// (modernc.org/sqlite, no cgo), implementing account.Store. It owns the
// SQLite schema and its goose migrations, embedded in the binary.
//
// The file is opened in WAL mode with synchronous=FULL, so a committed
// charge survives a process kill and a power loss, and every write
// transaction starts with BEGIN IMMEDIATE, so several processes (the
// server and the CLI) can share the file: a writer waits for the lock
// (busy_timeout) instead of failing half-way through a transaction.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNotMigrated refuses a database whose schema is behind this binary when
// Options.RequireMigrated is set.
var ErrNotMigrated = errors.New("the database schema is not up to date (run: ipatlas db migrate)")

// Options configures Open.
type Options struct {
	// RequireMigrated makes Open fail with ErrNotMigrated on a database
	// that lacks migrations, instead of applying them.
	RequireMigrated bool
	// BusyTimeout is how long a statement waits for another process's
	// lock before failing (default 10s), and how long a process without
	// the journal waits for the server's applier (journal_outside.go).
	BusyTimeout time.Duration
	// ReadConns is the size of the pool of read connections (default 4).
	ReadConns int
	// Journal charges through the charge journal (journaled.go): the
	// serving process's mode. It takes the store's writer lock, so one
	// process at a time opens a store with it; processes without it (the
	// CLI) share the store as before. Ignored where the journal is not
	// built (not unix).
	Journal bool
	// ApplyEvery is how often the journal is applied to the tables
	// (default DefaultApplyEvery); PollEvery how often other processes'
	// changes are looked for (default DefaultPollEvery).
	ApplyEvery, PollEvery time.Duration
	// Logger receives the journal's replay and applier messages.
	Logger *slog.Logger
}

// Store is an account.Store on one SQLite file.
//
// It has two pools. Writes go through a single connection, so that this
// process's transactions queue in Go rather than spin in SQLite's busy
// handler; the Meter batches charges, so one writer is not a bottleneck.
// Reads use their own pool and, thanks to WAL, never wait for the writer.
type Store struct {
	path   string
	w      *sql.DB
	r      *sql.DB
	charge *chargeStmts // prepared on w
	jm     *journaled   // nil unless Options.Journal
	busy   time.Duration
	lock   io.Closer // the writer lock, with Options.Journal where it is built
}

var _ account.Store = (*Store)(nil)

const defaultBusyTimeout = 10 * time.Second

// dsn builds the driver's data source name. The path is escaped as a URI
// so that '?' or '#' in a file name cannot be read as parameters.
func dsn(path string, busy time.Duration, write bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	if write {
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// openWriter opens the write pool, creating the file (mode 0600: it holds key
// hashes and balances) and its directory when missing.
func openWriter(path string, busy time.Duration) (*sql.DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	f.Close()
	db, err := sql.Open("sqlite", dsn(path, busy, true))
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	return db, nil
}

// Open opens (creating if needed) the store at path and brings its schema
// up to date, unless opts.RequireMigrated asks it to refuse an old schema.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if opts.RequireMigrated {
		// Creating an empty file only to refuse it would leave litter
		// behind a mistyped path.
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sqlite: %s: no such database: %w", path, ErrNotMigrated)
		}
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = defaultBusyTimeout
	}
	w, err := openWriter(path, busy)
	if err != nil {
		return nil, err
	}
	// The serving process's lock is taken before its first connection
	// (a second serve is refused before it touches the file) and released
	// after its last (see lockStore).
	var lock io.Closer
	if opts.Journal {
		if lock, err = lockStore(path); err != nil {
			w.Close()
			return nil, err
		}
	}
	fail := func(err error, dbs ...*sql.DB) (*Store, error) {
		for _, db := range dbs {
			db.Close()
		}
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	if err := prepareSchema(ctx, w, opts.RequireMigrated); err != nil {
		return fail(fmt.Errorf("sqlite: %s: %w", path, err), w)
	}
	cs, err := prepareCharge(ctx, w)
	if err != nil {
		return fail(err, w)
	}
	r, err := sql.Open("sqlite", dsn(path, busy, false))
	if err != nil {
		cs.close()
		return fail(fmt.Errorf("sqlite: %s: %w", path, err), w)
	}
	n := opts.ReadConns
	if n <= 0 {
		n = 4
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	s := &Store{path: path, w: w, r: r, charge: cs, lock: lock, busy: busy}
	if opts.Journal {
		if err := s.startJournal(ctx, opts); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes both pools.
func (s *Store) Close() error {
	var jerr error
	if s.jm != nil {
		ctx, cancel := context.WithTimeout(context.Background(), defaultBusyTimeout)
		jerr = s.jm.close(ctx)
		cancel()
		s.jm = nil
	}
	s.charge.close()
	err := errors.Join(jerr, s.r.Close(), s.w.Close())
	if s.lock != nil {
		err = errors.Join(err, s.lock.Close())
		s.lock = nil
	}
	return err
}

// Ping checks that the file can still be read.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

func provider(db *sql.DB) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectSQLite3, db, fsys)
}

// prepareSchema migrates, or with requireMigrated only checks, the schema.
func prepareSchema(ctx context.Context, db *sql.DB, requireMigrated bool) error {
	if !requireMigrated {
		_, _, err := migrate(ctx, db)
		return err
	}
	p, err := provider(db)
	if err != nil {
		return err
	}
	// GetVersions rather than HasPending: a database that goose has never
	// touched has no version table, which GetVersions reports as version 0.
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if current > target {
		return fmt.Errorf("the schema version %d is newer than this program's %d: upgrade ipatlas", current, target)
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if pending {
		return fmt.Errorf("%w: at version %d of %d", ErrNotMigrated, current, target)
	}
	return nil
}

// Migrate applies the pending migrations to the database at path,
// creating it if needed, and reports the schema version before and after.
func Migrate(ctx context.Context, path string) (from, to int64, err error) {
	if path == "" {
		return 0, 0, errors.New("sqlite: empty database path")
	}
	path, err = filepath.Abs(path)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: %w", err)
	}
	db, err := openWriter(path, defaultBusyTimeout)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	from, to, err = migrate(ctx, db)
	if err != nil {
		return from, to, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return from, to, nil
}

func migrate(ctx context.Context, db *sql.DB) (from, to int64, err error) {
	p, err := provider(db)
	if err != nil {
		return 0, 0, err
	}
	from, target, err := p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the schema version: %w", err)
	}
	if from > target {
		return from, from, fmt.Errorf("the schema version %d is newer than this program's %d: upgrade ipatlas", from, target)
	}
	// Goose has no lock for SQLite, so two processes opening a new file
	// at once can race; the loser's migration fails on tables the winner
	// made. That is a success if nothing is left to do.
	for attempt := 1; ; attempt++ {
		_, err = p.Up(ctx)
		if err == nil {
			break
		}
		if pending, perr := p.HasPending(ctx); perr == nil && !pending {
			break
		}
		if attempt == 3 {
			return from, from, fmt.Errorf("migrating: %w", err)
		}
	}
	to, err = p.GetDBVersion(ctx)
	if err != nil {
		return from, 0, fmt.Errorf("reading the schema version: %w", err)
	}
	return from, to, nil
}
