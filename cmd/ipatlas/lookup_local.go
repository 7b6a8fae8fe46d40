package main

import (
	"context"
	"encoding/json"
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

const lookupLocalHelp = `usage: ipatlas lookup --local [--data-dir DIR] [--lang zh] [--json] IP...
       ipatlas lookup --local [flags] -     (addresses from standard input, one per line)

Looks addresses up offline with the engine the service uses, on the
datasets of the data dir (fetch them with 'ipatlas db fetch'). Malformed and
non-public addresses are refused with their reason.

Output: a block of every field per address; with --json, one JSON object
per address per line: the record, or {"ip": ..., "error": ..., "code": ...}
with code InvalidIP or PrivateIP.

Exit status: 0 when every address was looked up, 3 when any was refused,
2 for bad flags, 1 for anything else (such as a missing dataset).

Flags:
`

// localOutcome is one address's answer: a record, or a refusal.
type localOutcome struct {
	input string
	addr  netip.Addr
	rec   ipatlas.Record
	err   *ipatlas.Error
}

func runLookupLocal(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lookup --local", flag.ContinueOnError)
	fs.Bool("local", true, "look up offline on the data dir (this mode)")
	dirFlag := fs.String("data-dir", "", "data `DIR`ectory (env IPATLAS_DATA_DIR; default $XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas)")
	configFlag := fs.String("config", "", "config `file` (env IPATLAS_CONFIG)")
	langName := fs.String("lang", "en", "text values in `LANG`: en or zh")
	jsonOut := fs.Bool("json", false, "one JSON object per address per line")
	ips, err := parseArgs(e, fs, args, func(w io.Writer) {
		fmt.Fprint(w, lookupLocalHelp)
		printFlags(w, fs)
	})
	if err != nil {
		return err
	}
	lang, ok := ipatlas.ParseLang(*langName)
	if !ok {
		return usageError(fmt.Sprintf("lookup --local: --lang %q: want en or zh", *langName))
	}
	ls, err := resolveLocal(e, *configFlag, *dirFlag, "")
	if err != nil {
		return err
	}
	dir := &ls.dataDir
	if len(ips) == 1 && ips[0] == "-" {
		if ips, err = readAddresses(e.stdin); err != nil {
			return fmt.Errorf("lookup --local: reading standard input: %w", err)
		}
	}
	if len(ips) == 0 {
		return usageError("lookup --local: give at least one address, or - to read them from standard input")
	}

	// Refuse what must be refused before touching the data dir, so that a
	// typo is reported as such even without a dataset.
	outcomes := make([]localOutcome, len(ips))
	valid := 0
	for i, s := range ips {
		a, rerr := checkAddress(s, lang)
		outcomes[i] = localOutcome{input: strings.TrimSpace(s), addr: a, err: rerr}
		if rerr == nil {
			valid++
		}
	}
	if valid > 0 {
		engine, err := geo.Open(*dir, geo.Options{BuiltinPrivacy: true})
		if err != nil {
			return fmt.Errorf("lookup --local: %w (fetch the datasets with 'ipatlas db fetch --data-dir %s')", err, *dir)
		}
		defer engine.Close()
		for i := range outcomes {
			if outcomes[i].err != nil {
				continue
			}
			a := outcomes[i].addr
			if outcomes[i].rec, err = engine.Lookup(a, lang); err != nil {
				return fmt.Errorf("lookup --local: %s: %w", a, err)
			}
		}
	}

	var first *ipatlas.Error
	refused := 0
	for i, o := range outcomes {
		if o.err != nil {
			refused++
			if first == nil {
				first = o.err
			}
		}
		var err error
		if *jsonOut {
			err = writeLocalJSON(e.stdout, o)
		} else {
			if i > 0 {
				if _, err := fmt.Fprintln(e.stdout); err != nil {
					return err
				}
			}
			err = writeLocalBlock(e.stdout, o)
		}
		if err != nil {
			return err
		}
	}
	switch {
	case refused == 0:
		return nil
	case len(outcomes) == 1:
		return &exitError{code: exitInput, err: fmt.Errorf("lookup --local: %s [%s]", first.Message, first.Code)}
	}
	return &exitError{code: exitInput, err: fmt.Errorf("lookup --local: %d of %d addresses refused; the first: %s [%s]", refused, len(outcomes), first.Message, first.Code)}
}

// checkAddress parses s strictly and refuses non-public addresses with
// the Go client's check, so that a local refusal reads exactly like a
// remote one, in lang.
func checkAddress(s string, lang ipatlas.Lang) (netip.Addr, *ipatlas.Error) {
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

func writeLocalJSON(w io.Writer, o localOutcome) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if o.err != nil {
		return enc.Encode(struct {
			IP    string            `json:"ip"`
			Error string            `json:"error"`
			Code  ipatlas.ErrorCode `json:"code"`
		}{o.input, o.err.Message, o.err.Code})
	}
	return enc.Encode(o.rec)
}

// writeLocalBlock prints the default fields of the record (no host name:
// a local lookup makes no DNS query) under their JSON names,
// aligned; "-" marks an unknown value.
func writeLocalBlock(w io.Writer, o localOutcome) error {
	var b strings.Builder
	line := func(k, v string) {
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(&b, "%-15s %s\n", k, v)
	}
	if o.err != nil {
		line("ip", o.input)
		line("error", o.err.Message)
		line("code", string(o.err.Code))
		_, err := io.WriteString(w, b.String())
		return err
	}
	for _, k := range ipatlas.FieldSet(0).Names() {
		line(k, recordField(&o.rec, k))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
