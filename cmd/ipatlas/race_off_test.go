//go:build !race

package main

import "testing"

// skipKillTestUnderRace: see race_on_test.go.
func skipKillTestUnderRace(*testing.T) {}
