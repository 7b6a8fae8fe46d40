//go:build race

package main

// raceEnabled: the race detector slows the generator tenfold, so the
// check that the committed tables are current runs in builds without it.
const raceEnabled = true
