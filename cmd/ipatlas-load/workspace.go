package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
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
	logf     func(format string, args ...any)
}

// newWorkspace makes the temporary directory; the returned func removes it
// unless -keep was given.
func newWorkspace(o options, prefix string, stderr io.Writer) (*workspace, func(), error) {
	w := &workspace{logf: func(format string, args ...any) { fmt.Fprintf(stderr, "ipatlas-load: "+format+"\n", args...) }}
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
