//go:build race

package realdata

const raceEnabled = true
