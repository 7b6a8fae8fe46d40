package sqlite

import (
	"os"
	"syscall"
)

// datasync makes a file's data (and its size) durable without its other
// metadata.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
