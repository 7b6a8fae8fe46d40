package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

// MaxMind's official clients, unchanged, against the MaxMind shape over
// TLS: Debian's python3-geoip2 and npm's @maxmind/geoip2-node (pinned in
// testdata/geoip2-node). Each trusts a CA made here through its usual
// setting (REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS). Their models must
// say what ipatlas's own records say, in English and zh-CN, and the
// refusals must be their own error types.

// mmCall is one call a client script makes.
type mmCall struct {
	Service   string `json:"service"`
	IP        string `json:"ip"`
	AccountID int64  `json:"account_id"`
	Key       string `json:"key"`
}

// testCA makes a CA and a certificate it signs for 127.0.0.1 and ::1; it
// returns the CA's PEM file and the server's certificate.
func testCA(t *testing.T) (caFile string, cert tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ipatlas test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// mmClient is one of MaxMind's clients: how to run its script.
type mmClient struct {
	name string
	cmd  func(caFile string) *exec.Cmd
	// perCall is the queries one call costs: the Python script asks
	// twice, once per locale.
	perCall int64
	// errors are the client's names of the refusals the test makes.
	badKey, spent, private, notFound string
}

// mmClients are the clients installed here; a missing one is skipped
// with the reason (.ci/run installs both).
func mmClients(t *testing.T) []mmClient {
	t.Helper()
	var out []mmClient
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import geoip2.webservice").Run(); err != nil {
		t.Logf("skipping the Python client: Debian's python3-geoip2 is not installed for %s (apt-get install python3-geoip2; .ci/run installs it): %v", py, err)
	} else {
		script, _ := filepath.Abs("testdata/geoip2-python/client.py")
		out = append(out, mmClient{name: "python3-geoip2",
			cmd: func(caFile string) *exec.Cmd {
				c := exec.Command(py, script)
				c.Env = append(os.Environ(), "REQUESTS_CA_BUNDLE="+caFile, "NO_PROXY=*", "no_proxy=*")
				return c
			},
			perCall: 2, badKey: "AuthenticationError", spent: "OutOfQueriesError", private: "AddressNotFoundError", notFound: "AddressNotFoundError"})
	}
	dir, _ := filepath.Abs("testdata/geoip2-node")
	node, err := exec.LookPath("node")
	switch {
	case err != nil:
		t.Logf("skipping the Node client: no node on PATH (.ci/run provides it)")
	case !exists(filepath.Join(dir, "node_modules", "@maxmind", "geoip2-node", "package.json")):
		t.Logf("skipping the Node client: run npm ci in %s (.ci/run does)", dir)
	default:
		out = append(out, mmClient{name: "@maxmind/geoip2-node",
			cmd: func(caFile string) *exec.Cmd {
				c := exec.Command(node, filepath.Join(dir, "client.js"))
				c.Dir = dir
				c.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile, "NO_PROXY=*", "no_proxy=*")
				return c
			},
			perCall: 1, badKey: "AUTHORIZATION_INVALID", spent: "OUT_OF_QUERIES", private: "IP_ADDRESS_RESERVED", notFound: "IP_ADDRESS_NOT_FOUND"})
	}
	if len(out) == 0 {
		t.Skip("neither of MaxMind's clients is installed (see the log above)")
	}
	return out
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// run runs a client's script on calls and returns its views.
func (c mmClient) run(t *testing.T, caFile, host string, calls []mmCall) []map[string]any {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"host": host, "calls": calls})
	cmd := c.cmd(caFile)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", c.name, err, stderr.String())
	}
	var out []map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out) != len(calls) {
		t.Fatalf("%s: %v: %s\n%s", c.name, err, stdout.String(), stderr.String())
	}
	return out
}

