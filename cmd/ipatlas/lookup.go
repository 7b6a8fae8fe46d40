package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
)

// runLookup looks addresses up offline on the data dir with --local
// (lookup_local.go), or through the service with the Go client
// (lookup_remote.go).
func runLookup(ctx context.Context, e env, args []string) error {
	if slices.Contains(args, "--local") || slices.Contains(args, "-local") {
		err := runLookupLocal(ctx, e, args)
		var ee *exitError
		if errors.As(err, &ee) && ee.code == exitUsage && ee.hint == "" {
			ee.hint = "lookup --local" // its help is not lookup's
		}
		return err
	}
	return runLookupRemote(ctx, e, args)
}

// readAddresses reads the addresses to look up from standard input, local
// or remote alike: one a line, blank lines and # comments skipped.
func readAddresses(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}
