// Package failpoint kills the process at named points of the charge path,
// for the crash tests. A point does nothing until Arm names it, and only
// test code arms one: no flag, setting or environment variable of the
// program does, so a served binary cannot be made to kill itself. An
// unarmed Hit is one atomic load.
package failpoint

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// point is the armed point: its name, the hit that kills, and the hits
// so far.
type point struct {
	name  string
	after int64
	hits  atomic.Int64
}

var armed atomic.Pointer[point]

// Arm makes the Nth hit of point NAME kill the process with SIGKILL;
// spec is "NAME" (the first hit) or "NAME:N".
func Arm(spec string) {
	p := &point{name: spec, after: 1}
	if n, c, ok := strings.Cut(spec, ":"); ok {
		p.name = n
		if k, err := strconv.ParseInt(c, 10, 64); err == nil && k > 0 {
			p.after = k
		}
	}
	armed.Store(p)
}

// Hit marks point name: the armed point's Nth hit kills the process.
func Hit(name string) {
	p := armed.Load()
	if p == nil || p.name != name || p.hits.Add(1) != p.after {
		return
	}
	os.Stderr.WriteString("failpoint " + name + ": SIGKILL\n")
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
