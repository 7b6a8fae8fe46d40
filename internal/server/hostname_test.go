package server

import (
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/rdns"
	"github.com/ipatlas/ipatlas/internal/rdns/rdnstest"
)

// TestHostnamesInTheShapes: the host name, asked for per request, in
// every shape: the native fields and field path (with whether it is
// forward-confirmed), ipinfo's hostname and ip-api's reverse, and ip-api's
// domain queries. A lookup without an answer in time gives no name,
// never an error, and is free; one the resolver answered is charged.
func TestHostnamesInTheShapes(t *testing.T) {
	z := rdnstest.New(t,
		"8.8.8.8.in-addr.arpa. 300 IN PTR dns.google.",
		"dns.google. 300 IN A 8.8.8.8",
		"20.0.106.202.in-addr.arpa. 300 IN PTR claims.example.", // geotest.Beijing
		"claims.example. 300 IN A 192.0.2.1",
		"internal.example. 300 IN A 10.0.0.1",
		"beijing.example. 300 IN A "+geotest.Beijing.IP)
	z.Silence("1.1.1.1.in-addr.arpa.")
	res, err := rdns.New(rdns.Config{Server: z.Addr, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	e.srv.deps.Resolver = res
	_, k := e.customer(t, account.Pro, 0, 100)
	for _, tc := range []struct {
		path, want, not string
		charged         bool
	}{
		{"/api/lookup/8.8.8.8?fields=hostname,hostname_confirmed", `"hostname":"dns.google","hostname_confirmed":true`, "", true},
		{"/api/lookup/8.8.8.8/hostname", "dns.google\n", "", true},
		// Named, hostname_confirmed is always answered: true, false (a
		// name that does not resolve back), or null when unknown.
		{"/api/lookup/8.8.8.8?fields=hostname_confirmed", `"data":{"ip":"8.8.8.8","hostname_confirmed":true}`, "", true},
		{"/api/lookup/" + geotest.Beijing.IP + "?fields=hostname_confirmed", `"hostname_confirmed":false`, "", true},
		{"/api/lookup/1.1.1.1?fields=hostname,hostname_confirmed", `"data":{"ip":"1.1.1.1","hostname":"","hostname_confirmed":null}`, "", false},
		{"/api/lookup/8.8.8.8?fields=country", `"country":"United States"`, "hostname", true},
		{"/api/lookup/1.1.1.1/hostname", "\n", "", false}, // no answer in time: empty, free
		{"/ipinfo/8.8.8.8", `"hostname":"dns.google"`, "", true},
		{"/ip-api/json/8.8.8.8?fields=reverse,query", `{"reverse":"dns.google","query":"8.8.8.8"}`, "", true},
		{"/ip-api/json/8.8.8.8", `"query":"8.8.8.8"`, "reverse", true}, // not in the default fields
		{"/ip-api/json/beijing.example?fields=city,query", `"query":"` + geotest.Beijing.IP + `"`, "", true},
		{"/ip-api/json/nowhere.example", `"message":"invalid query"`, "", true},          // the resolver answered: charged
		{"/ip-api/json/internal.example", `"message":"invalid query"`, "10.0.0.1", true}, // as a name without addresses
	} {
		before := used(t, e, k.ID)
		r := e.do(t, req{method: "GET", path: tc.path, key: k.Secret})
		body := r.Body.String()
		if r.Code != 200 || !strings.Contains(body, tc.want) || (tc.not != "" && strings.Contains(body, tc.not)) {
			t.Errorf("%s: %d %s, want %s", tc.path, r.Code, body, tc.want)
		}
		want := before
		if tc.charged {
			want++
		}
		if got := used(t, e, k.ID); got != want {
			t.Errorf("%s: used %d, want %d", tc.path, got, want)
		}
	}
	// A batch asks for host names within one bound, and each is answered.
	r := e.do(t, req{method: "POST", path: "/ipinfo/batch", key: k.Secret, body: `["8.8.8.8/hostname","1.1.1.1/hostname","8.8.8.8/city"]`})
	if r.Code != 200 || r.Body.String() != `{"1.1.1.1/hostname":"","8.8.8.8/city":"Mountain View","8.8.8.8/hostname":"dns.google"}`+"\n" {
		t.Errorf("batch: %d %s", r.Code, r.Body)
	}
}
