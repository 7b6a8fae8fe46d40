package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipinfo/go/v2/ipinfo"
)

// proxyHop is a reverse proxy's hop in front of the listener: it
// sends each request with the client address it stands for.
type proxyHop struct {
	next   http.RoundTripper
	client string
}

func (f proxyHop) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.client)
	return f.next.RoundTrip(r)
}

// baseURL is a listener's URL under path, for a client's BaseURL.
func baseURL(t *testing.T, srv *httptest.Server, path string) *url.URL {
	t.Helper()
	u, err := url.Parse(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The clients of ipinfo's current API (NewLiteClient, NewCoreClient,
// NewPlusClient of its Go module), unchanged, with their BaseURL at a
// real listener's /ipinfo/lite/ and /ipinfo/lookup/ and an ipatlas key as
// their token: each decodes ipatlas's record under its own names, the
// caller's own address included (through a trusted proxy, as the listener
// sees loopback), and each address is charged as one query.
func TestIPInfoCurrentClients(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk(func(c *Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		}).env
		srv := httptest.NewServer(e.pub)
		t.Cleanup(srv.Close)
		_, k := e.customer(t, account.Pro, 0, 1000)
		hc := srv.Client()
		self := &http.Client{Transport: proxyHop{next: hc.Transport, client: geotest.Beijing.IP}}
		lite := func(hc *http.Client, token string) *ipinfo.LiteClient {
			c := ipinfo.NewLiteClient(hc, nil, token)
			c.BaseURL = baseURL(t, srv, "/ipinfo/lite/")
			return c
		}
		core := func(hc *http.Client, token string) *ipinfo.CoreClient {
			c := ipinfo.NewCoreClient(hc, nil, token)
			c.BaseURL = baseURL(t, srv, "/ipinfo/lookup/")
			return c
		}
		plus := func(hc *http.Client, token string) *ipinfo.PlusClient {
			c := ipinfo.NewPlusClient(hc, nil, token)
			c.BaseURL = baseURL(t, srv, "/ipinfo/lookup/")
			return c
		}
		mv := geotest.MountainView
		bj := geotest.Beijing

		// Lite: the country and the AS, over IPv4, IPv6 and lite/me.
		l, err := lite(hc, k.Secret).GetIPInfo(net.ParseIP(mv.IP))
		if err != nil {
			t.Fatal(err)
		}
		if l.IP.String() != mv.IP || l.ASN != "AS15169" || l.ASName != "Google LLC" || l.ASDomain != "" ||
			l.CountryCode != "US" || l.Country != "United States" || l.ContinentCode != "NA" || l.Continent != "North America" || l.Bogon {
			t.Errorf("Lite GetIPInfo: %+v", l)
		}
		if l.CountryName != "United States" || l.ContinentInfo.Code != "NA" {
			t.Errorf("Lite: the client's names from the country code: %q %+v", l.CountryName, l.ContinentInfo)
		}
		nb := geotest.Nuremberg
		l, err = lite(hc, k.Secret).GetIPInfo(net.ParseIP(nb.IP))
		if err != nil || l.IP.String() != nb.IP || l.CountryCode != "DE" || l.Country != "Germany" || l.ASN != nb.ASN || !l.IsEU {
			t.Errorf("Lite over IPv6: %+v, %v", l, err)
		}
		l, err = lite(self, k.Secret).GetIPInfo(nil)
		if err != nil || l.IP.String() != bj.IP || l.CountryCode != "CN" || l.ASN != bj.ASN {
			t.Errorf("Lite, the caller's own address (lite/me): %+v, %v", l, err)
		}

		// Core: geo, as and the five flags.
		c, err := core(hc, k.Secret).GetIPInfo(net.ParseIP(mv.IP))
		if err != nil {
			t.Fatal(err)
		}
		if c.IP.String() != mv.IP || c.Bogon || c.IsAnonymous || c.IsAnycast || c.IsHosting || c.IsMobile || c.IsSatellite {
			t.Errorf("Core GetIPInfo: %+v", c)
		}
		if g := c.Geo; g == nil || g.City != mv.City || g.Region != mv.Province || g.RegionCode != mv.ProvinceCode || g.Country != "United States" ||
			g.CountryCode != "US" || g.Continent != "North America" || g.ContinentCode != "NA" || g.Latitude != mv.Latitude ||
			g.Longitude != mv.Longitude || g.Timezone != mv.TimeZone || g.PostalCode != mv.ZipCode || g.CountryName != "United States" {
			t.Errorf("Core geo: %+v", g)
		}
		if c.AS == nil || *c.AS != (ipinfo.CoreAS{ASN: "AS15169", Name: "Google LLC"}) {
			t.Errorf("Core as: %+v", c.AS)
		}
		sg := geotest.Singapore
		c, err = core(hc, k.Secret).GetIPInfo(net.ParseIP(sg.IP))
		if err != nil || c.Geo == nil || c.Geo.CountryCode != "SG" || c.Geo.Latitude != 0 || c.Geo.Longitude != 0 || c.Geo.Timezone != sg.TimeZone || c.AS != nil {
			t.Errorf("Core, a record without location or AS: %+v, %v (geo %+v)", c, err, c.Geo)
		}
		c, err = core(self, k.Secret).GetIPInfo(nil)
		if err != nil || c.IP.String() != bj.IP || c.Geo == nil || c.Geo.City != bj.City || c.AS == nil || c.AS.ASN != bj.ASN {
			t.Errorf("Core, the caller's own address (lookup/): %+v, %v", c, err)
		}

		// Plus: the same path and answer, decoded into Plus's fields.
		p, err := plus(hc, k.Secret).GetIPInfo(net.ParseIP(geotest.GoogleV6.IP))
		if err != nil {
			t.Fatal(err)
		}
		if p.IP.String() != geotest.GoogleV6.IP || p.Geo == nil || p.Geo.City != mv.City || p.Geo.CountryCode != "US" ||
			p.Geo.Latitude != mv.Latitude || p.AS == nil || p.AS.ASN != "AS15169" || p.AS.Name != "Google LLC" ||
			p.IsAnonymous || p.IsHosting || p.IsAnycast || p.IsMobile || p.IsSatellite {
			t.Errorf("Plus GetIPInfo: %+v (geo %+v)", p, p.Geo)
		}
		if p.Anonymous != nil || p.Privacy != nil || p.Mobile != nil || p.Company != nil || p.Abuse != nil || p.Domains != nil {
			t.Errorf("Plus: objects without data behind them: %+v", p)
		}
		p, err = plus(self, k.Secret).GetIPInfo(nil)
		if err != nil || p.IP.String() != bj.IP || p.Geo == nil || p.Geo.CountryCode != "CN" {
			t.Errorf("Plus, the caller's own address: %+v, %v", p, err)
		}
		// Three Lite, three Core and two Plus answers.
		if got := used(t, e, k.ID); got != 8 {
			t.Errorf("used %d, want 8", got)
		}

		// A bad key and a spent quota are errors each client reports.
		var er *ipinfo.ErrorResponse
		for name, get := range map[string]func(*http.Client, string) error{
			"Lite": func(hc *http.Client, tok string) error {
				_, err := lite(hc, tok).GetIPInfo(net.ParseIP(mv.IP))
				return err
			},
			"Core": func(hc *http.Client, tok string) error {
				_, err := core(hc, tok).GetIPInfo(net.ParseIP(mv.IP))
				return err
			},
			"Plus": func(hc *http.Client, tok string) error { _, err := plus(hc, tok).GetIPInfo(nil); return err },
		} {
			if err := get(hc, "ipa_wrong_key"); !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnauthorized || er.Err.Title == "" {
				t.Errorf("%s, bad key: %v", name, err)
			}
			_, spent := e.customer(t, account.Enterprise, 1, 100)
			if err := get(self, spent.Secret); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := get(self, spent.Secret); !errors.As(err, &er) || er.Response.StatusCode != http.StatusTooManyRequests {
				t.Errorf("%s, spent quota: %v", name, err)
			}
			if got := used(t, e, spent.ID); got != 1 {
				t.Errorf("%s, spent key: used %d, want 1", name, got)
			}
		}
	})
}

