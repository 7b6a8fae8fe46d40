"""Calls MaxMind's web services with MaxMind's official Python client
(Debian's python3-geoip2), unchanged, and prints what its models say.

Input (stdin): {"host": "127.0.0.1:PORT", "calls": [{"service": "city",
"ip": "8.8.8.8", "account_id": 1, "key": "ipa_..."}, ...]}. Output
(stdout): one object per call, the fields of maxmind_clients_test.go's
clientView, or {"error": the exception's class name}. The client trusts
the test's CA through REQUESTS_CA_BUNDLE.
"""
import json
import sys

import geoip2.errors
import geoip2.webservice


def view(service, en, zh):
    out = {
        "ip": en.traits.ip_address,
        "continent_code": en.continent.code,
        "continent_en": en.continent.name,
        "continent_zh": zh.continent.name,
        "country_iso": en.country.iso_code,
        "country_en": en.country.name,
        "country_zh": zh.country.name,
        "eu": en.country.is_in_european_union,
        "registered_iso": en.registered_country.iso_code,
    }
    if service == "country":
        return out
    sub, sub_zh = en.subdivisions.most_specific, zh.subdivisions.most_specific
    out.update({
        "city_en": en.city.name,
        "city_zh": zh.city.name,
        "sub_iso": sub.iso_code,
        "sub_en": sub.name,
        "sub_zh": sub_zh.name,
        "postal": en.postal.code,
        "lat": en.location.latitude,
        "lon": en.location.longitude,
        "tz": en.location.time_zone,
        "radius": en.location.accuracy_radius,
        "asn": en.traits.autonomous_system_number,
        "aso": en.traits.autonomous_system_organization,
        "isp": en.traits.isp,
        "org": en.traits.organization,
    })
    if service == "insights":
        t = en.traits
        out.update({
            "anonymous": t.is_anonymous,
            "vpn": t.is_anonymous_vpn,
            "hosting": t.is_hosting_provider,
            "public_proxy": t.is_public_proxy,
            "tor": t.is_tor_exit_node,
        })
    return out


def main():
    req = json.load(sys.stdin)
    results = []
    for c in req["calls"]:
        en = geoip2.webservice.Client(c["account_id"], c["key"], host=req["host"])
        zh = geoip2.webservice.Client(c["account_id"], c["key"], host=req["host"], locales=["zh-CN"])
        try:
            a = getattr(en, c["service"])(c["ip"])
            b = getattr(zh, c["service"])(c["ip"])
            results.append(view(c["service"], a, b))
        except geoip2.errors.GeoIP2Error as e:
            results.append({"error": type(e).__name__})
    json.dump(results, sys.stdout, ensure_ascii=False)


main()
