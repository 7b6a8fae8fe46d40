package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

const batchPath = "/api/ip-query/batch"

func (e *env) batch(t testing.TB, key, body string) resp {
	t.Helper()
	return e.do(t, req{method: "POST", path: batchPath, key: key, body: body})
}

// batchBody is a batch body with these addresses, lang (when not empty)
// and fields (when not nil).
func batchBody(ips []string, lang string, fields []string) string {
	v := map[string]any{"ips": ips}
	if lang != "" {
		v["lang"] = lang
	}
	if fields != nil {
		v["fields"] = fields
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// batchEnv decodes a processed batch's answer; the test fails when it is
// not one.
func (r resp) batchEnv(t testing.TB) ipatlas.BatchEnvelope {
	t.Helper()
	if r.Code != http.StatusOK {
		t.Fatalf("status %d: %s", r.Code, r.Body)
	}
	var v ipatlas.BatchEnvelope
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil {
		t.Fatalf("not a batch envelope: %v: %s", err, r.Body)
	}
	if !v.Success {
		t.Fatalf("success false in a 200: %s", r.Body)
	}
	return v
}

// usageEntries counts the account's usage ledger entries (charges).
func usageEntries(t *testing.T, e *env, accountID int64) int {
	t.Helper()
	ledger, err := e.svc.Ledger(context.Background(), accountID, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range ledger {
		if l.Delta < 0 {
			n++
		}
	}
	return n
}

// TestBatchMixedItemsInOrder sends every fixture place with invalid,
// private and special addresses among them, in both languages: one item
// per address in order, each success the record a single query gives,
// each failure the code and text a single query gives; only the successes
// are charged, each distinct address once, in one usage entry of the
// ledger.
func TestBatchMixedItemsInOrder(t *testing.T) {
	e := newEnv(t)
	const credits = 1000
	acct, k := e.customer(t, account.Pro, 0, credits)
	type want struct {
		rec    func(ipatlas.Lang) ipatlas.Record // nil: a failure
		repeat bool                              // an address given before, in another spelling
		code   ipatlas.ErrorCode
		en     string
		zh     string
	}
	var ips []string
	var wants []want
	add := func(ip string, w want) { ips = append(ips, ip); wants = append(wants, w) }
	for i, p := range geotest.Places {
		add(p.IP, want{rec: p.Want})
		switch i {
		case 0:
			add("10.0.0.1", want{code: ipatlas.CodePrivateIP,
				en: "Private IP address not supported: 10.0.0.1 is a private-use address (RFC 1918)",
				zh: "不支持私有 IP 地址：10.0.0.1 是私有地址（RFC 1918）"})
		case 1:
			add("999.1.1.1", want{code: ipatlas.CodeInvalidIP,
				en: "Invalid IP address format: IPv4 octet out of range 0-255", zh: "无效的 IP 地址格式：IPv4 地址的段超出 0-255 范围"})
		case 2:
			add("::1", want{code: ipatlas.CodePrivateIP,
				en: "Private IP address not supported: ::1 is a loopback address (RFC 4291)",
				zh: "不支持私有 IP 地址：::1 是环回地址（RFC 4291）"})
		case 3:
			add("", want{code: ipatlas.CodeInvalidIP, en: "Invalid IP address format: empty input", zh: "无效的 IP 地址格式：输入为空"})
		}
	}
	add(geotest.MappedIP, want{rec: func(l ipatlas.Lang) ipatlas.Record {
		r := geotest.MountainView.Want(l)
		r.IP = geotest.MappedIP
		r.Network = netip.MustParsePrefix("::ffff:8.8.8.0/120")
		return r
	}})
	add(geotest.UncoveredIP, want{rec: func(ipatlas.Lang) ipatlas.Record {
		return ipatlas.Record{IP: geotest.UncoveredIP, Network: netip.MustParsePrefix(geotest.UncoveredNetwork)}
	}})
	add(" "+geotest.Beijing.IP+"\n", want{rec: geotest.Beijing.Want, repeat: true})
	add(geotest.MountainView.IP, want{rec: geotest.MountainView.Want, repeat: true}) // a repeat costs nothing more
	add("8.8.8.0/24", want{code: ipatlas.CodeInvalidIP,
		en: "Invalid IP address format: CIDR prefixes are not allowed; give a single address", zh: "无效的 IP 地址格式：不允许使用 CIDR 前缀，请给出单个地址"})

	valid := 0
	for _, w := range wants {
		if w.rec != nil && !w.repeat {
			valid++
		}
	}
	charged := 0
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		t.Run(lang.String(), func(t *testing.T) {
			r := e.batch(t, k.Secret, batchBody(ips, lang.String(), nil))
			env := r.batchEnv(t)
			if len(env.Data) != len(ips) {
				t.Fatalf("%d items for %d addresses", len(env.Data), len(ips))
			}
			for i, it := range env.Data {
				w := wants[i]
				if it.IP != ips[i] {
					t.Errorf("item %d: ip %q, want the address as sent %q", i, it.IP, ips[i])
				}
				if w.rec != nil {
					if !it.Success || it.Data == nil || it.Error != "" || it.Code != "" {
						t.Errorf("item %d (%s): %+v, want a success", i, ips[i], it)
						continue
					}
					if rec := w.rec(lang); !reflect.DeepEqual(*it.Data, rec) {
						t.Errorf("item %d (%s):\n got %+v\nwant %+v", i, ips[i], *it.Data, rec)
					}
					continue
				}
				text := w.en
				if lang == ipatlas.Chinese {
					text = w.zh
				}
				if it.Success || it.Data != nil || it.Code != w.code || it.Error != text {
					t.Errorf("item %d (%q): %+v, want %s %q", i, ips[i], it, w.code, text)
				}
			}
			charged += valid
			wantMeta := ipatlas.BatchMeta{Meta: ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits - int64(charged)}, Charged: valid}
			if env.Meta != wantMeta {
				t.Errorf("meta %+v, want %+v", env.Meta, wantMeta)
			}
			checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-int64(charged))
			if ra := r.Header().Get("Retry-After"); ra != "" {
				t.Errorf("Retry-After %q on a 200", ra)
			}
		})
	}
	// Exactly the successes were charged, in one usage entry: the two
	// batches are one key's at one cost within a minute.
	checkLedger(t, e, acct.ID, credits, int64(charged))
	u, err := e.svc.Usage(context.Background(), k.ID)
	if err != nil || u.Used != int64(charged) {
		t.Errorf("usage %+v, %v; want %d", u, err, charged)
	}
	if n := usageEntries(t, e, acct.ID); n != 1 {
		t.Errorf("%d usage ledger entries for 2 batches of one key within a minute, want 1", n)
	}
	if got := counterValue(e.srv.metrics.queries.WithLabelValues("success")); got != float64(charged) {
		t.Errorf("query_outcomes_total{success} = %v, want %d", got, charged)
	}
	if got := counterValue(e.srv.metrics.queries.WithLabelValues(string(ipatlas.CodePrivateIP))); got != 4 {
		t.Errorf("query_outcomes_total{PrivateIP} = %v, want 4 (2 per batch)", got)
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestBatchSize: 100 addresses are one batch; 101 are refused as a whole
// with 422 and nothing is looked up or charged, even when the key is bad.
func TestBatchSize(t *testing.T) {
	e := newEnv(t)
	const credits = 500
	acct, k := e.customer(t, account.Enterprise, 1000, credits)
	ips := make([]string, 101)
	for i := range ips {
		ips[i] = netip.AddrFrom4([4]byte{8, 8, byte(i >> 8), byte(i)}).String() // distinct, each one query
	}
	identified := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits}
	for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
		r := e.batch(t, k.Secret, batchBody(ips, lang.String(), nil))
		text := "Too many items in the batch: 101 addresses; the limit is 100"
		if lang == ipatlas.Chinese {
			text = "批量请求的条目过多：101 个地址，上限为 100 个"
		}
		checkFailure(t, r, ipatlas.CodeTooManyItems, text, identified)
		checkQuota(t, r, 1000, 1000)
	}
	// The size is a body rule: it is reported before the key.
	r := e.batch(t, "", batchBody(ips, "", nil))
	checkFailure(t, r, ipatlas.CodeTooManyItems, "Too many items in the batch: 101 addresses; the limit is 100", ipatlas.Meta{IsAPIRequest: true})
	checkLedger(t, e, acct.ID, credits, 0)

	env := e.batch(t, k.Secret, batchBody(ips[:100], "", nil)).batchEnv(t)
	if len(env.Data) != 100 || env.Meta.Charged != 100 || env.Meta.CurrentCredits != credits-100 {
		t.Fatalf("100 addresses: %d items, meta %+v", len(env.Data), env.Meta)
	}
	checkLedger(t, e, acct.ID, credits, 100)
	if n := usageEntries(t, e, acct.ID); n != 1 {
		t.Errorf("%d usage entries for one batch of 100", n)
	}
}

