//go:build race

package main

import "testing"

// skipKillTestUnderRace skips a test that kills or cuts off child
// servers, under the race detector. Such a test checks that no charge is
// lost or doubled across kills and outages, which is not what the race
// detector looks at, while under it every child runs it too, several
// times slower: the five took 175 s of the package's 575 s on a loaded
// 2-core machine, next to go test's 10-minute default. They run without
// -race, as .ci/run does after the race step.
func skipKillTestUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("under -race: a kill test's children would run the race detector too; it checks durability across kills, and runs without -race, as .ci/run's kill and outage step does")
}
