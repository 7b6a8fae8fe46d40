// Package geotest writes small MMDB data directories for tests of the geo
// engine and of everything built on it (server, client, commands): files
// in the default dataset's layouts (DB-IP flat city, ipatlas-ASN) and in
// MaxMind's GeoIP2 layouts, written by mmdbgen so that no test depends on
// downloaded data. Its writers fail the test on an error.
//
// WriteFixture writes the default layout with a few known places (see
// Places); Known.Want gives the record the engine must answer for each, in
// either language.
package geotest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/accuracy"
	"github.com/ipatlas/ipatlas/internal/geo/mmdbgen"
	"github.com/ipatlas/ipatlas/internal/names"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// File names of the default dataset, as `db fetch` installs them.
const (
	CityV4File = mmdbgen.CityV4File
	CityV6File = mmdbgen.CityV6File
	ASNFile    = mmdbgen.ASNFile
)

// Database types of the default dataset's files.
const (
	CityV4Type = mmdbgen.CityV4Type
	CityV6Type = mmdbgen.CityV6Type
	ASNType    = mmdbgen.ASNType
)

// The rows of the files; mmdbgen documents them.
type (
	FlatRow   = mmdbgen.FlatRow
	ASNRow    = mmdbgen.ASNRow
	Name      = mmdbgen.Name
	GeoIP2Row = mmdbgen.GeoIP2Row
)

// Known is a place of the WriteFixture data with the raw data behind it
// and the answers that follow from it.
type Known struct {
	Label   string // short name for subtests
	IP      string // an address inside Network, as a client would send it
	Network string

	CountryCode   string
	ContinentCode string
	Province      string // English, as in the data
	ProvinceCode  string // its ISO 3166-2 code without the country's part
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
		CountryCode: "US", ContinentCode: "NA", Province: "California", ProvinceCode: "CA", City: "Mountain View",
		Latitude: 37.422, Longitude: -122.085, HasLocation: true,
		ASN: "AS15169", ISP: "Google LLC",
		CountryEN: "United States", CountryZH: "美国", ContinentEN: "North America", ContinentZH: "北美洲",
		TimeZone: "America/Los_Angeles", Currency: "USD", ZipCode: "94043", AreaCode: "1",
	}
	// Beijing is a China city with the long-distance code 010.
	Beijing = Known{
		Label: "cn-beijing", IP: "202.106.0.20", Network: "202.106.0.0/20",
		CountryCode: "CN", ContinentCode: "AS", Province: "Beijing", ProvinceCode: "BJ", City: "Beijing",
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
		CountryCode: "CN", ContinentCode: "AS", Province: "Guangdong", ProvinceCode: "GD", City: "Shenzhen",
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
		CountryCode: "US", ContinentCode: "NA", Province: "California", ProvinceCode: "CA", City: "Mountain View",
		Latitude: 37.422, Longitude: -122.085, HasLocation: true,
		ASN: "AS15169", ISP: "Google LLC",
		CountryEN: "United States", CountryZH: "美国", ContinentEN: "North America", ContinentZH: "北美洲",
		TimeZone: "America/Los_Angeles", Currency: "USD", AreaCode: "1",
	}
	// Nuremberg is an IPv6 network with a district (state2), a postcode
	// and a time zone in the data.
	Nuremberg = Known{
		Label: "de-ipv6-district", IP: "2a01:4f8:c0c:1234::1", Network: "2a01:4f8::/32",
		CountryCode: "DE", ContinentCode: "EU", Province: "Bavaria", ProvinceCode: "BY", City: "Nuremberg", District: "Middle Franconia",
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
	// has only IP set, and the network where the fixture has nothing,
	// UncoveredNetwork.
	UncoveredIP      = "1.1.1.1"
	UncoveredNetwork = "0.0.0.0/5"
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
		ProvinceCode:  k.ProvinceCode,
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
	if k.CountryCode != "" {
		r.LocationSource = "dataset"
	}
	if k.ASN != "" {
		// The fixture's ASN network is the place's network.
		r.Route = netip.MustParsePrefix(k.Network)
	}
	// The answer is the same over the place's network, and differs
	// outside it; privacy lists may cut it smaller.
	r.Network = netip.MustParsePrefix(k.Network)
	if k.HasLocation {
		lat, lon := k.Latitude, k.Longitude
		r.Latitude, r.Longitude = &lat, &lon
		r.AccuracyRadius, r.Confidence = accuracy.Of(accuracy.Dataset, k.ContinentCode, k.City != "")
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

// WriteFlatCity writes a DB-IP flat city file with mmdbgen.WriteFlatCity;
// an error fails the test.
func WriteFlatCity(t testing.TB, path, dbType string, ipVersion int, rows []FlatRow) {
	t.Helper()
	if err := mmdbgen.WriteFlatCity(path, dbType, ipVersion, rows); err != nil {
		t.Fatal(err)
	}
}

// WriteASN writes an ASN file with mmdbgen.WriteASN; an error fails the
// test.
func WriteASN(t testing.TB, path, dbType string, rows []ASNRow) {
	t.Helper()
	if err := mmdbgen.WriteASN(path, dbType, rows); err != nil {
		t.Fatal(err)
	}
}

// WriteGeoIP2 writes a GeoIP2-schema file with mmdbgen.WriteGeoIP2; an
// error fails the test.
func WriteGeoIP2(t testing.TB, path, dbType string, rows []GeoIP2Row) {
	t.Helper()
	if err := mmdbgen.WriteGeoIP2(path, dbType, rows); err != nil {
		t.Fatal(err)
	}
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

func mustParse(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		panic(err)
	}
	return a
}

// WritePrivacyList installs a privacy list in dir as `db fetch` does: its
// file, and its entry in privacy.json dated date. An error fails the test.
func WritePrivacyList(t testing.TB, dir, name, body string, date time.Time) {
	t.Helper()
	l, ok := privacy.Named(name)
	if !ok {
		t.Fatalf("no privacy list %s", name)
	}
	if err := os.WriteFile(filepath.Join(dir, l.File()), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := privacy.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Lists = slices.DeleteFunc(m.Lists, func(s privacy.ListState) bool { return s.Name == name })
	m.Lists = append(m.Lists, privacy.ListState{Name: name, URL: l.URL, FetchedAt: date, Size: int64(len(body))})
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, privacy.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TorExits is a Tor exit list in the Tor Project's bulk format with n
// addresses of 185.220.100.0/22 and, first, every address of extra.
func TorExits(n int, extra ...string) string {
	var b strings.Builder
	for _, a := range extra {
		b.WriteString(a + "\n")
	}
	for i := range n {
		fmt.Fprintf(&b, "185.220.%d.%d\n", 100+i/256%4, i%256)
	}
	return b.String()
}
