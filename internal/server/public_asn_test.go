package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/postgres"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/prometheus/client_golang/prometheus"
)

// newASEnv is a server on the geotest fixture with a datacenter AS list
// naming Hetzner's AS24940, its accounts in store: "sqlite" (a temporary
// file) or "postgres" (a fresh schema on IPATLAS_TEST_POSTGRES; skipped
// without it).
func newASEnv(t testing.TB, store string) *env {
	t.Helper()
	p := servertest.New(t, func() time.Time { return testNow })
	geotest.WritePrivacyList(t, filepath.Join(p.Dir, "data"), "x4bnet-datacenter-asn", "AS24940 # HETZNER-AS, DE\n", testNow)
	if err := p.Geo.ReloadPrivacy(); err != nil {
		t.Fatal(err)
	}
	svc, meter := p.Accounts, p.Meter
	if store == "postgres" {
		st, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Options{Schema: pgtest.NewSchema(t), Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		opts := account.DefaultOptions()
		opts.Now = p.Now
		if svc, err = account.NewService(st, opts); err != nil {
			t.Fatal(err)
		}
		meter = account.NewMeter(st, account.MeterOptions{Now: p.Now, MaxDelay: time.Millisecond})
		t.Cleanup(func() { meter.Close(context.Background()) })
	}
	e := &env{svc: svc, meter: meter, reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	e.srv = mustNew(t, Config{
		LimitTableSize: DefaultLimitTableSize,
		Version:        "test-1.2.3",
		Logger:         slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:            p.Now,
	}, Deps{Geo: p.Geo, Accounts: svc, Meter: meter, Registry: e.reg})
	e.pub = e.srv.Handler()
	return e
}

// asEnvelope decodes an AS answer.
func asEnvelope(t *testing.T, r resp) ipatlas.ASEnvelope {
	t.Helper()
	var v ipatlas.ASEnvelope
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil {
		t.Fatalf("not an AS envelope: %v: %s", err, r.Body)
	}
	return v
}

func wantAS(n string, lang ipatlas.Lang) ipatlas.AS {
	pfx := func(s string, size string) ipatlas.ASPrefix {
		return ipatlas.ASPrefix{Netblock: netip.MustParsePrefix(s), Size: size}
	}
	switch n {
	case "AS15169":
		// 8.8.8.0/24 and 2001:4860::/32 in the fixture; its country is
		// where its IPv4 addresses are.
		a := ipatlas.AS{ASN: "AS15169", Name: "Google LLC", Country: "United States", CountryCode: "US", NumIPs: 256,
			Prefixes:    []ipatlas.ASPrefix{pfx("8.8.8.0/24", "256")},
			Prefixes6:   []ipatlas.ASPrefix{pfx("2001:4860::/32", "79228162514264337593543950336")},
			NumPrefixes: 1, NumPrefixes6: 1, Page: 1, Pages: 1}
		if lang == ipatlas.Chinese {
			a.Country = "美国"
		}
		return a
	case "AS24940":
		// IPv6 only, and on the datacenter list.
		a := ipatlas.AS{ASN: "AS24940", Name: "Hetzner Online GmbH", Country: "Germany", CountryCode: "DE",
			Prefixes:  []ipatlas.ASPrefix{},
			Prefixes6: []ipatlas.ASPrefix{pfx("2a01:4f8::/32", "79228162514264337593543950336")}, Hosting: true,
			NumPrefixes: 0, NumPrefixes6: 1, Page: 1, Pages: 1}
		if lang == ipatlas.Chinese {
			a.Country = "德国"
		}
		return a
	}
	panic(n)
}

// TestAS runs the AS query on both stores: answers in both languages,
// every failure free and in the request's language, the quota before the
// credits, and the ledger charged exactly once per success.
func TestAS(t *testing.T) {
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			e := newASEnv(t, store)
			t.Run("answers", func(t *testing.T) { testASAnswers(t, e) })
			t.Run("failures", func(t *testing.T) { testASFailures(t, e) })
			t.Run("quota then credits", func(t *testing.T) { testASQuotaThenCredits(t, e) })
		})
	}
}

