package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/accuracy"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// basicAuth is an Authorization header of HTTP Basic, as MaxMind's
// clients send their account ID and licence key.
func basicAuth(user, pass string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
}

// mmGet asks the MaxMind shape for path with the account ID and key.
func mmGet(t *testing.T, e *env, path string, id int64, key string) resp {
	t.Helper()
	return e.do(t, req{method: "GET", path: path, header: basicAuth(strconv.FormatInt(id, 10), key)})
}

// keyUsed is the queries a key was charged this month.
func keyUsed(t *testing.T, e *env, keyID string) int64 {
	t.Helper()
	n, err := e.store.Usage(context.Background(), keyID, account.Period(testNow))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mmCode is a MaxMind error body's code.
func mmCode(t *testing.T, r resp) string {
	t.Helper()
	var v maxmindError
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil || v.Code == "" || v.Error == "" {
		t.Fatalf("not MaxMind's error body: %d %s", r.Code, r.Body)
	}
	return v.Code
}

// TestMaxMindShape checks the three services' answers against the
// fixture's places, in both languages, and what each one holds.
func TestMaxMindShape(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Enterprise, 100, 100)
	nb := geotest.Nuremberg

	r := mmGet(t, e, "/geoip/v2.1/city/"+nb.IP, acct.ID, k.Secret)
	if r.Code != 200 {
		t.Fatalf("city: %d %s", r.Code, r.Body)
	}
	var city maxmindAnswer
	if err := json.Unmarshal(r.Body.Bytes(), &city); err != nil {
		t.Fatal(err)
	}
	want := maxmindAnswer{
		City:              &maxmindCityNames{Names: maxmindNames{EN: "Nuremberg", ZH: "纽伦堡"}},
		Continent:         &maxmindContinent{Code: "EU", Names: maxmindNames{EN: "Europe", ZH: "欧洲"}},
		Country:           &maxmindCountry{IsInEuropeanUnion: true, ISOCode: "DE", Names: maxmindNames{EN: "Germany", ZH: "德国"}},
		RegisteredCountry: &maxmindCountry{IsInEuropeanUnion: true, ISOCode: "DE", Names: maxmindNames{EN: "Germany", ZH: "德国"}},
		Postal:            &maxmindPostal{Code: nb.ZipCode},
		Traits:            maxmindTraits{IPAddress: nb.IP, Network: nb.Network, ASN: 24940, ASOrganization: nb.ISP, ISP: nb.ISP, Organization: nb.ISP},
		MaxMind:           maxmindAccount{QueriesRemaining: 99},
	}
	if city.City == nil || city.City.Names.EN != want.City.Names.EN || city.City.Names.ZH == "" ||
		*city.Continent != *want.Continent || *city.Country != *want.Country || *city.RegisteredCountry != *want.RegisteredCountry ||
		*city.Postal != *want.Postal || city.Traits != want.Traits || city.MaxMind != want.MaxMind {
		t.Errorf("city, Nuremberg: %s", r.Body)
	}
	if len(city.Subdivisions) != 1 || city.Subdivisions[0].ISOCode != "BY" || city.Subdivisions[0].Names.EN != "Bavaria" || city.Subdivisions[0].Names.ZH == "" {
		t.Errorf("subdivisions: %+v", city.Subdivisions)
	}
	if l := city.Location; l == nil || *l.Latitude != nb.Latitude || *l.Longitude != nb.Longitude || l.TimeZone != nb.TimeZone ||
		int(l.AccuracyRadius) != accuracy.CityRadius[accuracy.GroupEurope] {
		t.Errorf("location: %+v", city.Location)
	}
	if strings.Contains(r.Body.String(), "geoname_id") {
		t.Errorf("never sent: geoname_id: %s", r.Body)
	}
	if r.Header().Get("Ratelimit-Remaining") != "99" {
		t.Errorf("quota headers: %v", r.Header())
	}

	// Country: no city, location, postal, subdivisions or AS.
	mv := geotest.MountainView
	r = mmGet(t, e, "/geoip/v2.1/country/"+mv.IP, acct.ID, k.Secret)
	var country map[string]json.RawMessage
	if err := json.Unmarshal(r.Body.Bytes(), &country); r.Code != 200 || err != nil {
		t.Fatalf("country: %d %s", r.Code, r.Body)
	}
	for _, absent := range []string{"city", "location", "postal", "subdivisions"} {
		if _, ok := country[absent]; ok {
			t.Errorf("country answers %s: %s", absent, r.Body)
		}
	}
	if string(country["traits"]) != `{"ip_address":"8.8.8.8","network":"8.8.8.0/24"}` || string(country["country"]) != `{"iso_code":"US","names":{"en":"United States","zh-CN":"美国"}}` ||
		string(country["maxmind"]) != `{"queries_remaining":98}` {
		t.Errorf("country, 8.8.8.8: %s", r.Body)
	}

	// A record without a location or an AS: a time zone alone, no AS.
	sg := geotest.Singapore
	r = mmGet(t, e, "/geoip/v2.1/insights/"+sg.IP, acct.ID, k.Secret)
	if r.Code != 200 || !strings.Contains(r.Body.String(), `"location":{"time_zone":"Asia/Singapore"}`) ||
		strings.Contains(r.Body.String(), "autonomous_system") || strings.Contains(r.Body.String(), "is_") {
		t.Errorf("insights, Singapore: %d %s", r.Code, r.Body)
	}
	if n := keyUsed(t, e, k.ID); n != 3 {
		t.Errorf("three answers, %d charges", n)
	}
}

