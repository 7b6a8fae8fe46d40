// The world map: Natural Earth's 1:110m countries (the world-atlas
// package, bundled, so the page works offline) drawn as SVG in the Equal
// Earth projection, with markers at records' coordinates and the circle
// of their accuracy radius.
import { geoCircle, geoEqualEarth, geoGraticule10, geoPath } from 'd3-geo';
import { feature, mesh } from 'topojson-client';
import world from 'world-atlas/countries-110m.json';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 960;
// The mean Earth radius (IUGG), km: a distance on the ground as an angle.
const EARTH_KM = 6371.0088;

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}

export class WorldMap {
  constructor(svg) {
    const sphere = { type: 'Sphere' };
    this.projection = geoEqualEarth().fitWidth(WIDTH, sphere);
    // A tenth of a unit is far below a pixel and keeps the path data short.
    const path = geoPath(this.projection).digits(1);
    this.path = path;
    const [[, y0], [, y1]] = path.bounds(sphere);
    const height = Math.ceil(y1 - y0);
    this.projection.translate([WIDTH / 2, height / 2]);

    this.svg = svg;
    svg.setAttribute('viewBox', `0 0 ${WIDTH} ${height}`);
    svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    const g = el('g', { class: 'world' }, svg);
    el('path', { class: 'sphere', d: path(sphere) }, g);
    el('path', { class: 'graticule', d: path(geoGraticule10()) }, g);
    const countries = el('g', { class: 'countries' }, g);
    for (const f of feature(world, world.objects.countries).features) {
      el('path', { class: 'country', d: path(f) || '', 'data-id': f.id || '', 'data-name': f.properties.name }, countries);
    }
    el('path', { class: 'borders', d: path(mesh(world, world.objects.countries, (a, b) => a !== b)) }, g);
    this.markers = el('g', { class: 'markers' }, g);
    this.label = svg.querySelector('title');
    // Markers keep their size on screen whatever the map's: a phone shows
    // the map at a third of its width.
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => this.resize()).observe(svg);
    }
  }

  // unit is the size of a CSS pixel in map units.
  unit() {
    const w = this.svg.getBoundingClientRect().width;
    return w > 0 ? Math.max(1, WIDTH / w) : 1;
  }

  resize() {
    const u = this.unit();
    for (const c of this.markers.querySelectorAll('circle')) {
      c.setAttribute('r', String(Math.round(Number(c.dataset.px) * u * 10) / 10));
    }
  }

  // mark puts (or moves) the marker named id at lat, lon; label describes
  // it for screen readers, as part of the map's accessible name. A
  // radiusKm above 0 also draws the circle on the ground of that radius
  // around the point (projected, so it is no circle near the poles), under
  // the marker; the marker's dot stays at its size on screen.
  mark(id, lat, lon, label, radiusKm) {
    this.unmark(id);
    const p = this.projection([lon, lat]);
    if (!p || !Number.isFinite(p[0]) || !Number.isFinite(p[1])) return;
    const [x, y] = p.map((v) => Math.round(v * 100) / 100);
    const g = el('g', { class: `marker marker-${id}`, 'data-marker': id }, this.markers);
    if (Number.isFinite(radiusKm) && radiusKm > 0) {
      const deg = (radiusKm / EARTH_KM) * (180 / Math.PI);
      const area = geoCircle().center([lon, lat]).radius(deg).precision(2)();
      el('path', { id: `radius-${id}`, class: 'radius', d: this.path(area) || '', 'data-km': radiusKm }, g);
    }
    el('circle', { class: 'halo', cx: x, cy: y, r: 14, 'data-px': 14 }, g);
    el('circle', {
      id: `marker-${id}`, class: 'dot', cx: x, cy: y, r: 6, 'data-px': 6,
      'data-lat': lat, 'data-lon': lon,
    }, g);
    this.resize();
    g.dataset.label = label;
    this.describe();
  }

  unmark(id) {
    const old = this.markers.querySelector(`[data-marker="${id}"]`);
    if (old) old.remove();
    this.describe();
  }

  describe() {
    const labels = [...this.markers.querySelectorAll('[data-marker]')].map((m) => m.dataset.label);
    this.label.textContent = labels.length ? `World map with a marker at ${labels.join(' and ')}` : 'World map';
  }
}
