package main

// The command framework every subcommand uses: one command type, one
// dispatcher for groups of subcommands (the program itself, db, accounts,
// keys, credits), one parser for flags mixed with arguments, and one way
// of printing flags.
//
// Conventions: -h or --help prints help on stdout and exits 0; a usage
// mistake prints one line and "see 'ipatlas CMD --help'" on stderr and
// exits 2.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// command is one node of the command tree: a leaf runs, a group
// dispatches to its subcommands.
type command struct {
	name    string
	args    string // synopsis after the name, as in "create --account ACCOUNT_ID"
	summary string
	run     func(ctx context.Context, e env, args []string) error // leaf only
	subs    []*command                                            // group only
}

// errHelp means help was asked for and printed: the command succeeds.
var errHelp = errors.New("help requested")

// dispatch runs c with args; path is the command's words after "ipatlas".
func (c *command) dispatch(ctx context.Context, e env, path string, args []string) error {
	if c.subs == nil {
		err := c.run(ctx, e, args)
		if errors.Is(err, errHelp) {
			return nil
		}
		var ee *exitError
		if errors.As(err, &ee) && ee.code == exitUsage && ee.hint == "" {
			ee.hint = path
		}
		return err
	}
	if len(args) == 0 {
		// A bare name is how a newcomer asks what the program or group can
		// do, so it answers with the command list on stdout and succeeds,
		// as kubectl and gh do; a name it does not know is the mistake.
		c.help(e.stdout, path)
		return nil
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		c.help(e.stdout, path)
		return nil
	}
	if path == "" && (args[0] == "--version" || args[0] == "-version") {
		return printVersion(e.stdout)
	}
	for _, s := range c.subs {
		if s.name == args[0] {
			return s.dispatch(ctx, e, strings.TrimSpace(path+" "+s.name), args[1:])
		}
	}
	if strings.HasPrefix(args[0], "-") {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: unknown flag %s", c.label(path), args[0]), hint: path}
	}
	msg := fmt.Sprintf("%s: unknown command %q", c.label(path), args[0])
	if near := c.nearest(args[0]); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return &exitError{code: exitUsage, err: errors.New(msg), hint: path}
}

// nearest is the subcommand a mistyped name most likely meant: the one
// closest by edit distance, when that is at most a third of the name
// (and at least one edit), so that "lokup" finds "lookup" but "x" finds
// nothing.
func (c *command) nearest(name string) string {
	best, bestD := "", max(1, len([]rune(name))/3)+1
	for _, s := range c.subs {
		if d := editDistance(name, s.name); d < bestD {
			best, bestD = s.name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and
// b: the fewest insertions, deletions, substitutions and swaps of two
// neighbouring runes that turn one into the other. Swaps count as one
// edit because "shwo" is one slip of the fingers, not two.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func (c *command) label(path string) string {
	if path == "" {
		return "ipatlas"
	}
	return path
}

// help lists a group's subcommands.
func (c *command) help(w io.Writer, path string) {
	p := strings.TrimSpace("ipatlas " + path)
	fmt.Fprintf(w, "usage: %s <command> [flags] [arguments]\n", p)
	if c.summary != "" && path != "" {
		fmt.Fprintf(w, "\n%s.\n", upperFirst(c.summary))
	}
	fmt.Fprintln(w, "\ncommands:")
	for _, s := range c.subs {
		left := s.name
		if s.args != "" {
			left += " " + s.args
		}
		if len(left) > 24 {
			fmt.Fprintf(w, "  %s\n  %-24s %s\n", left, "", s.summary)
			continue
		}
		fmt.Fprintf(w, "  %-24s %s\n", left, s.summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags.\n", p)
	if path == "" {
		fmt.Fprint(w, "'ipatlas version' (or --version) prints the version.\n\n", settingsHelp)
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parseArgs parses fs's flags wherever they appear among args
// ("lookup 8.8.8.8 --lang zh", "credits add 1 50 --reason x") and returns
// the other arguments. "--" ends the flags; an argument that reads as a
// negative number is an argument ("credits add 1 -50"). -h or --help
// prints help on stdout and returns errHelp; a mistake is a usage error.
func parseArgs(e env, fs *flag.FlagSet, args []string, help func(io.Writer)) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		name := strings.TrimLeft(a, "-")
		f := fs.Lookup(name)
		if len(a) < 2 || a[0] != '-' || (f == nil && isNumber(a)) {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		if strings.Contains(name, "=") {
			continue
		}
		if f == nil {
			continue // Parse reports it
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help(e.stdout)
			return nil, errHelp
		}
		return nil, usageError(fmt.Sprintf("%s: %s", fs.Name(), strings.Replace(err.Error(), " -", " --", 1)))
	}
	return append(pos, fs.Args()...), nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// noArgs refuses arguments to a command that takes none.
func noArgs(name string, pos []string) error {
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("%s takes no arguments, got %q", name, pos))
	}
	return nil
}

// printFlags prints fs's flags as --name, except those in skip.
func printFlags(w io.Writer, fs *flag.FlagSet, skip ...string) {
	fs.VisitAll(func(f *flag.Flag) {
		for _, s := range skip {
			if s == f.Name {
				return
			}
		}
		arg, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if arg != "" {
			name += " " + strings.ToUpper(arg)
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" {
			usage += " (default " + def + ")"
		}
		if len(name) > 20 {
			fmt.Fprintf(w, "  %s\n  %-20s %s\n", name, "", usage)
			return
		}
		fmt.Fprintf(w, "  %-20s %s\n", name, usage)
	})
}

// moduleVersion is the version of the module this binary was built from:
// the release tag under `go install ...@vX.Y.Z`, the pseudo-version
// `go build` stamps from the repository, or "devel" where neither is
// known (`go run`, or a build with -buildvcs=false).
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	return v
}

// revisionOf is the commit the binary was built from, from the build
// settings `go build` records in a repository: the first 12 digits of the
// revision, its commit time, and "modified" when the tree had changes
// not committed. It is empty where the build recorded none.
func revisionOf(bi *debug.BuildInfo) string {
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	out := "rev " + rev
	if at != "" {
		out += " " + at
	}
	if modified {
		out += " modified"
	}
	return out
}

// printVersion writes one line: the module version, the commit when the
// build recorded one, the Go version and the platform.
func printVersion(w io.Writer) error {
	v, rev := "devel", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		v, rev = versionOf(bi), revisionOf(bi)
	}
	if rev != "" {
		v += " (" + rev + ")"
	}
	_, err := fmt.Fprintf(w, "ipatlas %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

func runVersion(_ context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	pos, err := parseArgs(e, fs, args, func(w io.Writer) {
		fmt.Fprintln(w, "usage: ipatlas version\n\nPrints the module version of this binary, the commit it was built from\n(when the build recorded one), and the Go version that built it.")
	})
	if err != nil {
		return err
	}
	if err := noArgs("version", pos); err != nil {
		return err
	}
	return printVersion(e.stdout)
}
