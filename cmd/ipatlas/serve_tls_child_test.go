//go:build unix

package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/tlstest"
)

// `ipatlas serve --tls-cert --tls-key` answers HTTPS on the public
// listener, and reads its certificate pair again on SIGHUP.
func TestServeTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the test runs the binary")
	}
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	c1, k1 := ca.Pair(t, 100)
	tlstest.WriteFile(t, certFile, c1)
	tlstest.WriteFile(t, keyFile, k1)
	fx := newServeFixture(t)
	srv := startChild(t, ipatlasBinary(t), "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--data-dir", fx.dir,
		"--store", "sqlite:"+filepath.Join(t.TempDir(), "ipatlas.db"), "--no-fetch", "--tor-interval", "0", "--privacy-interval", "0",
		"--tls-cert", certFile, "--tls-key", keyFile)
	srv.waitLog(t, "https://"+srv.public+"/")

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}}
	resp, err := hc.Get("https://" + srv.public + "/api/ping")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 100 {
		t.Fatalf("GET /api/ping over TLS: %d", resp.StatusCode)
	}
	// ipatlas ends TLS itself: browsers are told to keep to HTTPS, for
	// the default year.
	if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
		t.Errorf("Strict-Transport-Security %q, want max-age=31536000", got)
	}
	if m := getText(t, "http://"+srv.admin+"/metrics"); !strings.Contains(m, "\nipatlas_tls_certificate_valid 1\n") ||
		!strings.Contains(m, "\nipatlas_tls_certificate_not_after_timestamp_seconds ") {
		t.Errorf("/metrics lacks the certificate's validity")
	}
	if resp, err := http.Get("http://" + srv.public + "/api/ping"); err == nil && resp.StatusCode == http.StatusOK {
		t.Errorf("plain HTTP answered on the TLS listener")
	}

	c2, k2 := ca.Pair(t, 200)
	tlstest.WriteFile(t, certFile, c2)
	tlstest.WriteFile(t, keyFile, k2)
	srv.cmd.Process.Signal(syscall.SIGHUP)
	srv.waitLog(t, "why=SIGHUP")
	if got := tlstest.ServedSerial(t, srv.public, ca.Pool); got != 200 {
		t.Errorf("after SIGHUP, serial %d, want 200", got)
	}
}

// getText is the body of a GET that must answer 200.
func getText(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}
