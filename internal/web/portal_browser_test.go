package web_test

// Browser tests of the owners' portal (/account on the public listener)
// and the operators' console (/console on the admin listener), as people
// use them: in Debian's chromium through chromedp (the helpers of
// browser_test.go), against the real server over SQLite, on real
// listeners, with the accounts' clock in the test's hand so that sessions
// can expire.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/server"
	"github.com/ipatlas/ipatlas/internal/servertest"
)

// The pages' hooks these tests drive: the ids and data-test attributes
// listed at the top of web/src/account.js and web/src/console.js.
const (
	// The portal.
	pSignin         = "#signin"
	pSigninEmail    = "#signin-email"
	pSigninPassword = "#signin-password"
	pSigninSubmit   = "#signin-submit"
	pPasswordForm   = "#setpw"
	pPasswordNew    = "#setpw-password"
	pPasswordAgain  = "#setpw-confirm"
	pPasswordSubmit = "#setpw-submit"
	pApp            = "#app" // the signed-in part
	pNavOverview    = "#tab-overview"
	pNavKeys        = "#tab-keys"
	pNavUsage       = "#tab-usage"
	pNavCredits     = "#tab-credits"
	pOverview       = "[data-view=overview]"
	pKeys           = "[data-view=keys]"
	pCredits        = "[data-view=credits]"
	pUsed           = "#ov-used" // this month's queries, all keys
	pBalance        = "#ov-credits"
	pKeyLabel       = "#key-label"
	pKeyCreate      = "#key-create-submit"
	pKeySecret      = "#key-secret" // the secret, shown once
	pKeyCopy        = "#key-secret-copy"
	pKeyRows        = "#keys-table tbody tr[data-key-id]"
	pConfirm        = "#confirm-dialog"
	pConfirmYes     = "#confirm-yes"
	pUsageChart     = "#usage-chart"
	pLedgerRows     = "#credits-table tbody tr[data-entry-id]"

	// The console.
	cSignin       = "#token-form"
	cToken        = "#token-input"
	cSigninSubmit = "#token-submit"
	cApp          = "#console-app"
	cAccounts     = "[data-view=accounts]"
	cAccountRows  = "#accounts-table tbody tr[data-account-id]"
	cNewName      = "#acc-name"
	cNewCreate    = "#acc-create-submit"
	cDetail       = "[data-view=account]"
	cInviteEmail  = "#d-invite-email"
	cInviteSubmit = "#d-invite-submit"
	cInviteLink   = "#link-url"
	cCreditForm   = "#d-credits-form"
	cCreditAmount = "#d-amount"
	cCreditReason = "#d-reason"
	cCreditSubmit = "#d-credits-submit"
	cExpires      = "#who-expires"
	cNavAudit     = "#tab-audit"
	cAuditRows    = "#audit-table tbody tr[data-audit-id]"
)

const (
	adminToken = "browser-test-admin-token-0123456789"
	// A password the length rules and the blocklist accept.
	ownerPassword = "sixteen quiet harbours under a pale atlas"
)

// clock is the accounts' and the server's clock, moved by the test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// portalStack is a whole server: the public listener (the main page, the
// portal, the API) and the admin listener (the console, the admin API),
// each on its own port of 127.0.0.1, so each its own origin.
type portalStack struct {
	*servertest.Parts
	clock      *clock
	pub, admin *httptest.Server
}

func newPortalStack(t *testing.T, start time.Time) *portalStack {
	t.Helper()
	c := &clock{t: start}
	p := servertest.New(t, c.Now)
	// The listeners come first: the server makes its one-time links with
	// the public listener's URL.
	var pubH, adminH http.Handler
	pub := listen(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pubH.ServeHTTP(w, r) }))
	admin := listen(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { adminH.ServeHTTP(w, r) }))
	if pub == nil || admin == nil {
		t.Fatal("cannot listen on 127.0.0.1")
	}
	srv, err := server.New(server.Config{
		AdminToken: adminToken,
		PublicURL:  pub.URL,
		Version:    "browser-test",
		Logger:     slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError})),
		Now:        c.Now,
	}, server.Deps{Geo: p.Geo, Accounts: p.Accounts, Meter: p.Meter})
	if err != nil {
		t.Fatal(err)
	}
	pubH, adminH = srv.Handler(), srv.AdminHandler()
	return &portalStack{Parts: p, clock: c, pub: pub, admin: admin}
}

// testLog writes the server's error lines (its 5xx answers) to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// account makes an account with credits and an owner who has set
// ownerPassword, through the service as the CLI would.
func (st *portalStack) account(t *testing.T, name, email string, credits int64) (account.Account, account.Owner) {
	t.Helper()
	ctx := account.WithActor(context.Background(), "cli")
	a, err := st.Accounts.CreateAccount(ctx, account.AccountParams{Name: name, Tier: account.Free, Credits: &credits})
	must(t, err)
	link, err := st.Accounts.Invite(ctx, a.ID, email)
	must(t, err)
	o, _, err := st.Accounts.SetPassword(ctx, link.Token, ownerPassword)
	must(t, err)
	return a, o
}

func (st *portalStack) credits(t *testing.T, id int64) int64 {
	t.Helper()
	a, err := st.Accounts.Account(context.Background(), id)
	must(t, err)
	return a.Credits
}

