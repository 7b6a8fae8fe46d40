package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

func lookupRemoteHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas lookup [flags] IP...
       ipatlas lookup [flags] -          (addresses from standard input, one per line)
       ipatlas lookup [flags] --file FILE   (addresses from FILE, one per line)
       ipatlas lookup --local [flags] IP...   (offline, on the data dir; see --local --help)

Looks addresses up through the service with the API key, printing them in
the order given: one address with POST /api/ip-query, several with
POST /api/ip-query/batch, 100 addresses per request (a repeated address is
asked once). Without an API key it stops before any request. Malformed and
non-public addresses are refused before any request and cost nothing.
Results are cached on disk for the cache lifetime (24h by default);
--no-cache asks the service again and leaves the cache alone.

`, lookupFieldsHelp, `
The service sends only those: a smaller answer, the same price. A full
record in the disk cache answers any selection; partial answers are not
cached.

`, lookupInputHelp, `
With more than 100 addresses, a progress bar counts them on standard error
when it is a terminal and the output is not.

`, lookupOutputHelp, `
With --json, the record is as the service sent it (absent fields stay
absent).

Flags:
`)
	clientFlagsHelp(w, fs)
	fmt.Fprint(w, "\n", clientSettingsHelp, "\n", clientExitHelp,
		"  With several addresses, the exit code is that of the first one that failed.\n")
}

// lookupOutcome is one address's result, printed in input order.
type lookupOutcome struct {
	input string
	res   client.LookupResult
	err   error
}

func runLookupRemote(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("lookup", flag.ContinueOnError)
	cf := addClientFlags(fs)
	lf := addLookupFlags(fs)
	noCache := fs.Bool("no-cache", false, "ask the service even when the answer is cached")
	pos, err := parseArgs(e, fs, args, func(w io.Writer) { lookupRemoteHelp(w, fs) })
	if err != nil {
		return err
	}
	job, err := lf.job(e, "lookup", pos)
	if err != nil {
		return err
	}
	c, cache, err := cf.lookupClient(e, "lookup", *noCache)
	if err != nil {
		return err
	}

	rep := job.report(e.stdout)
	var fresh *client.LookupResult
	bar := newProgress(e, "looking up", len(job.ips), job.format == "table")
	err = lookupAll(ctx, c, cache, job.ips, job.lang, job.fields, bar, func(o *lookupOutcome) error {
		if o.err == nil && !o.res.Cached {
			fresh = &o.res
		}
		return rep.add(o)
	})
	if err != nil {
		return err
	}
	err = rep.finish()
	cache.prune()
	if job.format == "table" && fresh != nil {
		fmt.Fprintln(e.stderr, quotaLine(fresh))
	}
	return err
}

// lookupOne asks for one address with a single query.
func lookupOne(ctx context.Context, c *client.Client, cache diskCache, ip string, lang ipatlas.Lang, fields ipatlas.FieldSet) lookupOutcome {
	if r, ok := cache.get(ip, lang); ok {
		return lookupOutcome{input: ip, res: r.Select(fields)}
	}
	r, err := c.LookupFields(ctx, ip, lang, fieldNames(fields)...)
	if err == nil && !r.Cached && fields.All() {
		cache.put(ip, lang, r)
	}
	return lookupOutcome{input: ip, res: r, err: err}
}

// lookupChunk asks for up to ipatlas.MaxBatchSize addresses with one batch
// request: the ones not in the disk cache.
func lookupChunk(ctx context.Context, c *client.Client, cache diskCache, ips []string, lang ipatlas.Lang, fields ipatlas.FieldSet) []lookupOutcome {
	out := make([]lookupOutcome, len(ips))
	var ask []string
	var at []int // positions in ips of ask
	for i, ip := range ips {
		out[i].input = ip
		if r, ok := cache.get(ip, lang); ok {
			out[i].res = r.Select(fields)
			continue
		}
		ask = append(ask, ip)
		at = append(at, i)
	}
	if len(ask) == 0 {
		return out
	}
	// A request that fails as a whole is in every item's error; the
	// next chunk is still tried, as every address of a list is.
	res, _ := c.LookupBatch(ctx, ask, lang, fieldNames(fields)...)
	for j, r := range res {
		o := &out[at[j]]
		o.res, o.err = r.Result, r.Err
		if r.Err == nil && !r.Result.Cached && fields.All() {
			cache.put(r.IP, lang, r.Result)
		}
	}
	return out
}

// parseFieldsFlag reads --fields: names separated by commas, spaces
// around them ignored.
func parseFieldsFlag(s string) (ipatlas.FieldSet, error) {
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return ipatlas.ParseFields(names)
}

// fieldNames is what the client takes: nil for every field.
func fieldNames(f ipatlas.FieldSet) []string {
	if f.All() {
		return nil
	}
	return f.Names()
}

func quotaLine(r *client.LookupResult) string {
	s := "credits: " + strconv.FormatInt(r.Meta.CurrentCredits, 10)
	if r.RateLimit.Limit > 0 {
		s += fmt.Sprintf(", quota: %d of %d left this month", r.RateLimit.Remaining, r.RateLimit.Limit)
	}
	return s
}
