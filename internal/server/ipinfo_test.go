package server

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipinfo/go/v2/ipinfo"
)

// ipinfoClient is ipinfo's official Go client, unchanged, pointed at the
// ipinfo shape of a real listener, with an ipatlas key as its token.
func ipinfoClient(t *testing.T, srv *httptest.Server, token string) *ipinfo.Client {
	t.Helper()
	c := ipinfo.NewClient(srv.Client(), nil, token)
	base, err := url.Parse(srv.URL + "/ipinfo/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = base
	return c
}

// loc is a record's coordinates as ipinfo writes them.
func loc(rec ipatlas.Record) string {
	return strconv.FormatFloat(*rec.Latitude, 'f', 4, 64) + "," + strconv.FormatFloat(*rec.Longitude, 'f', 4, 64)
}

// ipinfo's official client works against ipatlas: every call answers
// what ipatlas's own record says, under ipinfo's names and formats, and
// each address or AS is charged as one query.
func TestIPInfoOfficialClient(t *testing.T) {
	onStores(t, func(t *testing.T, mk func(...func(*Config)) *portalEnv) {
		e := mk().env
		srv := httptest.NewServer(e.pub)
		t.Cleanup(srv.Close)
		_, k := e.customer(t, account.Pro, 0, 1000)
		c := ipinfoClient(t, srv, k.Secret)
		mv := geotest.MountainView.Want(ipatlas.English)
		ip := net.ParseIP(geotest.MountainView.IP)

		core, err := c.GetIPInfo(ip)
		if err != nil {
			t.Fatal(err)
		}
		if core.IP.String() != mv.IP || core.City != mv.City || core.Region != mv.Province || core.Country != mv.CountryCode ||
			core.Location != loc(mv) || core.Org != "AS15169 Google LLC" || core.Postal != mv.ZipCode || core.Timezone != mv.TimeZone || core.Bogon {
			t.Errorf("GetIPInfo: %+v, the record is %+v", core, mv)
		}
		if core.ASN == nil || core.ASN.ASN != "AS15169" || core.ASN.Name != mv.ISP || core.ASN.Route != mv.Route.String() {
			t.Errorf("asn %+v", core.ASN)
		}
		if core.CountryName != "United States" {
			t.Errorf("the client's country name from the ISO code: %q", core.CountryName)
		}
		if core.Privacy != nil {
			t.Errorf("privacy %+v without privacy data: want it absent (unknown)", core.Privacy)
		}
		for name, call := range map[string]struct {
			get  func(net.IP) (string, error)
			want string
		}{
			"GetIPCity":     {c.GetIPCity, mv.City},
			"GetIPRegion":   {c.GetIPRegion, mv.Province},
			"GetIPCountry":  {c.GetIPCountry, "US"},
			"GetIPLocation": {c.GetIPLocation, "37.4220,-122.0850"},
			"GetIPOrg":      {c.GetIPOrg, "AS15169 Google LLC"},
			"GetIPPostal":   {c.GetIPPostal, "94043"},
			"GetIPTimezone": {c.GetIPTimezone, "America/Los_Angeles"},
		} {
			if got, err := call.get(ip); err != nil || got != call.want {
				t.Errorf("%s: %q, %v; want %q", name, got, err, call.want)
			}
		}

		as, err := c.GetASNDetails("AS15169")
		if err != nil {
			t.Fatal(err)
		}
		var nets, nets6 []string
		for _, p := range as.Prefixes {
			nets = append(nets, p.Netblock)
		}
		for _, p := range as.Prefixes6 {
			nets6 = append(nets6, p.Netblock)
		}
		if as.ASN != "AS15169" || as.Name != "Google LLC" || as.Country != "US" || as.NumIPs != 256 ||
			!slices.Contains(nets, "8.8.8.0/24") || !slices.Contains(nets6, "2001:4860::/32") || as.Prefixes[0].Size != "256" {
			t.Errorf("GetASNDetails: %+v", as)
		}

		batch, err := c.GetIPInfoBatch([]net.IP{ip, net.ParseIP(geotest.GoogleV6.IP), net.ParseIP(geotest.Beijing.IP)}, ipinfo.BatchReqOpts{})
		if err != nil {
			t.Fatal(err)
		}
		bj := geotest.Beijing.Want(ipatlas.English)
		if len(batch) != 3 || batch[geotest.Beijing.IP] == nil || batch[geotest.Beijing.IP].City != bj.City ||
			batch[geotest.Beijing.IP].Org != "AS4808 "+bj.ISP || batch[geotest.MountainView.IP].Location != loc(mv) ||
			batch[geotest.GoogleV6.IP].Country != "US" {
			t.Errorf("GetIPInfoBatch: %d entries %+v", len(batch), batch)
		}
		// GetIPInfo and seven field calls, one AS, three addresses.
		if got := used(t, e, k.ID); got != 12 {
			t.Errorf("used %d, want 12", got)
		}

		// A bad key and a spent quota are errors the client reports.
		_, err = ipinfoClient(t, srv, "ipa_wrong_key").GetIPInfo(ip)
		var er *ipinfo.ErrorResponse
		if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnauthorized || er.Err.Title == "" {
			t.Errorf("bad key: %v", err)
		}
		_, spent := e.customer(t, account.Enterprise, 1, 100)
		sc := ipinfoClient(t, srv, spent.Secret)
		if _, err := sc.GetIPCity(ip); err != nil {
			t.Fatal(err)
		}
		_, err = sc.GetIPCity(ip)
		if !errors.As(err, &er) || er.Response.StatusCode != http.StatusTooManyRequests {
			t.Errorf("spent quota: %v", err)
		}
		_, err = sc.GetIPInfoBatch([]net.IP{ip}, ipinfo.BatchReqOpts{})
		if !errors.As(err, &er) || er.Response.StatusCode != http.StatusTooManyRequests {
			t.Errorf("spent quota, batch: %v", err)
		}
		if got := used(t, e, spent.ID); got != 1 {
			t.Errorf("spent key: used %d, want 1", got)
		}
	})
}

// The ipinfo shape through the handler: bogons are free, names follow
// lang, single fields are text, errors are ipinfo's body with ipatlas's
// statuses, and every answer matches the OpenAPI document.
func TestIPInfoShape(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1000)

	r := e.do(t, req{method: "GET", path: "/ipinfo/10.1.2.3", key: k.Secret})
	if r.Code != http.StatusOK || r.Body.String() != `{"ip":"10.1.2.3","bogon":true}`+"\n" {
		t.Errorf("bogon: %d %s", r.Code, r.Body)
	}
	r = e.do(t, req{method: "GET", path: "/ipinfo/::1/json?token=" + url.QueryEscape(k.Secret)})
	if r.Code != http.StatusOK || r.Body.String() != `{"ip":"::1","bogon":true}`+"\n" {
		t.Errorf("bogon: %d %s", r.Code, r.Body)
	}
	if got := used(t, e, k.ID); got != 0 {
		t.Errorf("bogons charged: used %d", got)
	}

	zh := geotest.Beijing.Want(ipatlas.Chinese)
	r = e.do(t, req{method: "GET", path: "/ipinfo/" + geotest.Beijing.IP + "?lang=zh", key: k.Secret})
	var c ipinfoCore
	if err := json.Unmarshal(r.Body.Bytes(), &c); err != nil || r.Code != http.StatusOK || c.City != zh.City || c.Region != zh.Province || c.Country != "CN" {
		t.Errorf("lang=zh: %d %s, want city %q", r.Code, r.Body, zh.City)
	}
	for _, tc := range []struct{ path, want string }{
		{"/ipinfo/8.8.8.8/city", "Mountain View\n"},
		{"/ipinfo/8.8.8.8/loc", "37.4220,-122.0850\n"},
		{"/ipinfo/8.8.8.8/org", "AS15169 Google LLC\n"},
		{"/ipinfo/8.8.8.8/asn", `{"asn":"AS15169","name":"Google LLC","route":"8.8.8.0/24"}` + "\n"},
	} {
		r := e.do(t, req{method: "GET", path: tc.path, key: k.Secret})
		if r.Code != http.StatusOK || r.Body.String() != tc.want {
			t.Errorf("%s: %d %q, want %q", tc.path, r.Code, r.Body, tc.want)
		}
	}
	r = e.do(t, req{method: "GET", path: "/ipinfo/AS15169/json", key: k.Secret})
	if r.Code != http.StatusOK {
		t.Errorf("AS15169/json: %d %s", r.Code, r.Body)
	}
	if got := used(t, e, k.ID); got != 6 {
		t.Errorf("used %d, want 6", got)
	}

	for _, tc := range []struct {
		method, path, body string
		code               ipatlas.ErrorCode
	}{
		{"GET", "/ipinfo/8.8.8.300", "", ipatlas.CodeInvalidIP},
		{"GET", "/ipinfo/8.8.8.8/anycast", "", ipatlas.CodeNotFound},
		{"GET", "/ipinfo/AS-1", "", ipatlas.CodeInvalidAS},
		{"GET", "/ipinfo/AS4294967295", "", ipatlas.CodeUnknownAS},
		{"GET", "/ipinfo/8.8.8.8?lang=fr", "", ipatlas.CodeInvalidRequest},
		{"GET", "/ipinfo/batch", "", ipatlas.CodeMethodNotAllowed},
		{"PUT", "/ipinfo/8.8.8.8", "", ipatlas.CodeMethodNotAllowed},
		{"GET", "/ipinfo/a/b/c", "", ipatlas.CodeNotFound},
		{"POST", "/ipinfo/batch", `{"ips":[]}`, ipatlas.CodeInvalidRequest},
		{"POST", "/ipinfo/batch", `[]`, ipatlas.CodeInvalidRequest},
	} {
		r := e.do(t, req{method: tc.method, path: tc.path, body: tc.body, key: k.Secret})
		var body ipinfoError
		if err := json.Unmarshal(r.Body.Bytes(), &body); err != nil || r.Code != tc.code.HTTPStatus() || body.Code != tc.code ||
			body.Status != r.Code || body.Error.Title == "" {
			t.Errorf("%s %s: %d %s, want %s", tc.method, tc.path, r.Code, r.Body, tc.code)
		}
	}
	r = e.do(t, req{method: "GET", path: "/ipinfo/8.8.8.8"})
	if r.Code != http.StatusUnauthorized {
		t.Errorf("no key: %d %s", r.Code, r.Body)
	}
	if got := used(t, e, k.ID); got != 6 {
		t.Errorf("failures charged: used %d, want 6", got)
	}

	// A batch: items of every kind, an address charged once however it is
	// asked for (8.8.8.8 twice and 8.8.8.8/city), free bogons and
	// failures, and ?filter=1 leaving out failures.
	r = e.do(t, req{method: "POST", path: "/ipinfo/batch", key: k.Secret,
		body: `["8.8.8.8","8.8.8.8","8.8.8.8/city","AS15169","10.0.0.1","nope"]`})
	var got map[string]json.RawMessage
	if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil || r.Code != http.StatusOK || len(got) != 5 ||
		string(got["8.8.8.8/city"]) != `"Mountain View"` || string(got["10.0.0.1"]) != `{"ip":"10.0.0.1","bogon":true}` {
		t.Errorf("batch: %d %s", r.Code, r.Body)
	}
	if n := used(t, e, k.ID); n != 8 {
		t.Errorf("batch: used %d, want 8 (two charged items: 8.8.8.8 and AS15169)", n)
	}
	r = e.do(t, req{method: "POST", path: "/ipinfo/batch?filter=1", key: k.Secret, body: `["8.8.8.8/postal","nope","1.1.1.1/city"]`})
	if r.Code != http.StatusOK || r.Body.String() != `{"8.8.8.8/postal":"94043"}`+"\n" {
		t.Errorf("filter=1: %d %s", r.Code, r.Body)
	}
}

// With privacy data loaded, ipinfo's privacy object carries the record's
// flags and service.
func TestIPInfoPrivacy(t *testing.T) {
	e := newPrivacyEnv(t)
	srv := httptest.NewServer(e.pub)
	t.Cleanup(srv.Close)
	_, k := e.customer(t, account.Pro, 0, 1000)
	p, err := ipinfoClient(t, srv, k.Secret).GetIPPrivacy(net.ParseIP("8.8.8.8"))
	if err != nil {
		t.Fatal(err)
	}
	if p == nil || !p.Hosting || !p.Tor || p.VPN || p.Relay || p.Proxy || p.Service != "Google" {
		t.Errorf("privacy %+v", p)
	}
	r := e.do(t, req{method: "GET", path: "/ipinfo/8.8.8.8/privacy", key: k.Secret})
	if r.Body.String() != `{"vpn":false,"tor":true,"relay":false,"hosting":true,"service":"Google"}`+"\n" {
		t.Errorf("privacy field: %s", r.Body)
	}
}
