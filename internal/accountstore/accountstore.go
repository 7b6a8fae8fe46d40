// Package accountstore opens the account store a DSN names: SQLite
// ("sqlite:PATH") or PostgreSQL ("postgres://..."). The server and the
// management commands open their store here, so that both read a DSN
// alike.
package accountstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// ErrDSN is in the chain of every error about a DSN that names no store
// this program opens: a usage mistake, not a store that failed.
var ErrDSN = errors.New("bad store DSN")

type dsnError struct{ msg string }

func (e *dsnError) Error() string        { return e.msg }
func (e *dsnError) Is(target error) bool { return target == ErrDSN }

// ParseDSN splits a --store value into its kind ("sqlite" or "postgres")
// and target. Only the scheme is ever echoed in errors: a PostgreSQL DSN
// may carry a password.
func ParseDSN(dsn string) (kind, target string, err error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			return "", "", &dsnError{`--store sqlite: needs a path, as in "sqlite:/var/lib/ipatlas/ipatlas.db"`}
		}
		return "sqlite", path, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "postgres", dsn, nil
	case dsn == "":
		return "", "", &dsnError{"--store is empty; use sqlite:PATH"}
	}
	scheme, _, ok := strings.Cut(dsn, ":")
	if !ok || strings.ContainsAny(scheme, "/@") {
		return "", "", &dsnError{`--store: unknown store; use "sqlite:PATH"`}
	}
	return "", "", &dsnError{fmt.Sprintf(`--store: unknown store kind %q; use "sqlite:PATH"`, scheme)}
}

// Options are the server's store settings. The zero value is what the
// management commands use: migrate if needed, the stores' defaults.
type Options struct {
	// RequireMigrated refuses a store whose schema is behind this binary
	// (serve --store-migrate=false) instead of migrating it; the error
	// names 'ipatlas db migrate'.
	RequireMigrated bool
	// PostgreSQL only; zero takes postgres.Options' defaults.
	MaxConns         int32
	Timeout          time.Duration
	StatementTimeout time.Duration
	// Journal (the server, SQLite only) charges through the store's
	// charge journal and takes its writer lock: a second server on the
	// same file fails, the management commands still share it.
	Journal bool
	Logger  *slog.Logger
}

// Open opens the account store dsn names: "sqlite:PATH" (created and
// migrated if needed) or "postgres://..." (migrated if needed), unless
// opts.RequireMigrated.
func Open(ctx context.Context, dsn string, opts Options) (account.Store, error) {
	kind, target, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
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

// Redact hides a password in a store DSN, for logs and banners: a SQLite
// path is shown as it is, a PostgreSQL URL with its password replaced,
// and anything else, where a password could sit anywhere, not at all.
func Redact(dsn string) string {
	if strings.HasPrefix(dsn, "sqlite:") {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && u.Opaque == "" {
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return "(unparsed DSN, not shown)"
}
