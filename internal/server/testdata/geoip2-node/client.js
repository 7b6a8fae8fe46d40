// Calls MaxMind's web services with MaxMind's official Node client
// (@maxmind/geoip2-node, pinned in package.json), unchanged, and prints
// what its models say.
//
// Input (stdin): {"host": "127.0.0.1:PORT", "calls": [{"service": "city",
// "ip": "8.8.8.8", "account_id": 1, "key": "ipa_..."}, ...]}. Output
// (stdout): one object per call, the fields of maxmind_clients_test.go's
// clientView, or {"error": the client's error code}. The client trusts
// the test's CA through NODE_EXTRA_CA_CERTS.
'use strict';
const { WebServiceClient } = require('@maxmind/geoip2-node');

const orNull = (v) => (v === undefined ? null : v);

function view(service, r) {
  const name = (rec, locale) => orNull(rec && rec.names && rec.names[locale]);
  const out = {
    ip: r.traits.ipAddress,
    continent_code: orNull(r.continent && r.continent.code),
    continent_en: name(r.continent, 'en'),
    continent_zh: name(r.continent, 'zh-CN'),
    country_iso: orNull(r.country && r.country.isoCode),
    country_en: name(r.country, 'en'),
    country_zh: name(r.country, 'zh-CN'),
    eu: !!(r.country && r.country.isInEuropeanUnion),
    registered_iso: orNull(r.registeredCountry && r.registeredCountry.isoCode),
  };
  if (service === 'country') {
    return out;
  }
  const sub = r.subdivisions && r.subdivisions.length ? r.subdivisions[r.subdivisions.length - 1] : undefined;
  const loc = r.location || {};
  Object.assign(out, {
    city_en: name(r.city, 'en'),
    city_zh: name(r.city, 'zh-CN'),
    sub_iso: orNull(sub && sub.isoCode),
    sub_en: name(sub, 'en'),
    sub_zh: name(sub, 'zh-CN'),
    postal: orNull(r.postal && r.postal.code),
    lat: orNull(loc.latitude),
    lon: orNull(loc.longitude),
    tz: orNull(loc.timeZone),
    radius: orNull(loc.accuracyRadius),
    asn: orNull(r.traits.autonomousSystemNumber),
    aso: orNull(r.traits.autonomousSystemOrganization),
    isp: orNull(r.traits.isp),
    org: orNull(r.traits.organization),
  });
  if (service === 'insights') {
    const t = r.traits;
    Object.assign(out, {
      anonymous: t.isAnonymous,
      vpn: t.isAnonymousVpn,
      hosting: t.isHostingProvider,
      public_proxy: t.isPublicProxy,
      tor: t.isTorExitNode,
    });
  }
  return out;
}

async function main() {
  const chunks = [];
  for await (const c of process.stdin) {
    chunks.push(c);
  }
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const results = [];
  for (const c of req.calls) {
    const client = new WebServiceClient(String(c.account_id), c.key, { host: req.host });
    try {
      results.push(view(c.service, await client[c.service](c.ip)));
    } catch (e) {
      results.push({ error: e && e.code ? e.code : String(e && (e.error || e.message || e)) });
    }
  }
  process.stdout.write(JSON.stringify(results));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
