package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/rdns"
	"github.com/ipatlas/ipatlas/internal/rdns/rdnstest"
)

// echoipCase is one line of echoip's table tests ({url, status, body},
// with the User-Agent and Accept of the request), on the fixture's data.
type echoipCase struct {
	path, ua, accept string
	status           int
	body             string
}

// run sends the case from remote, with key when it is not "", and wants
// its status and exact body.
func (tc echoipCase) run(t *testing.T, e *env, remote, key string) resp {
	t.Helper()
	h := map[string]string{"User-Agent": tc.ua, "Accept": tc.accept}
	r := e.do(t, req{method: "GET", path: tc.path, remote: remote, key: key, header: h})
	if r.Code != tc.status || r.Body.String() != tc.body {
		t.Errorf("GET %s (User-Agent %q, Accept %q): %d %q\nwant %d %q", tc.path, tc.ua, tc.accept, r.Code, r.Body, tc.status, tc.body)
	}
	return r
}

// textError is renderText's line for a failure without a detail.
func textError(code ipatlas.ErrorCode) string {
	return "error: " + code.Text(ipatlas.English) + " (" + string(code) + ")\n"
}

// jsonError is echoip's JSON error body, with ipatlas's code, for a
// failure without a detail.
func jsonError(code ipatlas.ErrorCode) string {
	return "{\n  \"status\": " + itoa(code.HTTPStatus()) + ",\n  \"error\": \"" + code.Text(ipatlas.English) + "\",\n  \"code\": \"" + string(code) + "\"\n}"
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// mountainViewJSON is echoip's answer for 8.8.8.8 in the fixture, asked
// for by curl/7.2.6.0: echoip's TestJSONHandlers's first line, with the
// fixture's values in place of its fake database's. region_code and
// metro_code have no source here; hostname is absent without a resolver.
const mountainViewJSON = "{\n  \"ip\": \"8.8.8.8\",\n  \"ip_decimal\": 134744072,\n  \"country\": \"United States\",\n  \"country_iso\": \"US\",\n  \"country_eu\": false,\n  \"region_name\": \"California\",\n  \"zip_code\": \"94043\",\n  \"city\": \"Mountain View\",\n  \"latitude\": 37.422,\n  \"longitude\": -122.085,\n  \"time_zone\": \"America/Los_Angeles\",\n  \"asn\": \"AS15169\",\n  \"asn_org\": \"Google LLC\",\n  \"user_agent\": {\n    \"product\": \"curl\",\n    \"version\": \"7.2.6.0\",\n    \"raw_value\": \"curl/7.2.6.0\"\n  }\n}"

// echoip's TestCLIHandlers, TestJSONHandlers and TestDisabledHandlers,
// ported to the fixture: the caller's own address, free and without a
// key. What differs from echoip, and why, is said on the line.
func TestEchoIPTables(t *testing.T) {
	e := newEnv(t)
	mv := hostPort(geotest.MountainView.IP)
	notFound := echoipCase{"/echoip/foo", "", "", 404, textError(ipatlas.CodeNotFound)} // echoip: "404 page not found"
	t.Run("cli", func(t *testing.T) {
		for _, tc := range []echoipCase{
			{"/echoip/", "curl/7.43.0", "", 200, "8.8.8.8\n"},
			{"/echoip", "curl/7.43.0", "", 200, "8.8.8.8\n"}, // served as /echoip/
			{"/echoip/", "foo/bar", "text/plain", 200, "8.8.8.8\n"},
			{"/echoip/ip", "", "", 200, "8.8.8.8\n"},
			{"/echoip/country", "", "", 200, "United States\n"},
			{"/echoip/country-iso", "", "", 200, "US\n"},
			{"/echoip/coordinates", "", "", 200, "37.422000,-122.085000\n"},
			{"/echoip/city", "", "", 200, "Mountain View\n"},
			notFound,
			{"/echoip/asn", "", "", 200, "AS15169\n"},
			{"/echoip/asn-org", "", "", 200, "Google LLC\n"},
		} {
			tc.run(t, e, mv, "")
		}
	})
	t.Run("json", func(t *testing.T) {
		const accept, ua = "application/json", "curl/7.2.6.0"
		for _, tc := range []echoipCase{
			{"/echoip/", ua, accept, 200, mountainViewJSON},
			{"/echoip/json", ua, accept, 200, mountainViewJSON},
			{"/echoip/json", ua, "", 200, mountainViewJSON}, // /json is JSON whatever Accept says
			// echoip's port test: not offered (a server that dials the
			// ports its callers name is a scanner for hire).
			{"/echoip/port/80", ua, accept, 404, jsonError(ipatlas.CodeNotFound)}, // echoip: {"ip", "port", "reachable"}
			{"/echoip/foo", ua, accept, 404, jsonError(ipatlas.CodeNotFound)},     // echoip: "error": "404 page not found"
			// echoip's /health is the admin listener's /healthz here.
		} {
			tc.run(t, e, mv, "")
		}
	})
	t.Run("no data", func(t *testing.T) {
		// echoip without a database answers 404 on the paths that need
		// it; here the data is always loaded, and an address it does not
		// cover answers each value empty and the JSON with what echoip's
		// then has.
		uncovered := hostPort(geotest.UncoveredIP)
		for _, tc := range []echoipCase{
			{"/echoip/country", "", "", 200, "\n"},
			{"/echoip/country-iso", "", "", 200, "\n"},
			{"/echoip/city", "", "", 200, "\n"},
			{"/echoip/coordinates", "", "", 200, "\n"}, // echoip: "0.000000,0.000000", a place in the Gulf of Guinea
			{"/echoip/json", "", "", 200, "{\n  \"ip\": \"1.1.1.1\",\n  \"ip_decimal\": 16843009,\n  \"country_eu\": false\n}"},
		} {
			tc.run(t, e, uncovered, "")
		}
	})
	t.Run("eu and ipv6", func(t *testing.T) {
		// Nuremberg: an IPv6 address (128-bit ip_decimal) in the EU,
		// with a time zone from the data and no User-Agent.
		want := "{\n  \"ip\": \"2a01:4f8:c0c:1234::1\",\n  \"ip_decimal\": 55832868901776132823344745877312897025,\n  \"country\": \"Germany\",\n  \"country_iso\": \"DE\",\n  \"country_eu\": true,\n  \"region_name\": \"Bavaria\",\n  \"zip_code\": \"90402\",\n  \"city\": \"Nuremberg\",\n  \"latitude\": 49.4521,\n  \"longitude\": 11.0767,\n  \"time_zone\": \"Europe/Berlin\",\n  \"asn\": \"AS24940\",\n  \"asn_org\": \"Hetzner Online GmbH\"\n}"
		echoipCase{"/echoip/json", "", "", 200, want}.run(t, e, hostPort(geotest.Nuremberg.IP), "")
		echoipCase{"/echoip/coordinates", "", "", 200, "49.452100,11.076700\n"}.run(t, e, hostPort(geotest.Nuremberg.IP), "")
	})
	t.Run("headers", func(t *testing.T) {
		r := echoipCase{"/echoip/country", "", "", 200, "United States\n"}.run(t, e, mv, "")
		for name, want := range map[string]string{"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store", "Access-Control-Allow-Origin": "*"} {
			if got := r.Header().Get(name); got != want {
				t.Errorf("%s %q, want %q", name, got, want)
			}
		}
		checkNoQuota(t, r)
		r = echoipCase{"/echoip/", "curl/8", "", 200, "8.8.8.8\n"}.run(t, e, mv, "")
		if r.Header().Get("Vary") != "Accept, User-Agent" {
			t.Errorf("the negotiated path's Vary %q", r.Header().Get("Vary"))
		}
	})
}

// ?ip= is another address: it takes a key and is the metered query, one
// query per answer holding something looked up. echoip's tests of the
// ip parameter (TestIPv4FromRequest, TestIPv6FromRequest) port here; its
// trusted-header cases are the server's own rules (clientip_test.go:
// the right-most untrusted address, never echoip's left-most).
func TestEchoIPOtherAddress(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	me := hostPort(geotest.Beijing.IP) // the caller, never the answer
	for _, tc := range []struct {
		echoipCase
		charged int64
	}{
		{echoipCase{"/echoip/ip?ip=8.8.8.8", "", "", 200, "8.8.8.8\n"}, 0},      // nothing looked up
		{echoipCase{"/echoip/ip?ip=8.8.8.8:1234", "", "", 200, "8.8.8.8\n"}, 0}, // echoip drops a port
		{echoipCase{"/echoip/ip?ip=[2001:4860:4860::8888]:1234", "", "", 200, "2001:4860:4860::8888\n"}, 0},
		{echoipCase{"/echoip/ip?ip=::ffff:8.8.8.8", "", "", 200, "::ffff:8.8.8.8\n"}, 0}, // echoip: "8.8.8.8" (Go's net.IP)
		{echoipCase{"/echoip/country?ip=8.8.8.8", "", "", 200, "United States\n"}, 1},
		{echoipCase{"/echoip/country?ip=8.8.8.8&lang=zh", "", "", 200, "美国\n"}, 1},
		{echoipCase{"/echoip/city?ip=" + geotest.Singapore.IP, "", "", 200, "\n"}, 0},        // empty: free
		{echoipCase{"/echoip/coordinates?ip=" + geotest.Singapore.IP, "", "", 200, "\n"}, 0}, // no location: free
		{echoipCase{"/echoip/asn?ip=" + geotest.Nuremberg.IP, "", "", 200, "AS24940\n"}, 1},
		{echoipCase{"/echoip/json?ip=8.8.8.8", "curl/7.2.6.0", "", 200, mountainViewJSON}, 1},
		{echoipCase{"/echoip/?ip=8.8.8.8", "curl/7.2.6.0", "application/json", 200, mountainViewJSON}, 1},
		{echoipCase{"/echoip/?ip=8.8.8.8", "curl/7.2.6.0", "", 200, "8.8.8.8\n"}, 0},
		// Refused before anything is looked up, free.
		{echoipCase{"/echoip/country?ip=10.0.0.1", "", "", 400, "error: Private IP address not supported: 10.0.0.1 is a private-use address (RFC 1918) (PrivateIP)\n"}, 0},
		{echoipCase{"/echoip/json?ip=10.0.0.1", "", "", 400, "{\n  \"status\": 400,\n  \"error\": \"Private IP address not supported: 10.0.0.1 is a private-use address (RFC 1918)\",\n  \"code\": \"PrivateIP\"\n}"}, 0},
		{echoipCase{"/echoip/country?ip=8.8.8.8&ip=1.1.1.1", "", "", 400, "error: Invalid request: the parameter \"ip\" is given more than once (InvalidRequest)\n"}, 0},
		{echoipCase{"/echoip/country?ip=8.8.8.8&lang=fr", "", "", 400, "error: Invalid request: lang \"fr\" is not supported; use \"en\" or \"zh\" (InvalidRequest)\n"}, 0},
	} {
		before := used(t, e, k.ID)
		r := tc.run(t, e, me, k.Secret)
		if got := used(t, e, k.ID) - before; got != tc.charged {
			t.Errorf("%s: charged %d, want %d", tc.path, got, tc.charged)
		}
		if r.Code == 200 {
			checkQuota(t, r, 10_000, 10_000-used(t, e, k.ID))
		}
	}
	// A refusal of the keyed query carries the caller's standing.
	if r := e.do(t, req{method: "GET", path: "/echoip/country?ip=8.8.8.8&lang=fr", key: k.Secret}); r.Code != 400 {
		t.Errorf("lang=fr: %d", r.Code)
	} else {
		checkQuota(t, r, 10_000, 10_000-used(t, e, k.ID))
	}
	// A malformed address says why, as the native query's does.
	r := e.do(t, req{method: "GET", path: "/echoip/city?ip=8.8.8.8%20", key: k.Secret})
	if r.Code != 400 || !strings.HasPrefix(r.Body.String(), "error: ") || !strings.HasSuffix(r.Body.String(), " (InvalidIP)\n") {
		t.Errorf("white space around the address: %d %q", r.Code, r.Body)
	}

	// HEAD answers what a GET would, free.
	before := used(t, e, k.ID)
	if r := e.do(t, req{method: "HEAD", path: "/echoip/json?ip=8.8.8.8", key: k.Secret}); r.Code != 200 || used(t, e, k.ID) != before {
		t.Errorf("HEAD: %d, charged %d", r.Code, used(t, e, k.ID)-before)
	}

	// Without a key, ?ip= is refused, in the path's format; the key may
	// come in the URL, as on every keyed route.
	echoipCase{"/echoip/country?ip=8.8.8.8", "", "", 401, textError(ipatlas.CodeInvalidAPIKey)}.run(t, e, me, "")
	echoipCase{"/echoip/json?ip=8.8.8.8", "", "", 401, jsonError(ipatlas.CodeInvalidAPIKey)}.run(t, e, me, "")
	echoipCase{"/echoip/country?ip=8.8.8.8", "", "application/json", 401, jsonError(ipatlas.CodeInvalidAPIKey)}.run(t, e, me, "")
	echoipCase{"/echoip/country?ip=8.8.8.8&key=" + k.Secret, "", "", 200, "United States\n"}.run(t, e, me, "")
	// ?ip= empty is the caller's own, as echoip reads it: free.
	before = used(t, e, k.ID)
	echoipCase{"/echoip/country?ip=", "", "", 200, "China\n"}.run(t, e, me, k.Secret)
	if used(t, e, k.ID) != before {
		t.Error("the caller's own address was charged")
	}

	// An account without credits gets 402 for a value, and still the
	// answers that cost nothing.
	_, broke := e.customer(t, account.Pro, 0, 0)
	echoipCase{"/echoip/country?ip=8.8.8.8", "", "", 402, textError(ipatlas.CodeInsufficientCredits)}.run(t, e, me, broke.Secret)
	echoipCase{"/echoip/ip?ip=8.8.8.8", "", "", 200, "8.8.8.8\n"}.run(t, e, me, broke.Secret)
	echoipCase{"/echoip/city?ip=" + geotest.Singapore.IP, "", "", 200, "\n"}.run(t, e, me, broke.Secret)
}

// The caller's own address: free, limited per address by the bucket of
// GET /api/ip/me (shared with it); /ip looks nothing up and has only the
// free endpoints' limit. A private own address is refused on every path
// that looks it up, as GET /api/ip/me refuses it; /ip answers it.
func TestEchoIPOwnAddress(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MeRate, c.MeBurst = 0.1, 2 })
	mv := hostPort(geotest.MountainView.IP)
	echoipCase{"/echoip/country", "", "", 200, "United States\n"}.run(t, e, mv, "")
	echoipCase{"/echoip/json", "", "", 200, "{\n  \"ip\": \"8.8.8.8\",\n  \"ip_decimal\": 134744072,\n  \"country\": \"United States\",\n  \"country_iso\": \"US\",\n  \"country_eu\": false,\n  \"region_name\": \"California\",\n  \"zip_code\": \"94043\",\n  \"city\": \"Mountain View\",\n  \"latitude\": 37.422,\n  \"longitude\": -122.085,\n  \"time_zone\": \"America/Los_Angeles\",\n  \"asn\": \"AS15169\",\n  \"asn_org\": \"Google LLC\"\n}"}.run(t, e, mv, "")
	r := echoipCase{"/echoip/city", "", "", 429, "error: API rate limit exceeded: too many lookups of this address's own location, retry in 10 s (RateLimitExceeded)\n"}.run(t, e, mv, "")
	if r.Header().Get("Retry-After") != "10" {
		t.Errorf("Retry-After %q", r.Header().Get("Retry-After"))
	}
	echoipCase{"/echoip/json", "", "", 429, "{\n  \"status\": 429,\n  \"error\": \"API rate limit exceeded: too many lookups of this address's own location, retry in 10 s\",\n  \"code\": \"RateLimitExceeded\"\n}"}.run(t, e, mv, "")
	if w, _ := meRequest(e.pub, mv, ""); w.Code != 429 {
		t.Errorf("GET /api/ip/me after the echoip shape spent the bucket: %d, want 429 (one bucket)", w.Code)
	}
	echoipCase{"/echoip/ip", "", "", 200, "8.8.8.8\n"}.run(t, e, mv, "")
	// Another address has its own bucket.
	echoipCase{"/echoip/country", "", "", 200, "Germany\n"}.run(t, e, hostPort(geotest.Nuremberg.IP), "")
	// A key sent along changes nothing: the own address is free.
	_, k := e.customer(t, account.Pro, 0, 100)
	echoipCase{"/echoip/city", "", "", 200, "Nuremberg\n"}.run(t, e, hostPort(geotest.Nuremberg.IP), k.Secret)
	if used(t, e, k.ID) != 0 {
		t.Error("the caller's own address was charged")
	}

	loop := "127.0.0.1:40000"
	echoipCase{"/echoip/ip", "", "", 200, "127.0.0.1\n"}.run(t, e, loop, "")
	echoipCase{"/echoip/", "curl/8", "", 200, "127.0.0.1\n"}.run(t, e, loop, "")
	echoipCase{"/echoip/country", "", "", 400, "error: Private IP address not supported: 127.0.0.1 is a loopback address (RFC 1122). You reach the server from its own machine or network, where addresses have no location; over the internet it locates your public address. To try it now, look up a public one with an API key: GET /echoip/country?ip=8.8.8.8 (PrivateIP)\n"}.run(t, e, loop, "")
	echoipCase{"/echoip/country?lang=zh", "", "", 400, "error: 不支持私有 IP 地址：127.0.0.1 是环回地址（RFC 1122）。你是从服务器本机或内网访问的，这类地址没有位置；通过互联网访问时，它会定位你的公网地址。现在要试用，请带 API 密钥查询一个公网地址：GET /echoip/country?ip=8.8.8.8 (PrivateIP)\n"}.run(t, e, loop, "")
	echoipCase{"/echoip/json", "", "", 400, "{\n  \"status\": 400,\n  \"error\": \"Private IP address not supported: 127.0.0.1 is a loopback address (RFC 1122). You reach the server from its own machine or network, where addresses have no location; over the internet it locates your public address. To try it now, look up a public one with an API key: GET /echoip/json?ip=8.8.8.8\",\n  \"code\": \"PrivateIP\"\n}"}.run(t, e, loop, "")
	echoipCase{"/echoip/country?lang=xx", "", "", 400, "error: Invalid request: lang \"xx\" is not supported; use \"en\" or \"zh\" (InvalidRequest)\n"}.run(t, e, loop, "")
}