// The current API's answers through the handler, each checked against
// the OpenAPI document: their exact bodies, bogons (free), the caller's
// own address in every spelling, lang, the ways a key is sent, failures
// in ipinfo's error body, uncharged, and CORS preflights.
func TestIPInfoCurrentShape(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1000)

	for _, tc := range []struct{ path, want string }{
		{"/ipinfo/lite/8.8.8.8", `{"ip":"8.8.8.8","asn":"AS15169","as_name":"Google LLC","country_code":"US","country":"United States","continent_code":"NA","continent":"North America"}`},
		{"/ipinfo/lookup/8.8.8.8", `{"ip":"8.8.8.8","geo":{"city":"Mountain View","region":"California","region_code":"CA","country":"United States","country_code":"US",` +
			`"continent":"North America","continent_code":"NA","latitude":37.422,"longitude":-122.085,"timezone":"America/Los_Angeles","postal_code":"94043"},` +
			`"as":{"asn":"AS15169","name":"Google LLC","route":"8.8.8.0/24"},"is_anonymous":false,"is_anycast":false,"is_hosting":false,"is_mobile":false,"is_satellite":false}`},
		{"/ipinfo/lookup/" + geotest.Singapore.IP, `{"ip":"103.252.1.1","geo":{"country":"Singapore","country_code":"SG","continent":"Asia","continent_code":"AS",` +
			`"timezone":"Asia/Singapore"},"is_anonymous":false,"is_anycast":false,"is_hosting":false,"is_mobile":false,"is_satellite":false}`},
		{"/ipinfo/lite/10.1.2.3", `{"ip":"10.1.2.3","bogon":true}`},
		{"/ipinfo/lookup/::1", `{"ip":"::1","bogon":true}`},
		{"/ipinfo/lookup/", `{"ip":"203.0.113.7","bogon":true}`}, // the test peer is in TEST-NET-3
		{"/ipinfo/lookup/me", `{"ip":"203.0.113.7","bogon":true}`},
		{"/ipinfo/lite/me", `{"ip":"203.0.113.7","bogon":true}`},
	} {
		r := e.do(t, req{method: "GET", path: tc.path, key: k.Secret})
		if r.Code != http.StatusOK || r.Body.String() != tc.want+"\n" || r.Header().Get("RateLimit-Remaining") == "" {
			t.Errorf("%s: %d %s\nwant %s", tc.path, r.Code, r.Body, tc.want)
		}
	}
	if got := used(t, e, k.ID); got != 3 {
		t.Errorf("used %d, want 3 (the bogons are free)", got)
	}

	// The caller's own address, the key as ipinfo documents it, lang=zh
	// and HEAD (free).
	zh := geotest.Beijing.Want(ipatlas.Chinese)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(k.Secret+":"))
	for _, tc := range []struct {
		q          req
		ip, cityOr string
	}{
		{req{path: "/ipinfo/lite/me", key: k.Secret, remote: "8.8.8.8:1234"}, "8.8.8.8", "United States"},
		{req{path: "/ipinfo/lookup/", key: k.Secret, remote: "8.8.8.8:1234"}, "8.8.8.8", "Mountain View"},
		{req{path: "/ipinfo/lookup/me?token=" + url.QueryEscape(k.Secret), remote: "8.8.8.8:1234"}, "8.8.8.8", "Mountain View"},
		{req{path: "/ipinfo/lite/" + geotest.Beijing.IP, header: map[string]string{"Authorization": basic}}, geotest.Beijing.IP, "China"},
		{req{path: "/ipinfo/lite/" + geotest.Beijing.IP + "?lang=zh", key: k.Secret}, geotest.Beijing.IP, zh.Country},
		{req{path: "/ipinfo/lookup/" + geotest.Beijing.IP + "?lang=zh", key: k.Secret}, geotest.Beijing.IP, zh.City},
	} {
		tc.q.method = "GET"
		r := e.do(t, tc.q)
		var v struct {
			IP      string `json:"ip"`
			Country string `json:"country"`
			Geo     struct {
				City string `json:"city"`
			} `json:"geo"`
		}
		if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil || r.Code != http.StatusOK || v.IP != tc.ip || (v.Country != tc.cityOr && v.Geo.City != tc.cityOr) {
			t.Errorf("%s from %s: %d %s", tc.q.path, tc.q.remote, r.Code, r.Body)
		}
	}
	if got := used(t, e, k.ID); got != 9 {
		t.Errorf("used %d, want 9", got)
	}
	for _, path := range []string{"/ipinfo/lite/8.8.8.8", "/ipinfo/lookup/8.8.8.8"} {
		r := e.do(t, req{method: "HEAD", path: path, key: k.Secret})
		if r.Code != http.StatusOK || r.Header().Get("RateLimit-Remaining") == "" {
			t.Errorf("HEAD %s: %d", path, r.Code)
		}
	}

	for _, tc := range []struct {
		method, path string
		code         ipatlas.ErrorCode
	}{
		{"GET", "/ipinfo/lite/8.8.8.300", ipatlas.CodeInvalidIP},
		{"GET", "/ipinfo/lite/AS15169", ipatlas.CodeInvalidIP}, // an AS is the legacy path's
		{"GET", "/ipinfo/lookup/8.8.8.8%20", ipatlas.CodeInvalidIP},
		{"GET", "/ipinfo/lookup/8.8.8.8?lang=fr", ipatlas.CodeInvalidRequest},
		{"PUT", "/ipinfo/lite/8.8.8.8", ipatlas.CodeMethodNotAllowed},
		{"POST", "/ipinfo/lookup/", ipatlas.CodeMethodNotAllowed},
		{"DELETE", "/ipinfo/lite/me", ipatlas.CodeMethodNotAllowed},
		{"GET", "/ipinfo/lite/8.8.8.8/country", ipatlas.CodeNotFound},
	} {
		r := e.do(t, req{method: tc.method, path: tc.path, key: k.Secret})
		var body ipinfoError
		if err := json.Unmarshal(r.Body.Bytes(), &body); err != nil || r.Code != tc.code.HTTPStatus() || body.Code != tc.code ||
			body.Status != r.Code || body.Error.Title == "" {
			t.Errorf("%s %s: %d %s, want %s", tc.method, tc.path, r.Code, r.Body, tc.code)
		}
	}
	for _, path := range []string{"/ipinfo/lite/8.8.8.8", "/ipinfo/lookup/", "/ipinfo/lookup/me"} {
		r := e.do(t, req{method: "GET", path: path})
		if r.Code != http.StatusUnauthorized {
			t.Errorf("%s without a key: %d %s", path, r.Code, r.Body)
		}
	}
	if got := used(t, e, k.ID); got != 9 {
		t.Errorf("HEAD and failures charged: used %d, want 9", got)
	}

	// Browsers' CORS preflights reach every path, fixed or not.
	for _, path := range []string{"/ipinfo/lite/8.8.8.8", "/ipinfo/lite/me", "/ipinfo/lookup/", "/ipinfo/lookup/me", "/ipinfo/lookup/2001:4860:4860::8888"} {
		r := e.do(t, req{method: "OPTIONS", path: path, header: map[string]string{"Origin": "https://a.example", "Access-Control-Request-Method": "GET"}})
		if r.Code != http.StatusNoContent || r.Header().Get("Access-Control-Allow-Methods") == "" {
			t.Errorf("preflight %s: %d %v", path, r.Code, r.Header())
		}
	}
}

