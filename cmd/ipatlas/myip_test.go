package main

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

func netListen4() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") }

// closed6URL is an http URL on ::1 where nothing listens, or "" when the
// machine has no ::1.
func closed6URL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return ""
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

func TestMyIPBothFamilies(t *testing.T) {
	s := startCLIService(t)
	closed6 := closed6URL(t)
	if closed6 == "" {
		closed6 = closedURL(t) // IPv4-only machine: IPv6 is unavailable anyway
	}
	e := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_IPV6_URL", closed6+"/ipv6")
	r := runCLI(t, e, "", "myip")
	if r.err != nil {
		t.Fatalf("exit %d: %v", r.code, r.err)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "IPv4       127.0.0.1" || !strings.HasPrefix(lines[1], "IPv6       unavailable (") ||
		lines[2] != "preferred  IPv4 (127.0.0.1)" {
		t.Fatalf("output:\n%s", r.stdout)
	}

	r = runCLI(t, e, "", "myip", "--json")
	var rep myIPReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.err != nil {
		t.Fatalf("%v %v: %s", err, r.err, r.stdout)
	}
	if rep.IPv4 == nil || *rep.IPv4 != "127.0.0.1" || rep.IPv6 != nil || !strings.HasPrefix(rep.IPv6Error, "unavailable") || rep.Preferred != "IPv4" || rep.PreferredIP != "127.0.0.1" {
		t.Fatalf("json: %s", r.stdout)
	}

	if s.url6 == "" {
		t.Skip("no ::1 on this machine; the IPv6 half needs an IPv6 loopback address")
	}
	e6 := newCLIEnv(t, "IPATLAS_URL", s.url, "IPATLAS_IPV6_URL", s.url6+"/ipv6", "IPATLAS_TEST_URL", s.url6)
	r = runCLI(t, e6, "", "myip")
	if r.err != nil || !strings.Contains(r.stdout, "IPv6       ::1\n") || !strings.Contains(r.stdout, "preferred  IPv6 (::1)") {
		t.Fatalf("%v\n%s", r.err, r.stdout)
	}
}

func TestMyIPOneFamily(t *testing.T) {
	s := startCLIService(t)
	e := newCLIEnv(t, "IPATLAS_URL", s.url)
	r := runCLI(t, e, "", "myip", "-4")
	if r.err != nil || r.stdout != "127.0.0.1\n" {
		t.Fatalf("-4: %v %q", r.err, r.stdout)
	}
	// The default IPv6 URL is the IPv4 listener's address: no IPv6 there.
	r = runCLI(t, e, "", "myip", "-6")
	if r.code != exitNetwork || r.stdout != "" || !strings.Contains(r.err.Error(), "IPv6 unavailable") {
		t.Fatalf("-6 without IPv6: exit %d, %v, %q", r.code, r.err, r.stdout)
	}
	// One line that names the program and the family once each.
	if !strings.HasPrefix(r.stderr, "ipatlas: myip: IPv6 unavailable") || strings.Count(r.stderr, "ipatlas:") != 1 || strings.Count(r.stderr, "IPv6") != 1 {
		t.Errorf("-6 without IPv6 says %q", r.stderr)
	}
	r = runCLI(t, e, "", "myip", "-6", "--json")
	if r.code != exitNetwork || !strings.Contains(r.stdout, `"ipv6_error":"unavailable (`) || strings.Contains(r.stdout, `"ipv4"`) {
		t.Fatalf("-6 --json: exit %d, %q", r.code, r.stdout)
	}
	if s.url6 != "" {
		r = runCLI(t, newCLIEnv(t, "IPATLAS_IPV6_URL", s.url6+"/ipv6"), "", "myip", "-6")
		if r.err != nil || r.stdout != "::1\n" {
			t.Fatalf("-6: %v %q", r.err, r.stdout)
		}
	}
}

func TestMyIPNothingReachable(t *testing.T) {
	u := closedURL(t)
	r := runCLI(t, newCLIEnv(t, "IPATLAS_URL", u), "", "myip")
	if r.code != exitNetwork {
		t.Fatalf("exit %d (%v), want %d", r.code, r.err, exitNetwork)
	}
	if !strings.Contains(r.stdout, "preferred  unknown (") {
		t.Fatalf("output:\n%s", r.stdout)
	}
}

// myip against a server at localhost (on ":PORT", both loopbacks) finds
// both addresses, as curl would, whatever the resolver holds for the name.
func TestMyIPLocalhost(t *testing.T) {
	p := servertest.New(t, func() time.Time { return cliServerNow })
	srv, err := server.New(server.Config{Version: "cli-test", Logger: slog.New(slog.DiscardHandler), Now: p.Now},
		server.Deps{Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	var port string
	for i := 0; port == "" && i < 20; i++ {
		l4, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, pt, _ := net.SplitHostPort(l4.Addr().String())
		l6, err := net.Listen("tcp6", "[::1]:"+pt)
		if err != nil {
			l4.Close()
			if closed6URL(t) == "" {
				t.Skip("no ::1 on this machine: localhost has one family here")
			}
			continue
		}
		for _, l := range []net.Listener{l4, l6} {
			ts := &httptest.Server{Listener: l, Config: &http.Server{Handler: srv.Handler()}}
			ts.Start()
			t.Cleanup(ts.Close)
		}
		port = pt
	}
	if port == "" {
		t.Skip("no port free on both 127.0.0.1 and ::1")
	}
	r := runCLI(t, newCLIEnv(t, "IPATLAS_URL", "http://localhost:"+port), "", "myip")
	if r.err != nil || r.stdout != "IPv4       127.0.0.1\nIPv6       ::1\npreferred  IPv6 (::1)\n" {
		t.Fatalf("myip at localhost: %v\n%s", r.err, r.stdout)
	}
}
