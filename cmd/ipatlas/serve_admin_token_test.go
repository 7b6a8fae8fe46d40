package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An admin token shorter than 32 characters stops serve with a usage
// error naming the setting, from the flag and from the environment,
// before anything listens or opens the store.
func TestServeRefusesShortAdminToken(t *testing.T) {
	fx := newServeFixture(t)
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"--admin-token", "a"}, nil},
		{"flag of 31", []string{"--admin-token", strings.Repeat("x", 31)}, nil},
		{"environment", nil, map[string]string{"IPATLAS_ADMIN_TOKEN": "short-token"}},
	} {
		storePath := filepath.Join(t.TempDir(), "s.db")
		var stderr bytes.Buffer
		err := run(context.Background(), append([]string{"ipatlas", "serve"}, serveArgs(fx.dir, storePath, tt.args...)...),
			mapEnv(tt.env), strings.NewReader(""), &bytes.Buffer{}, &stderr)
		if err == nil || !strings.Contains(err.Error(), "admin-token") || !strings.Contains(err.Error(), "at least 32") {
			t.Errorf("%s: error %v, want one naming --admin-token and its minimum", tt.name, err)
			continue
		}
		if exitCode(err) != exitUsage {
			t.Errorf("%s: exit code %d, want %d", tt.name, exitCode(err), exitUsage)
		}
	}
}

// A token of one character repeated is refused like a short one, from
// the flag and from the environment: long, and still a first guess.
func TestServeRefusesRepeatedAdminToken(t *testing.T) {
	fx := newServeFixture(t)
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"--admin-token", strings.Repeat("a", 40)}, nil},
		{"environment", nil, map[string]string{"IPATLAS_ADMIN_TOKEN": strings.Repeat("0", 64)}},
	} {
		storePath := filepath.Join(t.TempDir(), "s.db")
		// Without the rule serve would start: the deadline ends it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := run(ctx, append([]string{"ipatlas", "serve"}, serveArgs(fx.dir, storePath, tt.args...)...),
			mapEnv(tt.env), strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "ADMIN") && !strings.Contains(err.Error(), "admin-token") ||
			!strings.Contains(err.Error(), "one character repeated") || !strings.Contains(err.Error(), "openssl rand") {
			t.Errorf("%s: error %v, want one naming the setting, the repetition and how to make a token", tt.name, err)
			continue
		}
		if exitCode(err) != exitUsage {
			t.Errorf("%s: exit code %d, want %d", tt.name, exitCode(err), exitUsage)
		}
	}
}

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
			path := filepath.Join(dir, adminTokenFile)
			if err := os.WriteFile(path, []byte(tt.token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			tok, err := resolveAdminToken(&serveConfig{DataDir: dir}, log)
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
	t.Run("serve stops", func(t *testing.T) {
		fx := newServeFixture(t)
		path := filepath.Join(fx.dir, adminTokenFile)
		if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := run(ctx, append([]string{"ipatlas", "serve"}, serveArgs(fx.dir, filepath.Join(t.TempDir(), "s.db"))...),
			mapEnv(nil), strings.NewReader(""), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "at least 32") {
			t.Fatalf("serve returned %v, want the file and the rule named", err)
		}
		if strings.Contains(stdout.String(), "ipa_") {
			t.Error("serve created an account and printed its key before refusing")
		}
	})
}

// A token of 32 characters or more that is a pattern is refused from the
// flag, the environment and the file, each time naming where it came
// from and how to get a random one; a token ipatlas generates, and random
// ones of the shortest length in hex and in decimal digits, pass.
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
			e := testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"}))
			if _, err := parseServeConfig([]string{"--admin-token", tok}, e); err == nil ||
				!strings.Contains(err.Error(), "--admin-token") || !strings.Contains(err.Error(), "predictable") ||
				!strings.Contains(err.Error(), "openssl rand") || exitCode(err) != exitUsage {
				t.Errorf("flag: %v (exit %d), want a usage error naming the flag, the reason and a way out", err, exitCode(err))
			}
			e = testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d", "IPATLAS_ADMIN_TOKEN": tok}))
			if _, err := parseServeConfig(nil, e); err == nil || !strings.Contains(err.Error(), "IPATLAS_ADMIN_TOKEN") ||
				!strings.Contains(err.Error(), "predictable") {
				t.Errorf("environment: %v", err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, adminTokenFile)
			if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := resolveAdminToken(&serveConfig{DataDir: dir}, log)
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
		tok, err := resolveAdminToken(&serveConfig{DataDir: dir}, log)
		if err != nil {
			t.Fatal(err)
		}
		// Read back at the next start, it passes the rule.
		if again, err := resolveAdminToken(&serveConfig{DataDir: dir}, log); err != nil || again != tok {
			t.Fatalf("the generated token read back: %q, %v", again, err)
		}
		if err := checkAdminToken(tok); err != nil {
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
				if err := checkAdminToken(tok); err != nil {
					t.Errorf("%s: %v", tok, err)
				}
			}
		}
	})
}
