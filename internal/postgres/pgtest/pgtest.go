// Package pgtest is what tests need to run against a real PostgreSQL: the
// test server's connection string (or a skip saying how to provide one),
// a fresh schema per test, and a TCP proxy that takes the database away
// from the code under test, as a restart or a network partition would,
// without touching the server that other tests share.
//
// It is imported by tests only (internal/postgres, cmd/ipatlas).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable holding the connection string of the test
// server; CI sets it (.ci/run) to
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const EnvDSN = "IPATLAS_TEST_POSTGRES"

// DSN is the test server's connection string, or skips the test saying
// what to set.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		t.Skip(EnvDSN + " is not set: this test needs a PostgreSQL server; set it to a connection string, " +
			"e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable (CI exports it)")
	}
	return dsn
}

// NewSchema names a fresh schema for one test and drops it, with all it
// holds, when the test ends (after what the test opened later is closed:
// cleanups run last-in first-out). Tests in separate schemas of one
// database run in parallel without seeing each other. The schema itself
// is not created: the store's migrations do that.
func NewSchema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "ipatlas_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if err := DropSchema(context.Background(), dsn, schema); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}

// DropSchema drops schema and everything in it, if it exists.
func DropSchema(ctx context.Context, dsn, schema string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}

// WithSearchPath sets the search_path parameter of a postgres:// URL, the
// way an operator names the schema in --store. It skips the test when dsn
// is not a URL.
func WithSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Skipf("%s is not a postgres:// URL (%v); this test adds search_path to it", EnvDSN, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
