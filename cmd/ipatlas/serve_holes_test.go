package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Both listeners of ipatlas serve refuse a request carrying
// Transfer-Encoding with Content-Length, answer it once and close the
// connection: the request hidden after its chunked body is never read.
func TestServeRefusesAmbiguousFraming(t *testing.T) {
	fx := newServeFixture(t)
	s := startServe(t, nil, serveArgs(fx.dir, filepath.Join(t.TempDir(), "s.db"), "--admin-token", "test-admin-token-for-the-serve-tests")...)
	key := keyRe.FindString(s.stdout.String())
	if key == "" {
		t.Fatalf("no key printed:\n%s", s.stdout)
	}
	// Each request, its body read as its chunks say, would succeed.
	for _, tc := range []struct{ name, addr, path, token, body string }{
		{"public", s.public, "/api/ip-query", key, `{"ip":"` + fx.v4 + `"}`},
		{"admin", s.admin, "/admin/accounts", "test-admin-token-for-the-serve-tests", `{"name":"smuggler","tier":"free"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			raw := "POST " + tc.path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tc.token + "\r\n" +
				"Content-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" +
				fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body) + "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
			c, err := net.Dial("tcp", tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second)) // a guard against a hang
			if _, err := io.WriteString(c, raw); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != 400 || !res.Close || !strings.Contains(string(b), `"code":"InvalidRequest"`) {
				t.Errorf("answer %d close=%v %s, want 400 InvalidRequest and a close", res.StatusCode, res.Close, b)
			}
			res, err = http.ReadResponse(br, nil)
			if err == nil {
				t.Fatalf("a second answer on the connection: %d", res.StatusCode)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("after the answer: %v, want the connection closed", err)
			}
		})
	}
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
		path := filepath.Join(dir, adminTokenFile)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, 0o644) // whatever the umask
		tok, err := resolveAdminToken(&serveConfig{DataDir: dir}, log)
		if err != nil {
			t.Fatal(err)
		}
		checkTokenFile(t, path, tok)
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("the data dir holds %d files, want the token file alone", len(entries))
		}
		again, err := resolveAdminToken(&serveConfig{DataDir: dir}, log)
		if err != nil || again != tok {
			t.Errorf("second start: %q %v, want the same token", again, err)
		}
	})
	t.Run("missing file created", func(t *testing.T) {
		dir := t.TempDir()
		tok, err := resolveAdminToken(&serveConfig{DataDir: dir}, log)
		if err != nil {
			t.Fatal(err)
		}
		checkTokenFile(t, filepath.Join(dir, adminTokenFile), tok)
	})
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620} {
		t.Run(fmt.Sprintf("token in a %04o file", mode), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, adminTokenFile)
			if err := os.WriteFile(path, []byte("secret-token\n"), mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			tok, err := resolveAdminToken(&serveConfig{DataDir: dir}, log)
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
		path := filepath.Join(dir, adminTokenFile)
		if err := os.WriteFile(path, []byte(" "+fileToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if tok, err := resolveAdminToken(&serveConfig{DataDir: dir}, log); err != nil || tok != fileToken {
			t.Errorf("got %q, %v", tok, err)
		}
	})
	t.Run("a flag needs no file", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, adminTokenFile)
		os.WriteFile(path, []byte("secret-token\n"), 0o644)
		os.Chmod(path, 0o644)
		if tok, err := resolveAdminToken(&serveConfig{DataDir: dir, AdminToken: "flag"}, log); err != nil || tok != "flag" {
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

// ipatlas serve stops at a token file others may read, before it creates
// the first account, and says how to fix it.
func TestServeRefusesReadableTokenFile(t *testing.T) {
	fx := newServeFixture(t)
	path := filepath.Join(fx.dir, adminTokenFile)
	if err := os.WriteFile(path, []byte("secret-token\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, append([]string{"ipatlas", "serve"}, serveArgs(fx.dir, filepath.Join(t.TempDir(), "s.db"))...),
		mapEnv(nil), strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("serve returned %v, want the fix named", err)
	}
	if strings.Contains(stdout.String(), "ipa_") {
		t.Error("serve created an account and printed its key before refusing")
	}
}
