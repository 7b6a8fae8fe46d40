// Package client is the Go client of the ipatlas IP information service:
// location queries (single and batch) with local validation, a cache,
// shared in-flight requests and careful retries; the AS query; Get my IP
// per address family; ping and the key's usage.
//
// The wire types and the errors it returns (ipatlas.Record, ipatlas.Meta,
// *ipatlas.Error and its sentinels such as ipatlas.ErrRateLimitExceeded)
// belong to the root package github.com/ipatlas/ipatlas, which the server
// shares, so client and server cannot drift apart.
//
//	c, err := client.New(client.Config{URL: "https://ipatlas.example", APIKey: key})
//	rec, meta, err := c.Lookup(ctx, "8.8.8.8", ipatlas.English)
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/ipatlas/ipatlas"
)

// Defaults of a Client: 10 s for a lookup, 5 s for Get my IP, and results
// reused for 24 h, within the 24 to 48 h a location stays good for.
const (
	DefaultURL           = "http://localhost:8080"
	DefaultLookupTimeout = 10 * time.Second
	DefaultMyIPTimeout   = 5 * time.Second
	DefaultCacheTTL      = 24 * time.Hour
	MinCacheTTL          = 24 * time.Hour
	MaxCacheTTL          = 48 * time.Hour
	DefaultCacheSize     = 4096
)

// Config configures a Client. The zero Config talks to a local server at
// DefaultURL with the default timeouts, caching and retries.
//
// The four URLs are the query service, the IPv4-only and IPv6-only
// address services, and the auto-detection service. IPv4URL and IPv6URL are fetched with GET exactly as given, so
// both deployments work: separate hosts answering GET / ("https://v4.example.net")
// and one host with /ipv4 and /ipv6 paths ("http://localhost:8080/ipv4").
type Config struct {
	// URL is the query service: POST {URL}/api/ip-query, GET {URL}/api/ping
	// and GET {URL}/api/usage. Default DefaultURL.
	URL string
	// IPv4URL is the IPv4-only Get-my-IP endpoint. Default URL + "/ipv4".
	IPv4URL string
	// IPv6URL is the IPv6-only Get-my-IP endpoint. Default URL + "/ipv6".
	IPv6URL string
	// TestURL is the auto-detection service: GET {TestURL}/api/ip/myip.
	// Default URL.
	TestURL string

	// APIKey is sent as "Authorization: Bearer <APIKey>" on Lookup and
	// Usage, never on the free Get-my-IP and ping endpoints.
	APIKey string

	// HTTPClient sends the requests; a private clone of
	// http.DefaultTransport when nil. Its Timeout, if any, applies on top of
	// the per-call timeouts below. When its Transport is an *http.Transport
	// (or nil), MyIPv4 and MyIPv6 use clones of it that dial only IPv4 or
	// only IPv6, so the answer shows that family's connectivity.
	HTTPClient *http.Client

	// Timeout bounds each attempt of Lookup and Usage. Default 10 s.
	Timeout time.Duration
	// MyIPTimeout bounds each attempt of MyIPv4, MyIPv6, MyIP and Ping.
	// Default 5 s.
	MyIPTimeout time.Duration

	// CacheTTL is how long a successful lookup is reused for the same
	// address and language: 0 means DefaultCacheTTL, otherwise it must be
	// between MinCacheTTL and MaxCacheTTL (24 to 48 hours).
	CacheTTL time.Duration
	// DisableCache turns the lookup cache off. Concurrent lookups of the
	// same address and language still share one request.
	DisableCache bool
	// CacheSize bounds the number of cached lookups (least recently used
	// ones are dropped first). Default DefaultCacheSize.
	CacheSize int

	// Retry says which failures are retried; see RetryPolicy.
	Retry RetryPolicy

	// Now is the clock of the cache and of Ping; time.Now when nil.
	Now func() time.Time

	// UserAgent is sent with every request; "ipatlas-go" when empty.
	UserAgent string
}

// RetryPolicy says which failed attempts are tried again. A request is
// never repeated in a way that could charge twice without knowing: a
// transport failure is retried only when the request provably never reached
// the server (name resolution failed, connection refused, no route), and a
// 429 or 503 answer, which charges nothing on an ipatlas server, only when
// RateLimited or Unavailable asks for it.
//
// MyIPv4, MyIPv6 and Ping never retry: an unreachable family must be
// reported quickly, and a ping measures single round trips.
type RetryPolicy struct {
	// Attempts is the most attempts per call, the first included: 0 means
	// 3, 1 disables retries.
	Attempts int
	// RateLimited retries a 429 after its Retry-After.
	RateLimited bool
	// Unavailable retries a 503 after its Retry-After.
	Unavailable bool
	// MaxWait is the longest wait before a retry: an answer whose
	// Retry-After is longer is returned at once (an exhausted monthly quota
	// says "retry next month"). Default 30 s.
	MaxWait time.Duration
}

