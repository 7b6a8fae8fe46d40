package main

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

// Exit codes, one per class of failure; documented in docs/clients.md.
const (
	exitOK       = 0
	exitFailure  = 1 // anything not listed below
	exitUsage    = 2 // bad flags or arguments
	exitInput    = 3 // invalid or non-public address
	exitAuth     = 4 // missing, invalid or revoked API key
	exitQuota    = 5 // monthly quota or credits used up
	exitNetwork  = 6 // the service could not be reached or is unavailable
	exitNotFound = 7 // no such account, key or AS
)

// clientExitHelp documents the exit codes in every client command's --help.
const clientExitHelp = `Exit codes:
  0  success
  1  any other failure
  2  usage error (bad flags or arguments)
  3  invalid or non-public address, or malformed AS number (InvalidIP,
     PrivateIP, InvalidRequest, InvalidAS)
  4  missing, invalid or revoked API key (InvalidAPIKey)
  5  monthly quota or credits used up (RateLimitExceeded, InsufficientCredits)
  6  service unreachable or unavailable, or no connectivity of the family asked for
  7  an AS number the service's data does not know (UnknownAS)
`

// exitError carries an exit code, and for a usage mistake the command
// whose help explains it.
type exitError struct {
	code int
	err  error
	hint string // command words after "ipatlas"
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(msg string) error { return &exitError{code: exitUsage, err: errors.New(msg)} }

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

// usageHint is "ipatlas CMD" for a usage mistake, else "".
func usageHint(err error) string {
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage {
		return ""
	}
	return strings.TrimSpace("ipatlas " + ee.hint)
}

// clientExit gives a client error its exit code.
func clientExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: clientExitCode(err), err: err}
}

func clientExitCode(err error) int {
	var e *ipatlas.Error
	if errors.As(err, &e) {
		switch e.Code {
		case ipatlas.CodeInvalidIP, ipatlas.CodePrivateIP, ipatlas.CodeInvalidRequest, ipatlas.CodeTooManyItems, ipatlas.CodePayloadTooLarge,
			ipatlas.CodeInvalidAS:
			return exitInput
		case ipatlas.CodeUnknownAS:
			return exitNotFound
		case ipatlas.CodeInvalidAPIKey:
			return exitAuth
		case ipatlas.CodeRateLimitExceeded, ipatlas.CodeInsufficientCredits:
			return exitQuota
		case ipatlas.CodeServiceUnavailable:
			return exitNetwork
		}
		return exitFailure
	}
	if errors.Is(err, client.ErrFamilyUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return exitNetwork
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return exitNetwork
	}
	return exitFailure
}
