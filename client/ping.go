package client

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/ipatlas/ipatlas"
)

// PingResult is one round trip to the service.
type PingResult struct {
	// RTT is from the request being written to the first byte of the
	// answer (connection set-up excluded), or the whole exchange when the
	// transport does not report those events.
	RTT time.Duration
	// ServerTime is the server's clock when it answered.
	ServerTime time.Time
	// ClockOffset estimates the server's clock minus this machine's, taking
	// ServerTime to be the middle of the round trip.
	ClockOffset time.Duration
	IP          string // this machine's address as the server saw it
	Version     string // the server's version
}

// Ping makes one free round trip to GET {URL}/api/ping. It is never
// retried, and each call is bounded by Config.MyIPTimeout.
func (c *Client) Ping(ctx context.Context) (PingResult, error) {
	r, err := c.do(ctx, request{method: http.MethodGet, url: c.base + "/api/ping", accept: "application/json", timeout: c.myIPTimeout, hc: c.hc})
	if err != nil {
		return PingResult{}, wrapTransport("ping", err)
	}
	if !r.ok() {
		return PingResult{}, c.failure(r)
	}
	var p ipatlas.PingResponse
	if !looksJSON(r.body) || json.Unmarshal(r.body, &p) != nil || p.Code != ipatlas.PingCode {
		return PingResult{}, malformed(r, "ping answer is not a pong: "+snippet(r.body))
	}
	st, err := time.Parse(time.RFC3339Nano, p.Time)
	if err != nil {
		return PingResult{}, malformed(r, "ping time: "+err.Error())
	}
	from, to := r.wrote, r.firstByte
	if from.IsZero() || to.IsZero() || to.Before(from) {
		from, to = r.start, r.end
	}
	rtt := to.Sub(from)
	return PingResult{
		RTT:         rtt,
		ServerTime:  st,
		ClockOffset: st.Sub(from.Add(rtt / 2)),
		IP:          p.IP,
		Version:     p.Version,
	}, nil
}

// Usage returns the API key's quota for the current month and its
// account's credits (GET {URL}/api/usage, free). Each attempt is bounded by
// Config.Timeout.
func (c *Client) Usage(ctx context.Context) (ipatlas.Usage, error) {
	r, err := c.do(ctx, request{method: http.MethodGet, url: c.base + "/api/usage", auth: true, accept: "application/json", timeout: c.timeout, hc: c.hc, retries: true})
	if err != nil {
		return ipatlas.Usage{}, wrapTransport("usage", err)
	}
	if !r.ok() {
		return ipatlas.Usage{}, c.failure(r)
	}
	var u ipatlas.Usage
	if !looksJSON(r.body) || json.Unmarshal(r.body, &u) != nil {
		return ipatlas.Usage{}, malformed(r, "usage answer is not JSON: "+snippet(r.body))
	}
	return u, nil
}