// /ip, free, has the free endpoints' per-address limit, in plain text.
func TestEchoIPAddressLimit(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AddrRate, c.AddrBurst = 1, 1 })
	mv := hostPort(geotest.MountainView.IP)
	echoipCase{"/echoip/ip", "", "", 200, "8.8.8.8\n"}.run(t, e, mv, "")
	echoipCase{"/echoip/ip", "", "", 429, "error: too many requests from this address; retry in 1 s\n"}.run(t, e, mv, "")
	echoipCase{"/echoip/", "curl/8", "", 429, "error: too many requests from this address; retry in 1 s\n"}.run(t, e, mv, "")
}

// Failures outside a route (a method the path does not take, an unknown
// path under the prefix) are the shape's, in text or, for a JSON client
// and on /json, in JSON.
func TestEchoIPRouterFailures(t *testing.T) {
	e := newEnv(t)
	r := e.do(t, req{method: "POST", path: "/echoip/country"})
	if r.Code != 405 || r.Header().Get("Allow") != "GET, HEAD" || r.Body.String() != textError(ipatlas.CodeMethodNotAllowed) {
		t.Errorf("POST /echoip/country: %d %q Allow %q", r.Code, r.Body, r.Header().Get("Allow"))
	}
	r = e.do(t, req{method: "DELETE", path: "/echoip/json"})
	if r.Code != 405 || r.Body.String() != jsonError(ipatlas.CodeMethodNotAllowed) {
		t.Errorf("DELETE /echoip/json: %d %q", r.Code, r.Body)
	}
	echoipCase{"/echoip/nothing", "", "application/json", 404, jsonError(ipatlas.CodeNotFound)}.run(t, e, testPeer, "")
	// Outside the prefix, and without --echoip-root, the paths are not
	// echoip's.
	r = e.do(t, req{method: "GET", path: "/country"})
	if r.Code != 404 || r.env().Code != ipatlas.CodeNotFound {
		t.Errorf("GET /country without --echoip-root: %d %s", r.Code, r.Body)
	}
}

