package postgres_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/account/storetest"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
	"github.com/jackc/pgx/v5"
)

// open opens a migrated store on schema, through dsn (the test server's
// or a proxy's), closed when the test ends.
func open(t testing.TB, dsn, schema string, opts postgres.Options) *postgres.Store {
	t.Helper()
	opts.Schema, opts.Migrate = schema, true
	st, err := postgres.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestStore(t *testing.T) {
	dsn := pgtest.DSN(t)
	storetest.Run(t, func(t *testing.T) account.Store {
		return open(t, dsn, pgtest.NewSchema(t), postgres.Options{})
	})
}

func TestMigrations(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := t.Context()
	schema := pgtest.NewSchema(t)

	// No such schema: refused, and not created behind the operator's back.
	_, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema})
	if !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("Open(Migrate: false) on a missing schema: %v, want ErrNotMigrated", err)
	}
	// An empty schema: refused too.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, pgtest.WithSearchPath(t, dsn, schema), postgres.Options{})
	if !errors.Is(err, postgres.ErrNotMigrated) || !strings.Contains(err.Error(), "db migrate") {
		t.Fatalf("Open(Migrate: false) on an empty schema: %v, want ErrNotMigrated naming the command", err)
	}
	_, err = postgres.Open(ctx, dsn, postgres.Options{Schema: schema})
	if !errors.Is(err, postgres.ErrNotMigrated) || !strings.Contains(err.Error(), "db migrate") {
		t.Fatalf("Open(Migrate: false) on an empty schema: %v, want ErrNotMigrated naming the command", err)
	}

	// ipatlas db migrate, with the schema in the connection string.
	from, to, err := postgres.Migrate(ctx, pgtest.WithSearchPath(t, dsn, schema))
	if err != nil || from != 0 || to < 1 {
		t.Fatalf("Migrate = %d, %d, %v; want from 0 to the latest", from, to, err)
	}
	again, to2, err := postgres.Migrate(ctx, pgtest.WithSearchPath(t, dsn, schema))
	if err != nil || again != to || to2 != to {
		t.Fatalf("second Migrate = %d, %d, %v; want %d, %d", again, to2, err, to, to)
	}
	// Everything went into the schema, goose's version table included,
	// nothing into public.
	var tables []string
	rows, _ := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", schema)
	tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tables, ","); got != "accounts,api_keys,audit_log,goose_db_version,key_usage,key_usage_daily,ledger,owner_tokens,owners,sessions,tier_requests" {
		t.Fatalf("tables in %s: %s", schema, got)
	}

	st, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open(Migrate: false) on a migrated schema: %v", err)
	}
	defer st.Close()
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}

	// A schema newer than the program is refused, not downgraded.
	if _, err := conn.Exec(ctx, "INSERT INTO "+pgx.Identifier{schema, "goose_db_version"}.Sanitize()+
		" (version_id, is_applied) VALUES (9999, true)"); err != nil {
		t.Fatal(err)
	}
	for _, migrate := range []bool{false, true} {
		_, err = postgres.Open(ctx, dsn, postgres.Options{Schema: schema, Migrate: migrate})
		if err == nil || !strings.Contains(err.Error(), "upgrade ipatlas") {
			t.Fatalf("Open(Migrate: %v) on a newer schema: %v, want a refusal", migrate, err)
		}
	}
}

// TestConcurrentMigrate starts replicas together on a new schema: each
// migrates on open, and goose's advisory lock makes them take turns.
// TestMigrateCreatesSchema: ipatlas db migrate with ?search_path=NAME
// creates the schema when missing.
func TestMigrateCreatesSchema(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	from, to, err := postgres.Migrate(t.Context(), pgtest.WithSearchPath(t, dsn, schema))
	if err != nil || from != 0 || to < 1 {
		t.Fatalf("Migrate into a missing schema: %d, %d, %v", from, to, err)
	}
	st := open(t, dsn, schema, postgres.Options{})
	if err := st.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentMigrate(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.NewSchema(t)
	const replicas = 4
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema, Migrate: true})
			if err == nil {
				err = st.Ping(t.Context())
				st.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	for _, dsn := range []string{"", "   ", "postgres://[::1", "host=x port=notaport"} {
		if _, err := postgres.Open(ctx, dsn, postgres.Options{}); !errors.Is(err, account.ErrInvalid) {
			t.Errorf("Open(%q): %v, want ErrInvalid", dsn, err)
		}
	}
	// Nothing listens on a port just released: unavailable, not invalid.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = postgres.Open(ctx, "postgres://postgres@"+addr+"/test?sslmode=disable", postgres.Options{Migrate: true})
	if !errors.Is(err, account.ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
	// A password never shows in errors.
	_, err = postgres.Open(ctx, "postgres://postgres:hunter2secret@"+addr+"/test?sslmode=disable", postgres.Options{})
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Fatalf("Open error %v shows the password", err)
	}
}
