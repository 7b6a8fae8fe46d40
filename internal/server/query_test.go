package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// checkQuota asserts the quota headers of an identified key's answer, in
// their one spelling.
func checkQuota(t *testing.T, r resp, limit, remaining int64) {
	t.Helper()
	for name, want := range map[string]string{
		"RateLimit-Limit":       strconv.FormatInt(limit, 10),
		"RateLimit-Remaining":   strconv.FormatInt(remaining, 10),
		"RateLimit-Reset":       testResetSecs,
		"X-RateLimit-Limit":     "",
		"X-RateLimit-Remaining": "",
		"X-RateLimit-Reset":     "",
	} {
		if got := r.Header().Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func checkNoQuota(t *testing.T, r resp) {
	t.Helper()
	for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"} {
		if v := r.Header().Get(h); v != "" {
			t.Errorf("%s = %q on an answer to an unidentified caller", h, v)
		}
	}
}

// checkFailure asserts the failure envelope: status from the code table,
// the code, the exact text, and meta.
func checkFailure(t *testing.T, r resp, code ipatlas.ErrorCode, text string, meta ipatlas.Meta) {
	t.Helper()
	if r.Code != code.HTTPStatus() {
		t.Errorf("status %d, want %d (%s); body %s", r.Code, code.HTTPStatus(), code, r.Body)
	}
	if ct := r.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	env := r.env()
	want := ipatlas.Envelope{Success: false, Error: text, Code: code, Meta: meta}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("envelope\n got %+v\nwant %+v", env, want)
	}
	// meta is present even when all its values are zero.
	if !strings.Contains(r.Body.String(), `"meta":{"isLoggedIn":`) {
		t.Errorf("no meta object in %s", r.Body)
	}
}

