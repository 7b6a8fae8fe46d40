package main

import (
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
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

// load returns the package's tarball, checked against its integrity hash.
// With dir set (a directory of tarballs as saved by `npm pack`), it reads
// the tarball from there, and a tarball missing there is downloaded and
// saved into dir once it has passed the check, so that dir works as a
// cache; without dir it downloads from the registry.
func (p pinned) load(dir, registry string) ([]byte, error) {
	path := ""
	if dir != "" {
		path = filepath.Join(dir, p.tarball())
		tgz, err := os.ReadFile(path)
		if err == nil {
			return tgz, p.check(tgz)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	tgz, err := download(registry + "/" + p.name + "/-/" + p.tarball())
	if err != nil {
		return nil, err
	}
	if err := p.check(tgz); err != nil {
		return nil, err
	}
	if path != "" {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, tgz, 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, err
		}
	}
	return tgz, nil
}

func (p pinned) check(tgz []byte) error {
	sum := sha512.Sum512(tgz)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != p.integrity {
		return fmt.Errorf("%s@%s: integrity %s, want %s", p.name, p.version, got, p.integrity)
	}
	return nil
}
