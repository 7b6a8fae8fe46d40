package web_test

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserLanguage: a browser whose first language is Chinese gets the
// lookup page in Chinese, its own record in Chinese and the lookup form
// set to Chinese records; the EN / 中文 switch changes all of it, is
// remembered across a reload, and leaves a record language the visitor
// picked alone.
func TestBrowserLanguage(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	browser := startBrowser(t, 2*time.Minute)
	s := newStack(t)
	backend := listen(t, "127.0.0.1:0", s.app(t, "/ipv4", "/ipv6"))
	front := frontProxy(t, "127.0.0.1:0", backend.URL, netip.MustParseAddr(visitor4.IP))

	ctx := tab(t, browser, time.Minute)
	ua := eval[string](t, ctx, `navigator.userAgent`)
	_, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{
		UserAgent: ua, AcceptLanguage: "zh-CN,zh;q=0.9,en;q=0.8",
	})
	must(t, err)
	must(t, chromedp.Do(ctx, chromedp.Navigate(front.URL+"/")))
	waitFor(t, ctx, "the visitor's record", `document.getElementById('me-caption').dataset.state === 'ok'`)

	type view struct {
		Lang, QLang, Heading, Caption, RecordLang, City, Title string
	}
	read := func() view {
		return eval[view](t, ctx, `({
			Lang: document.documentElement.lang,
			QLang: document.getElementById('q-lang').value,
			Heading: document.getElementById('you-h').textContent,
			Caption: document.getElementById('me-caption').textContent,
			RecordLang: document.getElementById('me-record').lang,
			City: (document.querySelector('#me-record [data-field=city] dd') || {}).textContent || '',
			Title: document.title,
		})`)
	}
	zh := view{Lang: "zh-CN", QLang: "zh", Heading: "你的 IP 地址", RecordLang: "zh", City: "北京市", Title: "我的 IP 地址是什么？· ipatlas"}
	v := read()
	if v.Lang != zh.Lang || v.QLang != zh.QLang || v.Heading != zh.Heading || v.RecordLang != zh.RecordLang || v.City != zh.City || v.Title != zh.Title {
		t.Errorf("a Chinese browser got %+v, want %+v", v, zh)
	}
	if want := "你的地址 " + visitor4.IP + " 位于北京市，中国附近。"; v.Caption != want {
		t.Errorf("caption %q, want %q", v.Caption, want)
	}

	// The footer's sentences end as their language ends them: 。 after
	// Chinese, nothing after the Chinese list of sources.
	foot := func() []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll('footer p')].map((p) => p.textContent.replace(/\s+/g, ' ').trim())`)
	}
	f := foot()
	if len(f) != 2 || !strings.Contains(f[0], "IP 地理定位数据来自 DB-IP（CC BY 4.0）。") || !strings.HasPrefix(f[1], "数据：") ||
		strings.HasSuffix(f[1], ".") || strings.Contains(f[0], "4.0).") {
		t.Errorf("the Chinese footer: %q", f)
	}

	// The switch: English everywhere, the record fetched again in English.
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("lang-en"))))
	waitFor(t, ctx, "the English record", `(document.querySelector('#me-record [data-field=city] dd') || {}).textContent === 'Beijing'`)
	v = read()
	if v.Lang != "en" || v.QLang != "en" || v.Heading != "Your IP addresses" || v.Caption != "Your address "+visitor4.IP+" is near Beijing, China." {
		t.Errorf("after the switch to English: %+v", v)
	}
	if f := foot(); len(f) != 2 || !strings.Contains(f[0], "IP geolocation by DB-IP (CC BY 4.0).") || !strings.HasPrefix(f[1], "Data: ") || !strings.HasSuffix(f[1], ").") {
		t.Errorf("the English footer: %q", f)
	}
	if p := eval[string](t, ctx, `document.getElementById('lang-en').getAttribute('aria-pressed') + document.getElementById('lang-zh').getAttribute('aria-pressed')`); p != "truefalse" {
		t.Errorf("aria-pressed of EN and 中文: %s", p)
	}

	// Remembered: a reload in the same Chinese browser stays English.
	must(t, chromedp.Do(ctx, chromedp.Reload()))
	waitFor(t, ctx, "the visitor's record", `document.getElementById('me-caption').dataset.state === 'ok'`)
	if v = read(); v.Lang != "en" || v.QLang != "en" || v.City != "Beijing" {
		t.Errorf("after a reload: %+v", v)
	}

	// A record language the visitor picked stays when the UI switches.
	must(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("q-lang"), "zh"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById('q-lang').dispatchEvent(new Event('change'))`),
		chromedp.Click(chromedp.ID("lang-zh")),
		chromedp.Click(chromedp.ID("lang-en")),
	))
	if q := eval[string](t, ctx, `document.getElementById('q-lang').value`); q != "zh" {
		t.Errorf("the picked record language became %q", q)
	}

	// A message the page shows is translated again on a switch.
	must(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.getElementById('q-ip').value = ''`),
		chromedp.Click(chromedp.ID("q-submit")),
	))
	waitFor(t, ctx, "the English message", `document.getElementById('q-error').textContent === 'Enter an IP address to look up.'`)
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("lang-zh"))))
	waitFor(t, ctx, "the message in Chinese", `document.getElementById('q-error').textContent === '请输入要查询的 IP 地址。'`)
}
