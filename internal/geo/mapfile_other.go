//go:build !unix

package geo

import (
	"io"
	"os"
)

// mapFile reads the first size bytes of f where files cannot be mapped;
// the memory is the heap's, so there is nothing to release.
func mapFile(f *os.File, size int) ([]byte, func([]byte) error, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(f, b)
	return b, nil, err
}
