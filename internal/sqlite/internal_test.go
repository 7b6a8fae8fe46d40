package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

// TestPragmas checks the settings durability and sharing rest on, as the
// connections really have them.
func TestPragmas(t *testing.T) {
	st, err := Open(t.Context(), filepath.Join(t.TempDir(), "a.db"), Options{BusyTimeout: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, c := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"synchronous", "2"}, // FULL
		{"foreign_keys", "1"},
		{"busy_timeout", "7000"},
	} {
		var got string
		if err := st.w.QueryRowContext(t.Context(), "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if strings.ToLower(got) != c.want {
			t.Errorf("writer: PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
	var ro string
	if err := st.r.QueryRowContext(t.Context(), "PRAGMA query_only").Scan(&ro); err != nil || ro != "1" {
		t.Errorf("reader: query_only = %q, %v; want 1", ro, err)
	}
	// The reader pool really cannot write.
	if _, err := st.r.ExecContext(t.Context(), "INSERT INTO accounts (name, tier, created_at) VALUES ('x', 'free', 'now')"); err == nil {
		t.Error("the read pool accepted a write")
	}
}

// TestDSNEscapesPath checks that a file name with URI metacharacters is a
// file name, not parameters.
func TestDSNEscapesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird#name %.db")
	st, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Path() != path {
		t.Fatalf("Path() = %q, want %q", st.Path(), path)
	}
	if err := st.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "we*"))
	if len(matches) == 0 || matches[0] != path {
		t.Fatalf("files made: %v, want %s", matches, path)
	}
}

// BenchStore is a store opened with opts, with one key whose quota and
// balance no benchmark exhausts. It is exported for the package's
// external tests.
func BenchStore(b testing.TB, opts Options) (*Store, account.NewKey) {
	b.Helper()
	st, err := Open(b.Context(), filepath.Join(b.TempDir(), "ipatlas.db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	a, err := st.CreateAccount(b.Context(), account.NewAccount{Name: "b", Tier: account.Enterprise, CustomLimit: 1 << 40, InitialCredits: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	nk := account.GenerateKey(a.ID, time.Now())
	if err := st.CreateKey(b.Context(), nk.Key); err != nil {
		b.Fatal(err)
	}
	return st, nk
}
