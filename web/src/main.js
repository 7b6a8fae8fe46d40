// The ipatlas page: the visitor's addresses in both families, the
// preferred family, the visitor's location on a world map, and a lookup
// form that queries any address with the visitor's own API key.
import {
  MY_IP_TIMEOUT_MS, QUERY_TIMEOUT_MS, Failure, envelopeFailure, fetchAddress, fetchJSON,
} from './net.js';
import { WorldMap } from './map.js';
import { hasLocation, hasRadius, placeName, renderRecord } from './record.js';
import * as i18n from './i18n.js';
import { t } from './i18n.js';
import './msg-main.js';

// Where the API lives: always this origin. The family-only endpoints may
// be elsewhere (hosts reachable over one family only); the server says
// where in data attributes.
const API = {
  myIP: '/api/ip/myip',
  me: '/api/ip/me',
  query: '/api/ip-query',
  usage: '/api/usage',
};

// The API key lives in localStorage under this name and nowhere else.
const KEY_STORE = 'ipatlas.apiKey';

// The public address a visitor without a location of their own is
// offered to look up.
const TRY_IP = '8.8.8.8';

const $ = (id) => document.getElementById(id);

// show puts a translated text (key) in el.
function show(el, key, state, vars) {
  i18n.setText(el, key, vars);
  if (state) el.dataset.state = state;
}

// showValue puts data (an address) in el: no translation.
function showValue(el, text, state) {
  delete el.dataset.i18n;
  el.textContent = text;
  if (state) el.dataset.state = state;
}

function setHidden(el, hidden) {
  el.hidden = hidden;
}

// describeFailure: the API's own words and code for its refusals (the
// record language's, as the API chose them), the page's for a call that
// got no answer.
function describeFailure(f) {
  if (f.code === 'NetworkError' || f.code === 'Timeout') return i18n.errorText(f);
  return f.code ? `${f.message} (${f.code})` : f.message;
}

async function showFamily(family, url, out) {
  const addr = await fetchAddress(url, family);
  if (addr) {
    showValue(out, addr, 'ok');
  } else {
    show(out, 'main.unavailable', 'unavailable');
  }
}

// askMyIP asks the auto-detection endpoint once: its answer gives the
// preferred family and the address the server sees, which the map's panel
// names when that address has no location.
async function askMyIP() {
  const [status, body] = await fetchJSON(API.myIP, { credentials: 'omit' }, MY_IP_TIMEOUT_MS);
  if (status !== 200 || !body || body.result === false) throw new Failure(`HTTP ${status}`);
  return body;
}

async function showPreferred(out, answer) {
  try {
    const body = await answer;
    // The spec: clients default to IPv4 when the field is missing.
    const v = body.IPVersion === 'IPv6' ? 'IPv6' : 'IPv4';
    showValue(out, v, 'ok');
    document.querySelectorAll('.addr').forEach((row) => {
      row.classList.toggle('preferred', row.querySelector(`#${v.toLowerCase()}`) !== null);
    });
  } catch {
    show(out, 'main.unknown', 'unavailable');
  }
}

// isLoopback: an address of the machine itself (127.0.0.0/8, ::1).
function isLoopback(ip) {
  return ip === '::1' || /^(::ffff:)?127\./i.test(ip);
}

// showPrivate explains, in the page's words, a visitor the server sees
// from its own machine or network (PrivateIP: a local trial, an office
// behind the server's router): such an address has no location. It names
// the address when the auto-detection answered, and offers a public one
// to look up with the form.
async function showPrivate(map, myIP) {
  let ip = '';
  try {
    ip = String((await myIP).IP || '');
  } catch {
    // no address to name: the sentence without it
  }
  const loopback = isLoopback(ip);
  map.unmark('me');
  $('me-record').replaceChildren();
  $('me-status').hidden = true;
  show($('me-caption'), loopback ? 'main.me.private.caption.loopback' : 'main.me.private.caption', 'private');
  let why = 'main.me.private.unknown';
  if (ip) why = loopback ? 'main.me.private.loopback' : 'main.me.private.lan';
  show($('me-private-why'), why, undefined, { ip });
  show($('me-try'), 'main.me.try', undefined, { ip: TRY_IP });
  setHidden($('me-private'), false);
}

