//go:build race

package main

// raceEnabled: the test binary, and so every child process that runs it
// as ipatlas (ipatlasBinary), is under the race detector, several times
// slower.
const raceEnabled = true
