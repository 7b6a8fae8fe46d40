//go:build race

package geo

// raceBuild: the race detector slows lookups tenfold, so tests that only
// measure skip under it.
const raceBuild = true
