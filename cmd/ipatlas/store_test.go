package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// mgmtEnv is a CLI environment whose default store (IPATLAS_STORE) is a
// fresh SQLite file in a temp dir.
type mgmtEnv struct {
	t    *testing.T
	path string
	dsn  string
}

func newMgmtEnv(t *testing.T) *mgmtEnv {
	path := filepath.Join(t.TempDir(), "ipatlas.db")
	return &mgmtEnv{t: t, path: path, dsn: "sqlite:" + path}
}

// run runs "ipatlas args..." and returns stdout, stderr and the error.
func (m *mgmtEnv) run(args ...string) (string, string, error) {
	m.t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if k == "IPATLAS_STORE" {
			return m.dsn
		}
		return ""
	}
	err := run(m.t.Context(), append([]string{"ipatlas"}, args...), getenv, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// ok runs a command that must succeed and returns its stdout.
func (m *mgmtEnv) ok(args ...string) string {
	m.t.Helper()
	out, stderr, err := m.run(args...)
	if err != nil {
		m.t.Fatalf("ipatlas %s: %v\nstderr: %s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// json runs a command with --json that must succeed and decodes its output.
func (m *mgmtEnv) json(v any, args ...string) {
	m.t.Helper()
	out := m.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		m.t.Fatalf("ipatlas %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fails runs a command that must fail with the exit code want.
func (m *mgmtEnv) fails(want int, args ...string) (string, error) {
	m.t.Helper()
	out, stderr, err := m.run(args...)
	if err == nil {
		m.t.Fatalf("ipatlas %s succeeded, want exit code %d\n%s", strings.Join(args, " "), want, out)
	}
	if got := exitCode(err); got != want {
		m.t.Fatalf("ipatlas %s: exit code %d (%v), want %d", strings.Join(args, " "), got, err, want)
	}
	return stderr, err
}

// service opens the same file as the CLI, as a server would.
func (m *mgmtEnv) service() *account.Service {
	m.t.Helper()
	st, err := sqlite.Open(m.t.Context(), m.path, sqlite.Options{})
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { st.Close() })
	return &account.Service{Store: st}
}

func TestFlagsAfterArguments(t *testing.T) {
	var stderr bytes.Buffer
	c := newMgmtCmd(env{getenv: func(string) string { return "" }, stdout: &bytes.Buffer{}, stderr: &stderr}, "credits add", "add")
	reason := c.fs.String("reason", "", "")
	for _, args := range [][]string{
		{"1", "-50", "--reason", "a b"},
		{"--reason", "a b", "1", "-50"},
		{"1", "--reason=a b", "-50", "--json"},
		{"1", "-reason", "a b", "--", "-50"},
	} {
		*reason, c.json = "", false
		pos, err := c.parse(args, 2, 2)
		if err != nil || len(pos) != 2 || pos[0] != "1" || pos[1] != "-50" || *reason != "a b" {
			t.Errorf("parse(%q) = %q, reason %q, %v; want [1 -50], reason \"a b\"", args, pos, *reason, err)
		}
	}
	if _, err := c.parse([]string{"1", "2", "--nope"}, 2, 2); exitCode(err) != exitUsage {
		t.Errorf("unknown flag: %v, want a usage error", err)
	}
	if _, err := c.parse([]string{"1"}, 2, 2); exitCode(err) != exitUsage {
		t.Errorf("missing argument: %v, want a usage error", err)
	}
	if _, err := c.parse([]string{"-h"}, 2, 2); !errors.Is(err, errHelp) {
		t.Errorf("-h: %v, want help", err)
	}
}

// The store settings of serve: defaults, the three sources, and refusals.
func TestServeStoreSettings(t *testing.T) {
	c, err := parseServeConfig(nil, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
	if err != nil {
		t.Fatal(err)
	}
	if !c.StoreMigrate || c.StoreMaxConns != 0 || c.StoreTimeout != postgres.DefaultTimeout || c.StoreStatementTimeout != 0 {
		t.Errorf("defaults: migrate %v, max conns %d, timeout %v, statement timeout %v",
			c.StoreMigrate, c.StoreMaxConns, c.StoreTimeout, c.StoreStatementTimeout)
	}

	file := writeConfig(t, "store_max_conns = 7\nstore-statement-timeout = 30s\nstore-timeout = 9s\n")
	c, err = parseServeConfig([]string{"--store-migrate=false", "--store-timeout", "1500ms"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d", "IPATLAS_CONFIG": file, "IPATLAS_STORE_MAX_CONNS": "12"})))
	if err != nil {
		t.Fatal(err)
	}
	if c.StoreMigrate || c.StoreMaxConns != 12 || c.StoreTimeout != 1500*time.Millisecond || c.StoreStatementTimeout != 30*time.Second {
		t.Errorf("flag/env/file: migrate %v, max conns %d (env), timeout %v (flag), statement timeout %v (file)",
			c.StoreMigrate, c.StoreMaxConns, c.StoreTimeout, c.StoreStatementTimeout)
	}

	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--store-timeout=0s"}, nil, "positive"},
		{[]string{"--store-timeout", "soon"}, nil, "--store-timeout"},
		{[]string{"--store-max-conns=-1"}, nil, "negative"},
		{[]string{"--store-max-conns=99999999999"}, nil, "--store-max-conns"},
		{[]string{"--store-statement-timeout=-1s"}, nil, "negative"},
		{nil, map[string]string{"IPATLAS_STORE_MIGRATE": "perhaps"}, "IPATLAS_STORE_MIGRATE"},
	} {
		env := map[string]string{"IPATLAS_DATA_DIR": "/d"}
		maps.Copy(env, tt.env)
		_, err := parseServeConfig(tt.args, testEnv(mapEnv(env)))
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != exitUsage {
			t.Errorf("%q %v: %v, want a usage error mentioning %q", tt.args, tt.env, err, tt.want)
		}
	}
}

// --store-migrate=false: serve refuses a store whose schema is behind and
// says what to run; after 'ipatlas db migrate' it starts. SQLite always,
// PostgreSQL when IPATLAS_TEST_POSTGRES is set.
func TestServeStoreMigrateFalse(t *testing.T) {
	stores := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "ipatlas.db")}
	if dsn := os.Getenv(pgtest.EnvDSN); dsn != "" {
		stores["postgres"] = pgtest.WithSearchPath(t, dsn, pgtest.NewSchema(t))
	} else {
		t.Log(pgtest.EnvDSN + " is not set: checking the SQLite store only")
	}
	for kind, store := range stores {
		t.Run(kind, func(t *testing.T) {
			fx := newServeFixture(t)
			args := []string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
				"--data-dir", fx.dir, "--no-fetch", "--store-migrate=false"}
			env := mapEnv(map[string]string{"IPATLAS_STORE": store})
			var out, errb bytes.Buffer
			err := run(t.Context(), append([]string{"ipatlas"}, args...), env, strings.NewReader(""), &out, &errb)
			if err == nil || !strings.Contains(err.Error(), "ipatlas db migrate") {
				t.Fatalf("serve --store-migrate=false on a new store: %v, want a refusal naming 'ipatlas db migrate'", err)
			}
			if errors.Is(err, sqlite.ErrNotMigrated) == errors.Is(err, postgres.ErrNotMigrated) {
				t.Fatalf("serve --store-migrate=false: %v, want the store's ErrNotMigrated", err)
			}
			if strings.Contains(out.String(), "ipa_") {
				t.Fatalf("a refused start printed a key:\n%s", out.String())
			}

			if err := run(t.Context(), []string{"ipatlas", "db", "migrate"}, env, strings.NewReader(""), &out, &errb); err != nil {
				t.Fatalf("db migrate: %v\n%s", err, errb.String())
			}
			s := startServe(t, map[string]string{"IPATLAS_STORE": store}, args[1:]...)
			waitOK(t, "http://"+s.admin+"/readyz")
			if err := s.stop(t); err != nil {
				t.Fatalf("serve after db migrate: %v\n%s", err, s.stderr)
			}
		})
	}
}

// A --store that names no store stops serve as a usage mistake, after
// the dataset and the listeners and before any account, without showing
// the DSN's password.
func TestServeUnknownStoreIsUsage(t *testing.T) {
	fx := newServeFixture(t)
	var stdout, stderr bytes.Buffer
	args := append([]string{"ipatlas", "serve"}, serveArgs(fx.dir, "unused", "--admin-token", "test-admin-token-for-the-serve-tests")...)
	args = append(args, "--store", "mysql://admin:hunter2@db/ipatlas")
	err := run(t.Context(), args, mapEnv(nil), strings.NewReader(""), &stdout, &stderr)
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), `unknown store kind "mysql"`) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("serve returned %v (exit %d), want a usage error naming the kind alone", err, exitCode(err))
	}
	var out bytes.Buffer
	printError(&out, err)
	if !strings.Contains(out.String(), "see 'ipatlas serve --help'") {
		t.Errorf("the error does not point to the help:\n%s", out.String())
	}
}