// doRoot sends q to the public handler and validates the answer against
// the document's operation under /echoip/, which describes the same
// operation at the root.
func doRoot(t *testing.T, e *env, q req) resp {
	t.Helper()
	r := newRequest(q)
	w := httptest.NewRecorder()
	e.pub.ServeHTTP(w, r)
	q.path = "/echoip" + q.path
	checkDoc(t, publicSpec(t), newRequest(q), w)
	return resp{w, r}
}

// With Config.EchoIPRoot, echoip's paths also answer at the root, beside
// the server's own; GET / stays the server's (the address for curl, as
// echoip's "/", and the Get-my-IP JSON for a JSON client).
func TestEchoIPRoot(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.EchoIPRoot = true })
	_, k := e.customer(t, account.Pro, 0, 100)
	mv := hostPort(geotest.MountainView.IP)
	for _, tc := range []echoipCase{
		{"/ip", "", "", 200, "8.8.8.8\n"},
		{"/country", "", "", 200, "United States\n"},
		{"/country-iso", "", "", 200, "US\n"},
		{"/city", "", "", 200, "Mountain View\n"},
		{"/asn", "", "", 200, "AS15169\n"},
		{"/asn-org", "", "", 200, "Google LLC\n"},
		{"/coordinates", "", "", 200, "37.422000,-122.085000\n"},
		{"/json", "curl/7.2.6.0", "", 200, mountainViewJSON},
	} {
		r := doRoot(t, e, req{method: "GET", path: tc.path, remote: mv, header: map[string]string{"User-Agent": tc.ua}})
		if r.Code != tc.status || r.Body.String() != tc.body {
			t.Errorf("GET %s: %d %q, want %q", tc.path, r.Code, r.Body, tc.body)
		}
	}
	if r := doRoot(t, e, req{method: "GET", path: "/city?ip=" + geotest.Nuremberg.IP, key: k.Secret}); r.Code != 200 || r.Body.String() != "Nuremberg\n" || used(t, e, k.ID) != 1 {
		t.Errorf("GET /city?ip=: %d %q, charged %d", r.Code, r.Body, used(t, e, k.ID))
	}
	if r := doRoot(t, e, req{method: "POST", path: "/json"}); r.Code != 405 || r.Body.String() != jsonError(ipatlas.CodeMethodNotAllowed) {
		t.Errorf("POST /json: %d %q", r.Code, r.Body)
	}
	// The rest of the root is the server's.
	if r := e.do(t, req{method: "GET", path: "/", remote: mv, header: map[string]string{"User-Agent": "curl/8"}}); r.Code != 200 || r.Body.String() != "8.8.8.8\n" {
		t.Errorf("GET / for curl: %d %q", r.Code, r.Body)
	}
	r := e.do(t, req{method: "GET", path: "/", remote: mv, header: map[string]string{"Accept": "application/json"}})
	var my ipatlas.MyIPResponse
	if err := json.Unmarshal(r.Body.Bytes(), &my); err != nil || r.Code != 200 || my.IP != "8.8.8.8" {
		t.Errorf("GET / for JSON: %d %s", r.Code, r.Body)
	}
	if r := e.do(t, req{method: "GET", path: "/foo"}); r.Code != 404 || r.env().Code != ipatlas.CodeNotFound {
		t.Errorf("GET /foo: %d %s", r.Code, r.Body)
	}
	echoipCase{"/echoip/country", "", "", 200, "United States\n"}.run(t, e, mv, "")
}

