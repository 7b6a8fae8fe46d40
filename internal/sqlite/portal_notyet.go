package sqlite

import "errors"

// errNotYet marks a store method whose implementation is in progress.
var errNotYet = errors.New("sqlite: not implemented yet")
