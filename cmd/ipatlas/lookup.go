package main

import (
	"context"
	"errors"
	"slices"
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
