//go:build unix

package geo

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f read-only; unmap releases them.
// An empty file maps to nil.
func mapFile(f *os.File, size int) (b []byte, unmap func([]byte) error, err error) {
	if size == 0 {
		return nil, nil, nil
	}
	b, err = unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, unix.Munmap, nil
}
