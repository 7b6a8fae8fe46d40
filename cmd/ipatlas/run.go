package main

import (
	"context"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// env is what every subcommand gets from the outside world; tests pass
// their own.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// root is the command tree. Each command lives in its own file.
var root = &command{subs: []*command{
	{name: "serve", summary: "run the HTTP service", run: runServe},
	dbCommand,
	{name: "lookup", args: "IP...", summary: "look up IP addresses (remote, or --local on the data dir)", run: runLookup},
	{name: "myip", summary: "show this machine's public IPv4 and IPv6 addresses", run: runMyIP},
	{name: "ping", summary: "measure round trips to the service", run: runPing},
	{name: "usage", summary: "show the API key's quota and credits", run: runUsage},
	accountsCommand,
	keysCommand,
	creditsCommand,
	{name: "version", summary: "print the module and Go versions", run: runVersion},
}}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) > 0 {
		args = args[1:]
	}
	return root.dispatch(ctx, e, "", args)
}

// printError reports err as main does: one line, and for a usage mistake
// where to read the command's help.
func printError(w io.Writer, err error) {
	msg := err.Error()
	if !strings.HasPrefix(msg, "ipatlas:") { // the client's errors name themselves
		msg = "ipatlas: " + msg
	}
	io.WriteString(w, msg+"\n")
	if h := usageHint(err); h != "" {
		io.WriteString(w, "see '"+h+" --help'\n")
	}
}

// isTerminal reports whether w is a terminal: where a progress bar can
// redraw its line, and a table is easier to read than tab-separated
// values.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