func testASAnswers(t *testing.T, e *env) {
	const credits = 100
	acct, k := e.customer(t, account.Pro, 0, credits)
	n := int64(0)
	for _, tc := range []struct {
		path, as string
		lang     ipatlas.Lang
	}{
		{"/api/asn/AS15169", "AS15169", ipatlas.English},
		{"/api/asn/15169?lang=en", "AS15169", ipatlas.English},
		{"/api/asn/as15169?lang=zh", "AS15169", ipatlas.Chinese},
		{"/api/asn/AS15169?lang=zh-CN", "AS15169", ipatlas.Chinese},
		{"/api/asn/AS24940", "AS24940", ipatlas.English},
		{"/api/asn/24940?lang=zh", "AS24940", ipatlas.Chinese},
	} {
		r := e.do(t, req{method: "GET", path: tc.path, key: k.Secret})
		if r.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.path, r.Code, r.Body)
		}
		n++
		env := asEnvelope(t, r)
		want := wantAS(tc.as, tc.lang)
		if !env.Success || env.Code != "" || env.Error != "" || env.Data == nil || !reflect.DeepEqual(*env.Data, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.path, env.Data, want)
		}
		if m := (ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits - n}); env.Meta != m {
			t.Errorf("%s: meta %+v, want %+v", tc.path, env.Meta, m)
		}
		checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-n)
		if cc := r.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q on a keyed answer", tc.path, cc)
		}
		// An AS without IPv4 prefixes says so with an empty list, not null.
		if tc.as == "AS24940" && !strings.Contains(r.Body.String(), `"prefixes":[]`) {
			t.Errorf("%s: %s", tc.path, r.Body)
		}
	}

	// HEAD is the same request without the body, and never charged: its
	// status and quota headers are the ones a GET would get now.
	r := e.do(t, req{method: "HEAD", path: "/api/asn/AS15169", key: k.Secret})
	if r.Code != http.StatusOK {
		t.Errorf("HEAD: %d", r.Code)
	}
	checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-n)
	checkLedger(t, e, acct.ID, credits, n)
}

