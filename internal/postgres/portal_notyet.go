package postgres

import "errors"

// errNotYet marks a store method whose implementation is in progress.
var errNotYet = errors.New("postgres: not implemented yet")
