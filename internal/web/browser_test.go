package web_test

// Browser tests: the page in Debian's chromium, driven headless with
// chromedp, against the real server (internal/server over SQLite, the
// account service and meter, and the geo engine over the geotest fixture)
// listening on 127.0.0.1 and ::1.
//
// They need /usr/bin/chromium (apt-get install -y chromium) and skip
// without it. Screenshots go to $IPATLAS_ARTIFACTS_DIR (a temp dir when
// unset); IPATLAS_UPDATE_SCREENSHOT=1 also rewrites docs/screenshot.png,
// the README's picture.

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/ipatlas/ipatlas/internal/web"
)

const chromiumPath = "/usr/bin/chromium"

// testNow fixes the accounts' clock, so the month's usage line is known.
// It is taken from the real clock, because Chromium judges the session
// cookies' expiry by its own real clock: a fixed date would expire them
// once the calendar passes it.
var testNow = time.Now().UTC().Truncate(time.Second)

// testMonth is testNow's month as the usage lines name it, and
// testReset the first day of the next, as the page writes it.
var (
	testMonth = testNow.Format("2006-01")
	testReset = time.Date(testNow.Year(), testNow.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("Jan 2, 2006")
)

// The visitors the front proxies pretend to forward: Beijing over IPv4,
// Nuremberg over IPv6 (both in the geotest fixture).
var (
	visitor4 = geotest.Beijing
	visitor6 = geotest.Nuremberg
)

const initialCredits = 500

// stack is the real service behind the page.
type stack struct {
	pub    http.Handler
	secret string

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	method, target string
	header         http.Header
	body           string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := context.Background()
	p := servertest.New(t, func() time.Time { return testNow })
	engine, svc, meter, now := p.Geo, p.Accounts, p.Meter, p.Now
	// Privacy lists, so that records carry flags: Google's 8.8.8.0/24 on
	// Google's own ranges, and the IPv4 visitor a Tor exit.
	dataDir := filepath.Join(p.Dir, "data")
	geotest.WritePrivacyList(t, dataDir, "ipranges-google-ipv4", "8.8.8.0/24\n", time.Now())
	geotest.WritePrivacyList(t, dataDir, privacy.TorList, geotest.TorExits(200, visitor4.IP), time.Now())
	if err := engine.ReloadPrivacy(); err != nil {
		t.Fatal(err)
	}
	credits := int64(initialCredits)
	a, err := svc.CreateAccount(ctx, account.AccountParams{Name: "browser", Tier: account.Free, Credits: &credits})
	if err != nil {
		t.Fatal(err)
	}
	k, err := svc.CreateKey(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}

	srv, err := server.New(server.Config{
		// The front proxies of these tests connect from loopback.
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		Version:        "browser-test",
		Logger:         slog.New(slog.DiscardHandler),
		Now:            now,
	}, server.Deps{Geo: engine, Accounts: svc, Meter: meter})
	if err != nil {
		t.Fatal(err)
	}
	return &stack{pub: srv.Handler(), secret: k.Secret}
}

// forwardedClient stands in for the server's client address in these
// tests: the socket peer, or for a loopback peer (the trusted proxies
// above) the last X-Forwarded-For entry. The server computes the same for
// these requests; in production the server passes its own function.
func forwardedClient(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	peer := ap.Addr().Unmap()
	xff := r.Header.Values("X-Forwarded-For")
	if !peer.IsLoopback() || len(xff) == 0 {
		return peer
	}
	last := xff[len(xff)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	a, err := netip.ParseAddr(strings.TrimSpace(last))
	if err != nil {
		return peer
	}
	return a.Unmap()
}

// app is the public listener's handler with the page mounted as the lead
// will mount it, recording every request so that the test can check
// where the API key went.
func (s *stack) app(t *testing.T, ipv4URL, ipv6URL string) http.Handler {
	t.Helper()
	pageHandler, err := web.Handler(web.Options{ClientAddr: forwardedClient, IPv4URL: ipv4URL, IPv6URL: ipv6URL})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", pageHandler)
	mux.Handle("GET "+web.AssetPrefix, pageHandler)
	mux.Handle("/", s.pub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.seen = append(s.seen, seenRequest{r.Method, r.URL.RequestURI(), r.Header.Clone(), string(body)})
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

// listen starts h on addr ("127.0.0.1:0", "[::1]:0"); nil when the
// machine cannot listen there.
func listen(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// frontProxy is a reverse proxy on addr in front of backend that says the
// client is client, as a real deployment's proxy would.
func frontProxy(t *testing.T, addr, backend string, client netip.Addr) *httptest.Server {
	t.Helper()
	target, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	return listen(t, addr, &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
		pr.Out.Header.Set("X-Forwarded-For", client.String())
	}})
}

// closedURL is a URL on host where nothing listens.
func closedURL(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/ipv6"
}

func artifactsDir(t *testing.T) string {
	if d := os.Getenv("IPATLAS_ARTIFACTS_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// startBrowser starts chromium with a fresh profile, for at most limit
// whatever a step does; every test tab is a chromedp.NewContext of the
// returned context.
func startBrowser(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("browser tests need Debian's chromium at %s (apt-get install -y chromium); skipping: %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-breakpad", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("lang", "en-US"),
		// Nothing but the test servers: no proxy from the environment, and
		// no host name resolves (the tests use address literals only), so
		// whatever the browser would fetch on its own goes nowhere.
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE ::1"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("starting %s: %v", chromiumPath, err)
	}
	return browserCtx
}

// tab opens a tab with a time limit, which watches the page for CSP
// violations and script errors from the first byte of every document.
// opts may give it a browser context of its own
// (chromedp.WithNewBrowserContext): its own cookies and storage.
func tab(t *testing.T, browser context.Context, limit time.Duration, opts ...chromedp.ContextOption) context.Context {
	t.Helper()
	tabCtx, cancelTab := chromedp.NewContext(browser, opts...)
	t.Cleanup(cancelTab)
	ctx, cancel := context.WithTimeout(tabCtx, limit)
	t.Cleanup(cancel)
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
		window.__problems = [];
		document.addEventListener('securitypolicyviolation', (e) => window.__problems.push('CSP ' + e.violatedDirective + ' ' + e.blockedURI));
		window.addEventListener('error', (e) => window.__problems.push('error ' + e.message));
		window.addEventListener('unhandledrejection', (e) => window.__problems.push('rejection ' + e.reason));
	`})
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	return run(t, ctx, chromedp.Evaluate[T](js))
}

// waitFor polls a JavaScript condition until it holds.
func waitFor(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, cond, err)
	}
}

// view is what the page shows, read in one evaluation.
type view struct {
	IPv4       string            `json:"ipv4"`
	IPv4State  string            `json:"ipv4State"`
	IPv6       string            `json:"ipv6"`
	IPv6State  string            `json:"ipv6State"`
	Preferred  string            `json:"preferred"`
	MeCaption  string            `json:"meCaption"`
	MeStatus   string            `json:"meStatus"`
	MeCode     string            `json:"meCode"`
	MeRecord   map[string]string `json:"meRecord"`
	MeMarker   *marker           `json:"meMarker"`
	MePrivate  bool              `json:"mePrivate"`
	MeWhy      string            `json:"meWhy"`
	MeTry      string            `json:"meTry"`
	PageText   string            `json:"pageText"`
	MapLabel   string            `json:"mapLabel"`
	Countries  int               `json:"countries"`
	Problems   []string          `json:"problems"`
	QError     string            `json:"qError"`
	QErrorCode string            `json:"qErrorCode"`
	QRecord    map[string]string `json:"qRecord"`
	QMarker    *marker           `json:"qMarker"`
	Account    bool              `json:"account"`
	Credits    string            `json:"credits"`
	Usage      string            `json:"usage"`
	KeyValue   string            `json:"keyValue"`
	Remember   bool              `json:"remember"`
	Stored     *string           `json:"stored"`
}

type marker struct {
	CX     float64  `json:"cx"`
	CY     float64  `json:"cy"`
	Lat    float64  `json:"lat"`
	Lon    float64  `json:"lon"`
	Inside []string `json:"inside"` // ids (ISO 3166 numeric) of the country shapes holding the marker's centre
	// RadiusKm is the km of the accuracy circle drawn with the marker, 0
	// without one; RadiusHolds says the circle's area holds the marker's
	// centre.
	RadiusKm    int  `json:"radiusKm"`
	RadiusHolds bool `json:"radiusHolds"`
}

const readView = `(() => {
	const $ = (id) => document.getElementById(id);
	const text = (id) => ($(id) ? $(id).textContent.trim() : '');
	// Shown means rendered, whatever the attributes say: CSS can undo hidden.
	const shown = (id) => $(id).checkVisibility();
	const record = (id) => Object.fromEntries([...document.querySelectorAll('#' + id + ' > div')]
		.map((d) => [d.dataset.field, d.querySelector('dd').textContent]));
	const marker = (id) => {
		const m = $(id);
		if (!m) return null;
		const cx = Number(m.getAttribute('cx')), cy = Number(m.getAttribute('cy'));
		const inside = [...document.querySelectorAll('path.country')]
			.filter((p) => p.isPointInFill(new DOMPoint(cx, cy))).map((p) => p.dataset.id);
		const r = m.parentElement.querySelector('path.radius');
		return { cx, cy, lat: Number(m.dataset.lat), lon: Number(m.dataset.lon), inside,
			radiusKm: r ? Number(r.dataset.km) : 0, radiusHolds: r ? r.isPointInFill(new DOMPoint(cx, cy)) : false };
	};
	let stored = null;
	try { stored = localStorage.getItem('ipatlas.apiKey'); } catch (e) {}
	return {
		ipv4: text('ipv4'), ipv4State: $('ipv4').dataset.state,
		ipv6: text('ipv6'), ipv6State: $('ipv6').dataset.state,
		preferred: text('preferred'),
		meCaption: text('me-caption'),
		meStatus: shown('me-status') ? text('me-status') : '',
		meCode: $('me-status').dataset.code || '',
		meRecord: record('me-record'),
		meMarker: marker('marker-me'),
		mePrivate: shown('me-private'),
		meWhy: text('me-private-why'),
		meTry: text('me-try'),
		pageText: document.body.innerText,
		mapLabel: document.querySelector('#map title').textContent,
		countries: document.querySelectorAll('path.country').length,
		problems: window.__problems || ['the watcher did not run'],
		qError: shown('q-error') ? text('q-error') : '',
		qErrorCode: $('q-error').dataset.code || '',
		qRecord: shown('q-record') ? record('q-record') : {},
		qMarker: marker('marker-query'),
		account: shown('q-account'),
		credits: text('q-credits'),
		usage: text('q-usage'),
		keyValue: $('q-key').value,
		remember: $('q-remember').checked,
		stored,
	};
})()`

// settled is true once the addresses, the preferred family and the
// visitor's record have all been answered.
const settled = `['ipv4', 'ipv6', 'preferred', 'me-caption'].every((id) => {
	const s = document.getElementById(id).dataset.state;
	return s !== undefined && s !== 'loading';
})`

func load(t *testing.T, ctx context.Context, url string) view {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.Navigate(url)))
	waitFor(t, ctx, "the page to settle", settled)
	return eval[view](t, ctx, readView)
}

// lookup fills the form and submits it (by a click, or by Enter in the
// address field), and waits for the answer.
func lookup(t *testing.T, ctx context.Context, ip, lang, key string, remember, enter bool) view {
	t.Helper()
	done := eval[int](t, ctx, `Number(document.getElementById('result').dataset.done || 0)`)
	wantRemember := eval[bool](t, ctx, `document.getElementById('q-remember').checked`)
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.SetValue(chromedp.ID("q-lang"), lang),
		chromedp.SetValue(chromedp.ID("q-key"), key),
	}
	if remember != wantRemember {
		steps = append(steps, chromedp.Click(chromedp.ID("q-remember")))
	}
	if enter {
		// (SetValue cannot set "": it sends no argument for it.)
		steps = append(steps, chromedp.Evaluate[chromedp.Void](`document.getElementById('q-ip').value = ''`),
			chromedp.SendKeys(chromedp.ID("q-ip"), ip+kb.Enter))
	} else {
		steps = append(steps, chromedp.SetValue(chromedp.ID("q-ip"), ip), chromedp.Click(chromedp.ID("q-submit")))
	}
	must(t, chromedp.Do(ctx, steps...))
	waitFor(t, ctx, "the lookup of "+ip, fmt.Sprintf(`Number(document.getElementById('result').dataset.done || 0) > %d`, done))
	return eval[view](t, ctx, readView)
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) []byte {
	t.Helper()
	b := run(t, ctx, chromedp.FullScreenshot(100))
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, b, 0o644))
	t.Logf("screenshot: %s", p)
	return b
}

// updateDoc writes a screenshot to docs/name when
// IPATLAS_UPDATE_SCREENSHOT=1: the pictures the README shows.
func updateDoc(t *testing.T, name string, shot []byte) {
	t.Helper()
	if os.Getenv("IPATLAS_UPDATE_SCREENSHOT") != "1" {
		return
	}
	docs := filepath.Join("..", "..", "docs")
	must(t, os.MkdirAll(docs, 0o755))
	must(t, os.WriteFile(filepath.Join(docs, name), shot, 0o644))
	t.Logf("updated %s", filepath.Join(docs, name))
}

func setDark(t *testing.T, ctx context.Context, dark bool) {
	t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	})
	must(t, err)
}

func checkNoProblems(t *testing.T, v view) {
	t.Helper()
	if len(v.Problems) > 0 {
		t.Errorf("the page had problems: %q", v.Problems)
	}
}

// lowContrast lists the text elements whose contrast with their background
// is below WCAG AA's 4.5:1.
const lowContrast = `(() => {
	const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
	const lum = (c) => {
		const [r, g, b] = rgb(c).slice(0, 3).map((v) => {
			v /= 255;
			return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
		});
		return 0.2126 * r + 0.7152 * g + 0.0722 * b;
	};
	const bg = (el) => {
		for (let e = el; e; e = e.parentElement) {
			const c = getComputedStyle(e).backgroundColor, v = rgb(c);
			if (v.length === 3 || (v.length === 4 && v[3] > 0.5)) return c;
		}
		return 'rgb(255, 255, 255)';
	};
	const bad = [];
	const sels = ['body', '.tagline', '.addr dt', '#ipv4', '#ipv6', '#preferred', '.note', '#me-caption',
		'.record dt', '.record dd', '.record .unknown', 'label', '.hint', '#q-submit', '#q-forget',
		'.error', '.account dt', '.account dd', '.foot', '.foot a', 'input', 'select'];
	for (const s of sels) {
		for (const el of document.querySelectorAll(s)) {
			if (el.closest('[hidden]') || el.offsetParent === null) continue;
			const a = lum(getComputedStyle(el).color), b = lum(bg(el));
			const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
			if (ratio < 4.5) bad.push(s + ' ' + ratio.toFixed(2) + ' ' + getComputedStyle(el).color + ' on ' + bg(el));
		}
	}
	return bad;
})()`

// unlabelled lists the form controls without an accessible name, and the
// live regions that are missing.
const unlabelled = `(() => {
	const bad = [];
	for (const el of document.querySelectorAll('input, select')) {
		if (!el.labels || el.labels.length === 0) bad.push('no label: #' + el.id);
	}
	for (const el of document.querySelectorAll('button')) {
		if (!el.textContent.trim()) bad.push('no text: #' + el.id);
	}
	for (const id of ['ipv4', 'ipv6', 'preferred', 'me-caption', 'result']) {
		if (!document.getElementById(id).getAttribute('aria-live')) bad.push('not live: #' + id);
	}
	if (!document.querySelector('#map title')) bad.push('map without a title');
	return bad;
})()`

func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	browser := startBrowser(t, 4*time.Minute)
	s := newStack(t)
	art := artifactsDir(t)

	// One app listener on IPv4 loopback; on IPv6 loopback when the machine
	// has it. The app trusts loopback proxies, so a direct visitor is
	// 127.0.0.1 or ::1 and a proxied one is whoever the proxy says.
	_, v6err := net.Listen("tcp", "[::1]:0")
	haveV6 := v6err == nil
	if !haveV6 {
		t.Logf("no IPv6 loopback here (%v): the IPv6 address must show as unavailable", v6err)
	}

	t.Run("proxied visitor", func(t *testing.T) {
		t.Parallel()
		// The IPv6-only endpoint: the app behind a proxy on ::1 saying the
		// visitor is visitor6; a closed port when there is no ::1.
		backend := listen(t, "127.0.0.1:0", s.app(t, "/ipv4", "/ipv6"))
		ipv6URL := closedURL(t, "127.0.0.1")
		wantV6, wantV6State := "unavailable", "unavailable"
		if haveV6 {
			p6 := frontProxy(t, "[::1]:0", backend.URL, netip.MustParseAddr(visitor6.IP))
			ipv6URL = p6.URL + "/ipv6"
			wantV6, wantV6State = netip.MustParseAddr(visitor6.IP).String(), "ok"
		}
		app := listen(t, "127.0.0.1:0", s.app(t, "/ipv4", ipv6URL))
		front := frontProxy(t, "127.0.0.1:0", app.URL, netip.MustParseAddr(visitor4.IP))

		ctx := tab(t, browser, 90*time.Second)
		must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
		setDark(t, ctx, false)
		v := load(t, ctx, front.URL+"/")

		if v.IPv4 != visitor4.IP || v.IPv4State != "ok" {
			t.Errorf("IPv4 shows %q (%s), want %s", v.IPv4, v.IPv4State, visitor4.IP)
		}
		if v.IPv6 != wantV6 || v.IPv6State != wantV6State {
			t.Errorf("IPv6 shows %q (%s), want %q", v.IPv6, v.IPv6State, wantV6)
		}
		if v.Preferred != "IPv4" {
			t.Errorf("preferred %q, want IPv4: the page came over IPv4", v.Preferred)
		}
		// The visitor's own record, from GET /api/ip/me.
		if want := "Your address " + visitor4.IP + " is near Beijing, China."; v.MeCaption != want {
			t.Errorf("caption %q, want %q", v.MeCaption, want)
		}
		wantRec := map[string]string{"ip": visitor4.IP, "country": "China (CN)", "city": "Beijing", "isp": visitor4.ISP, "asn": visitor4.ASN, "time_zone": "Asia/Shanghai", "coords": "39.9075° N, 116.3970° E",
			"route": visitor4.Network, "privacy": "Tor exit"}
		for f, want := range wantRec {
			if got := v.MeRecord[f]; got != want {
				t.Errorf("your record's %s is %q, want %q", f, got, want)
			}
		}
		if v.Countries < 150 {
			t.Errorf("the map has %d country shapes", v.Countries)
		}
		// The marker stands where the coordinates are: inside China's
		// shape (ISO 3166 numeric 156) and no other.
		switch m := v.MeMarker; {
		case m == nil:
			t.Error("no marker for the visitor")
		case m.Lat != visitor4.Latitude || m.Lon != visitor4.Longitude:
			t.Errorf("marker at %v,%v, want %v,%v", m.Lat, m.Lon, visitor4.Latitude, visitor4.Longitude)
		case len(m.Inside) != 1 || m.Inside[0] != "156":
			t.Errorf("the marker (%.1f, %.1f) lies in the shapes %v, want only China's (156)", m.CX, m.CY, m.Inside)
		}
		// How far off the location may be: as text in the record, and as
		// the circle of that radius around the marker.
		radius4 := visitor4.Want(ipatlas.English).AccuracyRadius
		if want := fmt.Sprintf("within about %d km, medium confidence", radius4); v.MeRecord["accuracy"] != want {
			t.Errorf("your record's accuracy is %q, want %q", v.MeRecord["accuracy"], want)
		}
		if m := v.MeMarker; m != nil && (m.RadiusKm != radius4 || !m.RadiusHolds) {
			t.Errorf("your marker's radius circle: %d km, holds the marker %v; want %d km around it", m.RadiusKm, m.RadiusHolds, radius4)
		}
		if !strings.Contains(v.MapLabel, "Beijing") {
			t.Errorf("the map's accessible name %q does not say where the marker is", v.MapLabel)
		}
		if bad := eval[[]string](t, ctx, unlabelled); len(bad) > 0 {
			t.Errorf("accessibility: %q", bad)
		}
		if bad := eval[[]string](t, ctx, lowContrast); len(bad) > 0 {
			t.Errorf("contrast below 4.5:1 in the light theme: %q", bad)
		}

		// Keyboard: the first Tab reaches the skip link, with a visible focus ring.
		must(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)))
		if f := eval[string](t, ctx, `(() => { const e = document.activeElement; return e.className + ' ' + getComputedStyle(e).outlineStyle; })()`); f != "skip solid" {
			t.Errorf("first Tab focuses %q, want the skip link with a solid outline", f)
		}

		// Errors: an invalid address with a good key; a bad key.
		v = lookup(t, ctx, "300.1.2.3", "en", s.secret, true, false)
		if v.QErrorCode != "InvalidIP" || !strings.HasPrefix(v.QError, "Invalid IP address format") || !strings.HasSuffix(v.QError, "(InvalidIP)") {
			t.Errorf("invalid IP shows %q (%s)", v.QError, v.QErrorCode)
		}
		if !v.Account || v.Credits != "500" {
			t.Errorf("after a refused query the credits show %v %q, want 500 (nothing charged)", v.Account, v.Credits)
		}
		v = lookup(t, ctx, "8.8.8.8", "en", "ipa_notakey_0000000000000000000000", false, false)
		if v.QErrorCode != "InvalidAPIKey" || !strings.Contains(v.QError, "Invalid or missing API key") {
			t.Errorf("bad key shows %q (%s)", v.QError, v.QErrorCode)
		}
		if v.Account {
			t.Error("a bad key still shows an account's credits")
		}
		if v.Stored != nil {
			t.Errorf("the key is stored although Remember is off: %q", *v.Stored)
		}
		checkNoProblems(t, v)
		screenshot(t, ctx, art, "errors-light.png")

		// A good lookup in English: the record, the credits, the month's usage.
		v = lookup(t, ctx, geotest.MountainView.IP, "en", s.secret, true, false)
		if v.QError != "" {
			t.Fatalf("lookup failed: %s", v.QError)
		}
		for f, want := range map[string]string{"ip": "8.8.8.8", "country": "United States (US)", "city": "Mountain View", "province": "California (US-CA)", "asn": "AS15169", "zip_code": "94043", "area_code": "1",
			"route": "8.8.8.0/24", "privacy": "hosting or datacenter · Google"} {
			if got := v.QRecord[f]; got != want {
				t.Errorf("looked-up %s is %q, want %q", f, got, want)
			}
		}
		if v.Credits != "499" {
			t.Errorf("credits left %q, want 499", v.Credits)
		}
		if want := "1 of 1,000 queries used in " + testMonth + " (999 left; resets " + testReset + ")"; v.Usage != want {
			t.Errorf("usage %q, want %q", v.Usage, want)
		}
		if m := v.QMarker; m == nil || len(m.Inside) != 1 || m.Inside[0] != "840" {
			t.Errorf("the looked-up address's marker %+v is not in the United States (840)", m)
		}
		radiusMV := geotest.MountainView.Want(ipatlas.English).AccuracyRadius
		if want := fmt.Sprintf("within about %d km, medium confidence", radiusMV); v.QRecord["accuracy"] != want {
			t.Errorf("looked-up accuracy is %q, want %q", v.QRecord["accuracy"], want)
		}
		if m := v.QMarker; m != nil && (m.RadiusKm != radiusMV || !m.RadiusHolds) {
			t.Errorf("the looked-up marker's radius circle: %d km, holds the marker %v; want %d km around it", m.RadiusKm, m.RadiusHolds, radiusMV)
		}
		if v.Stored == nil || *v.Stored != s.secret {
			t.Error("Remember is on but the key is not in localStorage")
		}
		if v.MeMarker == nil {
			t.Error("the lookup removed the visitor's own marker")
		}
		checkNoProblems(t, v)
		updateDoc(t, "screenshot.png", screenshot(t, ctx, art, "desktop-light.png"))

		// In Chinese, submitted from the keyboard.
		v = lookup(t, ctx, visitor4.IP, "zh", s.secret, true, true)
		if v.QRecord["country"] != "中国 (CN)" || v.QRecord["continent"] != "亚洲 (AS)" || v.QRecord["route"] != visitor4.Network || v.QRecord["privacy"] != "Tor 出口节点" {
			t.Errorf("Chinese record: %v", v.QRecord)
		}
		if v.Credits != "498" || !strings.HasPrefix(v.Usage, "2 of 1,000") {
			t.Errorf("after two queries: credits %q, usage %q", v.Credits, v.Usage)
		}
		if want := fmt.Sprintf("约 %d 公里范围内，可信度中等", radius4); v.QRecord["accuracy"] != want {
			t.Errorf("Chinese accuracy %q, want %q", v.QRecord["accuracy"], want)
		}
		// An answer without coordinates has no radius: neither text nor circle.
		v = lookup(t, ctx, geotest.Singapore.IP, "en", s.secret, true, false)
		if v.QError != "" || v.QRecord["accuracy"] != "unknown" || v.QMarker != nil {
			t.Errorf("a record without coordinates: error %q, accuracy %q, marker %+v", v.QError, v.QRecord["accuracy"], v.QMarker)
		}

		// Dark theme: still readable.
		setDark(t, ctx, true)
		if bad := eval[[]string](t, ctx, lowContrast); len(bad) > 0 {
			t.Errorf("contrast below 4.5:1 in the dark theme: %q", bad)
		}
		if bg := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`); bg == "rgb(244, 246, 249)" {
			t.Error("the dark theme did not apply")
		}
		screenshot(t, ctx, art, "desktop-dark.png")

		// The key survives a reload when remembered, and Forget removes it.
		v = load(t, ctx, front.URL+"/")
		if v.KeyValue != s.secret || !v.Remember {
			t.Error("the remembered key is not filled in after a reload")
		}
		must(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("q-forget"))))
		if v = eval[view](t, ctx, readView); v.Stored != nil || v.KeyValue != "" {
			t.Error("Forget left the key behind")
		}

		// A phone: one column, nothing wider than the screen.
		setDark(t, ctx, false)
		must(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile)))
		v = load(t, ctx, front.URL+"/")
		if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the page is %d px wide on a 390 px phone", w)
		}
		if v.Account || v.QError != "" || len(v.QRecord) > 0 {
			t.Error("a fresh page shows lookup results")
		}
		// The marker stays visible on the small map: at least 8 CSS px across.
		if d := eval[float64](t, ctx, `document.getElementById('marker-me').getBoundingClientRect().width`); d < 8 {
			t.Errorf("the marker is %.1f px across on a phone", d)
		}
		checkNoProblems(t, v)
		screenshot(t, ctx, art, "phone-light.png")

		// The key went nowhere but the Authorization header of the query
		// and usage endpoints.
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.seen {
			for name, vs := range r.header {
				for _, val := range vs {
					if !strings.Contains(val, s.secret) {
						continue
					}
					okEndpoint := (r.method == "POST" && r.target == "/api/ip-query") || (r.method == "GET" && r.target == "/api/usage")
					if name != "Authorization" || !okEndpoint {
						t.Errorf("the key was sent in %s of %s %s", name, r.method, r.target)
					}
				}
			}
			if strings.Contains(r.target, s.secret) || strings.Contains(r.body, s.secret) {
				t.Errorf("the key was sent in the URL or body of %s %s", r.method, r.target)
			}
		}
	})

	t.Run("direct visitor, IPv6 refused", func(t *testing.T) {
		t.Parallel()
		host := "127.0.0.1"
		if haveV6 {
			host = "::1"
		}
		app := listen(t, "127.0.0.1:0", s.app(t, "/ipv4", closedURL(t, host)))
		ctx := tab(t, browser, 60*time.Second)
		must(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
		v := load(t, ctx, app.URL+"/")
		if v.IPv4 != "127.0.0.1" || v.IPv6 != "unavailable" || v.IPv6State != "unavailable" || v.Preferred != "IPv4" {
			t.Errorf("got IPv4 %q, IPv6 %q (%s), preferred %q; want 127.0.0.1, unavailable, IPv4", v.IPv4, v.IPv6, v.IPv6State, v.Preferred)
		}
		// Loopback has no location: the page says so in its own words
		// (privateVisitor checks them), and there is no marker.
		if !v.MePrivate || v.MeCaption != "You are on the server's own machine." || v.MeStatus != "" {
			t.Errorf("a loopback visitor's panel: private %v, caption %q, status %q", v.MePrivate, v.MeCaption, v.MeStatus)
		}
		if v.MeMarker != nil {
			t.Error("a marker for a loopback visitor")
		}
		checkNoProblems(t, v)
		screenshot(t, ctx, art, "direct-ipv6-refused.png")
	})

	t.Run("page over IPv6", func(t *testing.T) {
		t.Parallel()
		if !haveV6 {
			t.Skip("no IPv6 loopback on this machine: cannot serve the page over IPv6")
		}
		app4 := listen(t, "127.0.0.1:0", s.app(t, "/ipv4", "/ipv6"))
		app6 := listen(t, "[::1]:0", s.app(t, app4.URL+"/ipv4", "/ipv6"))
		ctx := tab(t, browser, 60*time.Second)
		v := load(t, ctx, app6.URL+"/")
		if v.IPv4 != "127.0.0.1" || v.IPv6 != "::1" || v.Preferred != "IPv6" {
			t.Errorf("got IPv4 %q, IPv6 %q, preferred %q; want 127.0.0.1, ::1, IPv6", v.IPv4, v.IPv6, v.Preferred)
		}
		checkNoProblems(t, v)
	})

	t.Run("IPv6 endpoint hangs", func(t *testing.T) {
		t.Parallel()
		// An endpoint that accepts the request and never answers, like a
		// black-holed route: the page must give up (the spec's 5 s) and
		// say unavailable, and the server must see the browser abort.
		aborted := make(chan struct{}, 1)
		stop := make(chan struct{})
		hang := listen(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
				select {
				case aborted <- struct{}{}:
				default:
				}
			case <-stop:
			}
		}))
		t.Cleanup(func() { close(stop) })
		app := listen(t, "127.0.0.1:0", s.app(t, "/ipv4", hang.URL+"/ipv6"))
		ctx := tab(t, browser, 60*time.Second)
		v := load(t, ctx, app.URL+"/")
		if v.IPv6 != "unavailable" || v.IPv4 != "127.0.0.1" {
			t.Errorf("got IPv4 %q, IPv6 %q; want 127.0.0.1, unavailable", v.IPv4, v.IPv6)
		}
		select {
		case <-aborted:
		case <-time.After(10 * time.Second):
			t.Error("the hanging endpoint never saw the browser give up: no AbortController timeout?")
		}
		checkNoProblems(t, v)
	})
}
