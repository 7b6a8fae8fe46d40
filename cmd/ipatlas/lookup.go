package main

import (
	"context"
	"slices"
)

// runLookup looks addresses up offline on the data dir with --local
// (lookup_local.go), or through the service with the Go client
// (lookup_remote.go).
func runLookup(ctx context.Context, e env, args []string) error {
	if slices.Contains(args, "--local") || slices.Contains(args, "-local") {
		return runLookupLocal(ctx, e, args)
	}
	return runLookupRemote(ctx, e, args)
}
