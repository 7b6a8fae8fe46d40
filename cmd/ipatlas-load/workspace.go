package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// workspace is what every mode needs before it starts a server: a
// temporary directory (kept with -keep), the ipatlas binary and the
// dataset to serve.
type workspace struct {
	tmp      string
	bin      string
	dataDir  string
	dataDesc string         // how the report describes the data
	inside   []netip.Prefix // the generated networks, queried inside them; nil for a real dataset
	token    string         // the admin token of every server this run starts
	extra    []string       // -server-args
	env      []string       // -server-env
	logf     func(format string, args ...any)
}

// newWorkspace makes the temporary directory; the returned func removes it
// unless -keep was given.
func newWorkspace(o options, prefix string, stderr io.Writer) (*workspace, func(), error) {
	tok := make([]byte, 16)
	rand.Read(tok)
	w := &workspace{
		token: hex.EncodeToString(tok),
		extra: strings.Fields(o.serverArgs),
		env:   strings.Fields(o.serverEnv),
		logf:  func(format string, args ...any) { fmt.Fprintf(stderr, "ipatlas-load: "+format+"\n", args...) },
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	w.tmp = tmp
	if o.keep {
		fmt.Fprintln(stderr, "keeping", tmp)
		return w, func() {}, nil
	}
	return w, func() { os.RemoveAll(tmp) }, nil
}

// prepare builds ipatlas (unless -ipatlas names a binary) and generates the
// dataset (unless -data-dir names a real one).
func (w *workspace) prepare(ctx context.Context, o options) error {
	w.bin = o.binary
	if w.bin == "" {
		w.bin = filepath.Join(w.tmp, "ipatlas")
		w.logf("building ipatlas")
		if _, err := runTool(ctx, "go", "build", "-o", w.bin, "github.com/ipatlas/ipatlas/cmd/ipatlas"); err != nil {
			return err
		}
	}
	w.dataDir, w.dataDesc = o.dataDir, "real dataset in "+o.dataDir
	if w.dataDir == "" {
		w.dataDir = filepath.Join(w.tmp, "data")
		w.logf("generating a dataset of %d IPv4 and %d IPv6 networks", o.networks, o.networks)
		inside, err := makeFixture(w.dataDir, o.networks, o.seed)
		if err != nil {
			return fmt.Errorf("generating the dataset: %w", err)
		}
		w.inside = inside
		w.dataDesc = fmt.Sprintf("generated dataset, %d networks per family, queried inside them", o.networks)
	}
	return nil
}

// serverProc is one running "ipatlas serve" of a run.
type serverProc struct {
	*proc
	public, admin string // host:port of the public and the admin listener
}

// startServer runs "ipatlas serve" on loopback ports with the workspace's
// dataset, on store, with args and then -server-args, logging to
// logName in the workspace; it returns once the admin listener says the
// server is ready. The admin token goes by the environment: a flag would
// show in ps. stop it with proc.stop.
func (w *workspace) startServer(ctx context.Context, logName, store string, args ...string) (*serverProc, error) {
	addrFile := filepath.Join(w.tmp, strings.TrimSuffix(logName, filepath.Ext(logName))+".addrs.json")
	all := []string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--addr-file", addrFile,
		"--data-dir", w.dataDir, "--store", store, "--no-fetch"}
	all = append(append(all, args...), w.extra...)
	p, err := startProc(filepath.Join(w.tmp, logName), append(append(os.Environ(), w.env...), "IPATLAS_ADMIN_TOKEN="+w.token), w.bin, all...)
	if err != nil {
		return nil, err
	}
	addrs, err := p.waitAddrs(60*time.Second, addrFile)
	if err == nil {
		err = waitHealthy(ctx, newClient(1), "http://"+addrs.Admin+"/readyz", 60*time.Second)
	}
	if err != nil {
		if serr := p.stop(10 * time.Second); serr != nil {
			w.logf("stopping %s: %v", logName, serr)
		}
		return nil, err
	}
	return &serverProc{proc: p, public: addrs.Public, admin: addrs.Admin}, nil
}
