package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TestLogsNeverHoldSecrets sends keys (valid, unknown, revoked, in the
// header, in the query string, in the body) and the admin token, and
// asserts that none of them reaches the log, while the request lines with
// the fields operators need are there.
func TestLogsNeverHoldSecrets(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 10)
	_, revoked := e.customer(t, account.Pro, 0, 10)
	e.svc.RevokeKey(t.Context(), revoked.ID)
	unknown := "ipa_ZZZZZZZZZZZZ_" + strings.Repeat("q", 32)
	secrets := []string{k.Secret, revoked.Secret, unknown, testAdminToken}

	for _, s := range []string{k.Secret, revoked.Secret, unknown} {
		e.query(t, s, `{"ip":"8.8.8.8"}`)
		e.query(t, s, `{"ip":"`+s+`"}`) // a key pasted as the address
		e.query(t, s, `{"ip":`)
		e.do(t, req{method: "POST", path: "/api/ip-query?key=" + s, body: `{"ip":"8.8.8.8"}`})
		e.do(t, req{method: "GET", path: "/api/usage", key: s})
	}
	e.adminCall(t, "GET", "/admin/accounts", "")
	e.doAdmin(t, req{method: "GET", path: "/admin/accounts", header: map[string]string{"Authorization": "Bearer " + testAdminToken + "x"}})
	nk := e.adminCall(t, "POST", "/admin/accounts/1/keys", "")
	created := decode[account.NewKey](t, nk).Secret
	secrets = append(secrets, created)

	logs := e.logs.String()
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the log holds a secret %q", s)
		}
		// Nor the random part alone.
		if i := strings.LastIndexByte(s, '_'); i > 0 && strings.Contains(logs, s[i+1:]) {
			t.Errorf("the log holds the random part of %q", s)
		}
	}
	if strings.Contains(strings.ToLower(logs), "authorization") || strings.Contains(logs, "Bearer") {
		t.Errorf("the log mentions the Authorization header")
	}

	// The request lines are there, with route templates.
	var lines int
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l["msg"] != "request" {
			continue
		}
		lines++
		for _, f := range []string{"method", "path", "route", "status", "duration", "client"} {
			if _, ok := l[f]; !ok {
				t.Errorf("request line without %s: %s", f, line)
			}
		}
		if l["path"] == "/api/ip-query" && l["route"] != "POST /api/ip-query" {
			t.Errorf("route %v", l["route"])
		}
		if l["client"] != "203.0.113.7" {
			t.Errorf("client %v", l["client"])
		}
	}
	if lines != 5*3+3 {
		t.Errorf("%d request lines, want %d", lines, 5*3+3)
	}
}

func TestAccessLogLevel(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.AccessLogLevel = slog.LevelDebug - 1 // below the test logger's level
	})
	e.do(t, req{method: "GET", path: "/api/ping"})
	if e.logs.String() != "" {
		t.Errorf("access line logged below the logger's level: %s", e.logs)
	}
}

// panicky is a Locator that panics, to reach the recover middleware
// through the real handler.
type panicky struct{}

func (panicky) Lookup(netip.Addr, ipatlas.Lang) (ipatlas.Record, error) { panic("boom") }

