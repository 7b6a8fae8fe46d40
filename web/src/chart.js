// The usage chart: queries per UTC day as bars stacked by key, whose tops
// are the day's total, drawn as SVG by hand (no chart library). Colours
// come from CSS (.series-N), so both themes style it.
import { t } from './i18n.js';
import * as i18n from './i18n.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 900;
const H = 260;
const PAD = { left: 56, right: 12, top: 12, bottom: 32 };
export const SERIES = 8; // colours before they repeat

function s(tag, attrs, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

// daysBetween lists "YYYY-MM-DD" from..to inclusive (UTC).
export function daysBetween(from, to) {
  const out = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let d = Date.parse(`${from}T00:00:00Z`); d <= end && out.length < 400; d += 86400000) {
    out.push(new Date(d).toISOString().slice(0, 10));
  }
  return out;
}

// niceMax rounds a maximum up to 1, 2 or 5 times a power of ten.
export function niceMax(v) {
  if (v <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// ySteps is how many steps divide the axis up to max (a niceMax value):
// four when they fall on whole numbers, else five or two or one, so that a
// day's count is never labelled 1.25 or 2.5 queries.
export function ySteps(max) {
  return [4, 5, 2, 1].find((n) => Number.isInteger(max / n));
}

// summarize folds the API's rows into per-day totals and per-key series.
export function summarize(usage, keyOrder) {
  const days = daysBetween(usage.from, usage.to);
  const index = new Map(days.map((d, i) => [d, i]));
  const keys = [...keyOrder];
  const series = new Map(keys.map((k) => [k, new Array(days.length).fill(0)]));
  const totals = new Array(days.length).fill(0);
  for (const r of usage.days || []) {
    const i = index.get(r.day);
    if (i === undefined) continue;
    if (!series.has(r.key_id)) {
      keys.push(r.key_id);
      series.set(r.key_id, new Array(days.length).fill(0));
    }
    series.get(r.key_id)[i] += r.queries;
    totals[i] += r.queries;
  }
  return { days, keys, series, totals };
}

// drawUsage draws into svg (an <svg> element) and returns the summary.
// names maps key IDs to what the legend shows.
export function drawUsage(svg, usage, keyOrder, names) {
  const sum = summarize(usage, keyOrder);
  const { days, keys, series, totals } = sum;
  const max = niceMax(Math.max(0, ...totals));
  const iw = W - PAD.left - PAD.right;
  const ih = H - PAD.top - PAD.bottom;
  const bw = iw / Math.max(days.length, 1);
  const y = (v) => PAD.top + ih - (v / max) * ih;

  svg.replaceChildren();
  delete svg.dataset.i18nAttr; // the summary below replaces the placeholder label
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
  const total = totals.reduce((a, b) => a + b, 0);
  let peak = 0;
  totals.forEach((v, i) => { if (v > totals[peak]) peak = i; });
  svg.append(s('title', {}, t('chart.title')));
  svg.setAttribute('aria-label', total > 0
    ? t('chart.summary', { from: i18n.date(usage.from), to: i18n.date(usage.to), total: i18n.num(total), peak: i18n.num(totals[peak]), day: i18n.date(days[peak]) })
    : t('chart.empty', { from: i18n.date(usage.from), to: i18n.date(usage.to) }));

  // Grid and y axis: up to five lines, at whole numbers of queries.
  const steps = ySteps(max);
  const grid = s('g', { class: 'grid' });
  for (let k = 0; k <= steps; k++) {
    const v = (max * k) / steps;
    const yy = y(v);
    grid.append(s('line', { x1: PAD.left, x2: W - PAD.right, y1: yy, y2: yy }));
    grid.append(s('text', { x: PAD.left - 6, y: yy + 4, 'text-anchor': 'end', class: 'axis' }, i18n.num(v)));
  }
  svg.append(grid);

  // Bars, one stack per day.
  const bars = s('g', { class: 'bars' });
  days.forEach((d, i) => {
    if (totals[i] === 0) return;
    const g = s('g', {});
    let acc = 0;
    keys.forEach((k, ki) => {
      const v = series.get(k)[i];
      if (!v) return;
      const y0 = y(acc);
      acc += v;
      const y1 = y(acc);
      g.append(s('rect', {
        x: (PAD.left + i * bw + bw * 0.12).toFixed(2), width: Math.max(bw * 0.76, 1).toFixed(2),
        y: y1.toFixed(2), height: Math.max(y0 - y1, 0.5).toFixed(2), class: `series-${ki % SERIES}`,
      }));
    });
    g.append(s('title', {}, `${i18n.date(d)}: ${i18n.num(totals[i])}`));
    bars.append(g);
  });
  svg.append(bars);

  // The total as a line over the stacks.
  const pts = totals.map((v, i) => `${(PAD.left + (i + 0.5) * bw).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  if (total > 0) svg.append(s('polyline', { points: pts, class: 'total-line' }));

  // X axis: the first day of each month, and the last day.
  const xa = s('g', { class: 'axis' });
  xa.append(s('line', { x1: PAD.left, x2: W - PAD.right, y1: PAD.top + ih, y2: PAD.top + ih, class: 'baseline' }));
  const fmt = new Intl.DateTimeFormat(i18n.lang() === 'zh' ? 'zh-CN' : 'en', { month: 'short', day: 'numeric', timeZone: 'UTC' });
  days.forEach((d, i) => {
    if (!d.endsWith('-01') && i !== 0) return;
    if (i !== 0 && i < 6) return; // too close to the first label
    xa.append(s('text', { x: (PAD.left + (i + 0.5) * bw).toFixed(1), y: H - 10, 'text-anchor': i === 0 ? 'start' : 'middle' }, fmt.format(new Date(`${d}T00:00:00Z`))));
  });
  svg.append(xa);

  sum.total = total;
  sum.names = keys.map((k) => (names && names.get(k)) || k);
  return sum;
}