func testASFailures(t *testing.T, e *env) {
	const credits = 10
	acct, k := e.customer(t, account.Pro, 0, credits)
	meta := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits}
	for _, tc := range []struct {
		path   string
		code   ipatlas.ErrorCode
		en, zh string // the text in each language
	}{
		{"/api/asn/AS", ipatlas.CodeInvalidAS,
			`Invalid AS number: "AS" is not an AS number; write "AS" and a number up to 4294967295, e.g. AS15169`,
			`无效的AS号："AS" 不是AS号；请写 AS 加一个不大于 4294967295 的数字，例如 AS15169`},
		{"/api/asn/ASx", ipatlas.CodeInvalidAS,
			`Invalid AS number: "ASx" is not an AS number; write "AS" and a number up to 4294967295, e.g. AS15169`,
			`无效的AS号："ASx" 不是AS号；请写 AS 加一个不大于 4294967295 的数字，例如 AS15169`},
		{"/api/asn/AS-1", ipatlas.CodeInvalidAS,
			`Invalid AS number: "AS-1" is not an AS number; write "AS" and a number up to 4294967295, e.g. AS15169`,
			`无效的AS号："AS-1" 不是AS号；请写 AS 加一个不大于 4294967295 的数字，例如 AS15169`},
		{"/api/asn/AS4294967296", ipatlas.CodeInvalidAS,
			`Invalid AS number: "AS4294967296" is not an AS number; write "AS" and a number up to 4294967295, e.g. AS15169`,
			`无效的AS号："AS4294967296" 不是AS号；请写 AS 加一个不大于 4294967295 的数字，例如 AS15169`},
		{"/api/asn/%2B15169", ipatlas.CodeInvalidAS,
			`Invalid AS number: "+15169" is not an AS number; write "AS" and a number up to 4294967295, e.g. AS15169`,
			`无效的AS号："+15169" 不是AS号；请写 AS 加一个不大于 4294967295 的数字，例如 AS15169`},
		{"/api/asn/AS64512", ipatlas.CodeUnknownAS,
			"Unknown AS number: the ASN data has no AS64512", "未知的AS号：ASN 数据中没有 AS64512"},
		{"/api/asn/0", ipatlas.CodeUnknownAS,
			"Unknown AS number: the ASN data has no AS0", "未知的AS号：ASN 数据中没有 AS0"},
		{"/api/asn/AS4294967295", ipatlas.CodeUnknownAS,
			"Unknown AS number: the ASN data has no AS4294967295", "未知的AS号：ASN 数据中没有 AS4294967295"},
	} {
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			r := e.do(t, req{method: "GET", path: tc.path + "?lang=" + lang.String(), key: k.Secret})
			text := tc.en
			if lang == ipatlas.Chinese {
				text = tc.zh
			}
			checkFailure(t, r, tc.code, text, meta)
			checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit)
		}
	}

	// The request is checked before the key, the key before the AS.
	for _, tc := range []struct {
		q    req
		code ipatlas.ErrorCode
		text string
		meta ipatlas.Meta
	}{
		{req{method: "GET", path: "/api/asn/AS15169"}, ipatlas.CodeInvalidAPIKey, "Invalid or missing API key", apiMeta},
		{req{method: "GET", path: "/api/asn/ASx"}, ipatlas.CodeInvalidAPIKey, "Invalid or missing API key", apiMeta},
		{req{method: "GET", path: "/api/asn/AS15169", key: "ipa_nope_nope"}, ipatlas.CodeInvalidAPIKey, "Invalid or missing API key", apiMeta},
		{req{method: "GET", path: "/api/asn/AS15169?lang=fr"}, ipatlas.CodeInvalidRequest,
			`Invalid request: lang "fr" is not supported; use "en" or "zh"`, apiMeta},
		{req{method: "GET", path: "/api/asn/AS15169?lang=fr", key: k.Secret}, ipatlas.CodeInvalidRequest,
			`Invalid request: lang "fr" is not supported; use "en" or "zh"`, meta},
		{req{method: "GET", path: "/api/asn/AS15169?lang=en&lang=zh", key: k.Secret}, ipatlas.CodeInvalidRequest,
			`Invalid request: the parameter "lang" is given more than once`, meta},
		{req{method: "GET", path: "/api/asn/AS15169?lang=%zz", key: k.Secret}, ipatlas.CodeInvalidRequest,
			`Invalid request: the query string is malformed`, meta},
		{req{method: "GET", path: "/api/asn/AS15169?lang=%zz", key: k.Secret, header: map[string]string{"Accept-Language": "zh-CN"}},
			ipatlas.CodeInvalidRequest, `无效的请求：查询字符串格式错误`, meta},
		{req{method: "GET", path: "/api/asn/ASx?lang=fr", key: k.Secret}, ipatlas.CodeInvalidRequest,
			`Invalid request: lang "fr" is not supported; use "en" or "zh"`, meta},
	} {
		r := e.do(t, tc.q)
		checkFailure(t, r, tc.code, tc.text, tc.meta)
		if tc.meta.IsLoggedIn {
			checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit)
		} else {
			checkNoQuota(t, r)
		}
	}

	// The path takes GET and HEAD only; without an AS it is no path.
	r := e.do(t, req{method: "POST", path: "/api/asn/AS15169", key: k.Secret, body: "{}"})
	checkFailure(t, r, ipatlas.CodeMethodNotAllowed, "Method not allowed", apiMeta)
	if a := r.Header().Get("Allow"); a != "GET, HEAD" {
		t.Errorf("Allow %q", a)
	}
	r = e.do(t, req{method: "GET", path: "/api/asn/", key: k.Secret})
	checkFailure(t, r, ipatlas.CodeNotFound, "Not found", apiMeta)

	// A CORS preflight for the GET.
	r = e.do(t, req{method: "OPTIONS", path: "/api/asn/AS15169", header: map[string]string{
		"Origin": "https://example.org", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"}})
	if r.Code != http.StatusNoContent || !strings.Contains(r.Header().Get("Access-Control-Allow-Methods"), "GET") {
		t.Errorf("preflight: %d %v", r.Code, r.Header())
	}
	checkLedger(t, e, acct.ID, credits, 0)
}

func testASQuotaThenCredits(t *testing.T, e *env) {
	t.Run("quota", func(t *testing.T) {
		acct, k := e.customer(t, account.Enterprise, 2, 100)
		for i := int64(1); i <= 2; i++ {
			r := e.do(t, req{method: "GET", path: "/api/asn/AS15169", key: k.Secret})
			if r.Code != 200 || asEnvelope(t, r).Meta.CurrentCredits != 100-i {
				t.Fatalf("query %d: %d %s", i, r.Code, r.Body)
			}
			checkQuota(t, r, 2, 2-i)
		}
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			r := e.do(t, req{method: "GET", path: "/api/asn/AS15169?lang=" + lang.String(), key: k.Secret})
			want := map[ipatlas.Lang]string{
				ipatlas.English: "API rate limit exceeded: the monthly quota of 2 queries is used up; it resets at 2026-12-01 00:00 UTC",
				ipatlas.Chinese: "API请求频率超出限制：本月 2 次查询的额度已用完，将于 2026-12-01 00:00 UTC 重置",
			}[lang]
			checkFailure(t, r, ipatlas.CodeRateLimitExceeded, want, ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 98})
			checkQuota(t, r, 2, 0)
			if ra := r.Header().Get("Retry-After"); ra != testResetSecs {
				t.Errorf("Retry-After %q, want %s", ra, testResetSecs)
			}
		}
		// A caller who cannot pay is refused before the AS is looked up,
		// the costly lookup: even an AS the data does not know.
		r := e.do(t, req{method: "GET", path: "/api/asn/AS64512", key: k.Secret})
		if got := asEnvelope(t, r).Code; got != ipatlas.CodeRateLimitExceeded {
			t.Errorf("unknown AS over quota: %s, want RateLimitExceeded", got)
		}
		checkQuota(t, r, 2, 0)
		checkLedger(t, e, acct.ID, 100, 2)
	})

	t.Run("credits", func(t *testing.T) {
		acct, k := e.customer(t, account.Pro, 0, 1)
		if r := e.do(t, req{method: "GET", path: "/api/asn/AS15169", key: k.Secret}); r.Code != 200 {
			t.Fatalf("first query: %d %s", r.Code, r.Body)
		}
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			r := e.do(t, req{method: "GET", path: "/api/asn/AS15169?lang=" + lang.String(), key: k.Secret})
			checkFailure(t, r, ipatlas.CodeInsufficientCredits, ipatlas.CodeInsufficientCredits.Text(lang),
				ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 0})
			checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-1)
			if ra := r.Header().Get("Retry-After"); ra != "" {
				t.Errorf("Retry-After %q on 402", ra)
			}
		}
		if _, err := e.svc.AddCredits(context.Background(), acct.ID, 5, "top-up"); err != nil {
			t.Fatal(err)
		}
		r := e.do(t, req{method: "GET", path: "/api/asn/AS15169", key: k.Secret})
		if r.Code != 200 || asEnvelope(t, r).Meta.CurrentCredits != 4 {
			t.Errorf("after top-up: %d %s", r.Code, r.Body)
		}
		checkLedger(t, e, acct.ID, 1+5, 2)
	})

	t.Run("revoked key", func(t *testing.T) {
		_, k := e.customer(t, account.Pro, 0, 5)
		if _, err := e.svc.RevokeKey(context.Background(), k.Key.ID); err != nil {
			t.Fatal(err)
		}
		r := e.do(t, req{method: "GET", path: "/api/asn/AS15169", key: k.Secret})
		checkFailure(t, r, ipatlas.CodeInvalidAPIKey, "Invalid or missing API key", apiMeta)
	})
}

