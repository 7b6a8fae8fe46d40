// Package outbound is the HTTP client of every URL that ipatlas fetches by
// itself: the datasets, the postal codes, the privacy lists and the
// geofeeds.
//
// Such a URL is an operator's setting or a built-in upstream, but where it
// redirects to is the remote server's choice. The client follows a
// redirect into a non-public network (loopback, private, link-local,
// shared, or any other block netaddr calls not globally reachable) only
// when the request started there: once a request has reached a public
// address, every later hop must dial a public address. The address checked
// is the one dialed, after name resolution, so a name that resolves to
// 127.0.0.1 is refused like the literal. An operator's URL that points at
// a private mirror stays allowed, with its redirects.
//
// Behind a proxy (HTTP_PROXY, HTTPS_PROXY), the proxy resolves the names
// and dials: the client refuses a redirect to a non-public address
// literal or to "localhost", and the proxy must refuse the rest.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// ErrRedirect is a redirect from a public address into a non-public
// network, refused.
var ErrRedirect = errors.New("refused: a redirect from a public address may not lead into a non-public network")

// Options configure a client. The zero value is a client with the
// transport defaults of net/http and no overall timeout.
type Options struct {
	// Timeout bounds each request, body included (http.Client.Timeout);
	// 0 is none.
	Timeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a response's headers once
	// the request is sent; 0 is none.
	ResponseHeaderTimeout time.Duration
	// PublicStart says whether the address a request's first hop dialed
	// counts as public, which makes every later hop of the request dial
	// public addresses only. nil is Public. Tests that serve from
	// 127.0.0.1 name their start server here.
	PublicStart func(netip.AddrPort) bool
}

// Public reports whether a is globally reachable: outside every block of
// netaddr's special-purpose table (an IPv4-mapped address is judged by its
// IPv4 address).
func Public(a netip.Addr) bool {
	_, special := netaddr.Classify(a.Unmap())
	return !special
}

// NewClient returns a client that follows redirects by the package's rule.
func NewClient(o Options) *http.Client {
	publicStart := o.PublicStart
	if publicStart == nil {
		publicStart = func(ap netip.AddrPort) bool { return Public(ap.Addr()) }
	}
	return &http.Client{Timeout: o.Timeout, Transport: &guard{
		any:         newTransport(o, nil),
		public:      newTransport(o, refuseNonPublic),
		publicStart: publicStart,
	}}
}

func newTransport(o Options, control func(network, address string, c syscall.RawConn) error) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: control}
	t.DialContext = d.DialContext
	t.ResponseHeaderTimeout = o.ResponseHeaderTimeout
	return t
}

// refuseNonPublic is the dialer's last word on the address it is about to
// connect to, resolved.
func refuseNonPublic(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot tell whether %q is public", ErrRedirect, address)
	}
	return refusal(ap.Addr())
}

func refusal(a netip.Addr) error {
	if b, special := netaddr.Classify(a.Unmap()); special {
		return fmt.Errorf("%w: %s is a %s address", ErrRedirect, a, b.Name)
	}
	return nil
}

// hop is what one request of a redirect chain learnt: whether the chain
// has reached a public address.
type hop struct{ public atomic.Bool }

type hopKey struct{}

// guard sends a request's first hop, and every hop of a chain that has
// not reached a public address, through any; the other hops through
// public, whose dialer connects to public addresses only (so its idle
// connections are all public ones).
type guard struct {
	any, public *http.Transport
	publicStart func(netip.AddrPort) bool
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	h := &hop{}
	first := req.Response == nil
	if !first {
		if prev, ok := req.Response.Request.Context().Value(hopKey{}).(*hop); ok {
			h.public.Store(prev.public.Load())
		} else {
			h.public.Store(true) // a chain this guard did not start: the safe side
		}
	}
	proxied := false
	if g.any.Proxy != nil {
		if p, err := g.any.Proxy(req); err == nil && p != nil {
			proxied = true
		}
	}
	t := g.any
	switch {
	case h.public.Load() && proxied:
		if err := refuseLiteral(req.URL.Hostname()); err != nil {
			closeBody(req)
			return nil, err
		}
	case h.public.Load():
		t = g.public
	case proxied:
		// The proxy's address says nothing of the server's: a chain
		// through a proxy is held to public addresses from the start.
		h.public.Store(true)
	}
	ctx := context.WithValue(req.Context(), hopKey{}, h)
	if !h.public.Load() {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			ap := remoteAddrPort(info.Conn)
			if first && g.publicStart(ap) || !first && Public(ap.Addr()) {
				h.public.Store(true)
			}
		}})
	}
	return t.RoundTrip(req.WithContext(ctx))
}

func remoteAddrPort(c net.Conn) netip.AddrPort {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap
}

// refuseLiteral refuses a host that names a non-public address without
// resolving anything: an address literal or localhost.
func refuseLiteral(host string) error {
	if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return fmt.Errorf("%w: %s is a loopback name", ErrRedirect, host)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return refusal(a)
	}
	return nil
}

// closeBody closes a request's body, as a RoundTripper must even when it
// sends nothing.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// ErrUserInfo is a URL to fetch from that holds a user name or password.
var ErrUserInfo = errors.New(`a URL with a user name or password ("user:password@") would show wherever the URL does (logs, db info, errors): give the URL without it`)

// CheckURL checks a URL that an operator gives ipatlas to fetch from (a
// mirror, a download service, a feed): an http or https URL with a host,
// and without user info (ErrUserInfo). The error never holds the URL,
// whose password it may be.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		if err == nil && u.User != nil {
			return ErrUserInfo
		}
		return errors.New("want an http or https URL: http(s)://host[/path]")
	}
	if u.User != nil {
		return ErrUserInfo
	}
	return nil
}