func TestQuerySuccess(t *testing.T) {
	e := newEnv(t)
	const credits = 1000
	_, k := e.customer(t, account.Pro, 0, credits)
	n := int64(0)
	for _, tc := range []struct {
		name string
		ip   string
		lang string // as sent
		want ipatlas.Lang
		rec  func(ipatlas.Lang) ipatlas.Record
	}{
		{"default english", geotest.MountainView.IP, "", ipatlas.English, geotest.MountainView.Want},
		{"en", geotest.MountainView.IP, "en", ipatlas.English, geotest.MountainView.Want},
		{"zh", geotest.Beijing.IP, "zh", ipatlas.Chinese, geotest.Beijing.Want},
		{"zh-CN", geotest.Shenzhen.IP, "zh-CN", ipatlas.Chinese, geotest.Shenzhen.Want},
		{"ZH-hans any case", geotest.Shenzhen.IP, "ZH-hans", ipatlas.Chinese, geotest.Shenzhen.Want},
		{"zh_cn", geotest.Beijing.IP, "zh_cn", ipatlas.Chinese, geotest.Beijing.Want},
		{"en-US", geotest.Nuremberg.IP, "en-US", ipatlas.English, geotest.Nuremberg.Want},
		{"ipv6", geotest.GoogleV6.IP, "en", ipatlas.English, geotest.GoogleV6.Want},
		{"ipv6 zh", geotest.Nuremberg.IP, "zh", ipatlas.Chinese, geotest.Nuremberg.Want},
		{"no location", geotest.Singapore.IP, "", ipatlas.English, geotest.Singapore.Want},
		{"surrounding spaces", " " + geotest.MountainView.IP + "\n", "", ipatlas.English, geotest.MountainView.Want},
		{"mapped", geotest.MappedIP, "", ipatlas.English, func(l ipatlas.Lang) ipatlas.Record {
			r := geotest.MountainView.Want(l)
			r.IP = geotest.MappedIP
			r.Network = netip.MustParsePrefix("::ffff:8.8.8.0/120")
			return r
		}},
		{"uncovered", geotest.UncoveredIP, "zh", ipatlas.Chinese, func(ipatlas.Lang) ipatlas.Record {
			return ipatlas.Record{IP: geotest.UncoveredIP, Network: netip.MustParsePrefix(geotest.UncoveredNetwork)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"ip":` + strconv.Quote(tc.ip)
			if tc.lang != "" {
				body += `,"lang":` + strconv.Quote(tc.lang)
			}
			r := e.query(t, k.Secret, body+"}")
			if r.Code != http.StatusOK {
				t.Fatalf("status %d: %s", r.Code, r.Body)
			}
			n++
			env := r.env()
			if !env.Success || env.Error != "" || env.Code != "" {
				t.Errorf("envelope %+v", env)
			}
			if want := tc.rec(tc.want); !reflect.DeepEqual(*env.Data, want) {
				t.Errorf("data\n got %+v\nwant %+v", *env.Data, want)
			}
			wantMeta := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits - n}
			if env.Meta != wantMeta {
				t.Errorf("meta %+v, want %+v", env.Meta, wantMeta)
			}
			checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-n)
		})
	}
	u, err := e.svc.Usage(context.Background(), k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Used != n || u.Credits != credits-n {
		t.Errorf("after %d successes: used %d, credits %d", n, u.Used, u.Credits)
	}
}

func TestQueryFailures(t *testing.T) {
	e := newEnv(t)
	const credits = 50
	acct, k := e.customer(t, account.Pro, 0, credits)
	identified := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits}
	anonymous := ipatlas.Meta{IsAPIRequest: true}

	revokedAcct, revoked := e.customer(t, account.Free, 0, 10)
	if _, err := e.svc.RevokeKey(context.Background(), revoked.ID); err != nil {
		t.Fatal(err)
	}
	_ = revokedAcct
	_, rotated := e.customer(t, account.Free, 0, 10)
	if _, err := e.svc.RotateKey(context.Background(), rotated.ID); err != nil {
		t.Fatal(err)
	}
	big := `{"ip":"8.8.8.8","pad":"` + strings.Repeat("x", maxBodyBytes) + `"}`

	for _, tc := range []struct {
		name    string
		q       req
		code    ipatlas.ErrorCode
		en, zh  string // texts; zh is used when the case is re-run with lang zh
		noZh    bool   // the language is not known (body unreadable)
		anon    bool   // the key is not accepted
		headers map[string]string
	}{
		// Address.
		{name: "invalid ip", q: req{body: `{"ip":"999.1.1.1"}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: IPv4 octet out of range 0-255", zh: "无效的 IP 地址格式：IPv4 地址的段超出 0-255 范围"},
		{name: "not an ip", q: req{body: `{"ip":"example.com"}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: unexpected character 'x'", zh: "无效的 IP 地址格式：含有不应出现的字符 'x'"},
		{name: "leading zeros", q: req{body: `{"ip":"8.8.8.08"}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: leading zeros are not allowed in IPv4 octets", zh: "无效的 IP 地址格式：IPv4 地址的各段不允许有前导零"},
		{name: "cidr", q: req{body: `{"ip":"8.8.8.0/24"}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: CIDR prefixes are not allowed; give a single address", zh: "无效的 IP 地址格式：不允许使用 CIDR 前缀，请给出单个地址"},
		{name: "loopback", q: req{body: `{"ip":"127.0.0.1"}`}, code: ipatlas.CodePrivateIP,
			en: "Private IP address not supported: 127.0.0.1 is a loopback address (RFC 1122)",
			zh: "不支持私有 IP 地址：127.0.0.1 是环回地址（RFC 1122）"},
		{name: "private-use", q: req{body: `{"ip":"10.1.2.3"}`}, code: ipatlas.CodePrivateIP,
			en: "Private IP address not supported: 10.1.2.3 is a private-use address (RFC 1918)",
			zh: "不支持私有 IP 地址：10.1.2.3 是私有地址（RFC 1918）"},
		{name: "ipv6 loopback", q: req{body: `{"ip":"::1"}`}, code: ipatlas.CodePrivateIP,
			en: "Private IP address not supported: ::1 is a loopback address (RFC 4291)",
			zh: "不支持私有 IP 地址：::1 是环回地址（RFC 4291）"},
		{name: "mapped private", q: req{body: `{"ip":"::ffff:192.168.1.1"}`}, code: ipatlas.CodePrivateIP,
			en: "Private IP address not supported: ::ffff:192.168.1.1 is a private-use address (RFC 1918)",
			zh: "不支持私有 IP 地址：::ffff:192.168.1.1 是私有地址（RFC 1918）"},
		{name: "cgnat", q: req{body: `{"ip":"100.64.0.1"}`}, code: ipatlas.CodePrivateIP,
			en: "Private IP address not supported: 100.64.0.1 belongs to the shared address space (CGNAT) block (RFC 6598)",
			zh: "不支持私有 IP 地址：100.64.0.1 是共享地址空间（运营商级 NAT）（RFC 6598）"},

		// Body.
		{name: "malformed json", q: req{body: `{"ip":`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: "Invalid request: the body is not valid JSON"},
		{name: "trailing garbage", q: req{body: `{"ip":"8.8.8.8"} x`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: "Invalid request: the body is not valid JSON"},
		{name: "two objects", q: req{body: `{"ip":"8.8.8.8"}{"ip":"1.1.1.1"}`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: "Invalid request: the body is not valid JSON"},
		{name: "ip not a string", q: req{body: `{"ip":8}`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: `Invalid request: field "ip" must be a string, not number`},
		{name: "lang not a string", q: req{body: `{"ip":"8.8.8.8","lang":true}`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: `Invalid request: field "lang" must be a string, not bool`},
		{name: "array", q: req{body: `["8.8.8.8"]`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: "Invalid request: the body must be a JSON object"},
		{name: "null", q: req{body: `null`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: "Invalid request: the body must be a JSON object"},
		{name: "empty body", q: req{body: ` `}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: "Invalid request: the body is empty; send a JSON object"},
		{name: "duplicate key", q: req{body: `{"ip":"8.8.8.8","ip":"10.0.0.1"}`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: `Invalid request: duplicate field "ip"`},
		{name: "duplicate key other case", q: req{body: `{"ip":"8.8.8.8","IP":"10.0.0.1"}`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: `Invalid request: duplicate field "IP"`},
		{name: "duplicate escaped key", q: req{body: `{"ip":"8.8.8.8","\u0069p":"10.0.0.1"}`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: `Invalid request: duplicate field "ip"`},
		{name: "unsupported lang", q: req{body: `{"ip":"8.8.8.8","lang":"fr"}`}, code: ipatlas.CodeInvalidRequest, noZh: true,
			en: `Invalid request: lang "fr" is not supported; use "en" or "zh"`},
		{name: "missing ip", q: req{body: `{"x":1}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: the field "ip" is required`, zh: `无效的请求：缺少必填字段 "ip"`},
		{name: "ip only in a nested object", q: req{body: `{"x":{"ip":""},"y":["ip",""]}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: the field "ip" is required`, zh: `无效的请求：缺少必填字段 "ip"`},
		{name: "null ip", q: req{body: `{"ip":null,"x":"8.8.8.8"}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: the field "ip" is required`, zh: `无效的请求：缺少必填字段 "ip"`},
		// An empty string is an address, and not a valid one.
		{name: "empty ip", q: req{body: `{"ip":""}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: empty input", zh: "无效的 IP 地址格式：输入为空"},
		{name: "blank ip", q: req{body: `{"x":{"ip":1}, "ip" : " \t"}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: empty input", zh: "无效的 IP 地址格式：输入为空"},
		{name: "empty ip, name in capitals", q: req{body: `{"IP":""}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: empty input", zh: "无效的 IP 地址格式：输入为空"},
		{name: "empty ip, name escaped", q: req{body: `{"\u0069p":""}`}, code: ipatlas.CodeInvalidIP,
			en: "Invalid IP address format: empty input", zh: "无效的 IP 地址格式：输入为空"},
		{name: "too large", q: req{body: big}, code: ipatlas.CodePayloadTooLarge, noZh: true,
			en: "Request body too large: the limit is 8192 bytes"},
		{name: "too large, chunked", q: req{body: big, header: map[string]string{"X-Test-Chunked": "1"}}, code: ipatlas.CodePayloadTooLarge, noZh: true,
			en: "Request body too large: the limit is 8192 bytes"},
		{name: "text/plain", q: req{body: `{"ip":"8.8.8.8"}`, header: map[string]string{"Content-Type": "text/plain"}},
			code: ipatlas.CodeUnsupportedMediaType, noZh: true, en: "Content-Type must be application/json"},
		{name: "form", q: req{body: `ip=8.8.8.8`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
			code: ipatlas.CodeUnsupportedMediaType, noZh: true, en: "Content-Type must be application/json"},
		{name: "415 in Accept-Language", q: req{body: `{"ip":"8.8.8.8"}`, header: map[string]string{"Content-Type": "text/xml", "Accept-Language": "zh-CN,zh;q=0.9"}},
			code: ipatlas.CodeUnsupportedMediaType, noZh: true, en: "Content-Type 必须是 application/json"},

		// Key.
		{name: "no key", q: req{body: `{"ip":"8.8.8.8"}`, key: "-"}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失",
			headers: map[string]string{"WWW-Authenticate": `Bearer realm="ipatlas"`}},
		{name: "unknown key", q: req{body: `{"ip":"8.8.8.8"}`, key: "ipa_AAAAAAAAAAAA_" + strings.Repeat("b", 32)}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
		{name: "garbage key", q: req{body: `{"ip":"8.8.8.8"}`, key: "not-a-key"}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
		{name: "basic auth", q: req{body: `{"ip":"8.8.8.8"}`, key: "-", header: map[string]string{"Authorization": "Basic " + k.Secret}},
			code: ipatlas.CodeInvalidAPIKey, anon: true, en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
		{name: "revoked key", q: req{body: `{"ip":"8.8.8.8"}`, key: revoked.Secret}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
		{name: "rotated away", q: req{body: `{"ip":"8.8.8.8"}`, key: rotated.Secret}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
		// Order: a bad body is reported before a bad key, a bad key
		// before a bad address.
		{name: "bad body and no key", q: req{body: `{"ip":8}`, key: "-"}, code: ipatlas.CodeInvalidRequest, anon: true, noZh: true,
			en: `Invalid request: field "ip" must be a string, not number`},
		{name: "bad address and no key", q: req{body: `{"ip":"10.0.0.1"}`, key: "-"}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
	} {
		langs := []ipatlas.Lang{ipatlas.English, ipatlas.Chinese}
		if tc.noZh {
			langs = langs[:1]
		}
		for _, lang := range langs {
			t.Run(tc.name+"/"+lang.String(), func(t *testing.T) {
				q := tc.q
				q.method, q.path = "POST", "/api/ip-query"
				switch q.key {
				case "":
					q.key = k.Secret
				case "-":
					q.key = ""
				}
				text := tc.en
				if lang == ipatlas.Chinese {
					q.body = strings.Replace(q.body, "{", `{"lang":"zh",`, 1)
					text = tc.zh
				}
				r := e.do(t, q)
				meta := identified
				if tc.anon {
					meta = anonymous
				}
				checkFailure(t, r, tc.code, text, meta)
				if tc.anon {
					checkNoQuota(t, r)
				} else {
					checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit)
				}
				for h, v := range tc.headers {
					if got := r.Header().Get(h); got != v {
						t.Errorf("%s = %q, want %q", h, got, v)
					}
				}
			})
		}
	}

	// Nothing above was charged: one ledger entry (the initial grant), no
	// usage, the balance untouched.
	ctx := context.Background()
	ledger, err := e.svc.Ledger(ctx, acct.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) != 1 || ledger[0].Delta != credits {
		t.Errorf("ledger after failures only: %+v", ledger)
	}
	u, err := e.svc.Usage(ctx, k.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Used != 0 || u.Credits != credits {
		t.Errorf("after failures only: used %d, credits %d", u.Used, u.Credits)
	}
}

func TestQueryAcceptedContentTypes(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "Application/JSON", "application/merge-patch+json"} {
		t.Run(ct, func(t *testing.T) {
			r := e.do(t, req{method: "POST", path: "/api/ip-query", key: k.Secret, body: `{"ip":"8.8.8.8"}`,
				header: map[string]string{"Content-Type": ct}})
			if r.Code != http.StatusOK {
				t.Errorf("Content-Type %q: status %d: %s", ct, r.Code, r.Body)
			}
		})
	}
}

func TestQueryUnknownFieldsIgnored(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 100)
	r := e.query(t, k.Secret, `{"ip":"8.8.8.8","client":{"name":"x","tags":["a","b"]},"n":1.5}`)
	if r.Code != http.StatusOK {
		t.Errorf("status %d: %s", r.Code, r.Body)
	}
}

// TestQueryQuotaThenCredits walks one key through its quota and one
// account through its credits, checking the order of the checks, the
// statuses, Retry-After, the headers and meta at each step, and that the
// ledger holds exactly the successes.
func TestQueryQuotaThenCredits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	t.Run("quota", func(t *testing.T) {
		acct, k := e.customer(t, account.Enterprise, 2, 100)
		for i := int64(1); i <= 2; i++ {
			r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
			if r.Code != 200 || r.env().Meta.CurrentCredits != 100-i {
				t.Fatalf("query %d: %d %s", i, r.Code, r.Body)
			}
			checkQuota(t, r, 2, 2-i)
		}
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			r := e.query(t, k.Secret, `{"ip":"8.8.8.8","lang":"`+lang.String()+`"}`)
			// The text says the month's quota is spent, not the burst rate.
			want := map[ipatlas.Lang]string{
				ipatlas.English: "API rate limit exceeded: the monthly quota of 2 queries is used up; it resets at 2026-12-01 00:00 UTC",
				ipatlas.Chinese: "API请求频率超出限制：本月 2 次查询的额度已用完，将于 2026-12-01 00:00 UTC 重置",
			}[lang]
			checkFailure(t, r, ipatlas.CodeRateLimitExceeded, want,
				ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 98})
			checkQuota(t, r, 2, 0)
			if ra := r.Header().Get("Retry-After"); ra != testResetSecs {
				t.Errorf("Retry-After %q, want %s", ra, testResetSecs)
			}
		}
		// The address is checked before the quota.
		r := e.query(t, k.Secret, `{"ip":"10.0.0.1"}`)
		if got := r.env().Code; got != ipatlas.CodePrivateIP {
			t.Errorf("private address over quota: %s, want PrivateIP", got)
		}
		checkQuota(t, r, 2, 0)
		checkLedger(t, e, acct.ID, 100, 2)
	})

	t.Run("credits", func(t *testing.T) {
		acct, k := e.customer(t, account.Pro, 0, 1)
		r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
		if r.Code != 200 || r.env().Meta.CurrentCredits != 0 {
			t.Fatalf("first query: %d %s", r.Code, r.Body)
		}
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			r = e.query(t, k.Secret, `{"ip":"8.8.8.8","lang":"`+lang.String()+`"}`)
			checkFailure(t, r, ipatlas.CodeInsufficientCredits, ipatlas.CodeInsufficientCredits.Text(lang),
				ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 0})
			checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-1)
			if ra := r.Header().Get("Retry-After"); ra != "" {
				t.Errorf("Retry-After %q on 402", ra)
			}
		}
		// Topping up makes the next query succeed.
		if _, err := e.svc.AddCredits(ctx, acct.ID, 5, "top-up"); err != nil {
			t.Fatal(err)
		}
		r = e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
		if r.Code != 200 || r.env().Meta.CurrentCredits != 4 {
			t.Errorf("after top-up: %d %s", r.Code, r.Body)
		}
		checkLedger(t, e, acct.ID, 1+5, 2)
	})

	t.Run("quota before credits", func(t *testing.T) {
		_, k := e.customer(t, account.Enterprise, 1, 1)
		if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
			t.Fatalf("first query: %d %s", r.Code, r.Body)
		}
		r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`)
		if r.Code != http.StatusTooManyRequests {
			t.Errorf("both exhausted: %d, want 429 (quota is checked first)", r.Code)
		}
	})

	t.Run("failure meta is the current balance", func(t *testing.T) {
		_, k := e.customer(t, account.Pro, 0, 10)
		for range 3 {
			if r := e.query(t, k.Secret, `{"ip":"8.8.8.8"}`); r.Code != 200 {
				t.Fatal(r.Body)
			}
		}
		// The key is cached with the balance it had at first use (10);
		// a failure still reports the balance now.
		r := e.query(t, k.Secret, `{"ip":"bogus"}`)
		if m := r.env().Meta; m.CurrentCredits != 7 || !m.IsLoggedIn {
			t.Errorf("meta after 3 successes and a failure: %+v", m)
		}
		checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-3)
	})
}

// checkLedger asserts that an account's ledger is its grants plus exactly
// one credit per success, and its balance agrees.
func checkLedger(t *testing.T, e *env, accountID, granted, successes int64) {
	t.Helper()
	ledger, err := e.svc.Ledger(context.Background(), accountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sum, charged, queries int64
	for _, l := range ledger {
		sum += l.Delta
		if l.Delta < 0 {
			charged -= l.Delta
			queries += l.Queries
		}
	}
	a, err := e.svc.Account(context.Background(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	if charged != successes || queries != successes || sum != granted-successes || a.Credits != sum {
		t.Errorf("ledger: charged %d for %d queries, sum %d, balance %d; want %d successes of %d granted\n%+v",
			charged, queries, sum, a.Credits, successes, granted, ledger)
	}
}

// TestQueryTooLargeOverRealSocket sends oversized bodies to a real
// listener, with and without a declared length: 413, and the server
// closes the connection instead of reading the rest.
func TestQueryTooLargeOverRealSocket(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Pro, 0, 10)
	srv := httptest.NewServer(e.pub)
	defer srv.Close()
	big := `{"ip":"8.8.8.8","pad":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big)
		if chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
		req, _ := http.NewRequest("POST", srv.URL+"/api/ip-query", body)
		req.Header.Set("Authorization", "Bearer "+k.Secret)
		req.Header.Set("Content-Type", "application/json")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("chunked=%v: %v", chunked, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge || !res.Close || !strings.Contains(string(b), `"code":"PayloadTooLarge"`) {
			t.Errorf("chunked=%v: %d close=%v %s", chunked, res.StatusCode, res.Close, b)
		}
	}
}

// A query's answer is the very bytes encoding/json writes for the
// envelope around the record the engine's Lookup returns, whichever way
// the server builds it (the encoded-record path for the whole record).
func TestQueryAnswerIsEncodingJSON(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Enterprise, 1000, 1000)
	ips := []string{geotest.MappedIP, geotest.NAT64IP, geotest.UncoveredIP}
	for _, p := range geotest.Places {
		ips = append(ips, p.IP)
	}
	for _, ip := range ips {
		for code, lang := range map[string]ipatlas.Lang{"en": ipatlas.English, "zh": ipatlas.Chinese} {
			r := e.query(t, k.Secret, `{"ip":"`+ip+`","lang":"`+code+`"}`)
			if r.Code != http.StatusOK {
				t.Fatalf("%s %s: status %d: %s", ip, lang, r.Code, r.Body)
			}
			addr, err := netaddr.Parse(ip)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := e.srv.deps.Geo.Lookup(addr, lang)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(&ipatlas.Envelope{Success: true, Data: &rec, Meta: r.env().Meta}); err != nil {
				t.Fatal(err)
			}
			if got := r.Body.String(); got != want.String() {
				t.Errorf("%s %s:\n got %s\nwant %s", ip, lang, got, want.String())
			}
		}
	}
}

// net/http writes the Content-Length of the answers the handler leaves
// to it, so an answer is never sent chunked, nor on HTTP/1.0 without a
// length.
func TestQueryContentLengthOnTheWire(t *testing.T) {
	e := newEnv(t)
	_, k := e.customer(t, account.Enterprise, 1000, 1000)
	srv := httptest.NewServer(e.pub)
	defer srv.Close()
	for _, body := range []string{`{"ip":"` + geotest.Beijing.IP + `","lang":"zh"}`, `{"ip":"10.0.0.1"}`, `{"ip":"8.8.8.8","fields":["country"]}`} {
		req, _ := http.NewRequest("POST", srv.URL+"/api/ip-query", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+k.Secret)
		req.Header.Set("Content-Type", "application/json")
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.ContentLength != int64(len(b)) || len(res.TransferEncoding) != 0 {
			t.Errorf("%s: status %d, Content-Length %d, Transfer-Encoding %v, for %d bytes", body, res.StatusCode, res.ContentLength, res.TransferEncoding, len(b))
		}
	}
}
