package client

import (
	"context"
	"time"
)

// SetSleep replaces the client's wait between retries, so retry tests see
// the waits asked for without spending them.
func SetSleep(c *Client, f func(ctx context.Context, d time.Duration) error) { c.sleep = f }

// SetBeforeFlight runs f after each cache miss, before the lookup joins the
// shared request.
func SetBeforeFlight(c *Client, f func()) { c.beforeFlight = f }

// DecodeAnswer runs the client's decoding of a location query answer, for
// the fuzz target.
func DecodeAnswer(c *Client, status int, header map[string][]string, body []byte) (LookupResult, error) {
	return c.decodeLookup(&reply{status: status, header: header, body: body})
}
