// The owners' portal (/account): sign in, set a password from a one-time
// link, and the account's overview, usage, keys, credits and
// subscription. Everything comes from /account/api/ after the page loads.
//
// Hooks for tests (stable; change them together with the browser tests):
//   views      #signin-view #setpw-view #app, sections [data-view=overview|usage|keys|credits|subscription]
//   messages   #status (polite) #error (alert, data-code = the API's code)
//   language   #lang-en #lang-zh
//   sign-in    form#signin #signin-email #signin-password #signin-submit
//   password   form#setpw #setpw-password #setpw-confirm #setpw-submit   (/account/password#token=…)
//   header     #who #who-email #signout #signout-everywhere
//   tabs       #tab-overview #tab-usage #tab-keys #tab-credits #tab-subscription
//   overview   #ov-tier #ov-limit #ov-used ("N in YYYY-MM") #ov-credits #ov-reset table#ov-keys (tr[data-key-id])
//   usage      svg#usage-chart #usage-legend #usage-total a#usage-csv table#usage-table
//   keys       form#key-create #key-label #key-create-submit
//              #key-secret-box output#key-secret #key-secret-copy #key-secret-note #key-secret-done
//              table#keys-table tr[data-key-id][data-state=live|revoked] td[data-test=used]
//              buttons [data-test=key-rename] [data-test=key-rotate] [data-test=key-revoke]
//   credits    #cr-balance table#credits-table (tr[data-entry-id]) #credits-more a#credits-csv
//   subscription #sub-tier #sub-limit #sub-pending form#sub-request #sub-tier-select
//              #sub-limit-input #sub-note #sub-submit table#sub-requests
//   dialogs    dialog#confirm-dialog #confirm-yes #confirm-no; dialog#prompt-dialog #prompt-input #prompt-save #prompt-cancel
// Each form gets data-done incremented when its request settles.
import * as i18n from './i18n.js';
import { t } from './i18n.js';
import './msg-portal.js';
import { get, post, patch, setCSRF } from './api.js';
import { Failure } from './net.js';
import { drawUsage, SERIES } from './chart.js';
import {
  $, h, fillTable, labelCells, say, fail, failKey, clearMessages, confirmDialog, promptDialog, wireCopy, busy, keepFocus, Router, tierName, tierVar,
} from './ui.js';

const BASE = '/account';
const API = '/account/api';
const VIEWS = ['overview', 'usage', 'keys', 'credits', 'subscription'];

let me = null; // the /me answer
let router;
let token = ''; // the one-time link's token, kept in memory only
let credits = { entries: [], next: 0 };
let subPending = false; // one pending request at a time

// guard runs a call; an ended session sends the visitor to sign in.
async function guard(work) {
  try {
    return await work();
  } catch (err) {
    const f = err instanceof Failure ? err : new Failure(String(err));
    if (f.status === 401 && f.code !== 'SignInFailed') {
      signedOut('p.expired');
    } else {
      fail(f);
    }
    return undefined;
  }
}

function showOnly(id) {
  for (const v of ['signin-view', 'setpw-view', 'app']) $(v).hidden = v !== id;
  $('who').hidden = id !== 'app';
}

// signedOut shows the sign-in form. A session that ended by itself keeps
// the address, so that signing in again returns there; signing out
// (toSignIn) leaves it for the sign-in page's own, /account.
function signedOut(msgKey, toSignIn = false) {
  me = null;
  setCSRF('');
  if (toSignIn && location.pathname !== BASE) history.replaceState(null, '', BASE);
  showOnly('signin-view');
  if (msgKey) say(msgKey);
  $('signin-password').value = '';
  $('signin-email').focus();
}

async function enter() {
  const m = await get(`${API}/me`);
  me = m;
  setCSRF(m.csrf);
  $('who-email').textContent = m.owner.email;
  showOnly('app');
  const [view] = router.parse(location.pathname);
  const path = `${BASE}/${view}`;
  if (location.pathname !== path) history.replaceState(null, '', path);
  router.show(path, false);
}

async function start() {
  i18n.mountSwitch($('lang-switch'));
  router = new Router(BASE, VIEWS, 'overview', (view) => guard(() => load(view)));
  i18n.onChange(() => { if (me) router.show(location.pathname, false); });
  wire();
  if (location.pathname === `${BASE}/password`) {
    const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    token = m ? decodeURIComponent(m[1]) : '';
    // The token leaves the address bar and the history at once.
    history.replaceState(null, '', `${BASE}/password`);
    showOnly('setpw-view');
    if (!token) fail(new Failure('', 'BadToken'));
    $('setpw-password').focus();
    return;
  }
  try {
    await enter();
  } catch (err) {
    if (err instanceof Failure && err.status === 401) signedOut();
    else { showOnly('signin-view'); fail(err instanceof Failure ? err : new Failure(String(err))); }
  }
}

