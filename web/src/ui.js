// Building blocks of the portal and the console: elements from data
// (text always through textContent: data is never markup), tables, a
// confirmation dialog, a copy button, the status line and tab routing.
import * as i18n from './i18n.js';
import { t } from './i18n.js';

export const $ = (id) => document.getElementById(id);

// h makes an element: h('button', {type: 'button', dataset: {test: 'x'}}, 'text', child).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'i18n') i18n.setText(el, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'className') el.className = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fillTable replaces tbody's rows; empty shows one row saying so.
export function fillTable(table, rows, emptyKey) {
  const body = table.tBodies[0];
  body.replaceChildren(...rows);
  if (rows.length === 0) {
    const cols = table.tHead ? table.tHead.rows[0].cells.length : 1;
    body.append(h('tr', { className: 'empty' }, h('td', { colspan: cols, i18n: emptyKey || 'none' })));
  }
}

// td makes a cell; a th header's text doubles as the cell's label on
// narrow screens, where rows become cards (data-label, see app.css).
export function td(content, attrs) {
  return h('td', attrs, content);
}

// labelCells copies each column's header text into data-label of the
// row's cells, for the narrow layout.
export function labelCells(table) {
  const heads = table.tHead ? [...table.tHead.rows[0].cells].map((c) => c.textContent) : [];
  for (const row of table.tBodies[0].rows) {
    [...row.cells].forEach((c, i) => { if (heads[i] && !c.hasAttribute('colspan')) c.dataset.label = heads[i]; });
  }
}

// Status and error lines: #status is polite (results), #error an alert.
export function say(key, vars) {
  const s = $('status');
  i18n.setText(s, key, vars);
  s.hidden = false;
  $('error').hidden = true;
}

export function fail(f) {
  const e = $('error');
  i18n.setText(e, ...i18n.errorMessage(f));
  e.dataset.code = (f && f.code) || '';
  e.hidden = false;
  $('status').hidden = true;
}

// failKey shows one of the page's own messages (a mistake caught before
// any request) as the error.
export function failKey(key, vars, code) {
  const e = $('error');
  i18n.setText(e, key, vars);
  e.dataset.code = code || '';
  e.hidden = false;
  $('status').hidden = true;
}

export function clearMessages() {
  $('status').hidden = true;
  $('error').hidden = true;
}

// confirmDialog asks a yes/no question in the modal #confirm-dialog and
// resolves true for yes. The native dialog traps focus and closes on
// Escape; focus goes back to what had it.
export function confirmDialog(titleKey, bodyText, yesKey) {
  const dlg = $('confirm-dialog');
  const opener = document.activeElement;
  i18n.setText($('confirm-title'), titleKey);
  $('confirm-body').textContent = bodyText;
  i18n.setText($('confirm-yes'), yesKey || 'confirm');
  return new Promise((resolve) => {
    const done = (v) => {
      dlg.removeEventListener('close', onClose);
      if (dlg.open) dlg.close();
      if (opener && opener.focus && document.contains(opener)) opener.focus();
      resolve(v);
    };
    const onClose = () => done(dlg.returnValue === 'yes');
    dlg.returnValue = '';
    dlg.addEventListener('close', onClose);
    $('confirm-yes').onclick = () => dlg.close('yes');
    $('confirm-no').onclick = () => dlg.close('no');
    dlg.showModal();
    $('confirm-no').focus(); // the safe choice has focus
  });
}

// promptDialog asks for one text value in #prompt-dialog (rename, reason)
// and resolves it, or null when cancelled.
export function promptDialog(titleKey, labelKey, value) {
  const dlg = $('prompt-dialog');
  const input = $('prompt-input');
  const opener = document.activeElement;
  i18n.setText($('prompt-title'), titleKey);
  i18n.setText($('prompt-label'), labelKey);
  input.value = value || '';
  return new Promise((resolve) => {
    const form = $('prompt-form');
    const done = (v) => {
      form.onsubmit = null;
      dlg.onclose = null;
      if (dlg.open) dlg.close();
      if (opener && opener.focus && document.contains(opener)) opener.focus();
      resolve(v);
    };
    form.onsubmit = (ev) => { ev.preventDefault(); done(input.value.trim()); };
    $('prompt-cancel').onclick = () => done(null);
    dlg.onclose = () => done(null);
    dlg.showModal();
    input.focus();
    input.select();
  });
}