// TestMaxMindFailures checks MaxMind's codes and statuses, that failures
// are free, and that no credential is repeated.
func TestMaxMindFailures(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Enterprise, 100, 100)
	other, _ := e.customer(t, account.Enterprise, 100, 100)
	id := strconv.FormatInt(acct.ID, 10)
	for _, c := range []struct {
		name, path string
		header     map[string]string
		status     int
		code       string
	}{
		{"no credentials", "/geoip/v2.1/city/8.8.8.8", nil, 401, "ACCOUNT_ID_REQUIRED"},
		{"no account ID", "/geoip/v2.1/city/8.8.8.8", basicAuth("", k.Secret), 401, "ACCOUNT_ID_REQUIRED"},
		{"no licence key", "/geoip/v2.1/city/8.8.8.8", basicAuth(id, ""), 401, "LICENSE_KEY_REQUIRED"},
		{"a bearer key", "/geoip/v2.1/city/8.8.8.8", map[string]string{"Authorization": "Bearer " + k.Secret}, 401, "AUTHORIZATION_INVALID"},
		{"an account ID that is no number", "/geoip/v2.1/city/8.8.8.8", basicAuth("acme", k.Secret), 401, "AUTHORIZATION_INVALID"},
		{"another account's ID", "/geoip/v2.1/city/8.8.8.8", basicAuth(strconv.FormatInt(other.ID, 10), k.Secret), 401, "AUTHORIZATION_INVALID"},
		{"a wrong key", "/geoip/v2.1/city/8.8.8.8", basicAuth(id, k.Secret+"x"), 401, "AUTHORIZATION_INVALID"},
		{"malformed address", "/geoip/v2.1/country/8.8.8", basicAuth(id, k.Secret), 400, "IP_ADDRESS_INVALID"},
		{"no address", "/geoip/v2.1/country/", basicAuth(id, k.Secret), 400, "IP_ADDRESS_REQUIRED"},
		{"private address", "/geoip/v2.1/insights/10.1.2.3", basicAuth(id, k.Secret), 400, "IP_ADDRESS_RESERVED"},
		{"the caller's own private address", "/geoip/v2.1/insights/me", basicAuth(id, k.Secret), 400, "IP_ADDRESS_RESERVED"},
		{"an address the data lacks", "/geoip/v2.1/city/9.9.9.9", basicAuth(id, k.Secret), 404, "IP_ADDRESS_NOT_FOUND"},
		{"another service", "/geoip/v2.1/enterprise/8.8.8.8", basicAuth(id, k.Secret), 404, "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := req{method: "GET", path: c.path, header: c.header}
			if strings.Contains(c.name, "own") {
				q.remote = "10.0.0.9:5000"
			}
			r := e.do(t, q)
			if r.Code != c.status || mmCode(t, r) != c.code {
				t.Errorf("%d %s, want %d %s", r.Code, r.Body, c.status, c.code)
			}
			if strings.Contains(r.Body.String(), k.Secret) {
				t.Errorf("the key is repeated: %s", r.Body)
			}
			if c.status == 401 && !strings.HasPrefix(r.Header().Get("Www-Authenticate"), "Basic ") {
				t.Errorf("401 without a Basic challenge: %v", r.Header())
			}
		})
	}
	if n := keyUsed(t, e, k.ID); n != 0 {
		t.Errorf("failures charged: %d", n)
	}

	// The caller's own public address, then the quota and the credits
	// spent.
	spent, sk := e.customer(t, account.Enterprise, 1, 100)
	r := e.do(t, req{method: "GET", path: "/geoip/v2.1/country/me", remote: geotest.Beijing.IP + ":5000",
		header: basicAuth(strconv.FormatInt(spent.ID, 10), sk.Secret)})
	if r.Code != 200 || !strings.Contains(r.Body.String(), `"ip_address":"`+geotest.Beijing.IP+`"`) ||
		!strings.Contains(r.Body.String(), `"queries_remaining":0`) {
		t.Errorf("me: %d %s", r.Code, r.Body)
	}
	r = mmGet(t, e, "/geoip/v2.1/country/8.8.8.8", spent.ID, sk.Secret)
	if r.Code != 402 || mmCode(t, r) != "OUT_OF_QUERIES" {
		t.Errorf("quota spent: %d %s", r.Code, r.Body)
	}
	poor, pk := e.customer(t, account.Enterprise, 100, 0)
	r = mmGet(t, e, "/geoip/v2.1/country/8.8.8.8", poor.ID, pk.Secret)
	if r.Code != 402 || mmCode(t, r) != "INSUFFICIENT_FUNDS" {
		t.Errorf("no credits: %d %s", r.Code, r.Body)
	}
	if n := keyUsed(t, e, sk.ID); n != 1 {
		t.Errorf("one answer, %d charges", n)
	}
}