function wire() {
  $('signin').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const email = $('signin-email').value.trim();
    const password = $('signin-password').value;
    if (!email || !password) {
      failKey('p.signin.empty');
      (email ? $('signin-password') : $('signin-email')).focus();
      return;
    }
    await busy($('signin'), () => guard(async () => {
      const r = await post(`${API}/signin`, { email, password });
      setCSRF(r.csrf);
      $('signin-password').value = '';
      clearMessages();
      await enter();
      say('p.signin.ok', { email: r.owner.email });
    }));
  });

  $('setpw').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const pw = $('setpw-password').value;
    if (pw !== $('setpw-confirm').value) {
      failKey('p.setpw.mismatch');
      $('setpw-confirm').focus();
      return;
    }
    await busy($('setpw'), () => guard(async () => {
      const r = await post(`${API}/password`, { token, password: pw });
      token = '';
      setCSRF(r.csrf);
      $('setpw-password').value = '';
      $('setpw-confirm').value = '';
      history.replaceState(null, '', `${BASE}/overview`);
      await enter();
      // Other browsers are mentioned only when the new password ended some.
      if (r.signed_out > 0) say('p.setpw.ok', { n: { num: r.signed_out } });
      else say('p.setpw.set');
    }));
  });

  $('signout').addEventListener('click', () => guard(async () => {
    await post(`${API}/signout`);
    signedOut('p.signedout', true);
  }));

  $('signout-everywhere').addEventListener('click', async () => {
    if (!await confirmDialog('p.all.title', t('p.all.body'), 'p.signout.all')) return;
    await guard(async () => {
      const r = await post(`${API}/signout-everywhere`);
      signedOut('', true);
      say('p.all.done', { n: { num: (r && r.revoked) || 0 } });
    });
  });

  $('key-create').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await busy($('key-create'), () => guard(async () => {
      const r = await post(`${API}/keys`, { label: $('key-label').value.trim() });
      $('key-label').value = '';
      showSecret(r.secret, 'p.keys.created', r.key);
      await loadKeys();
    }));
  });
  wireCopy($('key-secret-copy'), $('key-secret'), $('key-secret-note'));
  $('key-secret-done').addEventListener('click', () => {
    $('key-secret').textContent = '';
    $('key-secret-box').hidden = true;
    $('key-label').focus();
  });

  $('credits-more').addEventListener('click', () => guard(() => loadCredits(true)));

  $('sub-tier-select').addEventListener('change', () => {
    $('sub-limit-field').hidden = $('sub-tier-select').value !== 'enterprise';
  });
  $('sub-request').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const tier = $('sub-tier-select').value;
    const body = { tier };
    if (tier === 'enterprise' && $('sub-limit-input').value.trim() !== '') {
      const n = Number($('sub-limit-input').value.trim().replace(/[ ,_]/g, ''));
      if (!Number.isSafeInteger(n) || n <= 0) {
        failKey('p.sub.badlimit');
        $('sub-limit-input').focus();
        return;
      }
      body.monthly_limit = n;
    }
    const note = $('sub-note').value.trim();
    if (note) body.note = note;
    await busy($('sub-request'), () => guard(async () => {
      await post(`${API}/subscription/requests`, body);
      $('sub-note').value = '';
      say('p.sub.sent');
      await loadSubscription();
    }));
    $('sub-submit').disabled = subPending;
  });
}

function showSecret(secret, msgKey, key) {
  $('key-secret').textContent = secret;
  $('key-secret-note').textContent = '';
  $('key-secret-box').hidden = false;
  say(msgKey, { key: key.prefix });
  $('key-secret-copy').focus();
}

async function load(view) {
  clearMessagesOnViewChange();
  switch (view) {
    case 'overview': return loadOverview();
    case 'usage': return loadUsage();
    case 'keys': return loadKeys();
    case 'credits': return loadCredits(false);
    case 'subscription': return loadSubscription();
    default: return undefined;
  }
}

let lastView = '';
function clearMessagesOnViewChange() {
  if (router.current !== lastView) clearMessages();
  lastView = router.current;
}

