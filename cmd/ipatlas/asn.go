package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

func asnHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas asn [flags] AS...

Shows what the service knows of each autonomous system, in the order given
(GET /api/asn/{asn} with the API key; each one is metered as one query):
its name, its country (where it announces most of its addresses), whether
it is a hosting network (on the datacenter AS list), the IPv4 addresses it
announces, and every announced prefix with its size.

An AS is written AS15169, as15169 or 15169. A malformed one is refused
before any request and costs nothing; one the data does not know costs
nothing either.

Output: the AS as aligned lines; with --json, one JSON object per AS per
line: the service's data object, or {"asn": ..., "error": ..., "code": ...}.

Flags:
`)
	clientFlagsHelp(w, fs)
	fmt.Fprint(w, "\n", clientSettingsHelp, "\n", clientExitHelp,
		"  With several AS numbers, the exit code is that of the first one that failed.\n")
}

func runASN(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("asn", flag.ContinueOnError)
	cf := addClientFlags(fs)
	langName := fs.String("lang", "en", "the country's name in `LANG`: en or zh")
	jsonOut := fs.Bool("json", false, "one JSON object per AS per line")
	ases, err := parseArgs(e, fs, args, func(w io.Writer) { asnHelp(w, fs) })
	if err != nil {
		return err
	}
	lang, ok := ipatlas.ParseLang(*langName)
	if !ok {
		return usageError(fmt.Sprintf("asn: --lang %q: want en or zh", *langName))
	}
	if len(ases) == 0 {
		return usageError("asn: give at least one AS number, e.g. AS15169")
	}
	c, err := cf.keyedClient(e, "asn")
	if err != nil {
		return err
	}
	var first error
	failed := 0
	var last *client.ASResult
	for i, in := range ases {
		res, err := c.AS(ctx, in, lang)
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		} else {
			last = &res
		}
		if *jsonOut {
			err = printASJSON(e.stdout, in, res, err)
		} else {
			err = printAS(e.stdout, in, res, err, i > 0)
		}
		if err != nil {
			return err
		}
	}
	if !*jsonOut && last != nil && isTerminal(e.stdout) {
		fmt.Fprintln(e.stderr, quotaLine(&client.LookupResult{Meta: last.Meta, RateLimit: last.RateLimit}))
	}
	switch {
	case failed == 0:
		return nil
	case len(ases) == 1:
		return clientExit(first)
	}
	return &exitError{code: clientExitCode(first), err: fmt.Errorf("asn: %d of %s failed; the first: %w", failed, plural(len(ases), "AS number", "AS numbers"), first)}
}

func printASJSON(w io.Writer, in string, res client.ASResult, err error) error {
	if err == nil {
		return writeJSONLine(w, res.AS)
	}
	v := struct {
		ASN   string            `json:"asn"`
		Error string            `json:"error"`
		Code  ipatlas.ErrorCode `json:"code,omitempty"`
	}{ASN: in, Error: err.Error()}
	var e *ipatlas.Error
	if errors.As(err, &e) {
		v.Code = e.Code
	}
	return writeJSONLine(w, v)
}

// printAS shows one AS for a person: its facts, then its prefixes one a
// line with their sizes; a blank line before each AS but the first.
func printAS(w io.Writer, in string, res client.ASResult, err error, gap bool) error {
	if gap {
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	if err != nil {
		return writeAligned(w, [][]string{{"AS", in}, {"error", errorText(err)}})
	}
	a := res.AS
	country := a.Country
	if a.CountryCode != "" {
		country += " (" + a.CountryCode + ")"
	}
	if country == "" {
		country = "-"
	}
	hosting := "no"
	if a.Hosting {
		hosting = "yes"
	}
	rows := [][]string{
		{"AS", a.ASN},
		{"name", orDash(a.Name)},
		{"country", country},
		{"hosting", hosting},
		{"IPv4 addresses", strconv.FormatUint(a.NumIPs, 10)},
	}
	for _, fam := range []struct {
		label string
		list  []ipatlas.ASPrefix
	}{{"prefixes", a.Prefixes}, {"prefixes6", a.Prefixes6}} {
		label := fam.label + " (" + strconv.Itoa(len(fam.list)) + ")"
		if len(fam.list) == 0 {
			rows = append(rows, []string{label, "-"})
		}
		for _, p := range fam.list {
			rows = append(rows, []string{label, p.Netblock.String(), p.Size})
			label = ""
		}
	}
	return writeAligned(w, rows)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
