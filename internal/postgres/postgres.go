// Package postgres is the shared store of ipatlas for several replicas:
// accounts, API keys, monthly usage counters and the credit ledger in
// PostgreSQL (github.com/jackc/pgx/v5, pgxpool), implementing
// account.Store. It owns the PostgreSQL schema and its goose migrations,
// embedded in the binary; they mirror the SQLite store's, so both stores
// pass one contract suite (internal/account/storetest).
//
// Replicas share the database and nothing else: each has its own pool and
// its own batching Meter, and exactness between them comes from
// PostgreSQL's row locks (see Charge). A database that stops answering
// makes every call fail with account.ErrUnavailable within
// Options.Timeout, and the same Store works again once it answers.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNotMigrated refuses a database whose schema is behind this binary
// when Options.Migrate is off.
var ErrNotMigrated = errors.New("the database schema is not up to date (run: ipatlas db migrate)")

// Defaults of Options.
const (
	DefaultTimeout = 5 * time.Second
)

// Options configures Open.
type Options struct {
	// Migrate applies pending migrations on Open. When false, Open
	// refuses a database whose schema is behind with ErrNotMigrated, so
	// that an operator who migrates deliberately (ipatlas db migrate)
	// never has a replica do it behind their back.
	Migrate bool
	// Schema is the PostgreSQL schema holding the tables (and goose's
	// version table); Open puts it first in search_path and Migrate
	// creates it when missing. Empty: the connection string's
	// search_path, or the server's default (public).
	Schema string
	// MaxConns is the size of the pool. Zero: pool_max_conns from the
	// connection string, else pgxpool's default (the larger of 4 and the
	// number of CPUs). A batching Meter needs one connection per batch in
	// flight; the rest serve authentication and management.
	MaxConns int32
	// Timeout bounds every store call on the client side, from acquiring
	// a connection to the answer (default DefaultTimeout). During an
	// outage calls fail with account.ErrUnavailable within it instead of
	// hanging; it also bounds connecting.
	Timeout time.Duration
	// StatementTimeout is PostgreSQL's statement_timeout and
	// idle_in_transaction_session_timeout for the pool's sessions
	// (default: Timeout, unless the connection string sets them). The
	// second releases the row locks of a replica that stalls in the
	// middle of a charge, so the other replicas wait at most this long.
	StatementTimeout time.Duration
}

// Store is an account.Store on a PostgreSQL database.
type Store struct {
	pool    *pgxpool.Pool
	timeout time.Duration
}