// With privacy data loaded, is_anonymous (a VPN, a relay or a Tor exit)
// and is_hosting come from the lists, and Plus's anonymous object says
// which list; the flags ipatlas has no source for stay false.
func TestIPInfoCurrentPrivacy(t *testing.T) {
	e := newPrivacyEnv(t)
	srv := httptest.NewServer(e.pub)
	t.Cleanup(srv.Close)
	_, k := e.customer(t, account.Pro, 0, 1000)
	pc := ipinfo.NewPlusClient(srv.Client(), nil, k.Secret)
	pc.BaseURL = baseURL(t, srv, "/ipinfo/lookup/")
	cc := ipinfo.NewCoreClient(srv.Client(), nil, k.Secret)
	cc.BaseURL = baseURL(t, srv, "/ipinfo/lookup/")

	// 8.8.8.8: Google's hosting range, and a Tor exit on the test's list.
	p, err := pc.GetIPInfo(net.ParseIP("8.8.8.8"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.IsAnonymous || !p.IsHosting || p.IsAnycast || p.IsMobile || p.IsSatellite ||
		p.Anonymous == nil || *p.Anonymous != (ipinfo.PlusAnonymous{IsTor: true}) ||
		p.Privacy == nil || *p.Privacy != (ipinfo.PlusPrivacy{Tor: true, Hosting: true, Service: "Google"}) {
		t.Errorf("Plus, 8.8.8.8: %+v, anonymous %+v, privacy %+v", p, p.Anonymous, p.Privacy)
	}
	// Apple's relay: anonymous, not hosting, the service named.
	p, err = pc.GetIPInfo(net.ParseIP("104.28.28.1"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.IsAnonymous || p.IsHosting || p.Anonymous == nil ||
		*p.Anonymous != (ipinfo.PlusAnonymous{IsRelay: true, Name: "iCloud Private Relay"}) {
		t.Errorf("Plus, a relay: %+v, anonymous %+v", p, p.Anonymous)
	}
	// On no list.
	c, err := cc.GetIPInfo(net.ParseIP(geotest.Beijing.IP))
	if err != nil || c.IsAnonymous || c.IsHosting || c.IsAnycast || c.IsMobile || c.IsSatellite {
		t.Errorf("Core, an address on no list: %+v, %v", c, err)
	}
	r := e.do(t, req{method: "GET", path: "/ipinfo/lookup/8.8.8.8", key: k.Secret})
	var v struct {
		Anonymous   json.RawMessage `json:"anonymous"`
		Privacy     json.RawMessage `json:"privacy"`
		IsAnonymous bool            `json:"is_anonymous"`
		IsHosting   bool            `json:"is_hosting"`
	}
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil || !v.IsAnonymous || !v.IsHosting ||
		string(v.Anonymous) != `{"is_proxy":false,"is_relay":false,"is_tor":true,"is_vpn":false,"is_res_proxy":false}` ||
		string(v.Privacy) != `{"vpn":false,"tor":true,"relay":false,"hosting":true,"service":"Google"}` {
		t.Errorf("lookup with privacy data: %d %s", r.Code, r.Body)
	}
}
