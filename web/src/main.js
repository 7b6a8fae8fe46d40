// The ipatlas page: the visitor's addresses in both families, the
// preferred family, the visitor's location on a world map, and a lookup
// form that queries any address with the visitor's own API key.
import {
  MY_IP_TIMEOUT_MS, QUERY_TIMEOUT_MS, Failure, envelopeFailure, fetchAddress, fetchJSON,
} from './net.js';
import { WorldMap } from './map.js';
import { hasLocation, placeName, renderRecord } from './record.js';

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

const $ = (id) => document.getElementById(id);
const num = new Intl.NumberFormat('en');

function show(el, text, state) {
  el.textContent = text;
  if (state) el.dataset.state = state;
}

function setHidden(el, hidden) {
  el.hidden = hidden;
}

function describeFailure(f) {
  return f.code && f.code !== 'NetworkError' && f.code !== 'Timeout' ? `${f.message} (${f.code})` : f.message;
}

async function showFamily(family, url, out) {
  const addr = await fetchAddress(url, family);
  if (addr) {
    show(out, addr, 'ok');
  } else {
    show(out, 'unavailable', 'unavailable');
  }
}

async function showPreferred(out) {
  try {
    const [status, body] = await fetchJSON(API.myIP, { credentials: 'omit' }, MY_IP_TIMEOUT_MS);
    if (status !== 200 || !body || body.result === false) throw new Failure(`HTTP ${status}`);
    // The spec: clients default to IPv4 when the field is missing.
    const v = body.IPVersion === 'IPv6' ? 'IPv6' : 'IPv4';
    show(out, v, 'ok');
    document.querySelectorAll('.addr').forEach((row) => {
      row.classList.toggle('preferred', row.querySelector(`#${v.toLowerCase()}`) !== null);
    });
  } catch {
    show(out, 'unknown', 'unavailable');
  }
}

async function showMe(map) {
  const caption = $('me-caption');
  const status = $('me-status');
  const dl = $('me-record');
  try {
    const [code, env] = await fetchJSON(`${API.me}?lang=en`, { credentials: 'omit' }, QUERY_TIMEOUT_MS);
    if (code !== 200 || !env || !env.success || !env.data) throw envelopeFailure(code, env);
    const rec = env.data;
    renderRecord(dl, rec, 'en');
    const where = placeName(rec, 'en');
    if (hasLocation(rec)) {
      map.mark('me', rec.latitude, rec.longitude, `your location${where ? `, ${where}` : ''}`);
      caption.textContent = where ? `Your address ${rec.ip} is near ${where}.` : `Your address ${rec.ip}.`;
    } else {
      map.unmark('me');
      caption.textContent = `The location of your address ${rec.ip} is not known${where ? ` beyond ${where}` : ''}.`;
    }
    caption.dataset.state = 'ok';
  } catch (err) {
    const f = err instanceof Failure ? err : new Failure(String(err));
    map.unmark('me');
    dl.replaceChildren();
    caption.textContent = 'No location for your address.';
    caption.dataset.state = 'error';
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

function formatUsage(u) {
  const reset = new Date(u.reset);
  const when = Number.isNaN(reset.getTime())
    ? ''
    : `; resets ${reset.toLocaleDateString('en', { dateStyle: 'medium', timeZone: 'UTC' })}`;
  return `${num.format(u.used)} of ${num.format(u.limit)} queries used in ${u.period} (${num.format(u.remaining)} left${when})`;
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

  const saved = loadKey();
  keyIn.value = saved;
  remember.checked = saved !== '';

  $('q-forget').addEventListener('click', () => {
    storeKey('');
    keyIn.value = '';
    remember.checked = false;
    keyIn.focus();
  });

  const fail = (f) => {
    error.textContent = describeFailure(f);
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
      fail(new Failure('Enter an IP address to look up.', ''));
      ipIn.focus();
      return;
    }
    storeKey(remember.checked ? key : '');

    submit.disabled = true;
    result.setAttribute('aria-busy', 'true');
    status.textContent = `Looking up ${ip}…`;
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
        credits.textContent = num.format(meta.currentCredits);
        setHidden(account, false);
      } else {
        setHidden(account, true);
        credits.textContent = '';
        usage.textContent = '';
      }
      if (code < 200 || code > 299 || !env || !env.success || !env.data) throw envelopeFailure(code, env);
      const rec = env.data;
      renderRecord(dl, rec, lang);
      setHidden(dl, false);
      if (hasLocation(rec)) {
        map.mark('query', rec.latitude, rec.longitude, `${rec.ip}${placeName(rec, 'en') ? `, ${placeName(rec, 'en')}` : ''}`);
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
        usage.textContent = formatUsage(u);
      } catch (err) {
        usage.textContent = `unknown: ${describeFailure(err instanceof Failure ? err : new Failure(String(err)))}`;
      }
    }
    submit.disabled = false;
    result.setAttribute('aria-busy', 'false');
    result.dataset.done = String(Number(result.dataset.done || 0) + 1);
  });
}

function start() {
  const body = document.body;
  const map = new WorldMap($('map'));
  showFamily('IPv4', body.dataset.ipv4Url || '/ipv4', $('ipv4'));
  showFamily('IPv6', body.dataset.ipv6Url || '/ipv6', $('ipv6'));
  showPreferred($('preferred'));
  showMe(map);
  setupLookup(map);
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', start);
} else {
  start();
}