// query makes one location query with key, as an API client does, and
// returns the status and the error code of the answer.
func (st *portalStack) query(t *testing.T, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", st.pub.URL+"/api/ip-query", strings.NewReader(`{"ip":"8.8.8.8"}`))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	must(t, err)
	defer resp.Body.Close()
	var body struct {
		Code string `json:"code"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &body)
	return resp.StatusCode, body.Code
}

// keyUsed waits until the store has counted want queries on key this
// month (the meter charges in the background, a moment after the answer).
func (st *portalStack) keyUsed(t *testing.T, accountID int64, keyID string, want int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		views, err := st.Accounts.KeyViews(context.Background(), accountID)
		must(t, err)
		for _, v := range views {
			if v.ID == keyID && v.Used == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %s never counted %d queries: %+v", keyID, want, views)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// person is a tab in a browser context of its own: one person's browser,
// with its own cookies and storage.
func person(t *testing.T, browser context.Context, limit time.Duration) context.Context {
	t.Helper()
	return tab(t, browser, limit, chromedp.WithNewBrowserContext())
}

// shown is true when the element exists and is rendered.
// visible is true when sel is on the page and visible.
func visible(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.checkVisibility(); })()`, sel)
}

// shown is visible, once the view around sel has loaded (is not aria-busy):
// a view redraws its rows when its load ends, and a node found before that
// is gone by the time it is clicked.
func shown(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.checkVisibility() && !e.closest('[data-view][aria-busy=true]'); })()`, sel)
}

func waitShown(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	waitOn(t, ctx, sel+" to show", shown(sel))
}

// pageState says what a page shows, for a failed wait's message.
const pageState = `(() => {
	const txt = (id) => { const e = document.getElementById(id); return e && !e.hidden ? e.textContent.trim() + (e.dataset.code ? ' (' + e.dataset.code + ')' : '') : ''; };
	const views = [...document.querySelectorAll('[data-view], #signin-view, #setpw-view, #token-view')]
		.filter((e) => e.checkVisibility()).map((e) => e.id || e.dataset.view);
	return location.href + ' shows ' + JSON.stringify(views) + '; status ' + JSON.stringify(txt('status')) +
		'; error ' + JSON.stringify(txt('error')) + '; problems ' + JSON.stringify(window.__problems || []);
})()`

// waitOn is waitFor with what the page shows in the failure's message.
func waitOn(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		state, serr := chromedp.Run(ctx, chromedp.Evaluate[string](pageState))
		if serr != nil {
			state = serr.Error()
		}
		t.Fatalf("waiting for %s: %v; the page: %s", what, err, state)
	}
}

func isShown(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	return eval[bool](t, ctx, visible(sel))
}

func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return eval[string](t, ctx, fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? (e.value !== undefined && e.tagName !== 'BUTTON' ? e.value : e.textContent).trim() : ''; })()`, sel))
}

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))))
}

