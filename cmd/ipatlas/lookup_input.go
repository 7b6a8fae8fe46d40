package main

// What lookup and summarize share: where the addresses come from, how a
// long list is looked up (one batch request per 100, in order), and the
// progress bar.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/schollz/progressbar/v3"
)

// gatherAddresses collects the addresses of cmd: the arguments, where "-"
// stands for the lines of standard input, then the lines of file ("-":
// standard input too). Standard input is read once; naming it twice is a
// usage mistake, since the second reading would be empty.
func gatherAddresses(e env, cmd string, args []string, file string) ([]string, error) {
	var out []string
	stdinRead := false
	readStdin := func() error {
		if stdinRead {
			return usageError(cmd + ": standard input (-) is named twice")
		}
		stdinRead = true
		ips, err := readAddresses(e.stdin)
		if err != nil {
			return fmt.Errorf("%s: reading standard input: %w", cmd, err)
		}
		out = append(out, ips...)
		return nil
	}
	for _, a := range args {
		if a == "-" {
			if err := readStdin(); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, a)
	}
	switch file {
	case "":
	case "-":
		if err := readStdin(); err != nil {
			return nil, err
		}
	default:
		f, err := os.Open(file)
		if err != nil {
			return nil, &exitError{code: exitFailure, err: fmt.Errorf("%s: %w", cmd, err)}
		}
		ips, err := readAddresses(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", cmd, file, err)
		}
		out = append(out, ips...)
	}
	if len(out) == 0 {
		if file != "" || stdinRead {
			return nil, usageError(cmd + ": the input holds no address")
		}
		return nil, usageError(cmd + ": give at least one address, - to read them from standard input, or --file FILE")
	}
	return out, nil
}

// progressMin is the smallest input that gets a progress bar: more than
// one batch request.
const progressMin = ipatlas.MaxBatchSize + 1

// newProgress is a bar counting total addresses on standard error, or nil
// (no bar) when the input is short or standard error is not a terminal.
// When the output goes to the same terminal as it is printed (buffered is
// false), its own lines show the progress and a bar would tear them.
func newProgress(e env, label string, total int, buffered bool) *progressbar.ProgressBar {
	if total < progressMin || !isTerminal(e.stderr) || (!buffered && isTerminal(e.stdout)) {
		return nil
	}
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(e.stderr),
		progressbar.OptionSetDescription(label),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(e.stderr) }),
	)
}

// lookupAll looks ips up in input order, one address with a single query,
// several with one batch request per ipatlas.MaxBatchSize, and hands each
// outcome to emit as its chunk is answered, so that a long list is
// printed as it goes. bar, when not nil, counts the addresses done.
func lookupAll(ctx context.Context, c *client.Client, cache diskCache, ips []string, lang ipatlas.Lang, fields ipatlas.FieldSet,
	bar *progressbar.ProgressBar, emit func(*lookupOutcome) error) error {
	for start := 0; start < len(ips); start += ipatlas.MaxBatchSize {
		chunk := ips[start:min(start+ipatlas.MaxBatchSize, len(ips))]
		var outcomes []lookupOutcome
		if len(ips) == 1 {
			outcomes = []lookupOutcome{lookupOne(ctx, c, cache, chunk[0], lang, fields)}
		} else {
			outcomes = lookupChunk(ctx, c, cache, chunk, lang, fields)
		}
		for i := range outcomes {
			if err := emit(&outcomes[i]); err != nil {
				return err
			}
		}
		if bar != nil {
			bar.Add(len(chunk))
		}
	}
	return nil
}

// errorCode is the service's code of a failure, or "" when it has none (a
// transport failure).
func errorCode(err error) ipatlas.ErrorCode {
	var e *ipatlas.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
