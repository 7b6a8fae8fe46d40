// Package addrfile is the file in which a server reports the addresses its
// listeners are bound to, so that whoever started it on port 0 (a test, a
// load harness, a supervisor) learns the ports without reading its log.
//
// The file holds one JSON object, {"public": "HOST:PORT", "admin":
// "HOST:PORT"}, and appears whole: it is written to a temporary name in
// the same directory and renamed.
package addrfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Addrs are the bound addresses of a server's listeners, as
// net.Listener.Addr().String() writes them.
type Addrs struct {
	Public string `json:"public"`
	Admin  string `json:"admin,omitempty"` // "" for a server without an admin listener
}

// Write writes a to path atomically.
func Write(path string, a Addrs) error {
	if a.Public == "" {
		return errors.New("addrfile: no public address")
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// Read reads the addresses at path. Before the server has written them the
// error satisfies errors.Is(err, fs.ErrNotExist).
func Read(path string) (Addrs, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Addrs{}, err
	}
	var a Addrs
	if err := json.Unmarshal(b, &a); err != nil {
		return Addrs{}, fmt.Errorf("%s: %w", path, err)
	}
	if a.Public == "" {
		return Addrs{}, fmt.Errorf("%s: no public address", path)
	}
	return a, nil
}
