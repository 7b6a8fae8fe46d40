//go:build !failpoint

// Package failpoint kills the process at named points of the charge path,
// for the crash tests. Only a binary built with the failpoint tag
// (go build -tags failpoint) can be killed this way; in every other build
// Hit is empty and compiled away.
package failpoint

// Enabled reports whether this build has failpoints.
const Enabled = false

// Hit marks a point; in this build it does nothing.
func Hit(string) {}
