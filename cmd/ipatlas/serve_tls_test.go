package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
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
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
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
