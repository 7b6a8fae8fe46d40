package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/sqlite"
)

// parseStoreDSN splits a --store value into its kind and target. Only the
// scheme is ever echoed in errors: a PostgreSQL DSN may carry a password.
func parseStoreDSN(dsn string) (kind, target string, err error) {
	switch {
	case strings.HasPrefix(dsn, "sqlite:"):
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			return "", "", errors.New(`--store sqlite: needs a path, as in "sqlite:/var/lib/ipatlas/ipatlas.db"`)
		}
		return "sqlite", path, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return "postgres", dsn, nil
	case dsn == "":
		return "", "", errors.New("--store is empty; use sqlite:PATH")
	}
	scheme, _, ok := strings.Cut(dsn, ":")
	if !ok || strings.ContainsAny(scheme, "/@") {
		return "", "", errors.New(`--store: unknown store; use "sqlite:PATH"`)
	}
	return "", "", fmt.Errorf(`--store: unknown store kind %q; use "sqlite:PATH"`, scheme)
}

// storeOptions are serve's store settings. The zero value is what the
// management commands use: migrate if needed, the stores' defaults.
type storeOptions struct {
	// RequireMigrated refuses a store whose schema is behind this binary
	// (serve --store-migrate=false) instead of migrating it; the error
	// names 'ipatlas db migrate'.
	RequireMigrated bool
	// PostgreSQL only; zero takes postgres.Options' defaults.
	MaxConns         int32
	Timeout          time.Duration
	StatementTimeout time.Duration
	// Journal (serve, SQLite only) charges through the store's charge
	// journal and takes its writer lock: a second serve on the same file
	// fails, the management commands still share it.
	Journal bool
	Logger  *slog.Logger
}

// openStore opens the account store a --store DSN names: "sqlite:PATH"
// (created and migrated if needed) or "postgres://..." (migrated if
// needed), unless opts.RequireMigrated. Every command that works on
// accounts goes through here.
func openStore(ctx context.Context, dsn string, opts storeOptions) (account.Store, error) {
	kind, target, err := parseStoreDSN(dsn)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	switch kind {
	case "sqlite":
		// The pool size and timeouts are PostgreSQL's: an embedded
		// database has no connection to wait for or lose.
		return sqlite.Open(ctx, target, sqlite.Options{RequireMigrated: opts.RequireMigrated, Journal: opts.Journal, Logger: opts.Logger})
	case "postgres":
		return postgres.Open(ctx, target, postgres.Options{
			Migrate:          !opts.RequireMigrated,
			MaxConns:         opts.MaxConns,
			Timeout:          opts.Timeout,
			StatementTimeout: opts.StatementTimeout,
		})
	}
	return nil, fmt.Errorf("--store: unsupported store kind %q", kind)
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
// the number of positional arguments.
func (c *mgmtCmd) parse(args []string, positionals int) ([]string, error) {
	return c.parseRange(args, positionals, positionals)
}

// parseRange is parse for a command taking from least to most positional
// arguments.
func (c *mgmtCmd) parseRange(args []string, least, most int) ([]string, error) {
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
	words := strings.Fields(synopsis)
	var names []string
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
		names = append(names, w)
	}
	return names
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
	st, err := openStore(ctx, dsn, storeOptions{})
	if err != nil {
		return nil, nil, err
	}
	return &account.Service{Store: st}, func() { st.Close() }, nil
}

// openAccount is the start of a command whose one argument is an
// account ID: it parses the arguments and opens the store. The caller
// closes it with the returned func.
func (c *mgmtCmd) openAccount(ctx context.Context, args []string) (int64, *account.Service, func(), error) {
	pos, err := c.parse(args, 1)
	if err != nil {
		return 0, nil, nil, err
	}
	id, err := mgmtAccountID(pos[0])
	if err != nil {
		return 0, nil, nil, err
	}
	svc, done, err := c.service(ctx)
	if err != nil {
		return 0, nil, nil, err
	}
	return id, svc, done, nil
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
	case errors.Is(err, account.ErrNotFound):
		return &exitError{code: exitNotFound, err: err}
	case errors.Is(err, account.ErrInvalid):
		return &exitError{code: exitUsage, err: err}
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

// mgmtGroup is a command whose subcommands manage the store; their
// failures get the exit codes of mgmtError, and the audit log names
// their changes' actor "cli".
func mgmtGroup(name, summary string, subs ...*command) *command {
	for _, s := range subs {
		run := s.run
		s.run = func(ctx context.Context, e env, args []string) error {
			return mgmtError(run(account.WithActor(ctx, "cli"), e, args))
		}
	}
	return &command{name: name, summary: summary, subs: subs}
}

// mgmtSub is a subcommand of a management group; usage is its synopsis,
// its name first.
func mgmtSub(usage, summary string, run func(ctx context.Context, e env, args []string) error) *command {
	name, args, _ := strings.Cut(usage, " ")
	return &command{name: name, args: strings.TrimSpace(args), summary: summary, run: run}
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
