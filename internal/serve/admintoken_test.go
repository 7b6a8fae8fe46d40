package serve

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A token in DATA-DIR/admin-token meets the rule of the flag: a short or
// repeated one stops serve, and the error names the file, what is wrong
// (with the minimum length) and both ways out, without showing the token.
func TestAdminTokenFileRule(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tt := range []struct {
		name, token, want string
	}{
		{"one character", "x", "has 1 character; it must have at least 32"},
		{"31 characters", strings.Repeat("ab", 15) + "c", "has 31 characters; it must have at least 32"},
		{"repeated", strings.Repeat("z", 48), "one character repeated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, AdminTokenFile)
			if err := os.WriteFile(path, []byte(tt.token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			tok, err := resolveAdminToken(&Config{DataDir: dir}, log)
			if err == nil || tok != "" {
				t.Fatalf("got %q, %v; want a refusal", tok, err)
			}
			for _, want := range []string{"admin token file " + path, tt.want, "empty or delete the file", "openssl rand -hex 32"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if len(tt.token) > 1 && strings.Contains(err.Error(), tt.token) {
				t.Error("the error shows the token")
			}
			if b, _ := os.ReadFile(path); string(b) != tt.token+"\n" {
				t.Errorf("the file was changed to %q", b)
			}
		})
	}
}

// A token of 32 characters or more that is a pattern is refused from
// the file, naming it and how to get a random one; a token the service
// generates, and random ones of the shortest length in hex and in decimal
// digits, pass.
func TestAdminTokenPredictable(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tok := range []string{
		strings.Repeat("ab", 16),
		strings.Repeat("password", 4),
		"01234567890123456789012345678901",
		strings.Repeat("a", 31) + "b",
		"abcdefghijklmnopqrstuvwxyz012345",
		strings.Repeat("0123456789abcdef", 2),
		strings.Repeat("a", 24) + "3f9c1e7b", // 32 bits of randomness
	} {
		t.Run(tok, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, AdminTokenFile)
			if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := resolveAdminToken(&Config{DataDir: dir}, log)
			if err == nil || got != "" {
				t.Fatalf("file: got %q, %v; want a refusal", got, err)
			}
			for _, want := range []string{"admin token file " + path, "predictable", "new one generated at the next start, as on the first run"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("file: error %q does not say %q", err, want)
				}
			}
			// (The temporary directory is named after the test.)
			if strings.Contains(strings.ReplaceAll(err.Error(), dir, ""), tok) {
				t.Error("the error shows the token")
			}
		})
	}
	t.Run("generated", func(t *testing.T) {
		dir := t.TempDir()
		tok, err := resolveAdminToken(&Config{DataDir: dir}, log)
		if err != nil {
			t.Fatal(err)
		}
		// Read back at the next start, it passes the rule.
		if again, err := resolveAdminToken(&Config{DataDir: dir}, log); err != nil || again != tok {
			t.Fatalf("the generated token read back: %q, %v", again, err)
		}
		if err := CheckAdminToken(tok); err != nil {
			t.Errorf("the generated token: %v", err)
		}
	})
	t.Run("random", func(t *testing.T) {
		for range 200 {
			b := make([]byte, 16)
			rand.Read(b)
			digits := make([]byte, 32)
			for i := range digits {
				digits[i] = '0' + byte(mrand.IntN(10))
			}
			for _, tok := range []string{hex.EncodeToString(b), string(digits)} {
				if err := CheckAdminToken(tok); err != nil {
					t.Errorf("%s: %v", tok, err)
				}
			}
		}
	})
}

// fileToken is a token that meets the rule, as a person would put in
// DATA-DIR/admin-token.
const fileToken = "c0ffee-token-of-the-admin-file-tests"

// The generated admin token's file is 0600 even when an empty file of
// another mode was there; a token file others may read stops the start
// with what to do.
func TestAdminTokenFileMode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	t.Run("empty file replaced", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, AdminTokenFile)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, 0o644) // whatever the umask
		tok, err := resolveAdminToken(&Config{DataDir: dir}, log)
		if err != nil {
			t.Fatal(err)
		}
		checkTokenFile(t, path, tok)
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("the data dir holds %d files, want the token file alone", len(entries))
		}
		again, err := resolveAdminToken(&Config{DataDir: dir}, log)
		if err != nil || again != tok {
			t.Errorf("second start: %q %v, want the same token", again, err)
		}
	})
	t.Run("missing file created", func(t *testing.T) {
		dir := t.TempDir()
		tok, err := resolveAdminToken(&Config{DataDir: dir}, log)
		if err != nil {
			t.Fatal(err)
		}
		checkTokenFile(t, filepath.Join(dir, AdminTokenFile), tok)
	})
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620} {
		t.Run(fmt.Sprintf("token in a %04o file", mode), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, AdminTokenFile)
			if err := os.WriteFile(path, []byte("secret-token\n"), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			tok, err := resolveAdminToken(&Config{DataDir: dir}, log)
			if err == nil || tok != "" {
				t.Fatalf("got %q, %v; want a refusal", tok, err)
			}
			for _, want := range []string{path, fmt.Sprintf("%04o", mode), "chmod 600"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "secret-token") {
				t.Error("the error shows the token")
			}
			if b, _ := os.ReadFile(path); string(b) != "secret-token\n" {
				t.Errorf("the file was changed to %q", b)
			}
		})
	}
	t.Run("token in a 0600 file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, AdminTokenFile)
		if err := os.WriteFile(path, []byte(" "+fileToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if tok, err := resolveAdminToken(&Config{DataDir: dir}, log); err != nil || tok != fileToken {
			t.Errorf("got %q, %v", tok, err)
		}
	})
	t.Run("a flag needs no file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, AdminTokenFile)
		os.WriteFile(path, []byte("secret-token\n"), 0o644)
		os.Chmod(path, 0o644)
		if tok, err := resolveAdminToken(&Config{DataDir: dir, AdminToken: "flag"}, log); err != nil || tok != "flag" {
			t.Errorf("got %q, %v", tok, err)
		}
	})
}

func checkTokenFile(t *testing.T, path, tok string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %04o, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if len(tok) < 32 || strings.TrimSpace(string(b)) != tok {
		t.Errorf("token %q, file %q", tok, b)
	}
}