var _ account.Store = (*Store)(nil)

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value string, as libpq takes), and brings its schema up to date or,
// without opts.Migrate, checks that it is. An unreachable database is an
// error matching account.ErrUnavailable, returned within opts.Timeout.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := poolConfig(dsn, opts)
	if err != nil {
		return nil, err
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// Migrations run on their own short-lived connection without the
	// statement timeout: a migration of a large table may take minutes.
	if _, _, err := prepareSchema(ctx, migrationConfig(cfg.ConnConfig), opts.Schema, opts.Migrate, timeout); err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s := &Store{pool: pool, timeout: timeout}
	if err := s.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Migrate applies the pending migrations to the database named by dsn
// and reports the schema version before and after. The tables go to the
// first schema of the search_path; a search_path of one plain name
// (?search_path=ipatlas) is created when missing. Concurrent migrations of one schema,
// say by replicas starting together, wait for each other.
func Migrate(ctx context.Context, dsn string) (from, to int64, err error) {
	cfg, err := poolConfig(dsn, Options{})
	if err != nil {
		return 0, 0, err
	}
	return prepareSchema(ctx, migrationConfig(cfg.ConnConfig), "", true, 0)
}

// poolConfig parses dsn and applies opts on top of it.
func poolConfig(dsn string, opts Options) (*pgxpool.Config, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, fmt.Errorf("postgres: %w: empty connection string", account.ErrInvalid)
	}
	// pgx's parse errors do not repeat the password.
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w: %w", account.ErrInvalid, err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	stmt := opts.StatementTimeout
	if stmt <= 0 {
		stmt = timeout
	}
	cc := cfg.ConnConfig
	if cc.ConnectTimeout <= 0 || cc.ConnectTimeout > timeout {
		cc.ConnectTimeout = timeout
	}
	rp := cc.RuntimeParams
	ms := strconv.FormatInt(stmt.Milliseconds(), 10)
	for _, p := range []string{"statement_timeout", "idle_in_transaction_session_timeout"} {
		if _, set := rp[p]; !set || opts.StatementTimeout > 0 {
			rp[p] = ms
		}
	}
	if _, set := rp["application_name"]; !set {
		rp["application_name"] = "ipatlas"
	}
	if opts.Schema != "" {
		rp["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	return cfg, nil
}

// migrationConfig is cc without the timeouts meant for queries.
func migrationConfig(cc *pgx.ConnConfig) *pgx.ConnConfig {
	mc := cc.Copy()
	delete(mc.RuntimeParams, "statement_timeout")
	delete(mc.RuntimeParams, "idle_in_transaction_session_timeout")
	return mc
}

// simpleIdent is a schema name that PostgreSQL reads as it is written.
var simpleIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// prepareSchema migrates, or without migrate only checks, the schema.
// checkTimeout, when positive, bounds everything but the migration.
func prepareSchema(ctx context.Context, cc *pgx.ConnConfig, schema string, migrate bool, checkTimeout time.Duration) (from, to int64, err error) {
	if schema == "" {
		// search_path=ipatlas in the connection string names the
		// schema as well as Options.Schema does.
		if sp := cc.RuntimeParams["search_path"]; simpleIdent.MatchString(sp) {
			schema = sp
		}
	}
	db := stdlib.OpenDB(*cc)
	defer db.Close()

	// The checks are bounded, so that Open fails fast when the server is
	// down; the migration itself is bounded by ctx only.
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if checkTimeout > 0 {
		pctx, cancel = context.WithTimeout(ctx, checkTimeout)
	}
	defer cancel()
	err = db.PingContext(pctx)
	if err == nil && schema != "" && migrate {
		// Asked first, so that a role without the right to create
		// schemas can use one made for it.
		var exists bool
		err = db.QueryRowContext(pctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists)
		if err == nil && !exists {
			_, err = db.ExecContext(pctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
			if pgCode(err) == "23505" || pgCode(err) == "42P06" {
				err = nil // created meanwhile by another replica
			}
		}
	}
	var current *string
	if err == nil {
		err = db.QueryRowContext(pctx, "SELECT current_schema()").Scan(&current)
	}
	// When replicas create the schema together, the one whose CREATE lost
	// the race may ask before the winner's catalog change has reached its
	// session; the schema exists, so ask again, a few times.
	for try := 0; err == nil && current == nil && schema != "" && migrate && try < 5; try++ {
		select {
		case <-pctx.Done():
			err = pctx.Err()
		case <-time.After(20 * time.Millisecond):
			err = db.QueryRowContext(pctx, "SELECT current_schema()").Scan(&current)
		}
	}
	if err != nil {
		return 0, 0, fail("open", err)
	}
	if current == nil {
		if !migrate {
			return 0, 0, fmt.Errorf("postgres: no schema of the search_path exists: %w", ErrNotMigrated)
		}
		return 0, 0, errors.New("postgres: no schema of the search_path exists: create it (CREATE SCHEMA) or fix search_path in the connection string")
	}

	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return 0, 0, err
	}
	// Advisory locks are per database, so each schema gets its own lock:
	// replicas starting together on one schema migrate one at a time,
	// while other schemas (tests, other installations) do not wait.
	h := fnv.New64a()
	h.Write([]byte("ipatlas migrations " + *current))
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(int64(h.Sum64()>>1)),
		lock.WithLockTimeout(1, 600), // poll every second, for up to 10 minutes
	)
	if err != nil {
		return 0, 0, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, fsys, goose.WithSessionLocker(locker))
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: %w", err)
	}
	from, target, err := p.GetVersions(pctx)
	if err != nil {
		return 0, 0, fail("reading the schema version", err)
	}
	if from > target {
		return from, from, fmt.Errorf("postgres: schema %q is at version %d, newer than this program's %d: upgrade ipatlas", *current, from, target)
	}
	if !migrate {
		if from < target {
			return from, from, fmt.Errorf("postgres: schema %q at version %d of %d: %w", *current, from, target, ErrNotMigrated)
		}
		return from, from, nil
	}
	if _, err := p.Up(ctx); err != nil {
		return from, from, fmt.Errorf("postgres: migrating schema %q: %w", *current, err)
	}
	to, err = p.GetDBVersion(ctx)
	if err != nil {
		return from, 0, fail("reading the schema version", err)
	}
	return from, to, nil
}