// startTLS serves h over TLS on 127.0.0.1 with cert, as serve does with
// --tls-cert and --tls-key; it returns the host the clients name.
func startTLS(t *testing.T, h http.Handler, cert tls.Certificate) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// clientView is what a client's model should say about an address for a
// service: ipatlas's own records, in English and Chinese, as the scripts
// write them (null for a value the model lacks).
func clientView(service string, en, zh ipatlas.Record) map[string]any {
	s := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	v := map[string]any{
		"ip": en.IP, "continent_code": s(en.ContinentCode), "continent_en": s(en.Continent), "continent_zh": s(zh.Continent),
		"country_iso": s(en.CountryCode), "country_en": s(en.Country), "country_zh": s(zh.Country),
		"eu": euMembers[en.CountryCode], "registered_iso": s(en.CountryCode),
	}
	if service == "country" {
		return v
	}
	var lat, lon, radius any
	if en.Latitude != nil && en.Longitude != nil {
		lat, lon, radius = *en.Latitude, *en.Longitude, float64(en.AccuracyRadius)
	}
	var asn, aso any
	if n, err := ipatlas.ParseAS(en.ASN); err == nil && en.ASN != "" {
		asn, aso = float64(n), s(en.ISP)
	}
	subISO := any(nil)
	if en.Province != "" || zh.Province != "" {
		subISO = s(en.ProvinceCode)
	}
	for k, x := range map[string]any{
		"city_en": s(en.City), "city_zh": s(zh.City), "sub_iso": subISO, "sub_en": s(en.Province), "sub_zh": s(zh.Province),
		"postal": s(en.ZipCode), "lat": lat, "lon": lon, "tz": s(en.TimeZone), "radius": radius,
		"asn": asn, "aso": aso, "isp": aso, "org": aso,
	} {
		v[k] = x
	}
	if service == "insights" {
		p := ipatlas.Privacy{}
		if en.Privacy != nil {
			p = *en.Privacy
		}
		tor := p.Tor != nil && *p.Tor
		for k, x := range map[string]any{"anonymous": p.VPN || p.Hosting || tor || p.Relay, "vpn": p.VPN,
			"hosting": p.Hosting, "public_proxy": false, "tor": tor} {
			v[k] = x
		}
	}
	return v
}

// want is what a client should answer for a call: its view, or the
// refusal of an address the data does not cover.
func want(t *testing.T, loc geo.Locator, c mmCall, cl mmClient) map[string]any {
	t.Helper()
	addr := netip.MustParseAddr(c.IP)
	en, err := loc.Lookup(addr, ipatlas.English)
	if err != nil {
		t.Fatal(err)
	}
	if !known(&en) {
		return map[string]any{"error": cl.notFound}
	}
	zh, err := loc.Lookup(addr, ipatlas.Chinese)
	if err != nil {
		t.Fatal(err)
	}
	return clientView(c.Service, en, zh)
}

// compare checks each call's answer against ipatlas's record.
func compare(t *testing.T, loc geo.Locator, cl mmClient, calls []mmCall, got []map[string]any) {
	t.Helper()
	for i, c := range calls {
		w := want(t, loc, c, cl)
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("%s %s %s:\n got  %v\n want %v", cl.name, c.Service, c.IP, got[i], w)
		}
	}
}

