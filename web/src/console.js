// The operators' console (/console on the admin listener): the admin
// token is exchanged once for a session cookie and dropped; then accounts,
// tier requests, top consumers and the audit log through the admin API.
//
// Hooks for tests (stable; change them together with the browser tests):
//   views      #token-view #console-app, sections [data-view=accounts|account|requests|top|audit]
//   messages   #status (polite) #error (alert, data-code = the API's code)
//   language   #lang-en #lang-zh
//   sign-in    form#token-form #token-input #token-submit; header #who #who-expires #console-signout
//   tabs       #tab-accounts #tab-requests #tab-top #tab-audit
//   accounts   form#acc-search #acc-q #acc-search-submit; table#accounts-table tr[data-account-id] a[data-test=account-open]
//              form#acc-create #acc-name #acc-tier #acc-limit #acc-credits #acc-create-submit
//   account    (/console/account/ID) #d-name #d-tier-now #d-limit-now #d-balance #d-used
//              form#d-tier-form #d-tier #d-limit #d-tier-submit
//              form#d-credits-form #d-add #d-deduct #d-amount #d-reason #d-credits-submit
//              table#d-keys-table tr[data-key-id][data-state] [data-test=key-revoke]
//              table#d-owners-table tr[data-owner-id] [data-test=owner-reset]
//              form#d-invite-form #d-invite-email #d-invite-submit
//              #link-box output#link-url #link-copy #link-note #link-done
//              table#d-requests-table table#d-audit-table
//   requests   form#req-filter #req-status #req-filter-submit; table#requests-table tr[data-request-id][data-status]
//              [data-test=request-approve] [data-test=request-refuse]
//   top        #top-period table#top-table tr[data-account-id]
//   audit      table#audit-table tr[data-audit-id] #audit-more
//   dialog     dialog#confirm-dialog #confirm-yes #confirm-no
// Each form gets data-done incremented when its request settles.
import * as i18n from './i18n.js';
import { t } from './i18n.js';
import './msg-portal.js';
import './msg-console.js';
import { call, get, post, patch, del, setCSRF } from './api.js';
import { Failure } from './net.js';
import {
  $, h, fillTable, labelCells, say, fail, failKey, clearMessages, confirmDialog, wireCopy, busy, keepFocus, Router, tierName, tierVar,
} from './ui.js';

const BASE = '/console';
const ADMIN = '/admin';
const VIEWS = ['accounts', 'account', 'requests', 'top', 'audit'];

let router;
let signedIn = false;
let audit = { entries: [], next: 0 };
let lastView = '';

async function guard(work) {
  try {
    return await work();
  } catch (err) {
    const f = err instanceof Failure ? err : new Failure(String(err));
    if (f.status === 401) signedOutView('c.expired');
    else fail(f);
    return undefined;
  }
}

function showOnly(id) {
  $('token-view').hidden = id !== 'token-view';
  $('console-app').hidden = id !== 'console-app';
  $('who').hidden = id !== 'console-app';
}

// signedOutView shows the token form. An ended session keeps the address
// to return to after signing in again; signing out (toSignIn) leaves it
// for the sign-in page's own, /console, as the portal does.
function signedOutView(msgKey, toSignIn = false) {
  signedIn = false;
  setCSRF('');
  if (toSignIn && location.pathname !== BASE) history.replaceState(null, '', BASE);
  showOnly('token-view');
  if (msgKey) say(msgKey);
  $('token-input').focus();
}

function entered(s) {
  signedIn = true;
  setCSRF(s.csrf);
  i18n.setText($('who-expires'), 'c.expires', { when: { dateTime: s.expires_at } });
  showOnly('console-app');
  const [view, arg] = router.parse(location.pathname);
  const path = arg ? `${BASE}/${view}/${encodeURIComponent(arg)}` : `${BASE}/${view}`;
  if (location.pathname !== path) history.replaceState(null, '', path);
  router.show(path, false);
}

// parseCount reads a whole number typed by a person ("1,000" too).
function parseCount(s) {
  const n = Number(String(s).trim().replace(/[ ,_]/g, ''));
  return Number.isSafeInteger(n) ? n : NaN;
}

