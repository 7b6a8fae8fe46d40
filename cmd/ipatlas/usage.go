package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"
)

func usageHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas usage [--json] [flags]

Shows the API key's quota for this month (used, limit, remaining, when it
resets) and its account's credits (GET /api/usage with the key; free).
--json prints the service's answer as one JSON object.

Flags:
`)
	clientFlagsHelp(w, fs)
	fmt.Fprint(w, "\n", clientSettingsHelp, "\n", clientExitHelp)
}

func runUsage(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "print JSON")
	cf := addClientFlags(fs)
	pos, err := parseArgs(e, fs, args, func(w io.Writer) { usageHelp(w, fs) })
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("usage takes no arguments, got %q", pos))
	}
	client, err := cf.keyedClient(e, "usage")
	if err != nil {
		return err
	}
	u, err := client.Usage(ctx)
	if err != nil {
		return clientExit(fmt.Errorf("usage: %w", err))
	}
	if *jsonOut {
		return writeJSONLine(e.stdout, u)
	}
	limit := strconv.FormatInt(u.Limit, 10)
	rows := [][]string{
		{"key", u.KeyID},
		{"account", fmt.Sprintf("%d (%s tier)", u.AccountID, u.Tier)},
		{"period", u.Period},
		{"used", fmt.Sprintf("%d of %s (%d remaining)", u.Used, limit, u.Remaining)},
	}
	if !u.Reset.IsZero() {
		rows = append(rows, []string{"resets", fmt.Sprintf("%s (in %s)", u.Reset.UTC().Format(time.RFC3339), until(u.Reset))})
	}
	rows = append(rows, []string{"credits", fmt.Sprintf("%d (%d per query)", u.Credits, u.QueryCost)})
	return writeAligned(e.stdout, rows)
}

// until is a coarse "3d 4h" for a person.
func until(t time.Time) string {
	d := time.Until(t).Round(time.Minute)
	if d <= 0 {
		return "now"
	}
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh %dm", hours, mins)
	}
	return fmt.Sprintf("%dm", mins)
}