// tryPublic puts the offered public address in the lookup form, and
// looks it up when a key is there to pay for it, else asks for the key.
function tryPublic() {
  $('q-ip').value = TRY_IP;
  const key = $('q-key');
  if (key.value.trim() === '') {
    key.focus();
    return;
  }
  $('lookup').requestSubmit();
  $('q-ip').focus();
}

// showMe shows the visitor's own record in the UI language, and again
// when the language changes.
async function showMe(map, myIP) {
  const caption = $('me-caption');
  const status = $('me-status');
  const dl = $('me-record');
  const lang = i18n.lang();
  try {
    const [code, env] = await fetchJSON(`${API.me}?lang=${lang}`, { credentials: 'omit' }, QUERY_TIMEOUT_MS);
    if (code !== 200 || !env || !env.success || !env.data) throw envelopeFailure(code, env);
    if (lang !== i18n.lang()) return; // the language changed meanwhile: a newer call draws
    const rec = env.data;
    renderRecord(dl, rec, lang);
    const where = placeName(rec, lang);
    status.hidden = true;
    setHidden($('me-private'), true);
    if (hasLocation(rec)) {
      map.mark('me', rec.latitude, rec.longitude, where ? t('main.mark.me.at', { where }) : t('main.mark.me'),
        hasRadius(rec) ? rec.accuracy_radius : 0);
      show(caption, where ? 'main.me.near' : 'main.me.plain', 'ok', { ip: rec.ip, where });
    } else {
      map.unmark('me');
      show(caption, where ? 'main.me.beyond' : 'main.me.unknown', 'ok', { ip: rec.ip, where });
    }
  } catch (err) {
    if (lang !== i18n.lang()) return;
    const f = err instanceof Failure ? err : new Failure(String(err));
    if (f.code === 'PrivateIP') {
      await showPrivate(map, myIP);
      return;
    }
    setHidden($('me-private'), true);
    map.unmark('me');
    dl.replaceChildren();
    show(caption, 'main.me.none', 'error');
    // The code is for programs; people get the sentence.
    status.textContent = f.message;
    status.dataset.code = f.code;
    setHidden(status, false);
  }
}

function loadKey() {
  try {
    return localStorage.getItem(KEY_STORE) || '';
  } catch {
    return ''; // storage disabled: the key is typed each time
  }
}

function storeKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORE, key);
    else localStorage.removeItem(KEY_STORE);
  } catch {
    // storage disabled: nothing to keep or forget
  }
}

// showUsage puts the key's month in el, translated again on a switch.
function showUsage(el, u) {
  show(el, i18n.date(u.reset) ? 'main.usage.reset' : 'main.usage', undefined, {
    used: { num: u.used }, limit: { num: u.limit }, period: u.period, left: { num: u.remaining }, reset: { date: u.reset },
  });
}

