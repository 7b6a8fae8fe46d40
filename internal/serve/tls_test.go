package serve

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/tlstest"
	"github.com/prometheus/client_golang/prometheus"
)

// A renewed certificate is served once its files change; a pair that
// does not match keeps the one in service.
func TestTLSCertificateReload(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	c1, k1 := ca.Pair(t, 100)
	tlstest.WriteFile(t, certFile, c1)
	tlstest.WriteFile(t, keyFile, k1)
	logs := &syncBuffer{}
	certs, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.NotFoundHandler(), ErrorLog: log.New(io.Discard, "", 0)}
	go hs.Serve(certs.listener(ln))
	t.Cleanup(func() { hs.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { certs.watch(ctx); close(done) }()
	stop := sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	addr := ln.Addr().String()
	if got := tlstest.ServedSerial(t, addr, ca.Pool); got != 100 {
		t.Fatalf("serial %d, want 100", got)
	}

	// A certificate whose key is not in the key file: refused, logged.
	c2, k2 := ca.Pair(t, 200)
	tlstest.WriteFile(t, certFile, c2)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "TLS certificate not reloaded"); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning of the mismatched pair:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := tlstest.ServedSerial(t, addr, ca.Pool); got != 100 {
		t.Errorf("after a mismatched pair, serial %d, want the previous 100", got)
	}

	// Its key arrives: the new pair is served.
	tlstest.WriteFile(t, keyFile, k2)
	tlstest.WaitSerial(t, addr, ca.Pool, 200)

	// An explicit reload (what SIGHUP does) reads the files as they are,
	// without the watcher.
	c3, k3 := ca.Pair(t, 300)
	stop()
	tlstest.WriteFile(t, certFile, c3)
	tlstest.WriteFile(t, keyFile, k3)
	certs.reload("SIGHUP")
	if got := tlstest.ServedSerial(t, addr, ca.Pool); got != 300 {
		t.Errorf("after reload, serial %d, want 300", got)
	}
}

// A key file others may read, or its group change, is refused at the
// start with its path, its mode and the chmod to run; on a reload it
// keeps the pair in service. 0600, 0400 and 0640 (a group the server is
// in, as Debian's ssl-cert) are accepted.
func TestTLSKeyFileMode(t *testing.T) {
	ca := tlstest.NewCA(t)
	for _, mode := range []os.FileMode{0o644, 0o604, 0o660, 0o606, 0o666, 0o620} {
		dir := t.TempDir()
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		c, k := ca.Pair(t, 100)
		tlstest.WriteFile(t, certFile, c)
		tlstest.WriteFile(t, keyFile, k)
		if err := os.Chmod(keyFile, mode); err != nil {
			t.Fatal(err)
		}
		_, err := newCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler))
		if err == nil {
			t.Errorf("a key file of mode %04o was accepted", mode)
			continue
		}
		for _, want := range []string{keyFile, fmt.Sprintf("mode %04o", mode), "chmod 600 " + keyFile, "--tls-key"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("mode %04o: error %q does not say %q", mode, err, want)
			}
		}
	}
	for _, mode := range []os.FileMode{0o600, 0o400, 0o640} {
		dir := t.TempDir()
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		c, k := ca.Pair(t, 100)
		tlstest.WriteFile(t, certFile, c)
		tlstest.WriteFile(t, keyFile, k)
		if err := os.Chmod(keyFile, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := newCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler)); err != nil {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}

	// A renewal whose key file others may read is not put in service.
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	c1, k1 := ca.Pair(t, 100)
	tlstest.WriteFile(t, certFile, c1)
	tlstest.WriteFile(t, keyFile, k1)
	logs := &syncBuffer{}
	certs, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c2, k2 := ca.Pair(t, 200)
	tlstest.WriteFile(t, certFile, c2)
	tlstest.WriteFile(t, keyFile, k2)
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	certs.reload("SIGHUP")
	if got := certs.cur.Load().Leaf.SerialNumber.Int64(); got != 100 {
		t.Errorf("serving serial %d after a reload with a world-readable key, want the previous 100", got)
	}
	if !strings.Contains(logs.String(), "TLS certificate not reloaded") || !strings.Contains(logs.String(), "mode 0644") {
		t.Errorf("no warning naming the mode:\n%s", logs)
	}
}

