package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"

	"github.com/ipatlas/ipatlas"
)

// ErrFamilyUnavailable matches (with errors.Is) the error of MyIPv4 and
// MyIPv6 when the network has no connectivity of that IP family: the name
// has no address of the family, the connection is refused or has no route,
// connecting timed out, or the server saw the request arrive over the other
// family. It is not an *Error: the service said nothing.
var ErrFamilyUnavailable = errors.New("ipatlas: IP family unavailable")

// FamilyError is the error behind ErrFamilyUnavailable. errors.As gives
// the family and the cause.
type FamilyError struct {
	Family string // ipatlas.IPv4 or ipatlas.IPv6
	Reason string // why, in words
	Err    error  // the network error, when there was one
}

func (e *FamilyError) Error() string {
	msg := "ipatlas: " + e.Family + " unavailable"
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrFamilyUnavailable) true.
func (e *FamilyError) Is(target error) bool { return target == ErrFamilyUnavailable }

func (e *FamilyError) Unwrap() error { return e.Err }

// MyIPv4 asks the IPv4-only endpoint for this machine's public IPv4
// address. Without IPv4 connectivity the error matches
// ErrFamilyUnavailable. Each attempt is bounded by Config.MyIPTimeout
// (default 5 s).
func (c *Client) MyIPv4(ctx context.Context) (netip.Addr, error) {
	return c.myFamily(ctx, ipatlas.IPv4, c.ipv4URL, c.hc4)
}

// MyIPv6 asks the IPv6-only endpoint for this machine's public IPv6
// address. Without IPv6 connectivity the error matches
// ErrFamilyUnavailable.
func (c *Client) MyIPv6(ctx context.Context) (netip.Addr, error) {
	return c.myFamily(ctx, ipatlas.IPv6, c.ipv6URL, c.hc6)
}

func (c *Client) myFamily(ctx context.Context, family, u string, hc *http.Client) (netip.Addr, error) {
	r, err := c.do(ctx, request{method: http.MethodGet, url: u, accept: "text/plain", timeout: c.myIPTimeout, hc: hc})
	if err != nil {
		if ctx.Err() != nil {
			return netip.Addr{}, wrapTransport("my "+family, err)
		}
		if c.unreachable(err, r) {
			return netip.Addr{}, &FamilyError{Family: family, Err: unwrapURL(err)}
		}
		return netip.Addr{}, wrapTransport("my "+family, err)
	}
	if !r.ok() {
		if r.status == http.StatusMisdirectedRequest {
			// The ipatlas server refuses a request that reached a family
			// endpoint over the other family with 421 and a plain-text
			// reason.
			return netip.Addr{}, &FamilyError{Family: family, Reason: fmt.Sprintf("the server answered HTTP 421: %s", snippet(r.body))}
		}
		return netip.Addr{}, c.failure(r)
	}
	text := strings.TrimSpace(string(r.body))
	a, perr := netip.ParseAddr(text)
	if perr != nil || a.Zone() != "" {
		return netip.Addr{}, malformed(r, fmt.Sprintf("%s is not an IP address: %q", u, snippet(r.body)))
	}
	got := ipatlas.IPv6
	if a.Is4() || a.Is4In6() {
		got, a = ipatlas.IPv4, a.Unmap()
	}
	if got != family {
		return netip.Addr{}, &FamilyError{Family: family, Reason: fmt.Sprintf("the request reached the server over %s (from %s)", got, a)}
	}
	return a, nil
}

// unreachable reports whether a transport failure means no connection
// could be made: a dial failure, or (when the transport reports its
// connection events) a timeout before any connection was had.
func (c *Client) unreachable(err error, r *reply) bool {
	if r.conn {
		return false
	}
	if dialFailed(err) {
		return true
	}
	if !c.pinned {
		return false
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// unwrapURL drops net/http's *url.Error wrapper ("Get \"http://...\": ...")
// that adds nothing to a FamilyError, which names the family already.
func unwrapURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// MyIP asks the auto-detection endpoint for this machine's public address
// and the IP version its network prefers. IPVersion is "IPv4" when the
// server leaves it out. Each attempt
// is bounded by Config.MyIPTimeout.
func (c *Client) MyIP(ctx context.Context) (ipatlas.MyIPResponse, error) {
	r, err := c.do(ctx, request{
		method: http.MethodGet, url: c.testURL + "/api/ip/myip", accept: "application/json",
		timeout: c.myIPTimeout, hc: c.hc, retries: true,
	})
	if err != nil {
		return ipatlas.MyIPResponse{}, wrapTransport("my IP", err)
	}
	if !r.ok() {
		return ipatlas.MyIPResponse{}, c.failure(r)
	}
	var m ipatlas.MyIPResponse
	if !looksJSON(r.body) || json.Unmarshal(r.body, &m) != nil {
		return ipatlas.MyIPResponse{}, malformed(r, "auto-detection answer is not JSON: "+snippet(r.body))
	}
	if !m.Result {
		msg := m.Message
		if msg == "" {
			msg = m.Code
		}
		return ipatlas.MyIPResponse{}, &ipatlas.Error{Code: ipatlas.CodeInternal, Status: r.status, Message: "auto-detection failed: " + msg}
	}
	if _, err := netip.ParseAddr(m.IP); err != nil {
		return ipatlas.MyIPResponse{}, malformed(r, fmt.Sprintf("auto-detection IP %q is not an address", m.IP))
	}
	if m.IPVersion == "" {
		m.IPVersion = ipatlas.IPv4
	}
	return m, nil
}

// MyAddrs is what MyIPs found: each family's address, or why it is not
// available.
type MyAddrs struct {
	IPv4    netip.Addr // the zero Addr when IPv4Err is set
	IPv4Err error
	IPv6    netip.Addr
	IPv6Err error
}

// MyIPs asks the IPv4-only and IPv6-only endpoints concurrently and returns
// what is available. The error is non-nil only when neither family
// answered; it joins both causes.
func (c *Client) MyIPs(ctx context.Context) (MyAddrs, error) {
	var out MyAddrs
	var wg sync.WaitGroup
	wg.Go(func() { out.IPv4, out.IPv4Err = c.MyIPv4(ctx) })
	wg.Go(func() { out.IPv6, out.IPv6Err = c.MyIPv6(ctx) })
	wg.Wait()
	if out.IPv4Err != nil && out.IPv6Err != nil {
		return out, errors.Join(out.IPv4Err, out.IPv6Err)
	}
	return out, nil
}