function setupLookup(map) {
  const form = $('lookup');
  const ipIn = $('q-ip');
  const langIn = $('q-lang');
  const keyIn = $('q-key');
  const remember = $('q-remember');
  const submit = $('q-submit');
  const result = $('result');
  const status = $('q-status');
  const error = $('q-error');
  const dl = $('q-record');
  const account = $('q-account');
  const credits = $('q-credits');
  const usage = $('q-usage');

  // The record's language follows the UI's until the visitor picks one.
  let langPicked = false;
  langIn.value = i18n.lang();
  langIn.addEventListener('change', () => { langPicked = true; });
  i18n.onChange((l) => {
    if (!langPicked) langIn.value = l;
  });

  const saved = loadKey();
  keyIn.value = saved;
  remember.checked = saved !== '';

  $('q-forget').addEventListener('click', () => {
    storeKey('');
    keyIn.value = '';
    remember.checked = false;
    keyIn.focus();
  });

  // fail shows a failure: the page's own words (no answer) are
  // translated again on a switch, the API's stay as it wrote them.
  const fail = (f) => {
    if (f.code === 'NetworkError' || f.code === 'Timeout') show(error, ...i18n.errorMessage(f));
    else showValue(error, describeFailure(f));
    error.dataset.code = f.code || '';
    setHidden(error, false);
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const ip = ipIn.value.trim();
    const lang = langIn.value === 'zh' ? 'zh' : 'en';
    const key = keyIn.value.trim();
    setHidden(error, true);
    setHidden(status, true);
    if (ip === '') {
      show(error, 'main.q.empty');
      error.dataset.code = '';
      setHidden(error, false);
      ipIn.focus();
      return;
    }
    storeKey(remember.checked ? key : '');

    submit.disabled = true;
    result.setAttribute('aria-busy', 'true');
    status.textContent = t('main.q.looking', { ip });
    setHidden(status, false);
    const headers = { 'Content-Type': 'application/json' };
    if (key) headers.Authorization = `Bearer ${key}`;
    let loggedIn = false;
    try {
      const [code, env] = await fetchJSON(API.query, {
        method: 'POST',
        credentials: 'omit',
        headers,
        body: JSON.stringify({ ip, lang }),
      }, QUERY_TIMEOUT_MS);
      const meta = (env && env.meta) || {};
      loggedIn = meta.isLoggedIn === true;
      if (loggedIn && typeof meta.currentCredits === 'number') {
        credits.textContent = i18n.num(meta.currentCredits);
        setHidden(account, false);
      } else {
        setHidden(account, true);
        credits.textContent = '';
        showValue(usage, '');
      }
      if (code < 200 || code > 299 || !env || !env.success || !env.data) throw envelopeFailure(code, env);
      const rec = env.data;
      renderRecord(dl, rec, lang);
      setHidden(dl, false);
      if (hasLocation(rec)) {
        const where = placeName(rec, lang);
        map.mark('query', rec.latitude, rec.longitude, where ? `${rec.ip}, ${where}` : rec.ip,
          hasRadius(rec) ? rec.accuracy_radius : 0);
      } else {
        map.unmark('query');
      }
    } catch (err) {
      setHidden(dl, true);
      map.unmark('query');
      fail(err instanceof Failure ? err : new Failure(String(err)));
    } finally {
      setHidden(status, true);
    }

    if (loggedIn) {
      try {
        const [code, u] = await fetchJSON(API.usage, {
          credentials: 'omit',
          headers: { Authorization: `Bearer ${key}` },
        }, QUERY_TIMEOUT_MS);
        if (code !== 200) throw envelopeFailure(code, u);
        showUsage(usage, u);
      } catch (err) {
        show(usage, 'main.usage.unknown', undefined, { why: describeFailure(err instanceof Failure ? err : new Failure(String(err))) });
      }
    }
    submit.disabled = false;
    result.setAttribute('aria-busy', 'false');
    result.dataset.done = String(Number(result.dataset.done || 0) + 1);
  });
}

function start() {
  const body = document.body;
  i18n.mountSwitch($('lang-switch'));
  const map = new WorldMap($('map'));
  const myIP = askMyIP();
  myIP.catch(() => {}); // each user of the answer handles its failure
  i18n.onChange(() => showMe(map, myIP));
  showFamily('IPv4', body.dataset.ipv4Url || '/ipv4', $('ipv4'));
  showFamily('IPv6', body.dataset.ipv6Url || '/ipv6', $('ipv6'));
  showPreferred($('preferred'), myIP);
  showMe(map, myIP);
  $('me-try').addEventListener('click', tryPublic);
  setupLookup(map);
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