// TestBatchRefusedAsAWhole: body, key and content errors refuse the whole
// batch with a single query's error envelope, and charge nothing.
func TestBatchRefusedAsAWhole(t *testing.T) {
	e := newEnv(t)
	const credits = 50
	acct, k := e.customer(t, account.Pro, 0, credits)
	identified := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: credits}
	anonymous := ipatlas.Meta{IsAPIRequest: true}
	big := `{"ips":["8.8.8.8"],"pad":"` + strings.Repeat("x", maxBatchBodyBytes) + `"}`
	for _, tc := range []struct {
		name   string
		q      req
		code   ipatlas.ErrorCode
		en, zh string // zh: "" when the language is not known
		anon   bool
	}{
		{name: "no ips", q: req{body: `{"lang":"en"}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: the field "ips" is required`, zh: `无效的请求：缺少必填字段 "ips"`},
		{name: "null ips", q: req{body: `{"ips":null}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: the field "ips" is required`, zh: `无效的请求：缺少必填字段 "ips"`},
		{name: "empty ips", q: req{body: `{"ips":[]}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: "ips" is empty; give 1 to 100 addresses`, zh: `无效的请求："ips" 为空，请提供 1 到 100 个地址`},
		{name: "ips a string", q: req{body: `{"ips":"8.8.8.8"}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: field "ips" must be an array, not string`},
		{name: "ips of numbers", q: req{body: `{"ips":[8]}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: field "ips" must be a string, not number`},
		{name: "unknown field", q: req{body: `{"ips":["8.8.8.8"],"fields":["city","town"]}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: unknown field "town" in "fields"; the record's fields are ip, continent, continent_code, country, country_code, province, province_code, city, district, isp, asn, latitude, longitude, time_zone, currency, zip_code, area_code, route, network, privacy, location_source, accuracy_radius, confidence, hostname, hostname_confirmed`,
			zh: `无效的请求："fields" 中有未知字段 "town"；可用字段：ip, continent, continent_code, country, country_code, province, province_code, city, district, isp, asn, latitude, longitude, time_zone, currency, zip_code, area_code, route, network, privacy, location_source, accuracy_radius, confidence, hostname, hostname_confirmed`},
		{name: "unsupported lang", q: req{body: `{"ips":["8.8.8.8"],"lang":"fr"}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: lang "fr" is not supported; use "en" or "zh"`},
		{name: "duplicate key", q: req{body: `{"ips":["8.8.8.8"],"IPS":["10.0.0.1"]}`}, code: ipatlas.CodeInvalidRequest,
			en: `Invalid request: duplicate field "IPS"`},
		{name: "not json", q: req{body: `{"ips":[`}, code: ipatlas.CodeInvalidRequest,
			en: "Invalid request: the body is not valid JSON"},
		{name: "too large", q: req{body: big}, code: ipatlas.CodePayloadTooLarge,
			en: "Request body too large: the limit of a batch body is 16384 bytes"},
		{name: "too large, chunked", q: req{body: big, header: map[string]string{"X-Test-Chunked": "1"}}, code: ipatlas.CodePayloadTooLarge,
			en: "Request body too large: the limit of a batch body is 16384 bytes"},
		{name: "text/plain", q: req{body: `{"ips":["8.8.8.8"]}`, header: map[string]string{"Content-Type": "text/plain"}},
			code: ipatlas.CodeUnsupportedMediaType, en: "Content-Type must be application/json"},
		{name: "no key", q: req{body: `{"ips":["8.8.8.8"]}`, key: "-"}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
		{name: "bad key", q: req{body: `{"ips":["8.8.8.8"]}`, key: "ipa_AAAAAAAAAAAA_" + strings.Repeat("b", 32)}, code: ipatlas.CodeInvalidAPIKey, anon: true,
			en: "Invalid or missing API key", zh: "API密钥无效或缺失"},
	} {
		langs := []ipatlas.Lang{ipatlas.English}
		if tc.zh != "" {
			langs = append(langs, ipatlas.Chinese)
		}
		for _, lang := range langs {
			t.Run(tc.name+"/"+lang.String(), func(t *testing.T) {
				q := tc.q
				q.method, q.path = "POST", batchPath
				switch q.key {
				case "":
					q.key = k.Secret
				case "-":
					q.key = ""
				}
				text := tc.en
				if lang == ipatlas.Chinese {
					q.body = strings.Replace(q.body, "{", `{"lang":"zh",`, 1)
					if strings.Contains(tc.q.body, `"lang"`) {
						q.body = strings.Replace(tc.q.body, `"lang":"en"`, `"lang":"zh"`, 1)
					}
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
			})
		}
	}
	checkLedger(t, e, acct.ID, credits, 0)
}

// TestBatchQuotaAndCreditsEdge: at the edge of the quota or the balance a
// batch is granted in part, in order, and the rest fail item by item with
// the reason a single query would get; a batch of which nothing can be
// charged is refused as a whole like a single query.
func TestBatchQuotaAndCreditsEdge(t *testing.T) {
	e := newEnv(t)
	v1, v2, v3, v4 := geotest.MountainView.IP, geotest.Beijing.IP, geotest.GoogleV6.IP, geotest.UncoveredIP

	t.Run("quota", func(t *testing.T) {
		acct, k := e.customer(t, account.Enterprise, 5, 100)
		if env := e.batch(t, k.Secret, batchBody([]string{v1, v2, v3}, "", nil)).batchEnv(t); env.Meta.Charged != 3 {
			t.Fatalf("first batch: %+v", env.Meta)
		}
		// 2 left: valid, private, valid, valid, invalid.
		for _, lang := range []ipatlas.Lang{ipatlas.English, ipatlas.Chinese} {
			if lang == ipatlas.Chinese {
				acct, k = e.customer(t, account.Enterprise, 5, 100)
				e.batch(t, k.Secret, batchBody([]string{v1, v2, v3}, "", nil)).batchEnv(t)
			}
			r := e.batch(t, k.Secret, batchBody([]string{v1, "192.168.1.1", v2, v3, "bogus"}, lang.String(), nil))
			env := r.batchEnv(t)
			codes := itemCodes(env)
			want := []ipatlas.ErrorCode{"", ipatlas.CodePrivateIP, "", ipatlas.CodeRateLimitExceeded, ipatlas.CodeInvalidIP}
			if !reflect.DeepEqual(codes, want) {
				t.Fatalf("%v: item codes %v, want %v", lang, codes, want)
			}
			if got := env.Data[3].Error; got != ipatlas.CodeRateLimitExceeded.Message(lang, quotaSpent(lang, 5, account.PeriodReset(testNow))) {
				t.Errorf("%v: quota item text %q", lang, got)
			}
			if env.Meta.Charged != 2 || env.Meta.CurrentCredits != 95 {
				t.Errorf("%v: meta %+v", lang, env.Meta)
			}
			checkQuota(t, r, 5, 0)
			checkLedger(t, e, acct.ID, 100, 5)
		}

		// Nothing can be charged: 429 like a single query, Retry-After.
		r := e.batch(t, k.Secret, batchBody([]string{"10.0.0.1", v1, v2}, "", nil))
		checkFailure(t, r, ipatlas.CodeRateLimitExceeded, "API rate limit exceeded: the monthly quota of 5 queries is used up; it resets at 2026-12-01 00:00 UTC",
			ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 95})
		checkQuota(t, r, 5, 0)
		if ra := r.Header().Get("Retry-After"); ra != testResetSecs {
			t.Errorf("Retry-After %q, want %s", ra, testResetSecs)
		}
		// Only invalid addresses: nothing to charge, a 200 of failures
		// with the quota headers.
		r = e.batch(t, k.Secret, batchBody([]string{"10.0.0.1", "x"}, "", nil))
		env := r.batchEnv(t)
		if c := itemCodes(env); !reflect.DeepEqual(c, []ipatlas.ErrorCode{ipatlas.CodePrivateIP, ipatlas.CodeInvalidIP}) || env.Meta.Charged != 0 || env.Meta.CurrentCredits != 95 {
			t.Errorf("all invalid: %v %+v", c, env.Meta)
		}
		checkQuota(t, r, 5, 0)
		checkLedger(t, e, acct.ID, 100, 5)
	})

	t.Run("credits", func(t *testing.T) {
		acct, k := e.customer(t, account.Pro, 0, 2)
		r := e.batch(t, k.Secret, batchBody([]string{v1, v2, v3, v1}, "zh", nil))
		env := r.batchEnv(t)
		// The repeat of v1 is v1's answer, not another query.
		want := []ipatlas.ErrorCode{"", "", ipatlas.CodeInsufficientCredits, ""}
		if c := itemCodes(env); !reflect.DeepEqual(c, want) {
			t.Fatalf("item codes %v, want %v", c, want)
		}
		if env.Data[2].Error != "API积分不足" || env.Meta.CurrentCredits != 0 || env.Meta.Charged != 2 {
			t.Errorf("items %+v meta %+v", env.Data[2], env.Meta)
		}
		checkQuota(t, r, account.ProMonthlyLimit, account.ProMonthlyLimit-2)
		r = e.batch(t, k.Secret, batchBody([]string{v1}, "", nil))
		checkFailure(t, r, ipatlas.CodeInsufficientCredits, "Not enough API credits",
			ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: 0})
		if ra := r.Header().Get("Retry-After"); ra != "" {
			t.Errorf("Retry-After %q on 402", ra)
		}
		checkLedger(t, e, acct.ID, 2, 2)
	})

	t.Run("quota before credits", func(t *testing.T) {
		// Quota for 3, credits for 1: the first succeeds, the next two
		// are within the quota but lack credits, the fourth is over the
		// quota.
		acct, k := e.customer(t, account.Enterprise, 3, 1)
		env := e.batch(t, k.Secret, batchBody([]string{v1, v2, v3, v4}, "", nil)).batchEnv(t)
		want := []ipatlas.ErrorCode{"", ipatlas.CodeInsufficientCredits, ipatlas.CodeInsufficientCredits, ipatlas.CodeRateLimitExceeded}
		if c := itemCodes(env); !reflect.DeepEqual(c, want) {
			t.Fatalf("item codes %v, want %v", c, want)
		}
		checkLedger(t, e, acct.ID, 1, 1)
		// Now quota 2 left, no credits: the first valid one decides, and
		// a single query would get 402.
		r := e.batch(t, k.Secret, batchBody([]string{v1}, "", nil))
		if r.Code != http.StatusPaymentRequired {
			t.Errorf("status %d, want 402: %s", r.Code, r.Body)
		}
		_, k2 := e.customer(t, account.Enterprise, 1, 1)
		e.batch(t, k2.Secret, batchBody([]string{v1}, "", nil)).batchEnv(t)
		if r := e.batch(t, k2.Secret, batchBody([]string{v1}, "", nil)); r.Code != http.StatusTooManyRequests {
			t.Errorf("both exhausted: %d, want 429 (quota first)", r.Code)
		}
	})
}

func itemCodes(env ipatlas.BatchEnvelope) []ipatlas.ErrorCode {
	out := make([]ipatlas.ErrorCode, len(env.Data))
	for i, it := range env.Data {
		if it.Success != (it.Code == "") || it.Success != (it.Data != nil) {
			out[i] = "inconsistent item"
			continue
		}
		out[i] = it.Code
	}
	return out
}

// TestBatchConcurrent races batches on one key with a small quota (and on
// a small balance): exactly the allowed number of items succeed across
// all batches, each batch's successes come first among its items, and the
// ledger and the usage counter agree with what the clients saw.
func TestBatchConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name           string
		limit, credits int64
		batches, size  int
		successes      int
		itemDenied     ipatlas.ErrorCode
	}{
		{"quota", 10, 1000, 8, 4, 10, ipatlas.CodeRateLimitExceeded},
		{"credits", 1000, 7, 8, 4, 7, ipatlas.CodeInsufficientCredits},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			acct, k := e.customer(t, account.Enterprise, tc.limit, tc.credits)
			ips := make([]string, tc.size)
			for i := range ips {
				ips[i] = geotest.Places[i%len(geotest.Places)].IP
			}
			body := batchBody(ips, "", nil)
			var (
				mu        sync.Mutex
				successes int
				refused   int
				balances  []int64
				wg        sync.WaitGroup
			)
			start := make(chan struct{})
			for range tc.batches {
				wg.Go(func() {
					<-start
					r := e.batch(t, k.Secret, body)
					mu.Lock()
					defer mu.Unlock()
					if r.Code != http.StatusOK {
						if code := r.env().Code; code.HTTPStatus() != r.Code || (code != ipatlas.CodeRateLimitExceeded && code != ipatlas.CodeInsufficientCredits) {
							t.Errorf("batch refused with %d %s", r.Code, code)
						}
						refused++
						return
					}
					var env ipatlas.BatchEnvelope
					if err := json.Unmarshal(r.Body.Bytes(), &env); err != nil {
						t.Error(err)
						return
					}
					n := 0
					for i, it := range env.Data {
						switch {
						case it.Success && i == n:
							n++
						case !it.Success && it.Code == tc.itemDenied:
						default:
							t.Errorf("item %d of a batch: %+v (successes must come first)", i, it)
						}
					}
					if n != env.Meta.Charged || n == 0 {
						t.Errorf("%d successes, meta.charged %d", n, env.Meta.Charged)
					}
					successes += n
					balances = append(balances, env.Meta.CurrentCredits)
				})
			}
			close(start)
			wg.Wait()
			if successes != tc.successes {
				t.Fatalf("%d items succeeded across %d batches, want exactly %d", successes, tc.batches, tc.successes)
			}
			if refused+len(balances) != tc.batches {
				t.Fatalf("%d refused + %d answered != %d batches", refused, len(balances), tc.batches)
			}
			// Every answered batch saw a distinct balance after its charge.
			seen := map[int64]bool{}
			for _, b := range balances {
				if seen[b] {
					t.Errorf("two batches saw the balance %d: %v", b, balances)
				}
				seen[b] = true
			}
			checkLedger(t, e, acct.ID, tc.credits, int64(tc.successes))
			if u, err := e.svc.Usage(context.Background(), k.ID); err != nil || u.Used != int64(tc.successes) {
				t.Errorf("usage %+v, %v", u, err)
			}
			// Batches that meet in one group commit share its ledger
			// entry; a batch never needs more than one.
			if n := usageEntries(t, e, acct.ID); n < 1 || n > len(balances) {
				t.Errorf("%d usage entries for %d charged batches", n, len(balances))
			}
		})
	}
}

// BenchmarkBatch100 is a batch of 100 addresses through the whole public
// handler, one group-commit charge included.
func BenchmarkBatch100(b *testing.B) {
	e, k := benchEnv(b)
	ips := make([]string, 100)
	for i := range ips {
		ips[i] = geotest.Places[i%len(geotest.Places)].IP
	}
	payload := []byte(batchBody(ips, "", nil))
	r, body := benchRequest("POST", batchPath, k.Secret)
	b.ReportAllocs()
	for b.Loop() {
		body.Reset(payload)
		r.ContentLength = int64(len(payload))
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/address")
}