function keyName(k) {
  return k.label ? `${k.label} (${k.prefix})` : k.prefix;
}

async function loadOverview() {
  const [m, ks] = await Promise.all([get(`${API}/me`), get(`${API}/keys`)]);
  me = m;
  setCSRF(m.csrf);
  const a = m.account;
  $('ov-account').textContent = t('p.ov.account', { name: a.name, id: a.id });
  $('ov-tier').textContent = tierName(a.tier);
  $('ov-limit').textContent = i18n.num(a.monthly_limit);
  $('ov-used').textContent = t('p.ov.usedin', { used: i18n.num(m.used), period: m.period });
  $('ov-credits').textContent = i18n.num(a.credits);
  $('ov-reset').textContent = i18n.date(m.reset);
  const rows = (ks.keys || []).filter((k) => !k.revoked_at).map((k) => h('tr', { dataset: { keyId: k.id } },
    h('td', { className: 'ip' }, k.prefix), h('td', {}, k.label || '—'),
    h('td', { className: 'num', dataset: { test: 'used' } }, i18n.num(k.used || 0))));
  fillTable($('ov-keys'), rows, 'p.keys.none');
  labelCells($('ov-keys'));
}

async function loadUsage() {
  const [ks, u] = await Promise.all([get(`${API}/keys`), get(`${API}/usage?days=90`)]);
  const keys = ks.keys || [];
  const names = new Map(keys.map((k) => [k.id, keyName(k)]));
  const sum = drawUsage($('usage-chart'), u, keys.map((k) => k.id), names);
  i18n.setText($('usage-total'), 'p.usage.total', { total: { num: sum.total }, from: { date: u.from }, to: { date: u.to } });
  const legend = sum.keys.map((k, i) => {
    const n = sum.series.get(k).reduce((x, y) => x + y, 0);
    return h('li', {}, h('span', { className: `swatch series-${i % SERIES}`, 'aria-hidden': 'true' }), `${sum.names[i]}: ${i18n.num(n)}`);
  }).filter((_, i) => sum.series.get(sum.keys[i]).some((v) => v > 0));
  legend.push(h('li', {}, h('span', { className: 'swatch total', 'aria-hidden': 'true' }), t('p.usage.totalline')));
  $('usage-legend').replaceChildren(...legend);
  const rows = [...(u.days || [])].reverse().map((r) => h('tr', {},
    h('td', {}, r.day), h('td', {}, names.get(r.key_id) || r.key_id), h('td', { className: 'num' }, i18n.num(r.queries))));
  fillTable($('usage-table'), rows, 'p.usage.none');
  labelCells($('usage-table'));
}

async function loadKeys() {
  const ks = await get(`${API}/keys`);
  const rows = (ks.keys || []).map((k) => {
    const live = !k.revoked_at;
    const actions = h('td', { className: 'row-actions' });
    if (live) {
      actions.append(
        h('button', { type: 'button', className: 'secondary small', dataset: { test: 'key-rename' }, 'aria-label': t('p.keys.rename.for', { key: k.prefix }), onclick: () => renameKey(k) }, t('p.keys.rename')),
        h('button', { type: 'button', className: 'secondary small', dataset: { test: 'key-rotate' }, 'aria-label': t('p.keys.rotate.for', { key: k.prefix }), onclick: () => rotateKey(k) }, t('p.keys.rotate')),
        h('button', { type: 'button', className: 'danger small', dataset: { test: 'key-revoke' }, 'aria-label': t('p.keys.revoke.for', { key: k.prefix }), onclick: () => revokeKey(k) }, t('p.keys.revoke')),
      );
    }
    return h('tr', { dataset: { keyId: k.id, state: live ? 'live' : 'revoked' } },
      h('td', { className: 'ip' }, k.prefix),
      h('td', { dataset: { test: 'label' } }, k.label || '—'),
      h('td', {}, i18n.date(k.created_at)),
      h('td', {}, k.last_used_at ? i18n.dateTime(k.last_used_at) : t('never')),
      h('td', { className: 'num', dataset: { test: 'used' } }, i18n.num(k.used || 0)),
      h('td', {}, live ? t('p.keys.live') : t('p.keys.revoked', { when: i18n.date(k.revoked_at) })),
      actions);
  });
  fillTable($('keys-table'), rows, 'p.keys.none');
  labelCells($('keys-table'));
}