// Over TLS 1.2 the listener agrees only to ECDHE suites with an AEAD
// cipher (AES-GCM, ChaCha20-Poly1305), with an ECDSA and with an RSA
// certificate: every CBC suite and every suite without forward secrecy
// that Go can speak is refused.
func TestTLSCipherSuites(t *testing.T) {
	ca := tlstest.NewCA(t)
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var all []*tls.CipherSuite
	all = append(append(all, tls.CipherSuites()...), tls.InsecureCipherSuites()...)
	for _, key := range []crypto.Signer{ecKey, rsaKey} {
		dir := t.TempDir()
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		now := time.Now()
		c, k := ca.PairWith(t, 1, now.Add(-time.Hour), now.Add(time.Hour), key)
		tlstest.WriteFile(t, certFile, c)
		tlstest.WriteFile(t, keyFile, k)
		certs, err := newCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := &http.Server{Handler: http.NotFoundHandler(), ErrorLog: log.New(io.Discard, "", 0)}
		go hs.Serve(certs.listener(ln))
		var accepted []string
		for _, cs := range all {
			if !slices.Contains(cs.SupportedVersions, tls.VersionTLS12) {
				continue
			}
			conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1",
				MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{cs.ID}})
			if err != nil {
				continue
			}
			conn.Close()
			accepted = append(accepted, cs.Name)
			if !strings.HasPrefix(cs.Name, "TLS_ECDHE_") || !strings.Contains(cs.Name, "_GCM_") && !strings.Contains(cs.Name, "_CHACHA20_POLY1305") {
				t.Errorf("%T key: TLS 1.2 agreed to %s", key, cs.Name)
			}
		}
		if len(accepted) != 3 {
			t.Errorf("%T key: TLS 1.2 agreed to %v, want its 3 ECDHE AEAD suites", key, accepted)
		}
		// TLS 1.3 still works, with its own suites (all AEAD).
		if conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}); err != nil {
			t.Errorf("%T key: TLS 1.3: %v", key, err)
		} else {
			conn.Close()
		}
		hs.Close()
	}
}

// A certificate put in service outside its validity (expired, or not
// valid yet, relative to the real clock) is served with a warning, at the
// start and on a reload, and ipatlas_tls_certificate_valid is 0 while it
// is in service; a valid one is 1, without a warning. The expiry is
// exported for alerts.
func TestTLSCertificateValidity(t *testing.T) {
	ca := tlstest.NewCA(t)
	now := time.Now()
	for _, tt := range []struct {
		name                string
		notBefore, notAfter time.Time
		warn                string
		valid               float64
	}{
		{"expired", now.Add(-48 * time.Hour), now.Add(-time.Hour), "has expired", 0},
		{"not valid yet", now.Add(time.Hour), now.Add(48 * time.Hour), "is not valid yet", 0},
		{"valid", now.Add(-time.Hour), now.Add(48 * time.Hour), "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
			c, k := ca.PairWith(t, 7, tt.notBefore, tt.notAfter, key)
			tlstest.WriteFile(t, certFile, c)
			tlstest.WriteFile(t, keyFile, k)
			logs := &syncBuffer{}
			certs, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			certs.reload("SIGHUP")
			reg := prometheus.NewRegistry()
			certs.register(reg)
			if got := gaugeValue(t, reg, "ipatlas_tls_certificate_valid"); got != tt.valid {
				t.Errorf("ipatlas_tls_certificate_valid = %v, want %v", got, tt.valid)
			}
			if got := gaugeValue(t, reg, "ipatlas_tls_certificate_not_after_timestamp_seconds"); got != float64(tt.notAfter.Unix()) {
				t.Errorf("not_after = %v, want %v", got, tt.notAfter.Unix())
			}
			warnings := strings.Count(logs.String(), "level=WARN")
			switch {
			case tt.warn == "" && warnings != 0:
				t.Errorf("warnings for a valid certificate:\n%s", logs)
			case tt.warn != "" && (warnings != 2 || strings.Count(logs.String(), tt.warn) != 2):
				t.Errorf("want a warning %q at the start and at the reload:\n%s", tt.warn, logs)
			}
		})
	}
}

// gaugeValue is the value of the one gauge named name in reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A pair that cannot be read stops the start, naming the setting.
func TestTLSPairUnreadable(t *testing.T) {
	if _, err := newCertReloader(filepath.Join(t.TempDir(), "none.pem"), "none.key", slog.Default()); err == nil ||
		!strings.Contains(err.Error(), "--tls-cert") {
		t.Errorf("a pair that cannot be read: %v", err)
	}
}
