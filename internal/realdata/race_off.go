//go:build !race

package realdata

const raceEnabled = false