async function renameKey(k) {
  const label = await promptDialog('p.keys.rename.title', 'p.k.label', k.label);
  if (label === null) return;
  await guard(async () => {
    await patch(`${API}/keys/${encodeURIComponent(k.id)}`, { label });
    say('p.keys.renamed', { key: k.prefix });
    await loadKeys();
    keepFocus($('keys-h'));
  });
}

async function rotateKey(k) {
  if (!await confirmDialog('p.keys.rotate.title', t('p.keys.rotate.body', { key: keyName(k) }), 'p.keys.rotate')) return;
  await guard(async () => {
    const r = await post(`${API}/keys/${encodeURIComponent(k.id)}/rotate`);
    await loadKeys();
    showSecret(r.secret, 'p.keys.rotated', r.key);
  });
}

async function revokeKey(k) {
  if (!await confirmDialog('p.keys.revoke.title', t('p.keys.revoke.body', { key: keyName(k) }), 'p.keys.revoke')) return;
  await guard(async () => {
    await post(`${API}/keys/${encodeURIComponent(k.id)}/revoke`);
    say('p.keys.revokeddone', { key: k.prefix });
    await loadKeys();
    keepFocus($('keys-h'));
  });
}

// ledgerReason is an entry's reason for a person. The service writes two
// reasons itself, "usage" (with the key and its queries) and "initial
// grant", and these are translated; an operator's own words are shown as
// they were typed.
function ledgerReason(e) {
  if (e.reason === 'usage' && e.key_id) return t('p.reason.usage', { n: i18n.num(e.queries || 0) });
  if (e.reason === 'initial grant') return t('p.reason.grant');
  return e.reason || '';
}

async function loadCredits(more) {
  const before = more ? credits.next : 0;
  const r = await get(`${API}/credits?limit=50${before ? `&before=${before}` : ''}`);
  credits = { entries: more ? credits.entries.concat(r.entries || []) : (r.entries || []), next: r.next_before || 0 };
  $('cr-balance').textContent = i18n.num(r.credits);
  const rows = credits.entries.map((e) => h('tr', { dataset: { entryId: e.id } },
    h('td', {}, i18n.dateTime(e.created_at)),
    h('td', { className: `num ${e.delta < 0 ? 'minus' : 'plus'}` }, (e.delta > 0 ? '+' : '') + i18n.num(e.delta)),
    h('td', {}, ledgerReason(e)),
    h('td', { className: 'num' }, i18n.num(e.balance))));
  fillTable($('credits-table'), rows, 'p.credits.none');
  labelCells($('credits-table'));
  $('credits-more').hidden = !credits.next;
  if (more) say('p.credits.loaded', { n: { num: credits.entries.length } });
}

async function loadSubscription() {
  const s = await get(`${API}/subscription`);
  $('sub-tier').textContent = tierName(s.tier);
  $('sub-limit').textContent = i18n.num(s.monthly_limit);
  const sel = $('sub-tier-select');
  const keep = sel.value;
  sel.replaceChildren(...(s.tiers || []).map((x) => h('option', { value: x.tier },
    x.monthly_limit ? t('p.sub.option', { tier: tierName(x.tier), limit: i18n.num(x.monthly_limit) }) : tierName(x.tier))));
  if (keep && [...sel.options].some((o) => o.value === keep)) sel.value = keep;
  else if ([...sel.options].some((o) => o.value !== s.tier)) sel.value = [...sel.options].find((o) => o.value !== s.tier).value;
  $('sub-limit-field').hidden = sel.value !== 'enterprise';
  const reqs = s.requests || [];
  const pending = reqs.find((r) => r.status === 'pending');
  const p = $('sub-pending');
  if (pending) {
    i18n.setText(p, 'p.sub.pending', { tier: tierVar(pending.tier), when: { date: pending.created_at } });
    p.hidden = false;
  } else {
    p.hidden = true;
  }
  subPending = Boolean(pending);
  $('sub-submit').disabled = subPending;
  const rows = reqs.map((r) => h('tr', { dataset: { requestId: r.id, status: r.status } },
    h('td', {}, i18n.dateTime(r.created_at)), h('td', {}, tierName(r.tier)),
    h('td', { className: 'num' }, r.monthly_limit ? i18n.num(r.monthly_limit) : '—'),
    h('td', {}, t(`status.${r.status}`)), h('td', {}, r.decided_at ? i18n.dateTime(r.decided_at) : '—')));
  fillTable($('sub-requests'), rows, 'p.sub.none');
  labelCells($('sub-requests'));
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
