package main

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
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
	arg0   string // how the program was started: os.Args[0]

	// maxFeedShare is geo.Options.MaxFeedShare of the engines that serve
	// and db info open; 0 is geo's bound. No setting changes it: the
	// tests raise it, since their small dataset announces so little that
	// any feed is a large share of it.
	maxFeedShare float64
}

// selfCommand is how a printed hint runs this program again: "ipatlas",
// or "go run ./cmd/ipatlas" (the README's form) when go run started it, since
// go run's binary lives in a temporary go-build directory that is gone
// when it exits and "ipatlas" may be on no PATH.
func (e env) selfCommand() string {
	dir := filepath.ToSlash(filepath.Dir(e.arg0))
	if path.Base(dir) == "exe" && strings.Contains(dir, "/go-build") {
		return "go run ./cmd/ipatlas"
	}
	return "ipatlas"
}

// root is the command tree. Each command lives in its own file.
var root = &command{subs: []*command{
	{name: "serve", summary: "run the HTTP service", run: runServe},
	dbCommand,
	{name: "lookup", args: "IP...", summary: "look up IP addresses (remote, or --local on the data dir)", run: runLookup},
	{name: "summarize", args: "IP...", summary: "count a list of addresses by country, AS, route and privacy flag", run: runSummarize},
	{name: "asn", args: "AS...", summary: "show an autonomous system: name, country, prefixes", run: runASN},
	{name: "myip", summary: "show this machine's public IPv4 and IPv6 addresses", run: runMyIP},
	{name: "ping", summary: "measure round trips to the service", run: runPing},
	{name: "usage", summary: "show the API key's quota and credits", run: runUsage},
	accountsCommand,
	keysCommand,
	creditsCommand,
	storeCommand,
	{name: "healthcheck", summary: "exit 0 when a local server is ready (a container's health check)", run: runHealthcheck},
	{name: "version", summary: "print the module and Go versions", run: runVersion},
}}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}.run(ctx, args)
}

// run runs the command line args (the program's name first) in e.
func (e env) run(ctx context.Context, args []string) error {
	if len(args) > 0 {
		e.arg0, args = args[0], args[1:]
	}
	return root.dispatch(ctx, e, "", args)
}

// printError reports err as main does: one line, and for a usage mistake
// where to read the command's help.
func printError(w io.Writer, err error) {
	io.WriteString(w, errorLine(err)+"\n")
	if h := usageHint(err); h != "" {
		io.WriteString(w, "see '"+h+" --help'\n")
	}
}

// errorLine is err as one line that names the program once. The Go
// client's errors name their package, which is also "ipatlas", so a
// command that wraps one ("lookup: 1 of 4 addresses failed; the first:
// ipatlas: InvalidIP: ...") would otherwise say it twice.
// errors.Join's lines become one, each part without the name. An error
// may quote a service's answer, so it is printed as printable makes it.
func errorLine(err error) string {
	parts := strings.Split(err.Error(), "\n")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.TrimPrefix(p, "ipatlas: "), ": ipatlas: ", ": ")
	}
	return "ipatlas: " + printable(strings.Join(parts, "; "))
}

// isTerminal reports whether w is a terminal: where a progress bar can
// redraw its line, and a table is easier to read than tab-separated
// values.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
