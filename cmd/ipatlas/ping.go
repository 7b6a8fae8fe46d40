package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ipatlas/ipatlas/client"
)

func pingHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas ping [-c N] [-i DURATION] [flags]

Measures round trips to the service (GET /api/ping, free, no API key), like
ping: one line per round trip with its time (from the request written to the
first byte of the answer), the server's clock and the address it saw, then a
summary with loss and min/avg/max. -c 0 pings until interrupted (Ctrl-C).
It fails (exit code 6 for a network failure) when no round trip succeeded.

Flags:
`)
	clientFlagsHelp(w, fs)
	fmt.Fprint(w, "\n", clientSettingsHelp, "\n", clientExitHelp)
}

func runPing(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("ping", flag.ContinueOnError)
	count := fs.Int("c", 4, "stop after `N` round trips (0: until interrupted)")
	interval := fs.Duration("i", time.Second, "wait `DURATION` between round trips")
	cf := addClientFlags(fs)
	pos, err := parseArgs(e, fs, args, func(w io.Writer) { pingHelp(w, fs) })
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("ping takes no arguments, got %q", pos))
	}
	if *count < 0 || *interval < 0 {
		return usageError("ping: -c and -i must not be negative")
	}
	settings, err := cf.resolve(e)
	if err != nil {
		return err
	}
	c, err := settings.newClient(true)
	if err != nil {
		return err
	}
	target := settings.url
	if target == "" {
		target = client.DefaultURL
	}
	fmt.Fprintf(e.stdout, "PING %s/api/ping\n", target)

	var sent, received int
	var minRTT, maxRTT, sum time.Duration
	var first error
	for seq := 1; *count == 0 || seq <= *count; seq++ {
		if seq > 1 {
			t := time.NewTimer(*interval)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		sent++
		p, err := c.Ping(ctx)
		if err != nil {
			if ctx.Err() != nil {
				sent--
				break
			}
			if first == nil {
				first = err
			}
			fmt.Fprintf(e.stdout, "seq=%d error: %s\n", seq, errorText(err))
			continue
		}
		received++
		sum += p.RTT
		if received == 1 || p.RTT < minRTT {
			minRTT = p.RTT
		}
		maxRTT = max(maxRTT, p.RTT)
		fmt.Fprintf(e.stdout, "reply seq=%d time=%s server_time=%s ip=%s\n",
			seq, ms(p.RTT), p.ServerTime.UTC().Format(time.RFC3339Nano), printable(p.IP))
	}

	fmt.Fprintf(e.stdout, "--- %s ping statistics ---\n", target)
	loss := 0.0
	if sent > 0 {
		loss = 100 * float64(sent-received) / float64(sent)
	}
	fmt.Fprintf(e.stdout, "%s, %s, %.0f%% loss\n", plural(sent, "request", "requests"), plural(received, "reply", "replies"), loss)
	if received > 0 {
		fmt.Fprintf(e.stdout, "rtt min/avg/max = %s/%s/%s ms\n",
			msNum(minRTT), msNum(sum/time.Duration(received)), msNum(maxRTT))
		return nil
	}
	if first == nil {
		return &exitError{code: exitFailure, err: errors.New("ping: interrupted before any reply")}
	}
	return clientExit(fmt.Errorf("ping: no reply: %w", first))
}

func msNum(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func ms(d time.Duration) string { return msNum(d) + " ms" }
