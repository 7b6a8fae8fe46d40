package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
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