async function start() {
  i18n.mountSwitch($('lang-switch'));
  router = new Router(BASE, VIEWS, 'accounts', (view, arg) => guard(() => load(view, arg)));
  i18n.onChange(() => {
    if (signedIn) router.show(location.pathname, false);
  });
  wire();
  try {
    entered(await get(`${ADMIN}/session`));
  } catch (err) {
    if (err instanceof Failure && err.status === 401) signedOutView();
    else { showOnly('token-view'); fail(err instanceof Failure ? err : new Failure(String(err))); }
  }
}

function wire() {
  $('token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = $('token-input');
    const token = input.value.trim();
    // The token is never stored: the field is cleared before the answer.
    input.value = '';
    if (!token) {
      failKey('c.token.empty');
      input.focus();
      return;
    }
    await busy($('token-form'), async () => {
      try {
        const s = await call('POST', `${ADMIN}/session`, undefined, { Authorization: `Bearer ${token}` });
        clearMessages();
        entered(s);
        say('c.signedin');
      } catch (err) {
        const f = err instanceof Failure ? err : new Failure(String(err));
        if (f.status === 401) failKey('c.token.wrong', undefined, f.code);
        else fail(f);
        input.focus();
      }
    });
  });

  $('console-signout').addEventListener('click', () => guard(async () => {
    await del(`${ADMIN}/session`);
    signedOutView('c.signedout', true);
  }));

  $('acc-search').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await busy($('acc-search'), () => guard(() => loadAccounts(true)));
  });

  const limitToggle = (sel, field) => {
    $(sel).addEventListener('change', () => { $(field).hidden = $(sel).value !== 'enterprise'; });
  };
  limitToggle('acc-tier', 'acc-limit-field');
  limitToggle('d-tier', 'd-limit-field');

  $('acc-create').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const name = $('acc-name').value.trim();
    const tier = $('acc-tier').value;
    if (!name) {
      failKey('c.create.noname');
      $('acc-name').focus();
      return;
    }
    const body = { name, tier };
    if (tier === 'enterprise') {
      const n = parseCount($('acc-limit').value);
      if (!(n > 0)) { failKey('c.badlimit'); $('acc-limit').focus(); return; }
      body.monthly_limit = n;
    }
    // Empty grants the tier's monthly limit (the server's default); any
    // number, 0 included, is sent as it is.
    if ($('acc-credits').value.trim() !== '') {
      const c = parseCount($('acc-credits').value);
      if (!(c >= 0)) { failKey('c.badcount'); $('acc-credits').focus(); return; }
      body.credits = c;
    }
    await busy($('acc-create'), () => guard(async () => {
      const a = await post(`${ADMIN}/accounts`, body);
      $('acc-name').value = '';
      router.go(`${BASE}/account/${a.id}`);
      say('c.created', { name: a.name, id: a.id });
    }));
  });

  $('d-tier-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const id = router.arg;
    const tier = $('d-tier').value;
    const body = { tier };
    if (tier === 'enterprise') {
      const n = parseCount($('d-limit').value);
      if (!(n > 0)) { failKey('c.badlimit'); $('d-limit').focus(); return; }
      body.monthly_limit = n;
    }
    await busy($('d-tier-form'), () => guard(async () => {
      await patch(`${ADMIN}/accounts/${encodeURIComponent(id)}`, body);
      await loadAccount(id);
      say('c.tierset', { tier: tierVar(tier) });
    }));
  });

  $('d-credits-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const id = router.arg;
    const n = parseCount($('d-amount').value);
    const reason = $('d-reason').value.trim();
    if (!(n > 0)) { failKey('c.badamount'); $('d-amount').focus(); return; }
    if (!reason) { failKey('c.noreason'); $('d-reason').focus(); return; }
    const amount = $('d-deduct').checked ? -n : n;
    await busy($('d-credits-form'), () => guard(async () => {
      const e = await post(`${ADMIN}/accounts/${encodeURIComponent(id)}/credits`, { amount, reason });
      $('d-amount').value = '';
      $('d-reason').value = '';
      await loadAccount(id);
      say(amount > 0 ? 'c.added' : 'c.deducted', { n: { num: Math.abs(amount) }, balance: { num: e.balance } });
    }));
  });

  $('d-invite-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const id = router.arg;
    const email = $('d-invite-email').value.trim();
    if (!email) { failKey('c.invite.noemail'); $('d-invite-email').focus(); return; }
    await busy($('d-invite-form'), () => guard(async () => {
      const r = await post(`${ADMIN}/accounts/${encodeURIComponent(id)}/invites`, { email });
      $('d-invite-email').value = '';
      await loadAccount(id);
      showLink(r, 'c.invited');
    }));
  });

  wireCopy($('link-copy'), $('link-url'), $('link-note'));
  $('link-done').addEventListener('click', () => {
    $('link-url').textContent = '';
    $('link-box').hidden = true;
    $('d-invite-email').focus();
  });

  $('req-filter').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    await busy($('req-filter'), () => guard(loadRequests));
  });
  $('audit-more').addEventListener('click', () => guard(() => loadAudit(true)));
}

