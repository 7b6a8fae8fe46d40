package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/serve"
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

// ipatlas serve stops at an admin token file that breaks the token rule,
// before it creates the first account, naming the file and the rule.
func TestServeStopsAtBadAdminTokenFile(t *testing.T) {
	fx := newServeFixture(t)
	path := filepath.Join(fx.dir, serve.AdminTokenFile)
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
}

// A token of 32 characters or more that is a pattern is refused from the
// flag and the environment, each time naming where it came from and how
// to get a random one (internal/serve holds the file to the same rule).
func TestAdminTokenPredictableSetting(t *testing.T) {
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
		})
	}
}