// addrIn is a random address of a prefix.
func addrIn(r *mrand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := range b {
		bit := i * 8
		if bit+8 <= p.Bits() {
			continue
		}
		x := byte(r.UintN(256))
		if bit < p.Bits() {
			keep := byte(0xff << (8 - (p.Bits() - bit)))
			x = b[i]&keep | x&^keep
		}
		b[i] = x
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// publicIn is a random public address of a prefix.
func publicIn(r *mrand.Rand, p netip.Prefix) netip.Addr {
	for {
		if a := addrIn(r, p); !isPrivate(a) {
			return a
		}
	}
}

func isPrivate(a netip.Addr) bool { _, private := netaddr.Classify(a); return private }

func TestMaxMindOfficialClients(t *testing.T) {
	clients := mmClients(t)
	caFile, cert := testCA(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("random addresses from seed %d", seed)
	r := mrand.New(mrand.NewPCG(seed, 0))

	e := newPrivacyEnv(t)
	host := startTLS(t, e.pub, cert)
	acct, k := e.customer(t, account.Enterprise, 100000, 100000)
	other, _ := e.customer(t, account.Enterprise, 100000, 100000)

	// The fixture's places by name, random addresses in their networks,
	// the privacy lists' addresses, and an address no data covers.
	var addrs []string
	for _, p := range geotest.Places {
		addrs = append(addrs, p.IP, publicIn(r, netip.MustParsePrefix(p.Network)).String())
	}
	addrs = append(addrs, "104.28.28.1", "9.9.9.9")
	var calls []mmCall
	for _, a := range addrs {
		for _, sv := range []string{"country", "city", "insights"} {
			calls = append(calls, mmCall{Service: sv, IP: a, AccountID: acct.ID, Key: k.Secret})
		}
	}
	refusals := []mmCall{
		{Service: "city", IP: "8.8.8.8", AccountID: acct.ID, Key: k.Secret + "x"}, // a wrong key
		{Service: "city", IP: "8.8.8.8", AccountID: other.ID, Key: k.Secret},      // another account's ID
		{Service: "insights", IP: "10.1.2.3", AccountID: acct.ID, Key: k.Secret},  // a private address
		{Service: "country", IP: "8.8.8.8"},                                       // the last query of the quota (the key is set below)
		{Service: "country", IP: "8.8.4.4"},                                       // the quota spent
		{Service: "insights", IP: "192.0.2.1", AccountID: acct.ID, Key: k.Secret}, // a documentation address
	}
	for _, cl := range clients {
		t.Run(cl.name, func(t *testing.T) {
			compare(t, e.srv.deps.Geo, cl, calls, cl.run(t, caFile, host, calls))
			// A key whose quota is one call's.
			spent, sk := e.customer(t, account.Enterprise, cl.perCall, 100)
			refusals[3].AccountID, refusals[3].Key = spent.ID, sk.Secret
			refusals[4].AccountID, refusals[4].Key = spent.ID, sk.Secret
			got := cl.run(t, caFile, host, refusals)
			errs := make([]any, len(got))
			for i, g := range got {
				errs[i] = g["error"]
			}
			// The spent key's first call is answered, the second refused.
			wantErrs := []any{cl.badKey, cl.badKey, cl.private, nil, cl.spent, cl.private}
			if !reflect.DeepEqual(errs, wantErrs) {
				t.Errorf("refusals: %v, want %v (%v)", errs, wantErrs, got)
			}
		})
	}

	// Random public addresses on the real dataset, when the test has it.
	dir := os.Getenv("IPATLAS_TEST_DATA_DIR")
	if dir == "" {
		t.Log("IPATLAS_TEST_DATA_DIR is not set: random addresses of the fixture only")
		return
	}
	real := realEnv(t, dir)
	host = startTLS(t, real.pub, cert)
	acct, k = real.customer(t, account.Enterprise, 100000, 100000)
	calls = calls[:0]
	for i := range 12 {
		p := netip.MustParsePrefix("0.0.0.0/0")
		if i%3 == 2 {
			p = netip.MustParsePrefix("2a00::/12") // RIPE's IPv6 space
		}
		a := publicIn(r, p).String()
		calls = append(calls, mmCall{Service: []string{"country", "city", "insights"}[i%3], IP: a, AccountID: acct.ID, Key: k.Secret})
		if i%3 == 0 {
			calls = append(calls, mmCall{Service: "city", IP: a, AccountID: acct.ID, Key: k.Secret})
		}
	}
	for _, cl := range clients {
		t.Run(cl.name+"/real-data", func(t *testing.T) {
			compare(t, real.srv.deps.Geo, cl, calls, cl.run(t, caFile, host, calls))
		})
	}
}

// realEnv is a server on the real dataset in dir.
func realEnv(t *testing.T, dir string) *env {
	t.Helper()
	p := servertest.New(t, func() time.Time { return testNow })
	engine, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	e := &env{store: p.Store, svc: p.Accounts, meter: p.Meter, reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	e.srv = mustNew(t, Config{LimitTableSize: DefaultLimitTableSize, AdminToken: testAdminToken, Now: p.Now,
		Logger: slog.New(slog.NewJSONHandler(e.logs, nil))},
		Deps{Geo: engine, Accounts: p.Accounts, Meter: p.Meter, Registry: e.reg, Ready: func() error { return nil }})
	e.pub = e.srv.Handler()
	return e
}
