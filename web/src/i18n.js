// The pages' UI language, English or Chinese, shared by the lookup page,
// the portal and the console. The choice is the visitor's switch when
// they used it (kept in localStorage), else the first of
// navigator.languages that is English or Chinese, else English. Static
// text carries data-i18n="key" (and data-i18n-attr="attr=key;attr=key"
// for attributes) with its English form in the HTML, so the page reads
// sensibly before and without the script; the script swaps the texts and
// <html lang> and does it again whenever the switch changes.

export const LANGS = ['en', 'zh'];
const STORE = 'ipatlas.lang';

const tables = { en: {}, zh: {} };
const listeners = [];
let current = detect();

// Strings every page uses: the switch, dialogs, copy buttons, and the
// error codes of the JSON APIs (pages translate by code; the server's
// text is English).
define({
  en: {
    'lang.label': 'Language',
    'skip': 'Skip to content',
    'copy': 'Copy',
    'copied': 'Copied.',
    'copy.failed': 'Select the text and copy it yourself.',
    'cancel': 'Cancel',
    'confirm': 'Confirm',
    'save': 'Save',
    'close': 'Close',
    'loading': 'Loading…',
    'none': 'none',
    'never': 'never',
    'more': 'Show older',
    'licenses': 'Licenses',
    'apiref': 'API reference',
    'tier.free': 'Free',
    'tier.pro': 'Pro',
    'tier.enterprise': 'Enterprise',
    'status.pending': 'pending',
    'status.approved': 'approved',
    'status.refused': 'refused',
    'err.Unauthorized': 'You are not signed in, or your session expired. Sign in again.',
    'err.Forbidden': 'The request was refused as cross-site. Reload the page and try again.',
    'err.InvalidRequest': 'The request was not valid: {detail}',
    'err.NotFound': 'Not found: it may have been removed.',
    'err.Conflict': 'That conflicts with the current state: {detail}',
    'err.InsufficientCredits': 'Not enough credits: {detail}',
    'err.TooManyRequests': 'Too many attempts. Wait a few minutes and try again.',
    'err.SignInFailed': 'Wrong email or password.',
    'err.BadToken': 'This link is invalid, used or expired. Ask the operator for a new one.',
    'err.WeakPassword': 'Choose another password: {detail}',
    'err.ServiceUnavailable': 'The service is unavailable for a moment. Try again soon.',
    'err.NetworkError': 'The service could not be reached.',
    'err.Timeout': 'No answer in time. Try again.',
    'err.other': 'Something went wrong: {detail}',
  },
  zh: {
    'lang.label': '语言',
    'skip': '跳到正文',
    'copy': '复制',
    'copied': '已复制。',
    'copy.failed': '请选中文字后自行复制。',
    'cancel': '取消',
    'confirm': '确认',
    'save': '保存',
    'close': '关闭',
    'loading': '加载中…',
    'none': '无',
    'never': '从未',
    'more': '显示更早的',
    'licenses': '许可证',
    'apiref': 'API 参考',
    'tier.free': '免费版',
    'tier.pro': '专业版',
    'tier.enterprise': '企业版',
    'status.pending': '待处理',
    'status.approved': '已批准',
    'status.refused': '已拒绝',
    'err.Unauthorized': '你尚未登录，或会话已过期。请重新登录。',
    'err.Forbidden': '请求被视为跨站请求而遭拒绝。请刷新页面后重试。',
    'err.InvalidRequest': '请求无效：{detail}',
    'err.NotFound': '未找到：可能已被删除。',
    'err.Conflict': '与当前状态冲突：{detail}',
    'err.InsufficientCredits': '积分不足：{detail}',
    'err.TooManyRequests': '尝试次数过多。请稍等几分钟再试。',
    'err.SignInFailed': '邮箱或密码错误。',
    'err.BadToken': '此链接无效、已使用或已过期。请向运营方索取新链接。',
    'err.WeakPassword': '请换一个密码：{detail}',
    'err.ServiceUnavailable': '服务暂时不可用，请稍后重试。',
    'err.NetworkError': '无法连接到服务。',
    'err.Timeout': '未能及时得到响应，请重试。',
    'err.other': '出错了：{detail}',
  },
});

function detect() {
  try {
    const saved = localStorage.getItem(STORE);
    if (LANGS.includes(saved)) return saved;
  } catch {
    // storage disabled: follow the browser
  }
  const prefs = (navigator.languages && navigator.languages.length) ? navigator.languages : [navigator.language || 'en'];
  for (const p of prefs) {
    const l = String(p).toLowerCase();
    if (l === 'zh' || l.startsWith('zh-')) return 'zh';
    if (l === 'en' || l.startsWith('en-')) return 'en';
  }
  return 'en';
}

