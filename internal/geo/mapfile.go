package geo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// mapping is a file's bytes, mapped where the platform can map files, and
// what releases them.
type mapping struct {
	buf   []byte
	unmap func([]byte) error // nil when buf is the heap's
}

// release unmaps the bytes; they must not be used after.
func (m *mapping) release() error {
	if m.unmap == nil {
		return nil
	}
	err := m.unmap(m.buf)
	m.unmap, m.buf = nil, nil
	return err
}

// mapIndex maps the index file at path: nil and no error when there is
// none, errBad when it is larger than max bytes.
func mapIndex(path string, max int64, errBad error) (*mapping, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%w: larger than %d bytes", errBad, max)
	}
	b, unmap, err := mapFile(f, int(fi.Size()))
	if err != nil {
		return nil, err
	}
	return &mapping{buf: b, unmap: unmap}, nil
}
