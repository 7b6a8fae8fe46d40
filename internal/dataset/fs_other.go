//go:build !unix

package dataset

// lockDir is a no-op where flock is not available: two concurrent fetches
// into one directory are then the operator's mistake to avoid.
func lockDir(dir string) (unlock func(), err error) { return func() {}, nil }

// lockFile is a no-op, as lockDir.
func lockFile(dir, name string) (unlock func(), err error) { return func() {}, nil }

// syncDir is a no-op where directories cannot be fsynced.
func syncDir(dir string) error { return nil }
