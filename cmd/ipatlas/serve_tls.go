package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// The public listener over TLS (--tls-cert, --tls-key): HTTP/1.1 over
// TLS 1.2 or later, with the certificate pair read again on SIGHUP and
// once either file has changed and stayed unchanged for certQuiet (on the
// file system's notice, and at the latest at the next certPoll), so that
// a renewal (certbot, cert-manager, an ACME client's deploy hook) needs
// no restart. A pair that cannot be loaded (a half-written file, a key
// that is not the certificate's) keeps the pair in service, with a
// warning; the next change is tried again.

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
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate (--tls-cert %s, --tls-key %s): %w", certFile, keyFile, err)
	}
	c.cur.Store(&cert)
	return c, nil
}

// listener is ln serving TLS with the pair in service.
func (c *certReloader) listener(ln net.Listener) net.Listener {
	return tls.NewListener(ln, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return c.cur.Load(), nil },
		MinVersion:     tls.VersionTLS12,
		// net/http serves HTTP/2 only on a *tls.Conn it can see; the
		// framing guard wraps the connection (server.GuardFraming).
		NextProtos: []string{"http/1.1"},
	})
}

// reload reads the pair again; on failure the pair in service stays.
func (c *certReloader) reload(why string) {
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
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
