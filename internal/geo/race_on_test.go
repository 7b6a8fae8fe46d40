//go:build race

package geo_test

// raceEnabled: the race detector's shadow memory multiplies RSS, so memory
// budgets are measured only in builds without it.
const raceEnabled = true
