// Command ipatlas is the ipatlas IP information service and its clients:
// the server (serve), data management (db), offline and remote lookups,
// Get-my-IP, ping, and account, key and credit management.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		printError(os.Stderr, err)
		os.Exit(exitCode(err))
	}
}
