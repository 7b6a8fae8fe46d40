package web_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserPrivateVisitor: a visitor the server sees from its own
// machine (a local trial) or its own network has no location. The map's
// panel says so in the page's words and language, never the server's
// error text; it names the address, offers a public one, and its button
// puts that address in the lookup form (asking for the key when there is
// none, looking it up when there is). axe-core finds nothing to fix in
// either language or theme.
func TestBrowserPrivateVisitor(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	browser := startBrowser(t, 4*time.Minute)
	axe := axeScript(t)
	s := newStack(t)
	art := artifactsDir(t)

	for _, c := range []struct {
		name, ip                      string
		caption, why, captionZh, why2 string
	}{
		{"loopback", "127.0.0.1",
			"You are on the server's own machine.",
			"This server sees you as 127.0.0.1, a loopback address: you are visiting from its own machine, and such an address has no location.",
			"你正在服务器本机上访问。", "服务器看到你的地址是 127.0.0.1，这是环回地址"},
		{"private network", "10.1.2.3",
			"You are on a private network.",
			"This server sees you as 10.1.2.3, an address of a private network, which has no location.",
			"你在私有网络中。", "服务器看到你的地址是 10.1.2.3，这是私有网络中的地址"},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := listen(t, "127.0.0.1:0", s.app(t, "/ipv4", closedURL(t, "127.0.0.1")))
			url := app.URL + "/"
			if c.ip != "127.0.0.1" {
				url = frontProxy(t, "127.0.0.1:0", app.URL, netip.MustParseAddr(c.ip)).URL + "/"
			}
			ctx := tab(t, browser, 2*time.Minute)
			must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
			setDark(t, ctx, false)
			v := load(t, ctx, url)
			if v.IPv4 != c.ip {
				t.Fatalf("the visitor is %q, want %s", v.IPv4, c.ip)
			}
			if !v.MePrivate || v.MeCaption != c.caption || v.MeWhy != c.why || v.MeTry != "Look up 8.8.8.8" {
				t.Errorf("the panel: shown %v, caption %q, why %q, button %q", v.MePrivate, v.MeCaption, v.MeWhy, v.MeTry)
			}
			// The page's words only: not the server's error, nor its code.
			for _, raw := range []string{"Private IP address not supported", "RFC", "PrivateIP", "(400)"} {
				if strings.Contains(v.PageText, raw) {
					t.Errorf("the page shows the server's %q", raw)
				}
			}
			if v.MeStatus != "" || v.MeMarker != nil || len(v.MeRecord) != 0 {
				t.Errorf("status %q, marker %v, record %v; want none", v.MeStatus, v.MeMarker, v.MeRecord)
			}
			if bad := eval[[]string](t, ctx, unlabelled); len(bad) > 0 {
				t.Errorf("accessibility: %q", bad)
			}
			for _, dark := range []bool{false, true} {
				setDark(t, ctx, dark)
				if bad := eval[[]string](t, ctx, lowContrast); len(bad) > 0 {
					t.Errorf("contrast below 4.5:1 (dark %v): %q", dark, bad)
				}
				runAxe(t, ctx, axe, fmt.Sprintf("%s visitor (en, dark %v)", c.name, dark))
			}
			setDark(t, ctx, false)
			screenshot(t, ctx, art, "private-"+strings.ReplaceAll(c.name, " ", "-")+".png")

			// In Chinese: the panel again, in Chinese.
			setLang(t, ctx, "zh")
			waitFor(t, ctx, "the Chinese panel", fmt.Sprintf(`document.getElementById('me-caption').textContent === %q`, c.captionZh))
			v = eval[view](t, ctx, readView)
			if !strings.HasPrefix(v.MeWhy, c.why2) || v.MeTry != "查询 8.8.8.8" || strings.Contains(v.PageText, "不支持私有") {
				t.Errorf("the Chinese panel: why %q, button %q", v.MeWhy, v.MeTry)
			}
			runAxe(t, ctx, axe, c.name+" visitor (zh)")
			setLang(t, ctx, "en")
			waitFor(t, ctx, "the English panel", fmt.Sprintf(`document.getElementById('me-caption').textContent === %q`, c.caption))

			// The button without a key: the address in the form, the
			// focus on the key it needs.
			must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("me-try"))))
			if got := eval[string](t, ctx, `document.getElementById('q-ip').value + ' ' + document.activeElement.id`); got != "8.8.8.8 q-key" {
				t.Errorf("after the button without a key: %q, want the address in the form and the key field focused", got)
			}
			// With a key: the lookup itself.
			done := eval[int](t, ctx, `Number(document.getElementById('result').dataset.done || 0)`)
			must(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.ID("q-key"), s.secret), chromedp.Click(chromedp.ID("me-try"))))
			waitFor(t, ctx, "the lookup of 8.8.8.8", fmt.Sprintf(`Number(document.getElementById('result').dataset.done || 0) > %d`, done))
			v = eval[view](t, ctx, readView)
			if v.QError != "" || v.QRecord["city"] != "Mountain View" || v.QMarker == nil {
				t.Errorf("the offered lookup: error %q, record %v, marker %v", v.QError, v.QRecord, v.QMarker)
			}
			checkNoProblems(t, v)
		})
	}
}
