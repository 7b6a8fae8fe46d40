package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/sqlite"
)

func TestDBMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "ipatlas.db")
	e := env{getenv: func(string) string { return "" }, stdin: strings.NewReader("")}
	var out, errb bytes.Buffer
	e.stdout, e.stderr = &out, &errb

	// A server that refuses an old schema cannot start before migrating.
	if _, err := sqlite.Open(t.Context(), path, sqlite.Options{RequireMigrated: true}); err == nil {
		t.Fatal("RequireMigrated accepted a missing database")
	}
	if err := runDBMigrate(t.Context(), e, []string{"--store", "sqlite:" + path}); err != nil {
		t.Fatalf("db migrate: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "from schema version 0 to 3") {
		t.Fatalf("db migrate output: %q", out.String())
	}
	st, err := sqlite.Open(t.Context(), path, sqlite.Options{RequireMigrated: true})
	if err != nil {
		t.Fatalf("after db migrate: %v", err)
	}
	st.Close()

	out.Reset()
	if err := runDBMigrate(t.Context(), e, []string{"--json", "--store", "sqlite:" + path}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(out.String()), " "); got != `{ "store": "sqlite", "from_version": 3, "to_version": 3 }` {
		t.Fatalf("db migrate --json on a migrated store: %s", got)
	}

	// The default store comes from IPATLAS_STORE.
	other := filepath.Join(t.TempDir(), "env.db")
	e.getenv = func(k string) string {
		if k == "IPATLAS_STORE" {
			return "sqlite:" + other
		}
		return ""
	}
	out.Reset()
	if err := runDBMigrate(t.Context(), e, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("db migrate did not use IPATLAS_STORE: %v", err)
	}

	for _, args := range [][]string{{"--store", "mysql://root:hunter2@db/x"}, {"--store", "sqlite:"}, {"extra"}} {
		errb.Reset()
		err := runDBMigrate(t.Context(), e, args)
		if exitCode(err) != exitUsage {
			t.Fatalf("db migrate %v: %v, want a usage error", args, err)
		}
		if strings.Contains(err.Error()+errb.String(), "hunter2") {
			t.Fatalf("db migrate %v shows the password: %v", args, err)
		}
	}
}
