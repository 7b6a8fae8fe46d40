package outbound

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// target is a server on 127.0.0.1 that counts the requests it gets.
func target(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "inside")
	}))
	t.Cleanup(s.Close)
	return s, &hits
}

// redirector redirects every request to to.
func redirector(t *testing.T, to string) *httptest.Server {
	s := httptest.NewServer(http.RedirectHandler(to, http.StatusFound))
	t.Cleanup(s.Close)
	return s
}

// only counts the given server's address as public: the test's stand-in
// for a server on the Internet.
func only(s *httptest.Server) func(netip.AddrPort) bool {
	want := netip.MustParseAddrPort(s.Listener.Addr().String())
	return func(ap netip.AddrPort) bool { return ap == want }
}

func get(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// A redirect from a public start to a loopback address is refused before
// anything is sent there, whether it names the address or a name that
// resolves to it.
func TestRedirectFromPublicIntoLoopbackRefused(t *testing.T) {
	in, hits := target(t)
	port := in.Listener.Addr().(*net.TCPAddr).Port
	for _, to := range []string{in.URL + "/admin", "http://localhost:" + strconv.Itoa(port) + "/admin", "http://[::ffff:127.0.0.1]:" + strconv.Itoa(port) + "/admin"} {
		t.Run(to, func(t *testing.T) {
			start := redirector(t, to)
			c := NewClient(Options{PublicStart: only(start)})
			body, err := get(c, start.URL+"/feed.csv")
			if !errors.Is(err, ErrRedirect) {
				t.Fatalf("followed a redirect into loopback: body %q, err %v", body, err)
			}
			if !strings.Contains(err.Error(), "loopback") {
				t.Errorf("the error does not say why: %v", err)
			}
			if hits.Load() != 0 {
				t.Errorf("the loopback server got %d requests", hits.Load())
			}
		})
	}
}

// Every hop after a public one is held to public addresses: a second
// redirect does not launder the first.
func TestRedirectChainStaysPublic(t *testing.T) {
	in, hits := target(t)
	// public start -> (public) hop -> loopback: the middle hop cannot be
	// public on a test machine, so the chain is judged from the start.
	mid := redirector(t, in.URL)
	start := redirector(t, mid.URL)
	c := NewClient(Options{PublicStart: only(start)})
	if _, err := get(c, start.URL); !errors.Is(err, ErrRedirect) || hits.Load() != 0 {
		t.Fatalf("err %v, %d requests inside", err, hits.Load())
	}
}

// An operator's URL that points into a private network is the
// operator's choice: it is fetched, and its redirects within that
// network are followed.
func TestPrivateStartFollowsRedirects(t *testing.T) {
	in, hits := target(t)
	start := redirector(t, in.URL)
	c := NewClient(Options{})
	body, err := get(c, start.URL)
	if err != nil || body != "inside" || hits.Load() != 1 {
		t.Fatalf("body %q, err %v, %d requests", body, err, hits.Load())
	}
}

// A request without a redirect reaches its server whatever counts as
// public.
func TestNoRedirect(t *testing.T) {
	in, hits := target(t)
	c := NewClient(Options{PublicStart: only(in)})
	if body, err := get(c, in.URL); err != nil || body != "inside" || hits.Load() != 1 {
		t.Fatalf("body %q, err %v", body, err)
	}
}

func TestPublic(t *testing.T) {
	for s, want := range map[string]bool{
		"8.8.8.8": true, "2001:4860:4860::8888": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "192.168.1.1": false, "172.16.0.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd00::1": false, "100.64.0.1": false, "0.0.0.0": false,
		"::ffff:10.0.0.1": false, "::ffff:8.8.8.8": true,
	} {
		if got := Public(netip.MustParseAddr(s)); got != want {
			t.Errorf("Public(%s) = %v, want %v", s, got, want)
		}
	}
}

// Behind a proxy, which resolves names itself, a redirect to a
// non-public literal or to localhost is refused by its URL.
func TestRefuseLiteral(t *testing.T) {
	for host, refused := range map[string]bool{
		"127.0.0.1": true, "localhost": true, "LOCALHOST.": true, "db.localhost": true, "10.0.0.1": true, "::1": true,
		"169.254.169.254": true, "example.com": false, "8.8.8.8": false,
	} {
		err := refuseLiteral(host)
		if (err != nil) != refused || err != nil && !errors.Is(err, ErrRedirect) {
			t.Errorf("refuseLiteral(%q) = %v, want refused %v", host, err, refused)
		}
	}
}
