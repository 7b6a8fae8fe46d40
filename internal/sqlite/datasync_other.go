//go:build unix && !linux

package sqlite

import "os"

// datasync makes a file's data durable.
func datasync(f *os.File) error { return f.Sync() }
