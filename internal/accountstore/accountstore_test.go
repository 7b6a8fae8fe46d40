package accountstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
)

func TestOpenStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := Open(t.Context(), "sqlite:"+path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	st.Close()

	for _, dsn := range []string{"", "sqlite:", "/var/lib/ipatlas.db", "mysql://admin:hunter2@db/ipatlas", "redis:x"} {
		_, err := Open(t.Context(), dsn, Options{})
		if err == nil {
			t.Fatalf("Open(%q) succeeded", dsn)
		}
		if !errors.Is(err, ErrDSN) {
			t.Errorf("Open(%q) = %v, want an ErrDSN", dsn, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q) = %v: the error shows the password", dsn, err)
		}
	}
}

// The options reach the PostgreSQL store: the pool's size, the refusal of
// an unmigrated schema, and the timeout that bounds a call whose caller
// set none (here, on a database behind a partition).
func TestOpenStorePostgresOptions(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	px := pgtest.NewProxy(t, dsn)
	store := pgtest.WithSearchPath(t, px.DSN(t, dsn), schema)
	ctx := context.Background() // no deadline: only the store's bounds a call

	_, err := Open(ctx, store, Options{RequireMigrated: true})
	if !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("RequireMigrated on a new schema: %v, want ErrNotMigrated", err)
	}
	st, err := Open(ctx, store, Options{MaxConns: 3, Timeout: 500 * time.Millisecond, StatementTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pg, ok := st.(*postgres.Store)
	if !ok {
		t.Fatalf("Open(postgres://...) = %T", st)
	}
	if got := pg.Stat().MaxConns(); got != 3 {
		t.Errorf("pool of %d connections, want 3", got)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	px.Cut(pgtest.Blackhole)
	err = st.Ping(ctx)
	px.Restore()
	if !errors.Is(err, account.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ping behind a partition: %v, want ErrUnavailable ended by the store's deadline", err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping after the partition: %v", err)
	}
}

func TestRedact(t *testing.T) {
	for dsn, want := range map[string]string{
		"sqlite:/var/lib/ipatlas.db":             "sqlite:/var/lib/ipatlas.db",
		"postgres://admin:hunter2@db/ipatlas":    "postgres://admin:xxxxx@db/ipatlas",
		"postgres://db/ipatlas?sslmode=require":  "postgres://db/ipatlas?sslmode=require",
		"postgres://admin:hunter2@db%zz":         "(unparsed DSN, not shown)",
		"admin:hunter2@db":                       "(unparsed DSN, not shown)",
		"postgres://db/ipatlas?password=hunter2": "postgres://db/ipatlas?password=xxxxx",
		"postgres:admin:hunter2@db":              "(unparsed DSN, not shown)",
		"mysql://admin:hunter2@db/ipatlas":       "(unparsed DSN, not shown)",
		"host=db user=admin password=hunter2":    "(unparsed DSN, not shown)",
	} {
		if got := Redact(dsn); got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
	}
}