func TestPanicBecomes500(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Pro, 0, 10)
	logs := &syncBuffer{}
	srv := mustNew(t, Config{Logger: slog.New(slog.NewJSONHandler(logs, nil)), Now: e.srv.now, AdminToken: testAdminToken},
		Deps{Geo: panicky{}, Accounts: e.svc, Meter: e.meter, Registry: prometheus.NewRegistry()})
	w := httptest.NewRecorder()
	r := newRequest(req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"8.8.8.8","lang":"zh"}`})
	srv.Handler().ServeHTTP(w, r)
	checkDoc(t, publicSpec(t), newRequest(req{method: "POST", path: "/api/ip-query", body: "{}"}), w)
	res := resp{w, r}
	checkFailure(t, res, ipatlas.CodeInternal, "服务器内部错误", ipatlas.Meta{IsAPIRequest: true})
	if !strings.Contains(logs.String(), `"panic":"boom"`) || !strings.Contains(logs.String(), `"status":500`) {
		t.Errorf("panic not logged: %s", logs)
	}
	// The panic happened before the charge: nothing was charged.
	checkLedger(t, e, acct.ID, 10, 0)

	// http.ErrAbortHandler still aborts (net/http relies on the panic).
	rt := newRouter(srv)
	rt.mount(routeTable{routes: []route{{pattern: "GET /", h: func(*exchange, *http.Request) error { panic(http.ErrAbortHandler) }}}, render: srv.renderAPI})
	rt.finish(area{match: anyPath, render: srv.renderAPI})
	h := srv.instrument(rt, false)
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", p)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
}

func TestMetrics(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Enterprise, 2, 100)
	for range 3 {
		e.query(t, k.Secret, `{"ip":"8.8.8.8"}`) // 2 successes, 1 RateLimitExceeded
	}
	e.query(t, k.Secret, `{"ip":"10.0.0.1"}`)
	e.query(t, "", `{"ip":"8.8.8.8"}`)
	e.do(t, req{method: "GET", path: "/api/ip/myip"})
	e.do(t, req{method: "GET", path: "/no/such/path/" + k.Secret})

	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counter := func(name string, labels map[string]string) float64 {
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
		next:
			for _, m := range f.GetMetric() {
				got := map[string]string{}
				for _, l := range m.GetLabel() {
					got[l.GetName()] = l.GetValue()
				}
				for k, v := range labels {
					if got[k] != v {
						continue next
					}
				}
				return metricValue(m)
			}
		}
		return -1
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"ipatlas_http_requests_total", map[string]string{"route": "POST /api/ip-query", "method": "POST", "code": "200"}, 2},
		{"ipatlas_http_requests_total", map[string]string{"route": "POST /api/ip-query", "method": "POST", "code": "429"}, 1},
		{"ipatlas_http_requests_total", map[string]string{"route": "POST /api/ip-query", "method": "POST", "code": "400"}, 1},
		{"ipatlas_http_requests_total", map[string]string{"route": "POST /api/ip-query", "method": "POST", "code": "401"}, 1},
		{"ipatlas_http_requests_total", map[string]string{"route": "GET /api/ip/myip", "method": "GET", "code": "200"}, 1},
		{"ipatlas_http_requests_total", map[string]string{"route": "/", "method": "GET", "code": "404"}, 1},
		{"ipatlas_query_outcomes_total", map[string]string{"outcome": "success"}, 2},
		{"ipatlas_query_outcomes_total", map[string]string{"outcome": "RateLimitExceeded"}, 1},
		{"ipatlas_query_outcomes_total", map[string]string{"outcome": "PrivateIP"}, 1},
		{"ipatlas_query_outcomes_total", map[string]string{"outcome": "InvalidAPIKey"}, 1},
		{"ipatlas_query_outcomes_total", map[string]string{"outcome": "InsufficientCredits"}, 0},
		{"ipatlas_http_request_duration_seconds", map[string]string{"route": "POST /api/ip-query"}, 5},
	} {
		if got := counter(tc.name, tc.labels); got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}

	// No label carries a key, a key id or an address.
	r := e.doAdmin(t, req{method: "GET", path: "/metrics"})
	body := r.Body.String()
	for _, s := range []string{k.Secret, k.ID, "203.0.113.7", "8.8.8.8", "/no/such/path"} {
		if strings.Contains(body, s) {
			t.Errorf("/metrics contains %q", s)
		}
	}
	if !bytes.Contains(r.Body.Bytes(), []byte(`ipatlas_http_requests_total{code="200",method="POST",route="POST /api/ip-query"} 2`)) {
		t.Errorf("/metrics lacks the query counter:\n%s", body)
	}
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}
