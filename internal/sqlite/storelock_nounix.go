//go:build !unix

package sqlite

import (
	"errors"
	"io"
)

// ErrStoreLocked is never returned where the journal is not built.
var ErrStoreLocked = errors.New("the database is in use by another ipatlas serve")

// lockStore has nothing to take where the journal is not built.
func lockStore(string) (io.Closer, error) { return nil, nil }
