package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
)

// The public listener over TLS (--tls-cert, --tls-key): HTTP/1.1 over
// TLS 1.2 or later, with the certificate pair read again on SIGHUP and
// once either file has changed and stayed unchanged for certQuiet (on the
// file system's notice, and at the latest at the next certPoll), so that
// a renewal (certbot, cert-manager, an ACME client's deploy hook) needs
// no restart. A pair that cannot be loaded (a half-written file, a key
// that is not the certificate's, a key file others may read) keeps the
// pair in service, with a warning; the next change is tried again.

const (
	certQuiet = 500 * time.Millisecond
	certPoll  = 10 * time.Second
)

// certReloader holds the certificate pair in service.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	cur               atomic.Pointer[tls.Certificate]
}

// newCertReloader loads the pair, or says why it cannot.
func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	c := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	cert, err := loadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate (--tls-cert %s, --tls-key %s): %w", certFile, keyFile, err)
	}
	c.cur.Store(&cert)
	c.warnValidity(&cert)
	return c, nil
}

// loadKeyPair is tls.LoadX509KeyPair with the key file's mode checked
// first, on the file read: a private key that other users of the host
// may read is a key to replace, and serving with it would hide that.
// Group read stays allowed (0640), for the convention of a key owned by
// root and readable by a group the service is in (Debian's ssl-cert);
// group write, or any access by others, is refused.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	f, err := os.Open(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tls.Certificate{}, err
	}
	if perm := fi.Mode().Perm(); perm&0o027 != 0 && runtime.GOOS != "windows" {
		return tls.Certificate{}, fmt.Errorf("the key file %s has mode %04o: others can read it, or its group can change it; "+
			"run 'chmod 600 %s' (or 640 for a group the server is in), and consider the key leaked: replace the certificate", keyFile, perm, keyFile)
	}
	keyPEM, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// tlsCipherSuites are the TLS 1.2 suites offered: ECDHE with an AEAD
// cipher only. Go's defaults still offer AES-CBC with SHA-1 MACs for old
// clients; every client that can call this API speaks one of these. (TLS
// 1.3's suites are all AEAD, and not configurable.)
var tlsCipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// listener is ln serving TLS with the pair in service.
func (c *certReloader) listener(ln net.Listener) net.Listener {
	return tls.NewListener(ln, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cur.Load(), nil },
		MinVersion:     tls.VersionTLS12,
		CipherSuites:   tlsCipherSuites,
		// net/http serves HTTP/2 only on a *tls.Conn it can see; the
		// framing guard wraps the connection (server.GuardFraming).
		NextProtos: []string{"http/1.1"},
	})
}

// reload reads the pair again; on failure the pair in service stays.
func (c *certReloader) reload(why string) {
	cert, err := loadKeyPair(c.certFile, c.keyFile)
	if err != nil {
		c.log.Warn("TLS certificate not reloaded; still serving the previous one", "why", why, "cert", c.certFile, "key", c.keyFile, "err", err)
		return
	}
	c.cur.Store(&cert)
	attrs := []any{"why", why, "cert", c.certFile}
	if cert.Leaf != nil {
		attrs = append(attrs, "subject", cert.Leaf.Subject.String(), "not_after", cert.Leaf.NotAfter)
	}
	c.log.Info("TLS certificate reloaded", attrs...)
	c.warnValidity(&cert)
}

// warnValidity warns of a certificate put in service outside its
// validity: clients refuse it, so the listener serves nobody who checks.
// It still goes in service (the renewal may be on its way, and the
// previous one is no better); ipatlas_tls_certificate_valid says so for
// as long as it lasts.
func (c *certReloader) warnValidity(cert *tls.Certificate) {
	leaf := cert.Leaf
	if leaf == nil {
		return
	}
	now := time.Now()
	switch {
	case now.After(leaf.NotAfter):
		c.log.Warn("TLS certificate in service has expired: clients will refuse it; renew it", "cert", c.certFile,
			"subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	case now.Before(leaf.NotBefore):
		c.log.Warn("TLS certificate in service is not valid yet: clients will refuse it; check the clock or the certificate", "cert", c.certFile,
			"subject", leaf.Subject.String(), "not_before", leaf.NotBefore)
	}
}

// register exports the validity of the certificate in service: its end,
// for an alert days ahead, and whether it is valid now, at each scrape.
func (c *certReloader) register(reg prometheus.Registerer) {
	leaf := func() *x509.Certificate {
		if cert := c.cur.Load(); cert != nil {
			return cert.Leaf
		}
		return nil
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ipatlas", Subsystem: "tls", Name: "certificate_not_after_timestamp_seconds",
			Help: "When the public listener's certificate in service expires, in Unix seconds."},
			func() float64 {
				if l := leaf(); l != nil {
					return float64(l.NotAfter.Unix())
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ipatlas", Subsystem: "tls", Name: "certificate_valid",
			Help: "1 while the public listener's certificate in service is within its validity period, 0 when it has expired or is not valid yet."},
			func() float64 {
				now := time.Now()
				if l := leaf(); l != nil && !now.Before(l.NotBefore) && !now.After(l.NotAfter) {
					return 1
				}
				return 0
			}),
	)
}

// watch reloads the pair once either file has changed and settled, until
// ctx is done.
func (c *certReloader) watch(ctx context.Context) {
	sigs := func() [2]fileSig {
		a, _ := sigOf(c.certFile)
		b, _ := sigOf(c.keyFile)
		return [2]fileSig{a, b}
	}
	last := sigs()
	var events <-chan fsnotify.Event
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		dirs := map[string]bool{filepath.Dir(c.certFile): true, filepath.Dir(c.keyFile): true}
		watching := true
		for d := range dirs {
			if err := w.Add(d); err != nil {
				c.log.Warn("not watching the TLS certificate's directory; looking at the files every few seconds", "dir", d, "err", err)
				watching = false
			}
		}
		if watching {
			events = w.Events
		}
	}
	names := map[string]bool{filepath.Base(c.certFile): true, filepath.Base(c.keyFile): true}
	poll := time.NewTicker(certPoll)
	defer poll.Stop()
	quiet := time.NewTimer(certQuiet)
	quiet.Stop()
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if names[filepath.Base(ev.Name)] {
				quiet.Reset(certQuiet)
			}
		case <-poll.C:
			if s := sigs(); !s[0].same(last[0]) || !s[1].same(last[1]) {
				quiet.Reset(certQuiet)
			}
		case <-quiet.C:
			s := sigs()
			if s[0].same(last[0]) && s[1].same(last[1]) {
				continue
			}
			last = s
			c.reload("the files changed")
		}
	}
}
