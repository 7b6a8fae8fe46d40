package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

func myIPHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `usage: ipatlas myip [-4|-6] [--json] [flags]

Shows this machine's public addresses, free and without an API key.

Without -4 or -6 it asks the IPv4-only and IPv6-only endpoints and the
auto-detection endpoint at once, and shows each family as its address or
"unavailable" (with the reason), and which family the network prefers
(the one the auto-detection request went out over). It fails only when no
address at all could be found.

With -4 (or -6) it prints only that family's address, for scripts, and fails
with exit code 6 when the network has no connectivity of that family.

--json prints one object: {"ipv4": ..., "ipv6": ..., "preferred": "IPv4",
"preferred_ip": ...}; an unavailable family is left out, with its reason in
"ipv4_error" / "ipv6_error".

Flags:
`)
	clientFlagsHelp(w, fs)
	fmt.Fprint(w, "\n", clientSettingsHelp, "\n", clientExitHelp)
}

// myIPReport is the --json output of myip.
type myIPReport struct {
	IPv4           *string `json:"ipv4,omitempty"`
	IPv4Error      string  `json:"ipv4_error,omitempty"`
	IPv6           *string `json:"ipv6,omitempty"`
	IPv6Error      string  `json:"ipv6_error,omitempty"`
	Preferred      string  `json:"preferred,omitempty"`
	PreferredIP    string  `json:"preferred_ip,omitempty"`
	PreferredError string  `json:"preferred_error,omitempty"`
}

func runMyIP(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("myip", flag.ContinueOnError)
	only4 := fs.Bool("4", false, "only the IPv4 address")
	only6 := fs.Bool("6", false, "only the IPv6 address")
	jsonOut := fs.Bool("json", false, "print JSON")
	cf := addClientFlags(fs)
	pos, err := parseArgs(e, fs, args, func(w io.Writer) { myIPHelp(w, fs) })
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError(fmt.Sprintf("myip takes no arguments, got %q", pos))
	}
	if *only4 && *only6 {
		*only4, *only6 = false, false // both families: the default view
	}
	settings, err := cf.resolve(e)
	if err != nil {
		return err
	}
	c, err := settings.newClient(true)
	if err != nil {
		return err
	}

	if *only4 || *only6 {
		family, ask := ipatlas.IPv4, c.MyIPv4
		if *only6 {
			family, ask = ipatlas.IPv6, c.MyIPv6
		}
		a, err := ask(ctx)
		if *jsonOut {
			var r myIPReport
			addr, msg := &r.IPv4, &r.IPv4Error
			if *only6 {
				addr, msg = &r.IPv6, &r.IPv6Error
			}
			if err != nil {
				*msg = familyText(err)
			} else {
				s := a.String()
				*addr = &s
			}
			if werr := writeJSONLine(e.stdout, r); werr != nil {
				return werr
			}
		} else if err == nil {
			fmt.Fprintln(e.stdout, a)
		}
		if err != nil {
			if errors.Is(err, client.ErrFamilyUnavailable) {
				return clientExit(fmt.Errorf("myip: %w", err)) // it names the family
			}
			return clientExit(fmt.Errorf("myip: %s: %w", family, err))
		}
		return nil
	}

	var addrs client.MyAddrs
	var auto ipatlas.MyIPResponse
	var autoErr error
	var wg sync.WaitGroup
	wg.Go(func() { addrs, _ = c.MyIPs(ctx) })
	wg.Go(func() { auto, autoErr = c.MyIP(ctx) })
	wg.Wait()

	r := myIPReport{}
	show := func(a netip.Addr, err error, dst **string, msg *string) {
		if err != nil {
			*msg = familyText(err)
			return
		}
		s := a.String()
		*dst = &s
	}
	show(addrs.IPv4, addrs.IPv4Err, &r.IPv4, &r.IPv4Error)
	show(addrs.IPv6, addrs.IPv6Err, &r.IPv6, &r.IPv6Error)
	if autoErr != nil {
		r.PreferredError = errorText(autoErr)
	} else {
		r.Preferred, r.PreferredIP = auto.IPVersion, auto.IP
	}

	if *jsonOut {
		if err := writeJSONLine(e.stdout, r); err != nil {
			return err
		}
	} else {
		line := func(a *string, msg string) string {
			if a != nil {
				return *a
			}
			return msg
		}
		pref := "unknown (" + r.PreferredError + ")"
		if autoErr == nil {
			pref = r.Preferred + " (" + r.PreferredIP + ")"
		}
		if err := writeAligned(e.stdout, [][]string{
			{"IPv4", line(r.IPv4, r.IPv4Error)},
			{"IPv6", line(r.IPv6, r.IPv6Error)},
			{"preferred", pref},
		}); err != nil {
			return err
		}
	}
	if r.IPv4 == nil && r.IPv6 == nil && autoErr != nil {
		// Nothing answered: the exit code follows the first family's cause.
		return clientExit(fmt.Errorf("myip: no address found: %w", errors.Join(addrs.IPv4Err, addrs.IPv6Err, autoErr)))
	}
	return nil
}

// familyText is a family's failure for a person: "unavailable (why)" for
// missing connectivity, "error: ..." for anything else.
func familyText(err error) string {
	var fe *client.FamilyError
	if errors.As(err, &fe) {
		why := fe.Reason
		if fe.Err != nil {
			why = fe.Err.Error()
		}
		return "unavailable (" + why + ")"
	}
	return "error: " + errorText(err)
}

// writeJSONLine prints v as one line of JSON, with the characters a
// terminal would act on escaped (jsonSafe).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", jsonSafe(b))
	return err
}