// A path of echoip's that the server already answers stops the root mode
// from starting, naming the clash, rather than shadow either route.
func TestEchoIPRootClash(t *testing.T) {
	e := newEnv(t)
	root := e.srv.api.echoipPaths("/")
	if err := rootClash(root, nil); err != nil {
		t.Fatal(err)
	}
	var own []route
	for _, tb := range e.srv.ownTables() {
		own = append(own, tb.routes...)
	}
	if err := rootClash(root, own); err != nil {
		t.Errorf("the server's own routes: %v", err)
	}
	err := rootClash(root, append(own, route{pattern: "GET /json"}, route{pattern: "/city"}))
	if err == nil || !strings.Contains(err.Error(), "GET /json (taken by GET /json)") || !strings.Contains(err.Error(), "GET /city (taken by /city)") ||
		strings.Contains(err.Error(), "country") {
		t.Errorf("clashes: %v", err)
	}
	if err := rootClash(root, []route{{pattern: "GET /{page}"}}); err == nil || strings.Count(err.Error(), "taken by") != len(root) {
		t.Errorf("a wildcard at the root takes every path: %v", err)
	}
}

// With a resolver, echoip's JSON has the host name, as echoip's has with
// -r; for another address its price is the answer's.
func TestEchoIPHostname(t *testing.T) {
	z := rdnstest.New(t, "8.8.8.8.in-addr.arpa. 300 IN PTR dns.google.")
	res, err := rdns.New(rdns.Config{Server: z.Addr, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.srv.deps.Resolver = res
	_, k := e.customer(t, account.Pro, 0, 100)
	for _, q := range []req{
		{method: "GET", path: "/echoip/json", remote: hostPort(geotest.MountainView.IP)},
		{method: "GET", path: "/echoip/json?ip=8.8.8.8", key: k.Secret},
	} {
		r := e.do(t, q)
		var a echoipAnswer
		if err := json.Unmarshal(r.Body.Bytes(), &a); err != nil || r.Code != 200 || a.Hostname != "dns.google" {
			t.Errorf("%s: %d %s", q.path, r.Code, r.Body)
		}
	}
	if used(t, e, k.ID) != 1 {
		t.Errorf("charged %d, want 1", used(t, e, k.ID))
	}
}

// echoip's useragent.TestParse.
func TestEchoIPUserAgent(t *testing.T) {
	browser := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_8_4) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/30.0.1599.28 Safari/537.36"
	for _, tc := range []struct {
		in  string
		out echoipUserAgent
	}{
		{"curl/", echoipUserAgent{Product: "curl"}},
		{"curl/foo", echoipUserAgent{Product: "curl", Comment: "foo"}},
		{"curl/7.26.0", echoipUserAgent{Product: "curl", Version: "7.26.0"}},
		{"Wget/1.13.4 (linux-gnu)", echoipUserAgent{Product: "Wget", Version: "1.13.4", Comment: "(linux-gnu)"}},
		{"Wget", echoipUserAgent{Product: "Wget"}},
		{"fetch libfetch/2.0", echoipUserAgent{Product: "fetch libfetch", Version: "2.0"}},
		{"Go 1.1 package http", echoipUserAgent{Product: "Go", Comment: "1.1 package http"}},
		{"Mikrotik/6.x Fetch", echoipUserAgent{Product: "Mikrotik", Version: "6.x", Comment: "Fetch"}},
		{browser, echoipUserAgent{Product: "Mozilla", Version: "5.0", Comment: browser[len("Mozilla/5.0 "):]}},
	} {
		got := parseUserAgent(tc.in)
		tc.out.RawValue = tc.in
		if got == nil || *got != tc.out {
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.out)
		}
	}
	if parseUserAgent("") != nil {
		t.Error("no User-Agent: want no user_agent")
	}
}
