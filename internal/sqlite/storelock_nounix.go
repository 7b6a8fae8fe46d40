//go:build !unix

package sqlite

import "io"

// lockStore has nothing to take where the journal is not built.
func lockStore(string) (io.Closer, error) { return nil, nil }
