package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/serve"
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

// ipatlas serve stops at a token file others may read, before it creates
// the first account, and says how to fix it.
func TestServeRefusesReadableTokenFile(t *testing.T) {
	fx := newServeFixture(t)
	path := filepath.Join(fx.dir, serve.AdminTokenFile)
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
