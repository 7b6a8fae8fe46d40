package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
)

// ip-api's region is the province's ISO 3166-2 code without the
// country's part ("CA" for California, as ip-api answers QC for Quebec),
// and its zip the record's postal code, in both languages.
func TestIPAPIRegionIsTheProvinceCode(t *testing.T) {
	e := newPrivacyEnv(t)
	_, k := e.customer(t, account.Pro, 0, 1000)
	for _, lang := range []string{"en", "zh-CN"} {
		for _, p := range []geotest.Known{geotest.MountainView, geotest.Nuremberg} {
			r := e.do(t, req{method: "GET", path: "/ip-api/json/" + p.IP + "?fields=region,regionName,zip&lang=" + lang + "&key=" + url.QueryEscape(k.Secret)})
			var got struct{ Region, RegionName, Zip string }
			if err := json.Unmarshal(r.Body.Bytes(), &got); err != nil || r.Code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", p.IP, lang, r.Code, r.Body)
			}
			if got.Region != p.ProvinceCode || got.Zip != p.ZipCode || got.RegionName == "" {
				t.Errorf("%s %s: region %q, zip %q, regionName %q; want %q, %q", p.IP, lang, got.Region, got.Zip, got.RegionName, p.ProvinceCode, p.ZipCode)
			}
		}
	}
}
