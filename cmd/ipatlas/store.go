package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// parseStoreDSN splits a --store value into its kind and target. Only the
// scheme is ever echoed in errors: a PostgreSQL DSN may carry a password.
func parseStoreDSN(dsn string) (kind, target string, err error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			return "", "", errors.New(`--store sqlite: needs a path, as in "sqlite:/var/lib/ipatlas/ipatlas.db"`)
		}
		return "sqlite", path, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "postgres", dsn, nil
	case dsn == "":
		return "", "", errors.New("--store is empty; use sqlite:PATH")
	}
	scheme, _, ok := strings.Cut(dsn, ":")
	if !ok || strings.ContainsAny(scheme, "/@") {
		return "", "", errors.New(`--store: unknown store; use "sqlite:PATH"`)
	}
	return "", "", fmt.Errorf(`--store: unknown store kind %q; use "sqlite:PATH"`, scheme)
}

// storeOptions are serve's store settings. The zero value is what the
// management commands use: migrate if needed, the stores' defaults.
type storeOptions struct {
	// RequireMigrated refuses a store whose schema is behind this binary
	// (serve --store-migrate=false) instead of migrating it; the error
	// names 'ipatlas db migrate'.
	RequireMigrated bool
	// PostgreSQL only; zero takes postgres.Options' defaults.
	MaxConns         int32
	Timeout          time.Duration
	StatementTimeout time.Duration
	// Journal (serve, SQLite only) charges through the store's charge
	// journal and takes its writer lock: a second serve on the same file
	// fails, the management commands still share it.
	Journal bool
	Logger  *slog.Logger
}

// openStore opens the account store a --store DSN names: "sqlite:PATH"
// (created and migrated if needed) or "postgres://..." (migrated if
// needed), unless opts.RequireMigrated. Every command that works on
// accounts goes through here.
func openStore(ctx context.Context, dsn string, opts storeOptions) (account.Store, error) {
	kind, target, err := parseStoreDSN(dsn)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	switch kind {
	case "sqlite":
		// The pool size and timeouts are PostgreSQL's: an embedded
		// database has no connection to wait for or lose.
		return sqlite.Open(ctx, target, sqlite.Options{RequireMigrated: opts.RequireMigrated, Journal: opts.Journal, Logger: opts.Logger})
	case "postgres":
		return postgres.Open(ctx, target, postgres.Options{
			Migrate:          !opts.RequireMigrated,
			MaxConns:         opts.MaxConns,
			Timeout:          opts.Timeout,
			StatementTimeout: opts.StatementTimeout,
		})
	}
	return nil, fmt.Errorf("--store: unsupported store kind %q", kind)
}