function showLink(r, msgKey) {
  $('link-url').textContent = r.link;
  $('link-note').textContent = '';
  $('link-box').hidden = false;
  say(msgKey, { email: r.owner.email, when: { dateTime: r.expires_at } });
  if (r.link.startsWith('/')) i18n.setText($('link-note'), 'c.link.relative');
  $('link-copy').focus();
}

async function load(view, arg) {
  if (view !== lastView) clearMessages();
  lastView = view;
  switch (view) {
    case 'accounts': return loadAccounts(false);
    case 'account': return loadAccount(arg);
    case 'requests': return loadRequests();
    case 'top': return loadTop();
    case 'audit': return loadAudit(false);
    default: return undefined;
  }
}

function accountLink(id, name) {
  return h('a', { href: `${BASE}/account/${id}`, 'data-route': 'account', dataset: { test: 'account-open' } }, name ? `${name} (#${id})` : `#${id}`);
}

async function loadAccounts(searched) {
  const q = $('acc-q').value.trim();
  const r = await get(`${ADMIN}/accounts?limit=200${q ? `&q=${encodeURIComponent(q)}` : ''}`);
  const rows = (r.accounts || []).map((a) => h('tr', { dataset: { accountId: a.id } },
    h('td', {}, String(a.id)), h('td', {}, accountLink(a.id, a.name)), h('td', {}, tierName(a.tier)),
    h('td', { className: 'num' }, i18n.num(a.credits)), h('td', { className: 'num' }, i18n.num(a.used || 0)),
    h('td', { className: 'num' }, i18n.num(a.keys || 0))));
  fillTable($('accounts-table'), rows, 'c.acc.none');
  labelCells($('accounts-table'));
  if (searched) say('c.acc.found', { n: { num: rows.length } });
}