// wireCopy makes button copy the text of target (an output) and say so
// in note (a polite live line). The clipboard API needs a secure context
// (HTTPS or localhost); elsewhere the text is selected and copied the old
// way, or left selected for the visitor to copy.
export function wireCopy(button, target, note) {
  button.addEventListener('click', async () => {
    const text = target.textContent;
    try {
      await navigator.clipboard.writeText(text);
      i18n.setText(note, 'copied');
      return;
    } catch {
      // fall through to the selection
    }
    const range = document.createRange();
    range.selectNodeContents(target);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    i18n.setText(note, ok ? 'copied' : 'copy.failed');
  });
}

// keepFocus moves focus to fallback (a heading) when a redraw removed the
// element that had it, so that keyboard users are not sent back to the
// top of the page.
export function keepFocus(fallback) {
  const a = document.activeElement;
  if (!a || a === document.body || !document.contains(a)) {
    if (!fallback.hasAttribute('tabindex')) fallback.tabIndex = -1;
    fallback.focus();
  }
}

// busy disables a form's buttons while work runs.
export async function busy(form, work) {
  const buttons = [...form.querySelectorAll('button')];
  buttons.forEach((b) => { b.disabled = true; });
  form.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
    form.setAttribute('aria-busy', 'false');
    form.dataset.done = String(Number(form.dataset.done || 0) + 1);
  }
}

// Router: views are <section data-view="name">, tabs are links
// <a data-route="name" href="/prefix/name">; the path picks the view.
export class Router {
  constructor(prefix, views, fallback, onShow) {
    this.prefix = prefix;
    this.views = views;
    this.fallback = fallback;
    this.onShow = onShow;
    this.loads = new WeakMap();
    document.addEventListener('click', (ev) => {
      const a = ev.target.closest && ev.target.closest('a[data-route]');
      if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
      ev.preventDefault();
      this.go(a.getAttribute('href'));
    });
    window.addEventListener('popstate', () => this.show(location.pathname, false));
  }

  // parse splits /prefix/view/arg into [view, arg].
  parse(path) {
    const rest = path.startsWith(this.prefix) ? path.slice(this.prefix.length) : '';
    const [view, arg] = rest.replace(/^\/+/, '').split('/');
    return [this.views.includes(view) ? view : this.fallback, arg ? decodeURIComponent(arg) : ''];
  }

  go(path) {
    if (path !== location.pathname) history.pushState(null, '', path);
    this.show(path, true);
  }

  show(path, focus) {
    const [view, arg] = this.parse(path);
    this.current = view;
    this.arg = arg;
    for (const s of document.querySelectorAll('[data-view]')) s.hidden = s.dataset.view !== view;
    for (const a of document.querySelectorAll('.tabs a[data-route]')) {
      if (a.dataset.route === view || (a.dataset.routeAlso || '').split(' ').includes(view)) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    const sec = document.querySelector(`[data-view="${view}"]`);
    if (focus && sec) {
      const hd = sec.querySelector('h2');
      if (hd) { hd.tabIndex = -1; hd.focus(); }
    }
    // A view is aria-busy while its data loads, and stays so until the
    // latest of overlapping loads has drawn it.
    const load = Promise.resolve(this.onShow(view, arg));
    if (!sec) return;
    const n = (this.loads.get(sec) || 0) + 1;
    this.loads.set(sec, n);
    sec.setAttribute('aria-busy', 'true');
    load.finally(() => { if (this.loads.get(sec) === n) sec.setAttribute('aria-busy', 'false'); });
  }
}

export function tierName(tier) {
  return t(`tier.${tier}`);
}

// tierVar is a tier's name as a value of a message's vars: translated
// whenever the message is shown (i18n.t's {key}), not frozen as tierName
// would leave it.
export function tierVar(tier) {
  return { key: `tier.${tier}` };
}