// Client talks to an ipatlas service, or any server with the same API.
// It is safe for concurrent use.
//
// Lookup and LookupDetail query locations (validated locally first, cached,
// metered by the service); AS answers one autonomous system (metered);
// MyIPv4, MyIPv6, MyIPs and MyIP tell this
// machine's public addresses; Ping and Usage report round trips and the
// key's quota. Failures the service reports are *ipatlas.Error values that
// errors.Is matches against the root package's sentinels
// (ipatlas.ErrRateLimitExceeded, ...);
// missing connectivity of one IP family matches ErrFamilyUnavailable;
// anything else is a transport error from net/http, wrapped.
type Client struct {
	base, ipv4URL, ipv6URL, testURL string
	apiKey, userAgent               string

	hc       *http.Client // query service and auto-detection
	hc4, hc6 *http.Client // family endpoints; dial one family only when pinned
	pinned   bool         // hc4/hc6 dial one family and report connection events

	timeout, myIPTimeout time.Duration
	retry                RetryPolicy

	cache    *lru.Cache[cacheKey, cacheEntry] // nil when disabled
	cacheTTL time.Duration
	flight   singleflight.Group

	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	// beforeFlight, when set by a test, runs after a cache miss and before
	// joining the shared request.
	beforeFlight func()
}

// New checks cfg and returns a Client. It fails on a malformed URL or
// a CacheTTL outside 24 to 48 hours.
func New(cfg Config) (*Client, error) {
	c := &Client{
		apiKey:      cfg.APIKey,
		userAgent:   cfg.UserAgent,
		timeout:     cfg.Timeout,
		myIPTimeout: cfg.MyIPTimeout,
		retry:       cfg.Retry,
		now:         cfg.Now,
		sleep:       sleepCtx,
	}
	if c.userAgent == "" {
		c.userAgent = "ipatlas-go"
	}
	if c.timeout <= 0 {
		c.timeout = DefaultLookupTimeout
	}
	if c.myIPTimeout <= 0 {
		c.myIPTimeout = DefaultMyIPTimeout
	}
	if c.retry.Attempts <= 0 {
		c.retry.Attempts = 3
	}
	if c.retry.MaxWait <= 0 {
		c.retry.MaxWait = 30 * time.Second
	}
	if c.now == nil {
		c.now = time.Now
	}

	var err error
	base := cfg.URL
	if base == "" {
		base = DefaultURL
	}
	if c.base, err = checkURL("URL", base); err != nil {
		return nil, err
	}
	c.base = strings.TrimRight(c.base, "/")
	for _, u := range []struct {
		name, val, def string
		dst            *string
	}{
		{"IPv4URL", cfg.IPv4URL, c.base + "/ipv4", &c.ipv4URL},
		{"IPv6URL", cfg.IPv6URL, c.base + "/ipv6", &c.ipv6URL},
		{"TestURL", cfg.TestURL, c.base, &c.testURL},
	} {
		v := u.val
		if v == "" {
			v = u.def
		}
		if *u.dst, err = checkURL(u.name, v); err != nil {
			return nil, err
		}
	}
	c.testURL = strings.TrimRight(c.testURL, "/")

	if !cfg.DisableCache {
		c.cacheTTL = cfg.CacheTTL
		if c.cacheTTL == 0 {
			c.cacheTTL = DefaultCacheTTL
		}
		if c.cacheTTL < MinCacheTTL || c.cacheTTL > MaxCacheTTL {
			return nil, fmt.Errorf("ipatlas: CacheTTL %v is outside %v to %v (or set DisableCache)", cfg.CacheTTL, MinCacheTTL, MaxCacheTTL)
		}
		size := cfg.CacheSize
		if size <= 0 {
			size = DefaultCacheSize
		}
		if c.cache, err = lru.New[cacheKey, cacheEntry](size); err != nil {
			return nil, fmt.Errorf("ipatlas: cache: %w", err)
		}
	}

	c.hc = cfg.HTTPClient
	if c.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = localhostDial(t.DialContext, "tcp")
		c.hc = &http.Client{Transport: t}
	}
	c.hc4, c.hc6 = c.hc, c.hc
	t, ok := c.hc.Transport.(*http.Transport)
	if c.hc.Transport == nil {
		t, ok = http.DefaultTransport.(*http.Transport), true
	}
	if ok {
		// Separate transports also keep separate connection pools: a
		// connection the main client opened over IPv6 to the same host must
		// never carry an IPv4 question.
		c.pinned = true
		c.hc4 = familyClient(c.hc, t, "tcp4")
		c.hc6 = familyClient(c.hc, t, "tcp6")
	}
	return c, nil
}

