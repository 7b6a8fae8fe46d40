package server

import (
	"math"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

// New refuses what it cannot use, naming the setting, rather than serve
// without the feature.
func TestNewRefusesBadSettings(t *testing.T) {
	p := servertest.New(t, nil)
	deps := Deps{Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter}
	for _, c := range []struct {
		name string
		cfg  Config
		deps *Deps
		want string
	}{
		{"no geo", Config{}, &Deps{Accounts: p.Accounts}, "Deps.Geo"},
		{"forwarded header", Config{ForwardedHeader: "Via"}, nil, "ForwardedHeader"},
		{"trusted prefix", Config{TrustedProxies: []netip.Prefix{{}}}, nil, "TrustedProxies"},
		{"mapped prefix too wide", Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::ffff:0:0/80")}}, nil, "TrustedProxies"},
		{"one host for both families", Config{IPv4Host: "ip.example.com", IPv6Host: "IP.example.com:443"}, nil, "IPv4Host"},
		{"negative key rate", Config{KeyRate: -1}, nil, "KeyRate"},
		{"NaN address rate", Config{AddrRate: math.NaN()}, nil, "AddrRate"},
		{"negative me rate", Config{MeRate: -1}, nil, "MeRate"},
		{"negative me burst", Config{MeBurst: -1}, nil, "MeBurst"},
		// 0 is off, never a default: a limit that is on needs its numbers.
		{"key rate without burst", Config{KeyRate: 1, LimitTableSize: 1}, nil, "KeyBurst"},
		{"address rate without burst", Config{AddrRate: 1, LimitTableSize: 1}, nil, "AddrBurst"},
		{"me rate without burst", Config{MeRate: 1, LimitTableSize: 1}, nil, "MeBurst"},
		{"auth failures without window", Config{AuthFailures: 1, AuthMaxBackoff: 1, LimitTableSize: 1}, nil, "AuthFailureWindow"},
		{"auth failures without backoff", Config{AuthFailures: 1, AuthFailureWindow: 1, LimitTableSize: 1}, nil, "AuthMaxBackoff"},
		{"sign-in failures without window", Config{SigninFailures: 1, LimitTableSize: 1}, nil, "SigninWindow"},
		{"negative sign-in failures", Config{SigninFailures: -1}, nil, "SigninFailures"},
		{"a limit without a table", Config{KeyRate: 1, KeyBurst: 1}, nil, "LimitTableSize"},
		{"page endpoint", Config{PageIPv4URL: "ftp://v4.example.test/"}, nil, "Options.IPv4URL"},
		{"page endpoint with user", Config{PageIPv6URL: "https://user@v6.example.test/"}, nil, "Options.IPv6URL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := deps
			if c.deps != nil {
				d = *c.deps
			}
			s, err := New(c.cfg, d)
			if err == nil || s != nil {
				t.Fatalf("accepted: %v", s)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %s", err, c.want)
			}
		})
	}

	// A metric name taken in the registry by another kind of metric.
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "ipatlas_http_requests_total", Help: "not ours"}))
	if _, err := New(Config{}, Deps{Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter, Registry: reg}); err == nil || !strings.Contains(err.Error(), "metrics") {
		t.Errorf("a metric name taken: %v", err)
	}
	// The zero Config is accepted.
	mustNew(t, Config{}, deps)
}
