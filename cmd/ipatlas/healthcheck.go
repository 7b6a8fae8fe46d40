package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// runHealthcheck asks a server's readiness endpoint and succeeds when it
// answers 200: the health check of an image that has no shell and no
// curl (a container's HEALTHCHECK runs a command inside the image). By
// default it asks /readyz on the admin listener that serve's own
// settings name (--admin-listen, IPATLAS_ADMIN_LISTEN or the config
// file), so one environment serves both.
func runHealthcheck(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	adminListen := fs.String("admin-listen", "", "the server's admin listener `ADDR`, as serve takes it (env IPATLAS_ADMIN_LISTEN; default 127.0.0.1:8081)")
	rawURL := fs.String("url", "", "readiness `URL` to ask instead (default http://ADMIN-LISTEN/readyz)")
	timeout := fs.Duration("timeout", 5*time.Second, "longest wait for the answer")
	config := fs.String("config", "", "config `file` (env IPATLAS_CONFIG)")
	pos, err := parseArgs(e, fs, args, func(w io.Writer) {
		fmt.Fprint(w, `usage: ipatlas healthcheck [--admin-listen ADDR | --url URL]

Asks a running server's /readyz and exits 0 when it answers 200 (the store
answers and the server is not shutting down), else 1 with the reason on
stderr: a container's HEALTHCHECK, in an image with no shell and no curl.
An admin listener on all interfaces (":8081", "0.0.0.0:8081", "[::]:8081")
is asked on loopback.

Flags:
`)
		printFlags(w, fs)
	})
	if err != nil {
		return err
	}
	if err := noArgs("healthcheck", pos); err != nil {
		return err
	}
	if *timeout <= 0 {
		return usageError("healthcheck: --timeout must be positive")
	}
	target := *rawURL
	if target == "" {
		file, err := loadConfig(*config, e.getenv, e.stderr)
		if err != nil {
			return err
		}
		addr := file.value(e.getenv, *adminListen, "admin-listen", "127.0.0.1:8081")
		if target, err = readyzURL(addr); err != nil {
			return usageError("healthcheck: admin listener " + err.Error())
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return usageError(fmt.Sprintf("healthcheck: --url: %v", err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("healthcheck: not ready: %w", err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return &exitError{code: exitFailure, err: fmt.Errorf("healthcheck: not ready: %s answered %s: %s", target, resp.Status, oneLine(string(body)))}
	}
	fmt.Fprintf(e.stdout, "ready (%s)\n", target)
	return nil
}

// readyzURL is the readiness URL of an admin listener's address, asked
// on loopback when the listener takes every interface.
func readyzURL(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("%q: want HOST:PORT, [IPv6]:PORT or :PORT", listen)
	}
	if port == "0" {
		return "", errors.New(`port 0 is chosen at start: give --url (the address serve's --addr-file reports)`)
	}
	switch a, err := netip.ParseAddr(host); {
	case host == "":
		host = "127.0.0.1"
	case err == nil && a.IsUnspecified() && a.Is4():
		host = "127.0.0.1"
	case err == nil && a.IsUnspecified():
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}
