package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/geo"
)

func lookupLocalHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas lookup --local [flags] IP...
       ipatlas lookup --local [flags] -          (addresses from standard input, one per line)
       ipatlas lookup --local [flags] --file FILE   (addresses from FILE, one per line)

Looks addresses up offline with the engine the service uses, on the
datasets of the data dir (fetch them with 'ipatlas db fetch'), printing
them in the order given. Malformed and non-public addresses are refused
with the reasons and codes the service gives. It takes lookup's flags and
prints the same formats.

`, lookupFieldsHelp, "\n\n", lookupInputHelp, "\n\n", lookupOutputHelp, `

Exit status: 0 when every address was looked up; with a refused address,
3 (with several addresses, the error names how many and the first); 2 for
bad flags; 1 for anything else (such as a missing dataset).

Flags:
`)
	printFlags(w, fs)
}

func runLookupLocal(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lookup --local", flag.ContinueOnError)
	fs.Bool("local", true, "look up offline on the data dir (this mode)")
	dirFlag := fs.String("data-dir", "", "data `DIR`ectory (env IPATLAS_DATA_DIR; default $XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas)")
	configFlag := fs.String("config", "", "config `file` (env IPATLAS_CONFIG)")
	lf := addLookupFlags(fs)
	pos, err := parseArgs(e, fs, args, func(w io.Writer) { lookupLocalHelp(w, fs) })
	if err != nil {
		return err
	}
	job, err := lf.job(e, "lookup --local", pos)
	if err != nil {
		return err
	}
	ls, err := resolveLocal(e, *configFlag, *dirFlag, "")
	if err != nil {
		return err
	}

	// Refuse what must be refused before touching the data dir, so that a
	// typo is reported as such even without a dataset.
	outcomes := make([]lookupOutcome, len(job.ips))
	addrs := make([]netip.Addr, len(job.ips))
	valid := 0
	for i, s := range job.ips {
		outcomes[i].input = strings.TrimSpace(s)
		a, rerr := checkAddress(s, job.lang)
		if rerr != nil {
			outcomes[i].err = rerr
			continue
		}
		addrs[i] = a
		valid++
	}
	if valid > 0 {
		engine, err := geo.Open(ls.dataDir, geo.Options{BuiltinPrivacy: true})
		if err != nil {
			return fmt.Errorf("lookup --local: %w (fetch the datasets with 'ipatlas db fetch --data-dir %s')", err, ls.dataDir)
		}
		defer engine.Close()
		for i := range outcomes {
			if outcomes[i].err != nil {
				continue
			}
			if outcomes[i].res.Record, err = engine.Lookup(addrs[i], job.lang); err != nil {
				return fmt.Errorf("lookup --local: %s: %w", addrs[i], err)
			}
		}
	}

	rep := job.report(e.stdout)
	for i := range outcomes {
		if err := rep.add(&outcomes[i]); err != nil {
			return err
		}
	}
	return rep.finish()
}

// checkAddress parses s strictly and refuses non-public addresses with
// the Go client's check, so that a local refusal reads exactly like a
// remote one, in lang.
// The refusal is an *ipatlas.Error.
func checkAddress(s string, lang ipatlas.Lang) (netip.Addr, error) {
	canon, err := client.CheckAddress(s, lang)
	if err != nil {
		var e *ipatlas.Error
		if !errors.As(err, &e) {
			e = &ipatlas.Error{Code: ipatlas.CodeInvalidIP, Message: err.Error()}
		}
		return netip.Addr{}, e
	}
	return netip.MustParseAddr(canon), nil
}