// typeInto empties a field and types v into it, key by key.
func typeInto(t *testing.T, ctx context.Context, sel, v string) {
	t.Helper()
	must(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = ''`, sel)),
		chromedp.SendKeys(chromedp.CSS(sel), v)))
}

func navigate(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	must(t, chromedp.Do(ctx, chromedp.Navigate(u)))
}

// checkPageProblems fails the test with the CSP violations and script
// errors that tab's watcher saw.
func checkPageProblems(t *testing.T, ctx context.Context) {
	t.Helper()
	if p := eval[[]string](t, ctx, `window.__problems || ['the watcher did not run']`); len(p) > 0 {
		t.Errorf("the page had problems: %q", p)
	}
}

// signInPortal opens the portal and signs in as an owner.
func signInPortal(t *testing.T, ctx context.Context, st *portalStack, email string) {
	t.Helper()
	navigate(t, ctx, st.pub.URL+"/account")
	waitShown(t, ctx, pSignin)
	typeInto(t, ctx, pSigninEmail, email)
	typeInto(t, ctx, pSigninPassword, ownerPassword)
	click(t, ctx, pSigninSubmit)
	waitOverview(t, ctx)
}

// waitOverview waits for the portal's overview with its figures.
func waitOverview(t *testing.T, ctx context.Context) {
	t.Helper()
	waitShown(t, ctx, pOverview)
	waitOn(t, ctx, "the overview's figures", fmt.Sprintf(`document.querySelector(%q).textContent.trim() !== ''`, pUsed))
}

// signInConsole opens the console and signs in with the admin token.
func signInConsole(t *testing.T, ctx context.Context, st *portalStack) {
	t.Helper()
	navigate(t, ctx, st.admin.URL+"/console")
	waitShown(t, ctx, cSignin)
	typeInto(t, ctx, cToken, adminToken)
	click(t, ctx, cSigninSubmit)
	waitShown(t, ctx, cAccounts)
}

// keyRows reads the keys table: each row's key ID, state, label, last
// use and this month's queries.
const keyRows = `[...document.querySelectorAll(%q)].map((tr) => ({
	id: tr.dataset.keyId,
	state: tr.dataset.state,
	label: tr.querySelector('[data-test=label]').textContent.trim(),
	last_used: tr.cells[3].textContent.trim(),
	used: tr.querySelector('[data-test=used]').textContent.trim(),
}))`

type keyRow map[string]string

func keyRowsOf(t *testing.T, ctx context.Context) []keyRow {
	t.Helper()
	return eval[[]keyRow](t, ctx, fmt.Sprintf(keyRows, pKeyRows))
}

func findKeyRow(rows []keyRow, id string) keyRow {
	for _, r := range rows {
		if r["id"] == id {
			return r
		}
	}
	return nil
}

// submitted is the count of a form's settled requests (its data-done).
func submitted(t *testing.T, ctx context.Context, form string) int {
	t.Helper()
	return eval[int](t, ctx, fmt.Sprintf(`Number(document.querySelector(%q).dataset.done || 0)`, form))
}

// waitSubmitted waits until a form has settled more requests than n.
func waitSubmitted(t *testing.T, ctx context.Context, form string, n int) {
	t.Helper()
	waitOn(t, ctx, form+" to settle", fmt.Sprintf(`Number(document.querySelector(%q).dataset.done || 0) > %d`, form, n))
}

func TestPortalBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	browser := startBrowser(t, 6*time.Minute)
	art := artifactsDir(t)

	t.Run("owner creates, uses and revokes a key", func(t *testing.T) {
		st := newPortalStack(t, testNow)
		a, _ := st.account(t, "acme", "owner@example.com", 100)
		ctx := person(t, browser, 90*time.Second)
		signInPortal(t, ctx, st, "owner@example.com")

		click(t, ctx, pNavKeys)
		waitShown(t, ctx, pKeys)
		typeInto(t, ctx, pKeyLabel, "laptop")
		click(t, ctx, pKeyCreate)
		waitShown(t, ctx, pKeySecret)
		secret := textOf(t, ctx, pKeySecret)
		if !strings.HasPrefix(secret, "ipa_") {
			t.Fatalf("the new key's secret shows as %q", secret)
		}
		if !isShown(t, ctx, pKeyCopy) {
			t.Error("no copy button beside the new secret")
		}
		views, err := st.Accounts.KeyViews(context.Background(), a.ID)
		must(t, err)
		if len(views) != 1 || views[0].Label != "laptop" {
			t.Fatalf("the account's keys after creating one: %+v", views)
		}
		key := views[0].Key
		if !strings.HasPrefix(secret, key.Prefix) {
			t.Errorf("the secret %q is not the stored key %s", secret, key.Prefix)
		}

		// The key answers, and the portal counts the query on it.
		if status, code := st.query(t, secret); status != http.StatusOK {
			t.Fatalf("a query with the new key: %d %s", status, code)
		}
		st.keyUsed(t, a.ID, key.ID, 1)
		navigate(t, ctx, st.pub.URL+"/account/keys")
		waitOn(t, ctx, "the key's row", fmt.Sprintf(`document.querySelector(%q) !== null`, pKeyRows))
		row := findKeyRow(keyRowsOf(t, ctx), key.ID)
		if row == nil {
			t.Fatalf("no row for key %s: %v", key.ID, keyRowsOf(t, ctx))
		}
		if row["used"] != "1" || row["label"] != "laptop" || row["state"] != "live" || row["last_used"] == "" || row["last_used"] == "never" {
			t.Errorf("the key's row after one query: %v", row)
		}
		click(t, ctx, pNavOverview)
		waitOverview(t, ctx)
		if used := textOf(t, ctx, pUsed); used != "1 in "+testMonth {
			t.Errorf("the overview's usage this month is %q, want 1 in %s", used, testMonth)
		}
		if used := textOf(t, ctx, fmt.Sprintf(`#ov-keys tr[data-key-id=%q] [data-test=used]`, key.ID)); used != "1" {
			t.Errorf("the overview's row of the key says %q queries this month, want 1", used)
		}

		// Revoke, confirmed in a dialog; the key is refused from then on.
		click(t, ctx, pNavKeys)
		waitShown(t, ctx, pKeys)
		click(t, ctx, fmt.Sprintf(`tr[data-key-id=%q] [data-test=key-revoke]`, key.ID))
		waitShown(t, ctx, pConfirm)
		if stillLive, err := st.Accounts.Key(context.Background(), key.ID); err != nil || stillLive.Revoked() {
			t.Fatalf("the key was revoked before the confirmation (%v)", err)
		}
		click(t, ctx, pConfirmYes)
		waitOn(t, ctx, "the row to say revoked", fmt.Sprintf(`document.querySelector('tr[data-key-id=%q][data-state=revoked]') !== null`, key.ID))
		if status, code := st.query(t, secret); status != http.StatusUnauthorized {
			t.Errorf("a query with the revoked key answered %d %s, want 401", status, code)
		}
		checkPageProblems(t, ctx)
		screenshot(t, ctx, art, "portal-keys.png")
	})

	t.Run("operator invites, owner sets a password, credits appear", func(t *testing.T) {
		st := newPortalStack(t, testNow)
		console := person(t, browser, 90*time.Second)
		signInConsole(t, console, st)
		// The token opened a session and is gone: not in the form, not in
		// the page's storage.
		kept := eval[bool](t, console, fmt.Sprintf(`document.querySelector(%q).value !== '' ||
			[localStorage, sessionStorage].some((s) => Object.keys(s).some((k) => s.getItem(k).includes(%q)))`, cToken, adminToken))
		if kept {
			t.Error("the console keeps the admin token after signing in")
		}

		typeInto(t, console, cNewName, "globex")
		click(t, console, cNewCreate)
		waitShown(t, console, cDetail)
		list, err := st.Accounts.Accounts(context.Background())
		must(t, err)
		if len(list) != 1 || list[0].Name != "globex" {
			t.Fatalf("the accounts after creating globex: %+v", list)
		}
		a := list[0]
		// The starting credits were left empty: the tier's monthly limit.
		if a.Credits != account.FreeMonthlyLimit {
			t.Errorf("globex starts with %d credits; an empty field grants the free tier's %d", a.Credits, account.FreeMonthlyLimit)
		}

		typeInto(t, console, cInviteEmail, "ceo@globex.example")
		click(t, console, cInviteSubmit)
		waitOn(t, console, "the invitation link", fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && (e.value || e.textContent).includes('#token='); })()`, cInviteLink))
		link := textOf(t, console, cInviteLink)
		if want := st.pub.URL + "/account/password#token="; !strings.HasPrefix(link, want) {
			t.Fatalf("the invitation link %q does not start with %q", link, want)
		}
		checkPageProblems(t, console)

		// The owner opens the link in their own browser tab.
		owner := person(t, browser, 90*time.Second)
		navigate(t, owner, link)
		waitShown(t, owner, pPasswordForm)
		typeInto(t, owner, pPasswordNew, ownerPassword)
		typeInto(t, owner, pPasswordAgain, ownerPassword)
		click(t, owner, pPasswordSubmit)
		waitOverview(t, owner)
		// A first password ends no other session: the page does not say
		// that other browsers were signed out.
		waitOn(t, owner, "the password's confirmation", `document.getElementById('status').textContent.includes('password is set')`)
		if s := textOf(t, owner, "#status"); strings.Contains(s, "Other browsers") {
			t.Errorf("after a first password the page says %q", s)
		}
		before := textOf(t, owner, pBalance)

		// The usage chart of a new account counts whole queries: no
		// tick at 0.25 or 1.25.
		click(t, owner, pNavUsage)
		waitOn(t, owner, "the chart's axis", fmt.Sprintf(`document.querySelectorAll('%s .grid text').length > 1`, pUsageChart))
		ticks := eval[[]string](t, owner, fmt.Sprintf(`[...document.querySelectorAll('%s .grid text')].map((e) => e.textContent)`, pUsageChart))
		for _, tick := range ticks {
			if strings.ContainsAny(tick, ".") {
				t.Errorf("the usage chart has a fractional tick %q (all: %q)", tick, ticks)
			}
		}
		initial := st.credits(t, a.ID)

		// The operator adds credits with a reason.
		typeInto(t, console, cCreditAmount, "250")
		typeInto(t, console, cCreditReason, "welcome bonus")
		done := submitted(t, console, cCreditForm)
		click(t, console, cCreditSubmit)
		waitSubmitted(t, console, cCreditForm, done)
		want := st.credits(t, a.ID)
		if want != initial+250 {
			t.Fatalf("the account has %d credits after adding 250 to %d", want, initial)
		}

		// The owner sees them: the balance, and the ledger entry's reason.
		navigate(t, owner, st.pub.URL+"/account")
		waitOverview(t, owner)
		if b := textOf(t, owner, pBalance); !strings.Contains(strings.ReplaceAll(b, ",", ""), fmt.Sprint(want)) || b == before {
			t.Errorf("the portal's balance %q (before %q), want %d", b, before, want)
		}
		click(t, owner, pNavCredits)
		waitShown(t, owner, pCredits)
		waitOn(t, owner, "the ledger", fmt.Sprintf(`document.querySelector(%q) !== null`, pLedgerRows))
		first := eval[string](t, owner, fmt.Sprintf(`document.querySelector(%q).textContent`, pLedgerRows))
		if !strings.Contains(first, "welcome bonus") || !strings.Contains(first, "250") {
			t.Errorf("the ledger's newest entry %q is not the operator's 250 credits", first)
		}
		// The service's own reason is translated; the operator's is not.
		ledger := func() string {
			return eval[string](t, owner, `document.getElementById('credits-table').tBodies[0].textContent`)
		}
		if l := ledger(); !strings.Contains(l, "Initial credits") || strings.Contains(l, "initial grant") {
			t.Errorf("the ledger in English: %q, want the initial grant as Initial credits", l)
		}
		click(t, owner, "#lang-zh")
		waitOn(t, owner, "the Chinese ledger", `document.getElementById('credits-table').tBodies[0].textContent.includes('初始积分')`)
		if l := ledger(); !strings.Contains(l, "welcome bonus") {
			t.Errorf("the Chinese ledger lost the operator's reason: %q", l)
		}
		click(t, owner, "#lang-en")
		checkPageProblems(t, owner)

		// The console's audit log shows the details as names and values,
		// not as JSON; the header's date follows the language switch.
		click(t, console, cNavAudit)
		waitOn(t, console, "the audit log", fmt.Sprintf(`document.querySelector(%q) !== null`, cAuditRows))
		details := eval[[]string](t, console, fmt.Sprintf(`[...document.querySelectorAll('%s td.detail')].map((td) => td.textContent)`, cAuditRows))
		for _, d := range details {
			if strings.HasPrefix(strings.TrimSpace(d), "{") {
				t.Errorf("an audit detail is raw JSON: %q", d)
			}
		}
		amount := eval[string](t, console, `(() => { const dt = document.querySelector('#audit-table td.detail dt[data-key=amount]'); return dt ? dt.textContent + '=' + dt.nextElementSibling.textContent : ''; })()`)
		if amount != "amount=250" {
			t.Errorf("the credits entry's amount reads %q, want amount=250", amount)
		}
		expiresEn := textOf(t, console, cExpires)
		click(t, console, "#lang-zh")
		waitOn(t, console, "the header's date in Chinese", fmt.Sprintf(`document.querySelector(%q).textContent.includes('年')`, cExpires))
		if zh := textOf(t, console, cExpires); zh == expiresEn || strings.Contains(zh, "Nov") {
			t.Errorf("the header after switching to Chinese: %q (English: %q)", zh, expiresEn)
		}
		waitOn(t, console, "the Chinese audit details", `(() => { const dt = document.querySelector('#audit-table td.detail dt[data-key=amount]'); return !!dt && dt.textContent === '数量'; })()`)
		checkPageProblems(t, console)

		// Signing out leaves the overview's address for the sign-in page's,
		// in the portal and in the console.
		click(t, owner, "#signout")
		waitShown(t, owner, pSignin)
		if path := eval[string](t, owner, `location.pathname`); path != "/account" {
			t.Errorf("after signing out of the portal the address is %s, want /account", path)
		}
		click(t, console, "#console-signout")
		waitShown(t, console, cSignin)
		if path := eval[string](t, console, `location.pathname`); path != "/console" {
			t.Errorf("after signing out of the console the address is %s, want /console", path)
		}

		// The change is in the audit log, made through the console's session.
		entries, err := st.Accounts.AuditLog(context.Background(), a.ID, 0, 50)
		must(t, err)
		var credited bool
		for _, e := range entries {
			if strings.HasPrefix(e.Action, "credits") && strings.HasPrefix(e.Actor, "session:") {
				credited = true
			}
		}
		if !credited {
			t.Errorf("no credits entry by a console session in the audit log: %+v", entries)
		}
	})

	t.Run("cross-site form posts are refused", func(t *testing.T) {
		st := newPortalStack(t, testNow)
		a, _ := st.account(t, "acme", "owner@example.com", 100)
		ctx := person(t, browser, 90*time.Second)
		signInPortal(t, ctx, st, "owner@example.com")
		signInConsole(t, ctx, st)

		// Another origin (same host, another port: same site, so the
		// SameSite cookies go along and only the server's origin checks
		// stand in the way) serves forms that post to both listeners. The
		// text/plain bodies are JSON, the classic way round a JSON API's
		// content type.
		jsonField := func(js string) string {
			// A text/plain form sends name=value: the name holds the JSON
			// up to a string that swallows the "=".
			i := strings.LastIndexByte(js, '}')
			return fmt.Sprintf(`<input type="hidden" name='%s,"pad":"' value='"}'>`, js[:i])
		}
		forms := []struct{ name, action, body string }{
			{"create-key", st.pub.URL + "/account/api/keys", jsonField(`{"label":"evil"}`)},
			{"signout-everywhere", st.pub.URL + "/account/api/signout-everywhere", ""},
			{"create-account", st.admin.URL + "/admin/accounts", jsonField(`{"name":"evil","tier":"free"}`)},
			{"add-credits", fmt.Sprintf("%s/admin/accounts/%d/credits", st.admin.URL, a.ID), jsonField(`{"amount":1000000,"reason":"evil"}`)},
		}
		var page strings.Builder
		page.WriteString("<!doctype html><title>elsewhere</title>")
		for _, f := range forms {
			fmt.Fprintf(&page, `<form id=%q method="post" enctype="text/plain" action=%q>%s<button id="go-%s">go</button></form>`, f.name, f.action, f.body, f.name)
		}
		evil := listen(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, page.String())
		}))

		keysBefore, err := st.Accounts.KeyViews(context.Background(), a.ID)
		must(t, err)
		creditsBefore := st.credits(t, a.ID)
		accountsBefore, err := st.Accounts.Accounts(context.Background())
		must(t, err)
		for _, f := range forms {
			navigate(t, ctx, evil.URL+"/")
			resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#go-"+f.name)))
			must(t, err)
			if resp.URL != f.action {
				t.Fatalf("the form %s landed on %s, want %s", f.name, resp.URL, f.action)
			}
			var answer struct {
				Code string `json:"code"`
			}
			body := eval[string](t, ctx, `document.body.innerText`)
			if err := json.Unmarshal([]byte(body), &answer); err != nil || resp.Status != http.StatusForbidden || answer.Code != "Forbidden" {
				t.Errorf("%s from another origin answered %d %q, want 403 Forbidden", f.name, resp.Status, body)
			}
		}

		keysAfter, err := st.Accounts.KeyViews(context.Background(), a.ID)
		must(t, err)
		creditsAfter := st.credits(t, a.ID)
		accountsAfter, err := st.Accounts.Accounts(context.Background())
		must(t, err)
		if len(keysAfter) != len(keysBefore) {
			t.Errorf("the account had %d keys, now %d", len(keysBefore), len(keysAfter))
		}
		if creditsAfter != creditsBefore {
			t.Errorf("the account had %d credits, now %d", creditsBefore, creditsAfter)
		}
		if len(accountsAfter) != len(accountsBefore) {
			t.Errorf("there were %d accounts, now %d", len(accountsBefore), len(accountsAfter))
		}
		// Both sessions live on: the owner's portal and the console still
		// open signed in.
		navigate(t, ctx, st.pub.URL+"/account")
		waitShown(t, ctx, pOverview)
		navigate(t, ctx, st.admin.URL+"/console")
		waitShown(t, ctx, cAccounts)
	})

	t.Run("console messages follow the language switch", func(t *testing.T) {
		st := newPortalStack(t, testNow)
		a, _ := st.account(t, "acme", "owner@example.com", 100)
		console := person(t, browser, 90*time.Second)
		signInConsole(t, console, st)
		navigate(t, console, fmt.Sprintf("%s/console/account/%d", st.admin.URL, a.ID))
		waitShown(t, console, "#d-tier-form")

		// A message shown in English is all Chinese after the switch,
		// the tier's name included, and English again after the switch
		// back.
		eval[bool](t, console, `(() => { const s = document.getElementById('d-tier'); s.value = 'enterprise'; s.dispatchEvent(new Event('change')); return true; })()`)
		typeInto(t, console, "#d-limit", "5000")
		done := submitted(t, console, "#d-tier-form")
		click(t, console, "#d-tier-submit")
		waitSubmitted(t, console, "#d-tier-form", done)
		if s := textOf(t, console, "#status"); s != "Tier set to Enterprise." {
			t.Fatalf("status %q after setting the tier", s)
		}
		click(t, console, "#lang-zh")
		waitOn(t, console, "the status in Chinese", `document.getElementById('status').textContent === '套餐已设为企业版。'`)
		click(t, console, "#lang-en")
		waitOn(t, console, "the status in English again", `document.getElementById('status').textContent === 'Tier set to Enterprise.'`)

		// An API's refusal: the page's words follow the switch, the
		// service's detail stays as it was sent.
		eval[bool](t, console, `(() => { document.getElementById('d-deduct').click(); return true; })()`)
		typeInto(t, console, cCreditAmount, "1000")
		typeInto(t, console, cCreditReason, "too much")
		done = submitted(t, console, cCreditForm)
		click(t, console, cCreditSubmit)
		waitSubmitted(t, console, cCreditForm, done)
		en := textOf(t, console, "#error")
		if !strings.HasPrefix(en, "Not enough credits: ") || !strings.Contains(en, "the balance is 100") {
			t.Fatalf("error %q after deducting more than the balance", en)
		}
		click(t, console, "#lang-zh")
		waitOn(t, console, "the error in Chinese", `document.getElementById('error').textContent.startsWith('积分不足：')`)
		if zh := textOf(t, console, "#error"); zh != "积分不足："+strings.TrimPrefix(en, "Not enough credits: ") {
			t.Errorf("the error in Chinese %q, in English %q", zh, en)
		}
		checkPageProblems(t, console)
	})

	t.Run("expired sessions are sent to sign-in", func(t *testing.T) {
		st := newPortalStack(t, testNow)
		st.account(t, "acme", "owner@example.com", 100)
		ctx := person(t, browser, 120*time.Second)

		// Idle: 12 h without a request. The page notices at its next
		// request, without a reload.
		signInPortal(t, ctx, st, "owner@example.com")
		st.clock.Advance(12*time.Hour + time.Minute)
		click(t, ctx, pNavKeys)
		waitShown(t, ctx, pSignin)
		if isShown(t, ctx, pApp) {
			t.Error("the signed-in part still shows beside the sign-in form")
		}
		if s := textOf(t, ctx, "#status"); !strings.Contains(s, "session ended") {
			t.Errorf("the sign-in form says %q, not that the session ended", s)
		}
		if f := eval[string](t, ctx, `document.activeElement.id`); "#"+f != pSigninEmail {
			t.Errorf("focus is on #%s, want the email field", f)
		}

		// Absolute: 7 days, however active. A request every 11 h keeps the
		// session from idling out until then.
		signInPortal(t, ctx, st, "owner@example.com")
		start := st.clock.Now()
		for st.clock.Now().Sub(start) < 7*24*time.Hour-11*time.Hour {
			st.clock.Advance(11 * time.Hour)
			navigate(t, ctx, st.pub.URL+"/account")
			waitOn(t, ctx, "the portal or the sign-in form", shown(pOverview)+" || "+shown(pSignin))
			if !isShown(t, ctx, pOverview) {
				t.Fatalf("signed out after %s of activity, before the 7 days", st.clock.Now().Sub(start))
			}
		}
		st.clock.Advance(11 * time.Hour)
		navigate(t, ctx, st.pub.URL+"/account")
		waitShown(t, ctx, pSignin)

		// The console's session idles out after 30 minutes.
		signInConsole(t, ctx, st)
		st.clock.Advance(31 * time.Minute)
		navigate(t, ctx, st.admin.URL+"/console")
		waitShown(t, ctx, cSignin)
		if isShown(t, ctx, cApp) {
			t.Error("the console still shows beside its sign-in form")
		}
		checkPageProblems(t, ctx)
	})

	t.Run("screenshots", func(t *testing.T) {
		// Ninety days of usage on two keys, charged through the meter on
		// the days they fall on, for the chart.
		start := testNow.AddDate(0, 0, -89)
		st := newPortalStack(t, start)
		a, _ := st.account(t, "acme", "owner@example.com", 20000)
		ctx := account.WithActor(context.Background(), "cli")
		_, err := st.Accounts.SetTier(ctx, a.ID, account.Pro, 0)
		must(t, err)
		k1, err := st.Accounts.CreateLabeledKey(ctx, a.ID, "production")
		must(t, err)
		k2, err := st.Accounts.CreateLabeledKey(ctx, a.ID, "staging")
		must(t, err)
		for d := 0; d < 90; d++ {
			charge := func(k account.Key, n int64) {
				o, err := st.Meter.ChargeN(context.Background(), k, n)
				must(t, err)
				if o.GrantedN != n {
					t.Fatalf("day %d: %d of %d queries charged: %+v", d, o.GrantedN, n, o)
				}
			}
			charge(k1.Key, int64(20+(d*37)%60+d/3))
			if d%3 != 0 {
				charge(k2.Key, int64(5+(d*13)%17))
			}
			if d < 89 {
				st.clock.Advance(24 * time.Hour)
			}
		}
		// Other customers, for the console's list.
		for i, name := range []string{"globex", "initech", "umbrella"} {
			credits := int64(1000 * (i + 1))
			o, err := st.Accounts.CreateAccount(ctx, account.AccountParams{Name: name, Tier: account.Free, Credits: &credits})
			must(t, err)
			k, err := st.Accounts.CreateLabeledKey(ctx, o.ID, "default")
			must(t, err)
			_, err = st.Meter.ChargeN(context.Background(), k.Key, int64(100*(3-i)))
			must(t, err)
		}
		tb := person(t, browser, 90*time.Second)
		must(t, chromedp.Do(tb, chromedp.EmulateViewport(1280, 900)))
		setDark(t, tb, false)
		signInPortal(t, tb, st, "owner@example.com")
		click(t, tb, pNavUsage)
		waitShown(t, tb, pUsageChart)
		waitOn(t, tb, "the chart's bars", fmt.Sprintf(`document.querySelectorAll('%s rect').length > 0`, pUsageChart))
		checkPageProblems(t, tb)
		updateDoc(t, "portal.png", screenshot(t, tb, art, "portal-usage-light.png"))
		setDark(t, tb, true)
		screenshot(t, tb, art, "portal-usage-dark.png")

		setDark(t, tb, false)
		signInConsole(t, tb, st)
		waitOn(t, tb, "the accounts list", fmt.Sprintf(`document.querySelector(%q) !== null`, cAccountRows))
		checkPageProblems(t, tb)
		updateDoc(t, "console.png", screenshot(t, tb, art, "console-accounts-light.png"))
		setDark(t, tb, true)
		screenshot(t, tb, art, "console-accounts-dark.png")
	})
}

// axeScript is axe-core's browser build, from web/node_modules (npm ci in
// web/ installs it, a devDependency: the bundle does not hold it).
func axeScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join("..", "..", "web", "node_modules", "axe-core", "axe.min.js")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("the accessibility checks need axe-core at %s; run `npm ci` in web/ (CI does): %v", p, err)
	}
	return string(b)
}

// runAxe checks the document as it stands against WCAG 2 A and AA with
// axe-core, and fails the test with every violation found.
func runAxe(t *testing.T, ctx context.Context, axe, what string) {
	t.Helper()
	if !eval[bool](t, ctx, `typeof window.axe === 'object'`) {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axe))
		must(t, err)
	}
	res := run(t, ctx, chromedp.Evaluate[struct {
		Passes     int      `json:"passes"`
		Violations []string `json:"violations"`
	}](`axe.run(document, {
		runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] },
		resultTypes: ['violations'],
	}).then((r) => ({
		passes: r.passes.length,
		violations: r.violations.flatMap((v) => v.nodes.map((n) =>
			v.id + ' (' + v.impact + '): ' + v.help + ' at ' + n.target.join(' ') + ': ' + (n.failureSummary || '').replace(/\s+/g, ' '))),
	}))`, chromedp.EvalAwaitPromise))
	if res.Passes == 0 {
		t.Errorf("%s: axe-core passed no rule at all: did it run?", what)
	}
	for _, v := range res.Violations {
		t.Errorf("%s: %s", what, v)
	}
	t.Logf("%s: %d WCAG 2 A/AA rules pass, %d violations", what, res.Passes, len(res.Violations))
}

// setLang picks the UI language with the page's switch, as a person does.
func setLang(t *testing.T, ctx context.Context, lang string) {
	t.Helper()
	// <html lang> is "en" or "zh-CN".
	is := fmt.Sprintf(`document.documentElement.lang.split('-')[0] === %q`, lang)
	if eval[bool](t, ctx, is) {
		return
	}
	click(t, ctx, "#lang-"+lang)
	waitOn(t, ctx, "the page to be in "+lang, is)
}

func TestPortalAccessibility(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	browser := startBrowser(t, 6*time.Minute)
	axe := axeScript(t)
	st := newPortalStack(t, testNow)
	a, _ := st.account(t, "acme", "owner@example.com", 100)
	k, err := st.Accounts.CreateLabeledKey(account.WithActor(context.Background(), "cli"), a.ID, "production")
	must(t, err)
	_, err = st.Meter.ChargeN(context.Background(), k.Key, 42)
	must(t, err)

	// Every page, in every state a person sees, in both themes and both
	// languages.
	pages := []struct {
		name string
		open func(t *testing.T, ctx context.Context)
	}{
		{"main page", func(t *testing.T, ctx context.Context) {
			navigate(t, ctx, st.pub.URL+"/")
			waitOn(t, ctx, "the page to settle", settled)
		}},
		{"portal sign-in", func(t *testing.T, ctx context.Context) {
			navigate(t, ctx, st.pub.URL+"/account")
			waitShown(t, ctx, pSignin)
		}},
		{"portal overview", func(t *testing.T, ctx context.Context) {
			signInPortal(t, ctx, st, "owner@example.com")
		}},
		{"portal keys", func(t *testing.T, ctx context.Context) {
			click(t, ctx, pNavKeys)
			waitShown(t, ctx, pKeys)
			waitOn(t, ctx, "the keys", fmt.Sprintf(`document.querySelector(%q) !== null`, pKeyRows))
		}},
		{"portal new key's secret", func(t *testing.T, ctx context.Context) {
			typeInto(t, ctx, pKeyLabel, "新的 key")
			click(t, ctx, pKeyCreate)
			waitShown(t, ctx, pKeySecret)
		}},
		{"portal revoke confirmation", func(t *testing.T, ctx context.Context) {
			click(t, ctx, fmt.Sprintf(`tr[data-key-id=%q] [data-test=key-revoke]`, k.ID))
			waitShown(t, ctx, pConfirm)
		}},
		{"portal keys after cancelling", func(t *testing.T, ctx context.Context) {
			click(t, ctx, "#confirm-no")
			waitOn(t, ctx, "the dialog to close", `!document.getElementById('confirm-dialog').open`)
		}},
		{"portal usage", func(t *testing.T, ctx context.Context) {
			click(t, ctx, pNavUsage)
			waitShown(t, ctx, pUsageChart)
			waitOn(t, ctx, "the chart's bars", fmt.Sprintf(`document.querySelectorAll('%s rect').length > 0`, pUsageChart))
		}},
		{"portal credits", func(t *testing.T, ctx context.Context) {
			click(t, ctx, pNavCredits)
			waitShown(t, ctx, pCredits)
			waitOn(t, ctx, "the ledger", fmt.Sprintf(`document.querySelector(%q) !== null`, pLedgerRows))
		}},
		{"console sign-in", func(t *testing.T, ctx context.Context) {
			navigate(t, ctx, st.admin.URL+"/console")
			waitShown(t, ctx, cSignin)
		}},
		{"console accounts", func(t *testing.T, ctx context.Context) {
			signInConsole(t, ctx, st)
			waitOn(t, ctx, "the accounts list", fmt.Sprintf(`document.querySelector(%q) !== null`, cAccountRows))
		}},
		{"console account with an invitation link", func(t *testing.T, ctx context.Context) {
			click(t, ctx, fmt.Sprintf(`tr[data-account-id="%d"] [data-test=account-open]`, a.ID))
			waitShown(t, ctx, cDetail)
			typeInto(t, ctx, cInviteEmail, "second@example.com")
			click(t, ctx, cInviteSubmit)
			waitOn(t, ctx, "the invitation link", fmt.Sprintf(`document.querySelector(%q).textContent.includes('#token=')`, cInviteLink))
		}},
	}
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			ctx := person(t, browser, 3*time.Minute)
			for _, p := range pages {
				p.open(t, ctx)
				setLang(t, ctx, lang)
				for _, dark := range []bool{false, true} {
					setDark(t, ctx, dark)
					theme := map[bool]string{false: "light", true: "dark"}[dark]
					runAxe(t, ctx, axe, fmt.Sprintf("%s (%s, %s)", p.name, lang, theme))
				}
				setDark(t, ctx, false)
			}
			checkPageProblems(t, ctx)
		})
	}

	// The keyboard: from the top of each sign-in page, Tab reaches the
	// fields and then the button, in that order, each with a visible focus.
	for _, c := range []struct {
		name, url string
		order     []string
	}{
		{"portal", st.pub.URL + "/account", []string{pSigninEmail, pSigninPassword, pSigninSubmit}},
		{"console", st.admin.URL + "/console", []string{cToken, cSigninSubmit}},
	} {
		t.Run("keyboard "+c.name, func(t *testing.T) {
			ctx := person(t, browser, time.Minute)
			// A new person has no session: the sign-in form shows.
			must(t, chromedp.Do(ctx, chromedp.Navigate(c.url)))
			waitShown(t, ctx, c.order[0])
			next := 0
			for i := 0; i < 20 && next < len(c.order); i++ {
				must(t, chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)))
				if eval[bool](t, ctx, fmt.Sprintf(`document.activeElement === document.querySelector(%q)`, c.order[next])) {
					if o := eval[string](t, ctx, `getComputedStyle(document.activeElement).outlineStyle`); o == "none" {
						t.Errorf("%s has focus without a visible outline", c.order[next])
					}
					next++
				} else if next > 0 {
					got := eval[string](t, ctx, `document.activeElement.id || document.activeElement.tagName`)
					t.Fatalf("after %s, Tab went to %s, want %s", c.order[next-1], got, c.order[next])
				}
			}
			if next < len(c.order) {
				t.Errorf("20 Tabs reached only %v of %v", c.order[:next], c.order)
			}
		})
	}
}