// TestMaxMindInsightsFlags checks the anonymizer and hosting flags of
// Insights, from the privacy lists, and that Country and City have none.
func TestMaxMindInsightsFlags(t *testing.T) {
	e := newPrivacyEnv(t)
	acct, k := e.customer(t, account.Enterprise, 100, 100)
	// 8.8.8.8: Google's hosting range, and a Tor exit on the test's list.
	r := mmGet(t, e, "/geoip/v2.1/insights/8.8.8.8", acct.ID, k.Secret)
	var v maxmindAnswer
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil || r.Code != 200 {
		t.Fatalf("%d %s", r.Code, r.Body)
	}
	if tr := v.Traits; !tr.IsAnonymous || !tr.IsHostingProvider || !tr.IsTorExitNode || tr.IsAnonymousVPN || tr.IsPublicProxy || tr.IsResidentialProxy {
		t.Errorf("insights, 8.8.8.8: %+v", tr)
	}
	// Apple's relay: anonymous, nothing else.
	r = mmGet(t, e, "/geoip/v2.1/insights/104.28.28.1", acct.ID, k.Secret)
	v = maxmindAnswer{}
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil || r.Code != 200 || !v.Traits.IsAnonymous || v.Traits.IsHostingProvider {
		t.Errorf("insights, a relay: %d %s", r.Code, r.Body)
	}
	r = mmGet(t, e, "/geoip/v2.1/city/8.8.8.8", acct.ID, k.Secret)
	if r.Code != 200 || strings.Contains(r.Body.String(), `"is_`) {
		t.Errorf("city has no flags: %d %s", r.Code, r.Body)
	}
}