async function loadAccount(id) {
  if (!/^\d+$/.test(id || '')) {
    fail(new Failure('', 'NotFound'));
    return;
  }
  const enc = encodeURIComponent(id);
  const [a, found, ks, os, rs, au] = await Promise.all([
    get(`${ADMIN}/accounts/${enc}`),
    get(`${ADMIN}/accounts?q=${enc}&limit=1`),
    get(`${ADMIN}/accounts/${enc}/keys`),
    get(`${ADMIN}/accounts/${enc}/owners`),
    get(`${ADMIN}/tier-requests?account=${enc}`),
    get(`${ADMIN}/audit?account=${enc}&limit=20`),
  ]);
  const sum = (found.accounts || []).find((x) => String(x.id) === String(id));
  $('d-name').textContent = `${a.name} (#${a.id})`;
  $('d-tier-now').textContent = tierName(a.tier);
  $('d-limit-now').textContent = i18n.num(a.monthly_limit);
  $('d-balance').textContent = i18n.num(a.credits);
  $('d-used').textContent = sum ? t('p.ov.usedin', { used: i18n.num(sum.used), period: sum.period }) : '—';
  $('d-tier').value = a.tier;
  $('d-limit').value = a.custom_limit ? String(a.custom_limit) : '';
  $('d-limit-field').hidden = a.tier !== 'enterprise';

  fillTable($('d-keys-table'), (ks.keys || []).map((k) => {
    const live = !k.revoked_at;
    return h('tr', { dataset: { keyId: k.id, state: live ? 'live' : 'revoked' } },
      h('td', { className: 'ip' }, k.prefix), h('td', {}, k.label || '—'), h('td', {}, i18n.date(k.created_at)),
      h('td', {}, k.last_used_at ? i18n.dateTime(k.last_used_at) : t('never')),
      h('td', {}, live ? t('p.keys.live') : t('p.keys.revoked', { when: i18n.date(k.revoked_at) })),
      h('td', { className: 'row-actions' }, live ? h('button', {
        type: 'button', className: 'danger small', dataset: { test: 'key-revoke' }, 'aria-label': t('p.keys.revoke.for', { key: k.prefix }),
        onclick: () => revokeKey(id, k),
      }, t('p.keys.revoke')) : null));
  }), 'p.keys.none');
  labelCells($('d-keys-table'));

  fillTable($('d-owners-table'), (os.owners || []).map((o) => h('tr', { dataset: { ownerId: o.id } },
    h('td', {}, o.email), h('td', {}, o.has_password ? t('c.pw.set') : t('c.pw.unset')), h('td', {}, i18n.date(o.created_at)),
    h('td', { className: 'row-actions' }, h('button', {
      type: 'button', className: 'secondary small', dataset: { test: 'owner-reset' }, 'aria-label': t('c.o.reset.for', { email: o.email }),
      onclick: () => resetOwner(id, o),
    }, o.has_password ? t('c.o.reset') : t('c.o.reinvite'))))), 'c.o.none');
  labelCells($('d-owners-table'));

  fillTable($('d-requests-table'), (rs.requests || []).map((r) => requestRow(r, false, () => loadAccount(id))), 'p.sub.none');
  labelCells($('d-requests-table'));
  fillTable($('d-audit-table'), (au.entries || []).map((e) => auditRow(e, false)), 'c.a.none');
  labelCells($('d-audit-table'));
}

async function revokeKey(accountID, k) {
  if (!await confirmDialog('p.keys.revoke.title', t('c.revoke.body', { key: k.label ? `${k.label} (${k.prefix})` : k.prefix }), 'p.keys.revoke')) return;
  await guard(async () => {
    await post(`${ADMIN}/keys/${encodeURIComponent(k.id)}/revoke`);
    await loadAccount(accountID);
    say('p.keys.revokeddone', { key: k.prefix });
    keepFocus($('d-h'));
  });
}

async function resetOwner(accountID, o) {
  if (!await confirmDialog('c.o.reset.title', t('c.o.reset.body', { email: o.email }), 'c.o.reset.yes')) return;
  await guard(async () => {
    const r = await post(`${ADMIN}/owners/${encodeURIComponent(o.id)}/reset`);
    await loadAccount(accountID);
    showLink(r, 'c.reset.done');
  });
}

function requestRow(r, withAccount, reload) {
  const actions = h('td', { className: 'row-actions' });
  if (r.status === 'pending') {
    actions.append(
      h('button', { type: 'button', className: 'small', dataset: { test: 'request-approve' }, onclick: () => decide(r, true, reload) }, t('c.r.approve')),
      h('button', { type: 'button', className: 'danger small', dataset: { test: 'request-refuse' }, onclick: () => decide(r, false, reload) }, t('c.r.refuse')),
    );
  }
  return h('tr', { dataset: { requestId: r.id, status: r.status } },
    h('td', {}, i18n.dateTime(r.created_at)),
    withAccount ? h('td', {}, accountLink(r.account_id)) : null,
    h('td', {}, tierName(r.tier)),
    h('td', { className: 'num' }, r.monthly_limit ? i18n.num(r.monthly_limit) : '—'),
    h('td', {}, r.note || ''),
    h('td', {}, t(`status.${r.status}`) + (r.decided_at ? ` · ${i18n.dateTime(r.decided_at)}` : '')),
    actions);
}

