// Rendering of a location record (the "data" object of the API) as a
// description list, with field names in the record's language.

const LABELS = {
  en: {
    ip: 'IP address', continent: 'Continent', country: 'Country', province: 'Province or state',
    city: 'City', district: 'District', isp: 'ISP', asn: 'ASN', coords: 'Coordinates',
    time_zone: 'Time zone', currency: 'Currency', zip_code: 'Postal code', area_code: 'Phone area code',
    route: 'Route', privacy: 'Network type', unknown: 'unknown', accuracy: 'Accuracy',
    within: 'within about {km} km, {level} confidence', high: 'high', medium: 'medium', low: 'low',
    location_source: 'Location from', src_dataset: 'the dataset', src_override: 'this service\'s corrections',
    src_geofeed: 'the operator\'s geofeed',
    hosting: 'hosting or datacenter', vpn: 'VPN', tor: 'Tor exit', relay: 'anonymising relay',
    nolist: 'on none of the lists', torunknown: 'Tor unknown',
  },
  zh: {
    ip: 'IP 地址', continent: '大洲', country: '国家', province: '省份', city: '城市', district: '区县',
    isp: '运营商', asn: 'ASN', coords: '经纬度', time_zone: '时区', currency: '货币',
    zip_code: '邮政编码', area_code: '电话区号', route: '路由', privacy: '网络类型', unknown: '未知',
    accuracy: '精度', within: '约 {km} 公里范围内，可信度{level}', high: '高', medium: '中等', low: '低',
    location_source: '位置来源', src_dataset: '数据集', src_override: '本服务的更正',
    src_geofeed: '运营商的地理位置源',
    hosting: '托管或数据中心', vpn: 'VPN', tor: 'Tor 出口节点', relay: '匿名中继',
    nolist: '不在任何列表中', torunknown: 'Tor 未知',
  },
};

// privacyText says what kind of network the record's privacy object
// describes: the flags that are set, then the service a list names
// ("hosting or datacenter, VPN · Proton VPN"). The service is shown as the
// list spells it, in both languages. A flag is only ever "set"; an address
// on no list is "on none of the lists", which is not a proof of anything.
// Without the object the flags are unknown (the server has no lists), and
// without tor the Tor list is too old to tell: both are said, never shown
// as false.
export function privacyText(p, lang) {
  const L = LABELS[lang] || LABELS.en;
  if (!p || typeof p !== 'object') return '';
  const on = [];
  if (p.hosting === true) on.push(L.hosting);
  if (p.vpn === true) on.push(L.vpn);
  if (p.tor === true) on.push(L.tor);
  if (p.relay === true) on.push(L.relay);
  const sep = lang === 'zh' ? '，' : ', ';
  let text = on.length ? on.join(sep) : L.nolist;
  if (p.service) text += ' · ' + p.service;
  if (typeof p.tor !== 'boolean') text += (lang === 'zh' ? '；' : '; ') + L.torunknown;
  return text;
}

// sourceText says where the record's location comes from: the dataset,
// the service's own corrections, or a network operator's published feed
// (named as the record names it, "geofeed:netflix").
export function sourceText(src, lang) {
  const L = LABELS[lang] || LABELS.en;
  if (typeof src !== 'string' || src === '') return '';
  if (src === 'dataset') return L.src_dataset;
  if (src === 'override') return L.src_override;
  if (src.startsWith('geofeed:')) return `${L.src_geofeed} (${src.slice('geofeed:'.length)})`;
  return src;
}

// hasLocation reports whether a record carries coordinates. Absent means
// unknown; 0,0 is a real place and is shown as such.
export function hasLocation(rec) {
  return typeof rec.latitude === 'number' && typeof rec.longitude === 'number';
}

// hasRadius reports whether a located record states how far off its
// coordinates may be: accuracy_radius (km) and its confidence level.
export function hasRadius(rec) {
  return hasLocation(rec) && Number.isFinite(rec.accuracy_radius) && rec.accuracy_radius > 0;
}

// radiusText says how far off the coordinates may be, in the record's
// language: "within about 390 km, medium confidence". A level the page
// does not know is shown as the record spells it.
export function radiusText(rec, lang) {
  if (!hasRadius(rec)) return '';
  const L = LABELS[lang] || LABELS.en;
  const km = new Intl.NumberFormat(lang === 'zh' ? 'zh-CN' : 'en').format(rec.accuracy_radius);
  const c = rec.confidence;
  const level = ['high', 'medium', 'low'].includes(c) ? L[c] : String(c || L.unknown);
  return L.within.replace('{km}', km).replace('{level}', level);
}

export function formatCoords(rec) {
  const lat = rec.latitude, lon = rec.longitude;
  const ns = lat >= 0 ? 'N' : 'S', ew = lon >= 0 ? 'E' : 'W';
  return `${Math.abs(lat).toFixed(4)}° ${ns}, ${Math.abs(lon).toFixed(4)}° ${ew}`;
}

// placeName is the shortest useful name of where a record is: "Beijing,
// China", or the country alone, or the continent.
export function placeName(rec, lang) {
  const sep = lang === 'zh' ? '，' : ', ';
  const parts = [];
  if (rec.city) parts.push(rec.city);
  if (rec.province && rec.province !== rec.city) parts.push(rec.province);
  if (rec.country) parts.push(rec.country);
  if (parts.length === 0 && rec.continent) parts.push(rec.continent);
  return parts.join(sep);
}

// renderRecord fills dl with the record's fields. Text goes in through
// textContent only: the record is data, never markup.
export function renderRecord(dl, rec, lang) {
  const L = LABELS[lang] || LABELS.en;
  dl.replaceChildren();
  dl.lang = lang === 'zh' ? 'zh' : 'en';
  const country = rec.country ? (rec.country_code ? `${rec.country} (${rec.country_code})` : rec.country) : '';
  const continent = rec.continent ? (rec.continent_code ? `${rec.continent} (${rec.continent_code})` : rec.continent) : '';
  // The province's ISO 3166-2 code is the country's code and its own.
  const province = rec.province ? (rec.province_code && rec.country_code
    ? `${rec.province} (${rec.country_code}-${rec.province_code})` : rec.province) : '';
  const rows = [
    ['ip', rec.ip, 'ip'],
    ['continent', continent],
    ['country', country],
    ['province', province],
    ['city', rec.city],
    ['district', rec.district],
    ['isp', rec.isp],
    ['asn', rec.asn],
    ['route', rec.route],
    ['privacy', privacyText(rec.privacy, lang)],
    ['coords', hasLocation(rec) ? formatCoords(rec) : ''],
    ['accuracy', radiusText(rec, lang)],
    ['time_zone', rec.time_zone],
    ['currency', rec.currency],
    ['zip_code', rec.zip_code],
    ['area_code', rec.area_code],
    ['location_source', sourceText(rec.location_source, lang)],
  ];
  for (const [key, value, cls] of rows) {
    const row = document.createElement('div');
    row.dataset.field = key;
    const dt = document.createElement('dt');
    dt.textContent = L[key];
    const dd = document.createElement('dd');
    if (value) {
      dd.textContent = value;
      if (cls) dd.className = cls;
    } else {
      dd.textContent = L.unknown;
      dd.className = 'unknown';
    }
    row.append(dt, dd);
    dl.append(row);
  }
}