func checkURL(name, s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("ipatlas: %s: %w", name, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("ipatlas: %s %q: want an http:// or https:// URL with a host", name, s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("ipatlas: %s %q: a query or fragment is not allowed", name, s)
	}
	return s, nil
}

// familyClient is hc with a transport that dials only network ("tcp4" or
// "tcp6"). A name without an address of that family then fails to dial,
// which is exactly "this family is unavailable"; localhost has the
// family's loopback address (localhostDial).
func familyClient(hc *http.Client, t *http.Transport, network string) *http.Client {
	t = t.Clone()
	t.DialContext = localhostDial(t.DialContext, network)
	return &http.Client{Transport: t, CheckRedirect: hc.CheckRedirect, Jar: hc.Jar, Timeout: hc.Timeout}
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// localhostDial wraps dial (net.Dialer's when nil) to dial "tcp" as
// network, and a localhost name (RFC 6761: "localhost" and the names
// under it) at the loopback addresses, as curl does, whatever the system's
// resolver holds for it (often 127.0.0.1 alone): ::1, then 127.0.0.1 for
// "tcp", the one of the family for "tcp6" or "tcp4". The first that
// connects is used; when none does, the error is the first one's.
func localhostDial(dial dialFunc, network string) dialFunc {
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		dial = d.DialContext
	}
	return func(ctx context.Context, nw, addr string) (net.Conn, error) {
		if nw == "tcp" {
			nw = network
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || !isLocalhost(host) {
			return dial(ctx, nw, addr)
		}
		var loopbacks []string
		switch nw {
		case "tcp":
			loopbacks = []string{"::1", "127.0.0.1"}
		case "tcp6":
			loopbacks = []string{"::1"}
		case "tcp4":
			loopbacks = []string{"127.0.0.1"}
		default:
			return dial(ctx, nw, addr)
		}
		var first error
		for _, h := range loopbacks {
			conn, err := dial(ctx, nw, net.JoinHostPort(h, port))
			if err == nil {
				return conn, nil
			}
			if first == nil {
				first = err
			}
			if ctx.Err() != nil {
				break
			}
		}
		return nil, first
	}
}

// isLocalhost reports whether host is "localhost" or a name under it
// (RFC 6761, section 6.3), in any case, with or without the final dot.
func isLocalhost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxBody bounds what is read of any answer; the largest legitimate one, a
// location record, is well under 2 KiB.
const maxBody = 1 << 20

// request describes one call to the service.
type request struct {
	method, url string
	body        []byte
	auth        bool // send the API key
	accept      string
	timeout     time.Duration
	hc          *http.Client
	retries     bool // whether the RetryPolicy applies
}

// reply is what came back, with when it happened.
type reply struct {
	status    int
	header    http.Header
	body      []byte
	wrote     time.Time // request fully written, when the transport reports it
	firstByte time.Time // first byte of the answer, when reported
	start     time.Time
	end       time.Time
	// conn is true once the transport had a connection for this request:
	// from then on the request may have reached the server.
	conn bool
}

func (r *reply) ok() bool { return r.status >= 200 && r.status <= 299 }

// do sends req, retrying as the RetryPolicy allows.
func (c *Client) do(ctx context.Context, req request) (*reply, error) {
	for attempt := 1; ; attempt++ {
		r, err := c.once(ctx, req)
		last := !req.retries || attempt >= c.retry.Attempts
		if err != nil {
			if last || r.conn || !dialFailed(err) || ctx.Err() != nil {
				return r, err
			}
			if err := c.sleep(ctx, backoff(attempt)); err != nil {
				return r, err
			}
			continue
		}
		if last || !((r.status == http.StatusTooManyRequests && c.retry.RateLimited) ||
			(r.status == http.StatusServiceUnavailable && c.retry.Unavailable)) {
			return r, nil
		}
		wait, ok := retryAfter(r.header, c.now())
		if !ok {
			wait = backoff(attempt)
		}
		if wait > c.retry.MaxWait {
			return r, nil
		}
		if err := c.sleep(ctx, wait); err != nil {
			return r, nil // the caller gets the 429/503 it already has
		}
	}
}

func backoff(attempt int) time.Duration {
	return 100 * time.Millisecond << min(attempt-1, 5)
}

// once makes one attempt.
func (c *Client) once(ctx context.Context, req request) (*reply, error) {
	ctx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	r := &reply{}
	var conn atomic.Bool
	var wrote, first atomic.Int64
	base := c.now()
	trace := &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { conn.Store(true) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { wrote.Store(int64(c.now().Sub(base)) + 1) },
		GotFirstResponseByte: func() { first.Store(int64(c.now().Sub(base)) + 1) },
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), req.method, req.url, body)
	if err != nil {
		return r, fmt.Errorf("ipatlas: %w", err)
	}
	hr.Header.Set("User-Agent", c.userAgent)
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	}
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if req.auth && c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	r.start = c.now()
	resp, err := req.hc.Do(hr)
	r.conn = conn.Load()
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	r.status, r.header = resp.StatusCode, resp.Header
	r.body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	r.end = c.now()
	if w := wrote.Load(); w > 0 {
		r.wrote = base.Add(time.Duration(w - 1))
	}
	if f := first.Load(); f > 0 {
		r.firstByte = base.Add(time.Duration(f - 1))
	}
	if err != nil {
		return r, fmt.Errorf("ipatlas: reading the answer of %s: %w", req.url, err)
	}
	if len(r.body) > maxBody {
		return r, &ipatlas.Error{Code: ipatlas.CodeInternal, Status: r.status, Message: fmt.Sprintf("answer of %s is larger than %d bytes", req.url, maxBody)}
	}
	return r, nil
}