async function decide(r, approve, reload) {
  const what = { id: r.id, account: r.account_id, tier: tierVar(r.tier) };
  if (!await confirmDialog(approve ? 'c.r.approve.title' : 'c.r.refuse.title', t(approve ? 'c.r.approve.body' : 'c.r.refuse.body', what), approve ? 'c.r.approve' : 'c.r.refuse')) return;
  await guard(async () => {
    await post(`${ADMIN}/tier-requests/${encodeURIComponent(r.id)}/${approve ? 'approve' : 'refuse'}`);
    await reload();
    say(approve ? 'c.r.approved' : 'c.r.refused', what);
    keepFocus(document.querySelector('[data-view]:not([hidden]) h2'));
  });
}

async function loadRequests() {
  const st = $('req-status').value;
  const r = await get(`${ADMIN}/tier-requests${st ? `?status=${encodeURIComponent(st)}` : ''}`);
  fillTable($('requests-table'), (r.requests || []).map((x) => requestRow(x, true, loadRequests)), 'c.r.none');
  labelCells($('requests-table'));
}

async function loadTop() {
  const r = await get(`${ADMIN}/top?n=10`);
  i18n.setText($('top-period'), 'c.top.period', { period: r.period });
  fillTable($('top-table'), (r.accounts || []).map((a, i) => h('tr', { dataset: { accountId: a.id } },
    h('td', {}, String(i + 1)), h('td', {}, accountLink(a.id, a.name)), h('td', {}, tierName(a.tier)),
    h('td', { className: 'num' }, i18n.num(a.used || 0)), h('td', { className: 'num' }, i18n.num(a.credits)))), 'c.top.none');
  labelCells($('top-table'));
}

function auditRow(e, withAccount) {
  return h('tr', { dataset: { auditId: e.id } },
    h('td', { className: 'when' }, i18n.dateTime(e.at)), h('td', { className: 'mono' }, e.actor), h('td', {}, e.action),
    withAccount ? h('td', {}, e.account_id ? accountLink(e.account_id) : '—') : null,
    h('td', {}, e.target || ''), h('td', { className: 'detail' }, auditDetail(e.detail)));
}

// auditDetail shows an entry's detail, a small JSON object of the
// change's values, as a list of "name: value" in the UI language; a
// detail that is not such an object is shown as it came.
function auditDetail(detail) {
  if (!detail) return '';
  let obj;
  try {
    obj = JSON.parse(detail);
  } catch {
    return detail;
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return detail;
  const dl = h('dl', { className: 'kv' });
  for (const [k, v] of Object.entries(obj)) {
    const name = t(`c.ak.${k}`);
    dl.append(h('dt', { dataset: { key: k } }, name === `c.ak.${k}` ? k.replace(/_/g, ' ') : name), h('dd', {}, auditValue(k, v)));
  }
  return dl;
}

function auditValue(k, v) {
  if (v === null || v === undefined || v === '') return '—';
  if (k === 'tier') return tierName(v);
  if (k.endsWith('_id')) return `#${v}`;
  if (k.endsWith('_at') && typeof v === 'string') return i18n.dateTime(v);
  if (typeof v === 'number') return i18n.num(v);
  if (typeof v === 'boolean') return t(v ? 'c.yes' : 'c.no');
  if (typeof v === 'object') return JSON.stringify(v);
  if (k === 'purpose') {
    const p = t(`c.purpose.${v}`);
    return p === `c.purpose.${v}` ? v : p;
  }
  return String(v);
}

async function loadAudit(more) {
  const before = more ? audit.next : 0;
  const r = await get(`${ADMIN}/audit?limit=50${before ? `&before=${before}` : ''}`);
  audit = { entries: more ? audit.entries.concat(r.entries || []) : (r.entries || []), next: r.next_before || 0 };
  fillTable($('audit-table'), audit.entries.map((e) => auditRow(e, true)), 'c.a.none');
  labelCells($('audit-table'));
  $('audit-more').hidden = !audit.next;
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
