package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

// FuzzDecodeAnswer feeds arbitrary answers to the client's decoding of a
// location query: it never panics, a success always carries a record with
// an IP, and a failure is always an *Error with a code.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add(200, []byte(`{"success":true,"data":`+recordJSON+`,"meta":{"currentCredits":3}}`), "")
	f.Add(429, []byte(`{"success":false,"error":"API rate limit exceeded","code":"RateLimitExceeded","meta":{}}`), "3600")
	f.Add(502, []byte(`<html>bad gateway</html>`), "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(200, []byte(`{"success":false,"error":"不支持私有 IP 地址"}`), "-1")
	f.Add(200, []byte(`{"success":true,"data":{"ip":"1.1.1.1","latitude":"x"}}`), "99999999999999999999")
	c, err := client.New(client.Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter string) {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		res, err := client.DecodeAnswer(c, status, h, body)
		if err == nil {
			if res.Record.IP == "" || status < 200 || status > 299 {
				t.Fatalf("success with status %d and record %+v", status, res.Record)
			}
			return
		}
		var e *ipatlas.Error
		if !errors.As(err, &e) || e.Code == "" || e.RetryAfter < 0 {
			t.Fatalf("failure %#v", err)
		}
	})
}

// FuzzLookupResultJSON checks that what UnmarshalJSON accepts survives a
// round trip with its record and field presence.
func FuzzLookupResultJSON(f *testing.F) {
	f.Add([]byte(`{"data":` + recordJSON + `,"meta":{"currentCredits":1},"fetched_at":"2026-11-03T12:00:00Z"}`))
	f.Add([]byte(`{"data":{"ip":"::1","district":""},"rate_limit":{"limit":5}}`))
	f.Add([]byte(`{"data":null}`))
	keys := []string{"ip", "continent", "continent_code", "country", "country_code", "province", "province_code", "city", "district",
		"isp", "asn", "latitude", "longitude", "time_zone", "currency", "zip_code", "area_code"}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r client.LookupResult
		if json.Unmarshal(data, &r) != nil {
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back client.LookupResult
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back.Record, r.Record) || back.Meta != r.Meta || back.RateLimit != r.RateLimit {
			t.Fatalf("round trip changed %+v into %+v", r, back)
		}
		for _, k := range keys {
			if back.Has(k) != r.Has(k) {
				t.Fatalf("round trip changed the presence of %q", k)
			}
		}
	})
}