// dialFailed reports whether err shows that no connection was made, so the
// request cannot have reached the server: name resolution failed, the name
// has no address of the dialled family, or the connection was refused or
// had no route.
func dialFailed(err error) bool {
	var dnsErr *net.DNSError
	var addrErr *net.AddrError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &addrErr):
		return true
	case errors.As(err, &opErr):
		return opErr.Op == "dial"
	}
	return false
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, math.MaxInt64/int64(time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// failure builds the error of a failed answer: a non-2xx status, or a 2xx
// whose body says success false. The code comes from the body's "code"
// field; failing that from its text when it is one of the table's default
// texts (a server of the same API that sends no codes); failing
// that from the status.
func (c *Client) failure(r *reply) *ipatlas.Error {
	e := &ipatlas.Error{Status: r.status}
	var body struct {
		Success *bool             `json:"success"`
		Error   string            `json:"error"`
		Message string            `json:"message"`
		Code    ipatlas.ErrorCode `json:"code"`
		Meta    json.RawMessage   `json:"meta"`
	}
	if looksJSON(r.body) && json.Unmarshal(r.body, &body) == nil {
		e.Code, e.Message = body.Code, body.Error
		if e.Message == "" {
			e.Message = body.Message
		}
		if len(body.Meta) > 0 && string(body.Meta) != "null" {
			var m ipatlas.Meta
			if json.Unmarshal(body.Meta, &m) == nil {
				e.Meta = &m
			}
		}
	} else if r.ok() {
		e.Code, e.Message = ipatlas.CodeInternal, "the answer is not JSON: "+snippet(r.body)
	} else {
		e.Message = fmt.Sprintf("HTTP %d %s", r.status, http.StatusText(r.status))
		if s := snippet(r.body); s != "" && !looksHTML(r.body) {
			e.Message += ": " + s
		}
	}
	if e.Code == "" {
		e.Code = codeForText(e.Message)
	}
	if e.Code == "" {
		e.Code = ipatlas.CodeForStatus(r.status)
	}
	if d, ok := retryAfter(r.header, c.now()); ok {
		e.RetryAfter = d
	}
	return e
}

// malformed is the error of a 2xx answer that is not what the endpoint
// promises.
func malformed(r *reply, what string) *ipatlas.Error {
	return &ipatlas.Error{Code: ipatlas.CodeInternal, Status: r.status, Message: "unexpected answer: " + what}
}

// codeForText is the code whose default text msg is, in English or
// Chinese; "" when none. The Chinese texts are compared without spaces,
// so that a server that writes them without the space between Chinese and
// Latin words ("不支持私有IP地址", as ipatlas did before) is understood too.
func codeForText(msg string) ipatlas.ErrorCode {
	if msg == "" {
		return ""
	}
	bare := strings.ReplaceAll(msg, " ", "")
	for _, code := range ipatlas.Codes() {
		if strings.EqualFold(msg, code.Text(ipatlas.English)) || bare == strings.ReplaceAll(code.Text(ipatlas.Chinese), " ", "") {
			return code
		}
	}
	return ""
}

func looksJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}

func looksHTML(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '<'
}

// snippet is the start of a body, for error messages.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// wrapTransport gives a transport failure the operation's name; the cause
// stays reachable with errors.Is/As (e.g. *net.OpError, context.DeadlineExceeded).
func wrapTransport(op string, err error) error {
	var e *ipatlas.Error
	if errors.As(err, &e) {
		return err
	}
	return fmt.Errorf("ipatlas: %s: %w", op, err)
}
