package main

// The management commands' runner: each subcommand of accounts, keys,
// credits and store (and db migrate) declares its flags, the check of its
// arguments, its call on the account service and how it prints the
// result as text; mgmtSub does the rest, in the same order for every one:
// parse, check, open the store, call, close, print JSON or text.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/accountstore"
)

// mgmtOp is a management subcommand as it declares itself.
type mgmtOp[T any] struct {
	// check reads the positional arguments (their number is the
	// synopsis's, checked already) and the flags' values before the store
	// opens, so that a mistake is a usage error that touches no store;
	// nil when there is nothing to check.
	check func(pos []string) error
	// call is the work on the account service.
	call func(ctx context.Context, svc *account.Service) (T, error)
	// onDSN, in place of call, is work on the store the --store setting
	// names (its schema, its files): no service is opened.
	onDSN func(ctx context.Context, dsn string) (T, error)
	// json is what --json prints; nil prints the result itself.
	json func(v T) any
	// text prints the result for a person.
	text func(c *mgmtCmd, v T) error
}

// mgmtLeaf is a management subcommand, made for the group it is in (its
// flag set is named "GROUP NAME").
type mgmtLeaf func(group string) *command

// mgmtSub is a management subcommand: usage is its synopsis, its name
// first, from which its positional arguments are counted; declare adds
// its flags to c and returns what it does.
func mgmtSub[T any](usage, summary string, declare func(c *mgmtCmd) mgmtOp[T]) mgmtLeaf {
	name, args, _ := strings.Cut(usage, " ")
	return func(group string) *command {
		return &command{name: name, args: strings.TrimSpace(args), summary: summary,
			run: func(ctx context.Context, e env, argv []string) error {
				return runMgmt(ctx, newMgmtCmd(e, group+" "+name, usage), declare, argv)
			}}
	}
}

// runMgmt runs one management subcommand: parse, check, open the store,
// call, close the store, print.
func runMgmt[T any](ctx context.Context, c *mgmtCmd, declare func(c *mgmtCmd) mgmtOp[T], args []string) error {
	op := declare(c)
	least, most := arity(c.usage)
	pos, err := c.parse(args, least, most)
	if err != nil {
		return err
	}
	if op.check != nil {
		if err := op.check(pos); err != nil {
			return err
		}
	}
	var v T
	if op.onDSN != nil {
		dsn, err := c.storeDSN()
		if err != nil {
			return err
		}
		if v, err = op.onDSN(ctx, dsn); err != nil {
			return err
		}
	} else {
		svc, done, err := c.service(ctx)
		if err != nil {
			return err
		}
		defer done()
		if v, err = op.call(ctx, svc); err != nil {
			return err
		}
	}
	if c.json {
		if op.json != nil {
			return c.printJSON(op.json(v))
		}
		return c.printJSON(v)
	}
	return op.text(c, v)
}

// mgmtGroup is a command whose subcommands manage the store; their
// failures get the exit codes of mgmtError, and the audit log names
// their changes' actor "cli".
func mgmtGroup(name, summary string, leaves ...mgmtLeaf) *command {
	subs := make([]*command, len(leaves))
	for i, l := range leaves {
		s := l(name)
		run := s.run
		s.run = func(ctx context.Context, e env, args []string) error {
			return mgmtError(run(account.WithActor(ctx, "cli"), e, args))
		}
		subs[i] = s
	}
	return &command{name: name, summary: summary, subs: subs}
}

// mgmtCmd is what the account, key and credit commands share: their flag
// set with --store and --json, and the service on the opened store.
type mgmtCmd struct {
	e      env
	fs     *flag.FlagSet
	store  string // as given; resolved by service
	config string
	json   bool
	usage  string // synopsis after the group's name
}

func newMgmtCmd(e env, name, usage string) *mgmtCmd {
	c := &mgmtCmd{e: e, fs: flag.NewFlagSet(name, flag.ContinueOnError), usage: usage}
	c.fs.StringVar(&c.store, "store", "", "account store `DSN`: sqlite:PATH or postgres://... (env IPATLAS_STORE; default sqlite:DATA-DIR/ipatlas.db)")
	c.fs.StringVar(&c.config, "config", "", "config `file` (env IPATLAS_CONFIG)")
	c.fs.BoolVar(&c.json, "json", false, "print JSON")
	return c
}

// parse reads the flags wherever they are among the arguments and checks
// that there are from least to most positional arguments.
func (c *mgmtCmd) parse(args []string, least, most int) ([]string, error) {
	pos, err := parseArgs(c.e, c.fs, args, func(w io.Writer) {
		group, _, _ := strings.Cut(c.fs.Name(), " ")
		fmt.Fprintf(w, "usage: ipatlas %s %s\n\nFlags:\n", group, c.usage)
		printFlags(w, c.fs)
	})
	if err != nil {
		return nil, err
	}
	if msg := countArgs(positionals(c.usage), least, most, pos); msg != "" {
		return nil, usageError(c.fs.Name() + ": " + msg)
	}
	return pos, nil
}

