//go:build !race

package geo_test

const raceEnabled = false
