//go:build failpoint

// Package failpoint kills the process at named points of the charge path,
// for the crash tests. Only a binary built with the failpoint tag
// (go build -tags failpoint) can be killed this way; in every other build
// Hit is empty and compiled away.
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Enabled reports whether this build has failpoints.
const Enabled = true

// IPATLAS_FAILPOINT=NAME:N kills the process with SIGKILL the Nth time
// point NAME is hit (N defaults to 1).
var (
	name  string
	after int64 = 1
	hits  atomic.Int64
)

func init() {
	v := os.Getenv("IPATLAS_FAILPOINT")
	if v == "" {
		return
	}
	name = v
	if n, c, ok := strings.Cut(v, ":"); ok {
		name = n
		if k, err := strconv.ParseInt(c, 10, 64); err == nil && k > 0 {
			after = k
		}
	}
}

// Hit kills the process at the Nth hit of the configured point.
func Hit(point string) {
	if point != name || hits.Add(1) != after {
		return
	}
	os.Stderr.WriteString("failpoint " + point + ": SIGKILL\n")
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
