package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas/internal/account"
)

// FuzzShapes sends arbitrary input where the GET lookups and the
// ipinfo, ip-api, MaxMind and echoip shapes read it: as a path item, a fields,
// lang or ip parameter, a batch body, and MaxMind's account ID and
// licence key. Whatever it is, the answer is
// never a 5xx, and a shape's answer is JSON in that shape (plain text for
// the field routes).
func FuzzShapes(f *testing.F) {
	for _, s := range []string{"8.8.8.8", "AS15169", "AS-1", "8.8.8.8/city", "10.0.0.1", "::1", "[::1]:80", "8.8.8.8:0", "zh-CN", "66846719",
		`["8.8.8.8","AS15169","8.8.8.8/org"]`, `[{"query":"8.8.8.8","fields":61439},"1.1.1.1"]`, `[{"fields":[1]}]`, `null`, `[`, ""} {
		f.Add(s)
	}
	e := newEnv(f)
	acct, k := e.customer(f, account.Enterprise, 1e9, 1e9)
	key := url.QueryEscape(k.Secret)
	id := strconv.FormatInt(acct.ID, 10)
	f.Fuzz(func(t *testing.T, s string) {
		seg := url.PathEscape(s)
		q := url.QueryEscape(s)
		for _, c := range []req{
			{method: "GET", path: "/api/lookup/" + seg + "?fields=" + q + "&key=" + key},
			{method: "GET", path: "/api/lookup/8.8.8.8/" + seg + "?lang=" + q + "&key=" + key},
			{method: "GET", path: "/ipinfo/" + seg + "?lang=" + q + "&token=" + key},
			{method: "GET", path: "/ipinfo/" + seg + "/" + seg + "?token=" + key},
			{method: "POST", path: "/ipinfo/batch?token=" + key, body: s},
			{method: "GET", path: "/ipinfo/lite/" + seg + "?lang=" + q + "&token=" + key},
			{method: "GET", path: "/ipinfo/lookup/" + seg + "?lang=" + q + "&token=" + key},
			{method: "GET", path: "/ip-api/json/" + seg + "?fields=" + q + "&lang=" + q + "&key=" + key},
			{method: "POST", path: "/ip-api/batch?fields=" + q + "&key=" + key, body: s},
			{method: "GET", path: "/echoip/json?ip=" + q + "&lang=" + q + "&key=" + key},
			{method: "GET", path: "/echoip/coordinates?ip=" + q + "&key=" + key},
			{method: "GET", path: "/echoip/" + seg + "?ip=" + q},
			{method: "GET", path: "/geoip/v2.1/insights/" + seg, header: basicAuth(id, k.Secret)},
			{method: "GET", path: "/geoip/v2.1/city/8.8.8.8", header: basicAuth(s, s)},
			{method: "GET", path: "/geoip/v2.1/country/8.8.8.8", header: basicAuth(id, s)},
		} {
			if c.body == "" && c.method == "POST" {
				c.body = " "
			}
			w := httptest.NewRecorder()
			e.pub.ServeHTTP(w, newRequest(c))
			if w.Code >= 500 {
				t.Fatalf("%s %s: %d %s", c.method, c.path, w.Code, w.Body)
			}
			if w.Code == http.StatusMovedPermanently || w.Code == http.StatusTemporaryRedirect {
				continue // the mux cleaning a path ("..", "//")
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") && ct != "application/json" {
				t.Fatalf("%s %s: %d with Content-Type %q", c.method, c.path, w.Code, ct)
			}
		}
	})
}