// Close closes the pool. It may be called more than once.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping checks that the database answers and holds the schema.
func (s *Store) Ping(ctx context.Context) error {
	return s.run(ctx, "ping", func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, "SELECT 1 FROM accounts LIMIT 1")
		return err
	})
}

// Stat reports the pool's state, for metrics.
func (s *Store) Stat() *pgxpool.Stat { return s.pool.Stat() }

// bound applies the store's timeout to one call.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// fail wraps a driver error, marking as account.ErrUnavailable every
// failure that says the database did not answer (in time), as opposed to
// one it answered with (a constraint, a missing table).
func fail(op string, err error) error {
	if isUnavailable(err) {
		return fmt.Errorf("postgres: %s: %w: %w", op, account.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

func isUnavailable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		// No answer from the server at all (refused or cut connection,
		// timeout, closed pool), unless it is one of ours.
		for _, e := range []error{pgx.ErrNoRows, account.ErrNotFound, account.ErrInvalid,
			account.ErrInsufficient, account.ErrRevoked, account.ErrConflict, ErrNotMigrated} {
			if errors.Is(err, e) {
				return false
			}
		}
		return true
	}
	c := pgErr.Code
	switch {
	case strings.HasPrefix(c, "08"), // connection exception
		strings.HasPrefix(c, "53"),  // insufficient resources: too many connections, disk full
		strings.HasPrefix(c, "57P"), // shutting down, crashed, starting up
		c == "57014",                // statement_timeout
		c == "55P03",                // lock_timeout
		c == "25P03",                // idle_in_transaction_session_timeout
		c == "40001", c == "40P01":  // serialization failure, deadlock
		return true
	}
	return false
}

// attempts bounds how often a call runs again after a failure that left
// nothing behind, such as a pooled connection that died while idle (the
// pool only checks those idle for more than a second): one dead
// connection must not fail a request after the database is back.
const attempts = 3

// commitError is a failed commit: the transaction may or may not have
// committed, so it is never run again.
type commitError struct{ err error }

func (e commitError) Error() string { return "commit: " + e.err.Error() }
func (e commitError) Unwrap() error { return e.err }

// retryable reports whether a call that failed with err may simply run
// again: nothing it did was committed (reads, idempotent writes, or a
// transaction that failed before its commit), and the cause may pass.
func retryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.As(err, new(commitError)) {
		return false
	}
	return errors.Is(err, errConflict) || isUnavailable(err) && pgCode(err) != "57014"
}

// run runs fn, within the store's timeout, again while it fails in a way
// that retryable allows, and maps its error.
func (s *Store) run(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var err error
	for attempt := 1; ; attempt++ {
		err = fn(ctx)
		if err != nil && lostConnection(err) {
			// The other pooled connections went the same way, most
			// likely: drop them all rather than fail on each in turn.
			s.pool.Reset()
		}
		if err == nil || attempt == attempts || ctx.Err() != nil || !retryable(err) {
			return dbErr(op, err)
		}
	}
}

// lostConnection reports a connection that broke (refused, reset,
// closed), as opposed to one that was slow: a deadline closes only the
// connection it caught, and a caller giving up says nothing about the
// others.
func lostConnection(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) && isUnavailable(err) &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !pgconn.Timeout(err)
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
