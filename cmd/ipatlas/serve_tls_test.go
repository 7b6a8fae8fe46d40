package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testCA is a CA that signs server certificates for 127.0.0.1.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ipatlas test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// pair writes a certificate for 127.0.0.1 with the serial number and its
// key as PEM files; it returns their contents.
func (ca *testCA) pair(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return ca.pairWith(t, serial, now.Add(-time.Hour), now.Add(24*time.Hour), key)
}

// pairWith is pair with a validity period and a key of the test's
// choosing.
func (ca *testCA) pairWith(t *testing.T, serial int64, notBefore, notAfter time.Time, key crypto.Signer) (certPEM, keyPEM []byte) {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: notBefore, NotAfter: notAfter, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// writeFile replaces a file as deployment tools do: a new file renamed
// over the old one.
func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// servedSerial is the serial number of the certificate addr serves.
func servedSerial(t *testing.T, addr string, pool *x509.CertPool) int64 {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// waitSerial waits until addr serves the certificate with serial.
func waitSerial(t *testing.T, addr string, pool *x509.CertPool, serial int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); servedSerial(t, addr, pool) != serial; {
		if time.Now().After(deadline) {
			t.Fatalf("still serving serial %d, not %d", servedSerial(t, addr, pool), serial)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A renewed certificate is served once its files change; a pair that
// does not match keeps the one in service.
func TestTLSCertificateReload(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	c1, k1 := ca.pair(t, 100)
	writeFile(t, certFile, c1)
	writeFile(t, keyFile, k1)
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
	if got := servedSerial(t, addr, ca.pool); got != 100 {
		t.Fatalf("serial %d, want 100", got)
	}

	// A certificate whose key is not in the key file: refused, logged.
	c2, k2 := ca.pair(t, 200)
	writeFile(t, certFile, c2)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "TLS certificate not reloaded"); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning of the mismatched pair:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := servedSerial(t, addr, ca.pool); got != 100 {
		t.Errorf("after a mismatched pair, serial %d, want the previous 100", got)
	}

	// Its key arrives: the new pair is served.
	writeFile(t, keyFile, k2)
	waitSerial(t, addr, ca.pool, 200)

	// An explicit reload (what SIGHUP does) reads the files as they are,
	// without the watcher.
	c3, k3 := ca.pair(t, 300)
	stop()
	writeFile(t, certFile, c3)
	writeFile(t, keyFile, k3)
	certs.reload("SIGHUP")
	if got := servedSerial(t, addr, ca.pool); got != 300 {
		t.Errorf("after reload, serial %d, want 300", got)
	}
}

func TestTLSSettingsGoTogether(t *testing.T) {
	for _, args := range [][]string{{"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}} {
		_, err := parseServeConfig(args, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
		if err == nil || !strings.Contains(err.Error(), "--tls-cert and --tls-key go together") {
			t.Errorf("%v: %v", args, err)
		}
	}
	c, err := parseServeConfig([]string{"--tls-cert", "c.pem", "--tls-key", "k.pem"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
	if err != nil || c.TLSCert != "c.pem" || c.TLSKey != "k.pem" {
		t.Errorf("both: %+v, %v", c, err)
	}
	if _, err := newCertReloader(filepath.Join(t.TempDir(), "none.pem"), "none.key", slog.Default()); err == nil ||
		!strings.Contains(err.Error(), "--tls-cert") {
		t.Errorf("a pair that cannot be read: %v", err)
	}
}

// A key file others may read, or its group change, is refused at the
// start with its path, its mode and the chmod to run; on a reload it
// keeps the pair in service. 0600, 0400 and 0640 (a group the server is
// in, as Debian's ssl-cert) are accepted.
func TestTLSKeyFileMode(t *testing.T) {
	ca := newTestCA(t)
	for _, mode := range []os.FileMode{0o644, 0o604, 0o660, 0o606, 0o666, 0o620} {
		dir := t.TempDir()
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		c, k := ca.pair(t, 100)
		writeFile(t, certFile, c)
		writeFile(t, keyFile, k)
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
		c, k := ca.pair(t, 100)
		writeFile(t, certFile, c)
		writeFile(t, keyFile, k)
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
	c1, k1 := ca.pair(t, 100)
	writeFile(t, certFile, c1)
	writeFile(t, keyFile, k1)
	logs := &syncBuffer{}
	certs, err := newCertReloader(certFile, keyFile, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c2, k2 := ca.pair(t, 200)
	writeFile(t, certFile, c2)
	writeFile(t, keyFile, k2)
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
	ca := newTestCA(t)
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
		c, k := ca.pairWith(t, 1, now.Add(-time.Hour), now.Add(time.Hour), key)
		writeFile(t, certFile, c)
		writeFile(t, keyFile, k)
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
			conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1",
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
		if conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}); err != nil {
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
	ca := newTestCA(t)
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
			c, k := ca.pairWith(t, 7, tt.notBefore, tt.notAfter, key)
			writeFile(t, certFile, c)
			writeFile(t, keyFile, k)
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

// --hsts-max-age is a year by default; 0 turns the header off, from any
// source; a negative one is a usage error.
func TestHSTSSetting(t *testing.T) {
	e := testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"}))
	if c, err := parseServeConfig(nil, e); err != nil || c.HSTSMaxAge != 365*24*time.Hour {
		t.Errorf("default: %v, %v", c.HSTSMaxAge, err)
	}
	if c, err := parseServeConfig(nil, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d", "IPATLAS_HSTS_MAX_AGE": "0"}))); err != nil || c.HSTSMaxAge != 0 {
		t.Errorf("IPATLAS_HSTS_MAX_AGE=0: %v, %v", c.HSTSMaxAge, err)
	}
	if c, err := parseServeConfig([]string{"--hsts-max-age", "24h"}, e); err != nil || c.HSTSMaxAge != 24*time.Hour {
		t.Errorf("--hsts-max-age 24h: %v, %v", c.HSTSMaxAge, err)
	}
	if _, err := parseServeConfig([]string{"--hsts-max-age", "-1s"}, e); err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--hsts-max-age") {
		t.Errorf("--hsts-max-age -1s: %v", err)
	}
}