// define adds a page's strings: {en: {key: text}, zh: {key: text}}.
export function define(dicts) {
  for (const l of LANGS) Object.assign(tables[l], dicts[l] || {});
}

export function lang() {
  return current;
}

// t is the text of key in the current language (English when the
// Chinese table lacks it), with {name} replaced from vars. A value of vars
// may be a format to apply when the text is shown, {dateTime: iso},
// {date: iso}, {num: n} or {key: k} (the text of another key, such as a
// tier's name: {key: 'tier.pro'}): setText keeps it, so a change of
// language shows a date, a number or a name in the new language too, not
// frozen in the old one. A message that is shown until the next one must
// pass them so; a value given as a finished string stays as it is.
export function t(key, vars) {
  let s = tables[current][key];
  if (s === undefined) s = tables.en[key];
  if (s === undefined) return key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (vars[k] === undefined || vars[k] === null ? m : shown(vars[k])));
  return s;
}

function shown(v) {
  if (v && typeof v === 'object') {
    if ('dateTime' in v) return dateTime(v.dateTime);
    if ('date' in v) return date(v.date);
    if ('num' in v) return num(v.num);
    if ('key' in v) return t(v.key);
  }
  return String(v);
}

// setText puts key's text into el and remembers the key, so that a
// change of language translates el again.
export function setText(el, key, vars) {
  el.dataset.i18n = key;
  if (vars) el.dataset.i18nVars = JSON.stringify(vars);
  else delete el.dataset.i18nVars;
  el.textContent = t(key, vars);
}

// apply translates every marked element under root.
export function apply(root = document) {
  for (const el of root.querySelectorAll('[data-i18n]')) {
    let vars;
    try {
      vars = el.dataset.i18nVars ? JSON.parse(el.dataset.i18nVars) : undefined;
    } catch {
      vars = undefined;
    }
    el.textContent = t(el.dataset.i18n, vars);
  }
  for (const el of root.querySelectorAll('[data-i18n-attr]')) {
    for (const pair of el.dataset.i18nAttr.split(';')) {
      const [attr, key] = pair.split('=');
      if (attr && key) el.setAttribute(attr.trim(), t(key.trim()));
    }
  }
}

// setLang switches the page to l, remembers the choice, and tells the
// page (onChange) so that it redraws what it built from data.
export function setLang(l, remember = true) {
  if (!LANGS.includes(l)) return;
  current = l;
  if (remember) {
    try {
      localStorage.setItem(STORE, l);
    } catch {
      // storage disabled: the choice lasts for this page only
    }
  }
  document.documentElement.lang = l === 'zh' ? 'zh-CN' : 'en';
  apply(document);
  for (const b of document.querySelectorAll('.lang-switch button')) {
    b.setAttribute('aria-pressed', String(b.dataset.lang === l));
  }
  for (const fn of listeners) fn(l);
}

export function onChange(fn) {
  listeners.push(fn);
}

// mountSwitch fills container with the EN / 中文 buttons (ids lang-en and
// lang-zh) and applies the current language to the page.
export function mountSwitch(container) {
  container.classList.add('lang-switch');
  container.setAttribute('role', 'group');
  container.dataset.i18nAttr = 'aria-label=lang.label';
  const mk = (l, text, label) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.id = `lang-${l}`;
    b.dataset.lang = l;
    b.lang = label;
    b.textContent = text;
    b.addEventListener('click', () => setLang(l));
    return b;
  };
  container.replaceChildren(mk('en', 'EN', 'en'), mk('zh', '中文', 'zh'));
  setLang(current, false);
}

// Formatting in the UI language. Dates are shown in UTC, the service's
// clock for months and days.
export function num(n) {
  return new Intl.NumberFormat(current === 'zh' ? 'zh-CN' : 'en').format(n);
}

export function date(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return d.toLocaleDateString(current === 'zh' ? 'zh-CN' : 'en', { dateStyle: 'medium', timeZone: 'UTC' });
}

export function dateTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return d.toLocaleString(current === 'zh' ? 'zh-CN' : 'en', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }) + ' UTC';
}

// errorMessage is the key and vars of what a person reads for a failed
// call: the translation of its code, with the server's (English) text as
// the detail. Given to setText, it is translated again on a switch.
export function errorMessage(f) {
  const code = f && f.code;
  const key = `err.${code}`;
  const vars = { detail: (f && f.message) || '' };
  if (code && (tables.en[key] !== undefined)) return [key, vars];
  return ['err.other', vars];
}

// errorText is errorMessage's text in the current language.
export function errorText(f) {
  return t(...errorMessage(f));
}
