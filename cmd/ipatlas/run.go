package main

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// env is what every subcommand gets from the outside world; tests pass
// their own.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// commands lists every subcommand. Each lives in its own file.
var commands = []struct {
	name, summary string
	run           func(ctx context.Context, e env, args []string) error
}{
	{"serve", "run the HTTP service", runServe},
	{"db", "fetch, inspect and migrate data (db fetch | info | migrate)", runDB},
	{"lookup", "look up IP addresses (remote, or --local on the data dir)", runLookup},
	{"myip", "show this machine's public IPv4 and IPv6 addresses", runMyIP},
	{"ping", "measure round trips to the service", runPing},
	{"usage", "show the API key's quota and credits", runUsage},
	{"accounts", "manage accounts and tiers", runAccounts},
	{"keys", "manage API keys", runKeys},
	{"credits", "manage credit balances", runCredits},
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) < 2 {
		usage(stderr)
		return usageError("no command given")
	}
	name := args[1]
	switch name {
	case "-h", "--help", "help":
		usage(stdout)
		return nil
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, e, args[2:])
		}
	}
	usage(stderr)
	return usageError(fmt.Sprintf("unknown command %q", name))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: ipatlas <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'ipatlas <command> -h' for a command's flags.")
}

// Exit codes, one per class of failure; documented in the README.
const (
	exitOK       = 0
	exitFailure  = 1 // anything not listed below
	exitUsage    = 2 // bad flags or arguments
	exitInput    = 3 // invalid or non-public address
	exitAuth     = 4 // missing, invalid or revoked API key
	exitQuota    = 5 // monthly quota or credits used up
	exitNetwork  = 6 // the service could not be reached or is unavailable
	exitNotFound = 7 // no such account or key
)

// exitError carries an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(msg string) error { return &exitError{exitUsage, errors.New(msg)} }

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}