// FuzzASPath asks for arbitrary AS texts: never a 5xx, a success only for
// a number the data knows, every refusal InvalidAS (or NotFound for an
// empty path or a lone slash), and exactly the successes charged.
func FuzzASPath(f *testing.F) {
	for _, s := range []string{"AS15169", "15169", "as24940", "AS", "ASx", "AS-1", "AS4294967296", "", "AS64512", "%", "AS1/2", "Ａ"} {
		f.Add(s)
	}
	e := newASEnv(f, "sqlite")
	_, k := e.customer(f, account.Enterprise, 1e12, 1e12)
	var ok int64
	f.Fuzz(func(t *testing.T, s string) {
		if s == "." || s == ".." {
			t.Skip("a dot segment is path navigation, cleaned by the mux before routing")
		}
		r := e.do(t, req{method: "GET", path: "/api/asn/" + url.PathEscape(s), key: k.Secret})
		code := asEnvelope(t, r).Code
		_, perr := ipatlas.ParseAS(s)
		switch {
		case r.Code >= 500:
			t.Fatalf("%q: %d %s", s, r.Code, r.Body)
		case r.Code == http.StatusOK:
			ok++
			if perr != nil {
				t.Fatalf("%q answered although it is no AS number: %s", s, r.Body)
			}
		case s == "" || s == "/":
			// No AS at all: an empty segment, or a lone escaped slash,
			// which routing reads as the path's trailing slash.
			if code != ipatlas.CodeNotFound {
				t.Fatalf("%q: %s, want NotFound", s, r.Body)
			}
		case perr != nil && code != ipatlas.CodeInvalidAS:
			t.Fatalf("%q: %s, want InvalidAS", s, r.Body)
		case perr == nil && code != ipatlas.CodeUnknownAS:
			t.Fatalf("%q: %s, want UnknownAS", s, r.Body)
		}
		u, err := e.svc.Usage(context.Background(), k.Key.ID)
		if err != nil || u.Used != ok {
			t.Fatalf("%d charged for %d answers (%v)", u.Used, ok, err)
		}
	})
}