// countArgs says what is wrong with the number of positional arguments
// pos, naming them from names (the synopsis's, in order), or "" when it is
// right: "missing ACCOUNT_ID", not a count the user has to map back to
// the synopsis.
func countArgs(names []string, least, most int, pos []string) string {
	switch {
	case len(pos) < least:
		missing := names[min(len(pos), len(names)):min(least, len(names))]
		if len(missing) == 0 {
			return fmt.Sprintf("want %s, got %d", plural(least, "argument", "arguments"), len(pos))
		}
		return "missing " + strings.Join(missing, " and ")
	case len(pos) > most && most == 0:
		return fmt.Sprintf("takes no arguments, got %q", pos)
	case len(pos) > most:
		return fmt.Sprintf("too many arguments: want %s, got %q", strings.Join(names, " "), pos)
	}
	return ""
}

// positionals lists the positional arguments of a synopsis such as
// "set-tier ACCOUNT_ID free|pro|enterprise [--monthly-limit N]" or "audit
// [ACCOUNT_ID] [--limit N]": every word after the command's name that is
// neither a flag nor a flag's value, optional ones without their brackets.
func positionals(synopsis string) []string {
	names, _ := synopsisArgs(synopsis)
	return names
}

// arity is how many positional arguments a synopsis takes: at least those
// without brackets, at most all of them.
func arity(synopsis string) (least, most int) {
	names, optional := synopsisArgs(synopsis)
	return len(names) - optional, len(names)
}

// synopsisArgs is positionals and how many of them are optional.
func synopsisArgs(synopsis string) (names []string, optional int) {
	words := strings.Fields(synopsis)
	for i := 1; i < len(words); i++ {
		w := strings.Trim(words[i], "[]")
		if strings.HasPrefix(w, "-") {
			// A flag's value follows it unless the flag is closed with
			// its bracket or the next word is a flag itself.
			if !strings.HasSuffix(words[i], "]") && i+1 < len(words) && !strings.HasPrefix(strings.Trim(words[i+1], "[]"), "-") {
				i++
			}
			continue
		}
		if strings.HasPrefix(words[i], "[") {
			optional++
		}
		names = append(names, w)
	}
	return names, optional
}

// storeDSN is --store, else IPATLAS_STORE, else the config file's, else
// the SQLite file in the data dir.
func (c *mgmtCmd) storeDSN() (string, error) {
	ls, err := resolveLocal(c.e, c.config, "", c.store)
	return ls.store, err
}

// service opens the store; the caller closes it with the returned func.
func (c *mgmtCmd) service(ctx context.Context) (*account.Service, func(), error) {
	dsn, err := c.storeDSN()
	if err != nil {
		return nil, nil, err
	}
	st, err := accountstore.Open(ctx, dsn, accountstore.Options{})
	if err != nil {
		return nil, nil, err
	}
	return &account.Service{Store: st}, func() { st.Close() }, nil
}

// printJSON writes v as indented JSON.
func (c *mgmtCmd) printJSON(v any) error {
	enc := json.NewEncoder(c.e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *mgmtCmd) table() *tabwriter.Writer {
	return tabwriter.NewWriter(c.e.stdout, 0, 0, 2, ' ', 0)
}

// mgmtError gives a management failure its exit code.
func mgmtError(err error) error {
	var ee *exitError
	switch {
	case err == nil || errors.As(err, &ee):
		return err
	case errors.Is(err, accountstore.ErrDSN), errors.Is(err, account.ErrInvalid):
		return &exitError{code: exitUsage, err: err}
	case errors.Is(err, account.ErrNotFound):
		return &exitError{code: exitNotFound, err: err}
	case errors.Is(err, account.ErrInsufficient):
		return &exitError{code: exitQuota, err: err}
	case errors.Is(err, account.ErrUnavailable):
		return &exitError{code: exitNetwork, err: err}
	}
	return err
}

// mgmtAccountID reads an account ID argument.
func mgmtAccountID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usageError(fmt.Sprintf("%q is not an account ID (a positive number)", s))
	}
	return id, nil
}

// mgmtTime is how the management commands' tables show a time.
func mgmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// oneLine keeps a free text (a reason, a note, an audit detail) on its
// table row: every run of white space, newlines included, is one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// mgmtFlagSet reports whether a flag was given on the command line, to
// tell "--credits 0" from no --credits at all.
func mgmtFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
