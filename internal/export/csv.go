package export

import (
	"strconv"
)

// CSVHeader names the columns of CSVRow.
var CSVHeader = []string{
	"network",
	"continent_code", "continent", "continent_zh",
	"country_code", "country", "country_zh",
	"province_code", "province", "province_zh",
	"city", "city_zh", "district", "district_zh",
	"postal", "latitude", "longitude", "time_zone", "currency", "area_code",
	"asn", "isp",
	"hosting", "vpn", "tor", "relay", "service",
	"location_source",
}

// CSVRow is the row of a network (a CIDR) with answer a, in CSVHeader's
// order, its text as the engine gives it: a writer for spreadsheets still
// has to neutralise cells that would read as formulas. Coordinates are
// empty when unknown, a flag when its list is not loaded, the AS when
// none announces the network.
func (a *Answer) CSVRow(network string) []string {
	var lat, lon, asn string
	if a.HasLocation {
		lat = strconv.FormatFloat(a.Latitude, 'f', -1, 64)
		lon = strconv.FormatFloat(a.Longitude, 'f', -1, 64)
	}
	if a.ASN != 0 {
		asn = "AS" + strconv.FormatUint(uint64(a.ASN), 10)
	}
	flag := func(known, on bool) string {
		if !known {
			return ""
		}
		return strconv.FormatBool(on)
	}
	return []string{
		network,
		a.ContinentCode, a.Continent, a.ContinentZH,
		a.CountryCode, a.Country, a.CountryZH,
		a.ProvinceCode, a.Province, a.ProvinceZH,
		a.City, a.CityZH, a.District, a.DistrictZH,
		a.Postal, lat, lon, a.TimeZone, a.Currency, a.AreaCode,
		asn, a.ISP,
		flag(a.PrivacyKnown, a.Hosting), flag(a.PrivacyKnown, a.VPN), flag(a.TorKnown, a.Tor),
		flag(a.PrivacyKnown, a.Relay), a.Service,
		a.Source,
	}
}
