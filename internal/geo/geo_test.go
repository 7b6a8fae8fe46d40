package geo_test

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/accuracy"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/oschwald/maxminddb-golang/v2"
)

var langs = []ipatlas.Lang{ipatlas.English, ipatlas.Chinese}

func openFixture(t *testing.T, opts geo.Options) (*geo.Engine, string) {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e, dir
}

func lookup(t *testing.T, e geo.Locator, ip string, lang ipatlas.Lang) ipatlas.Record {
	t.Helper()
	r, err := e.Lookup(netip.MustParseAddr(ip), lang)
	if err != nil {
		t.Fatalf("Lookup(%s, %s): %v", ip, lang, err)
	}
	return r
}

// sameRecord compares records by value, coordinates included.
func sameRecord(t *testing.T, got, want ipatlas.Record) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record mismatch\n got: %s\nwant: %s", show(got), show(want))
	}
}

func show(r ipatlas.Record) string {
	lat, lon := "nil", "nil"
	if r.Latitude != nil {
		lat = ftoa(*r.Latitude)
	}
	if r.Longitude != nil {
		lon = ftoa(*r.Longitude)
	}
	return strings.Join([]string{
		"ip=" + r.IP, "continent=" + r.Continent + "/" + r.ContinentCode, "country=" + r.Country + "/" + r.CountryCode,
		"province=" + r.Province + "/" + r.ProvinceCode, "city=" + r.City, "district=" + r.District, "isp=" + r.ISP, "asn=" + r.ASN,
		"lat=" + lat, "lon=" + lon, "tz=" + r.TimeZone, "currency=" + r.Currency, "zip=" + r.ZipCode, "area=" + r.AreaCode,
		"route=" + r.Route.String(), "network=" + r.Network.String(), "privacy=" + showPrivacy(r.Privacy), "source=" + r.LocationSource,
	}, " ")
}

func showPrivacy(p *ipatlas.Privacy) string {
	if p == nil {
		return "nil"
	}
	tor := "nil"
	if p.Tor != nil {
		tor = strconv.FormatBool(*p.Tor)
	}
	return fmt.Sprintf("{hosting:%v vpn:%v tor:%s relay:%v service:%q}", p.Hosting, p.VPN, tor, p.Relay, p.Service)
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// checkLanguages asserts that English text has no Chinese in it and that
// the Chinese continent and country are Chinese.
func checkLanguages(t *testing.T, r ipatlas.Record, lang ipatlas.Lang) {
	t.Helper()
	text := map[string]string{"continent": r.Continent, "country": r.Country, "province": r.Province, "city": r.City, "district": r.District}
	for f, v := range text {
		if lang == ipatlas.English && hasHan(v) {
			t.Errorf("English %s %q carries Chinese", f, v)
		}
	}
	if lang == ipatlas.Chinese && r.CountryCode != "" && (!hasHan(r.Country) || !hasHan(r.Continent)) {
		t.Errorf("Chinese continent/country %q/%q are not Chinese", r.Continent, r.Country)
	}
}

func TestKnownPlacesBothLanguages(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	for _, k := range geotest.Places {
		for _, lang := range langs {
			t.Run(k.Label+"/"+lang.String(), func(t *testing.T) {
				got := lookup(t, e, k.IP, lang)
				sameRecord(t, got, k.Want(lang))
				checkLanguages(t, got, lang)
			})
		}
	}
}

// TestChinaInChinese checks the facts behind the names tables for China:
// whatever their exact spelling, the Chinese province and city of Beijing
// and Shenzhen are Chinese text naming them.
func TestChinaInChinese(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	for _, c := range []struct {
		k              geotest.Known
		province, city string
	}{
		{geotest.Beijing, "北京", "北京"},
		{geotest.Shenzhen, "广东", "深圳"},
	} {
		r := lookup(t, e, c.k.IP, ipatlas.Chinese)
		if !strings.Contains(r.Province, c.province) || !strings.Contains(r.City, c.city) {
			t.Errorf("%s in Chinese: province %q, city %q; want them to name %s, %s", c.k.IP, r.Province, r.City, c.province, c.city)
		}
		if r.Country != "中国" || r.Continent != "亚洲" {
			t.Errorf("%s in Chinese: country %q continent %q", c.k.IP, r.Country, r.Continent)
		}
		en := lookup(t, e, c.k.IP, ipatlas.English)
		if en.Province != c.k.Province || en.City != c.k.City || en.Country != "China" {
			t.Errorf("%s in English: %s", c.k.IP, show(en))
		}
	}
}

func TestEmbeddedIPv4IsLookedUpByIt(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	for _, ip := range []string{geotest.MappedIP, geotest.NAT64IP, "::8.8.8.8"} {
		for _, lang := range langs {
			got := lookup(t, e, ip, lang)
			want := geotest.MountainView.Want(lang)
			want.IP = netip.MustParseAddr(ip).String()
			// The network is written in the address's own family: the
			// IPv4 network's bits after the /96 that embeds it.
			want.Network = netip.PrefixFrom(netip.MustParseAddr(ip), 96+want.Network.Bits()).Masked()
			sameRecord(t, got, want)
		}
	}
}

func TestIPIsNormalized(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	r := lookup(t, e, "2001:4860:4860:0000:0000:0000:0000:8888", ipatlas.English)
	if r.IP != "2001:4860:4860::8888" {
		t.Errorf("IP = %q, want the compressed form", r.IP)
	}
	r = lookup(t, e, "2A01:04F8:0C0C:1234::1", ipatlas.English)
	if r.IP != "2a01:4f8:c0c:1234::1" || r.City != geotest.Nuremberg.City {
		t.Errorf("upper-case IPv6: IP = %q city %q", r.IP, r.City)
	}
	zoned, err := e.Lookup(netip.MustParseAddr("2001:4860:4860::8888%eth0"), ipatlas.English)
	if err != nil || zoned.IP != "2001:4860:4860::8888" {
		t.Errorf("zoned address: %q, %v", zoned.IP, err)
	}
}

func TestUncoveredAddressHasOnlyIP(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	for _, ip := range []string{geotest.UncoveredIP, "2c0f:f248::1"} {
		got := lookup(t, e, ip, ipatlas.Chinese)
		// The network of an empty answer is where the data says nothing:
		// it holds the address and none of the places'.
		n := got.Network
		if !n.Contains(netip.MustParseAddr(ip)) {
			t.Errorf("%s: network %s does not hold it", ip, n)
		}
		for _, k := range geotest.Places {
			if n.Overlaps(netip.MustParsePrefix(k.Network)) {
				t.Errorf("%s: network %s overlaps %s's %s", ip, n, k.Label, k.Network)
			}
		}
		got.Network = netip.Prefix{}
		sameRecord(t, got, ipatlas.Record{IP: ip})
	}
}

func TestInvalidAddressIsAnError(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	if _, err := e.Lookup(netip.Addr{}, ipatlas.English); err == nil {
		t.Error("zero Addr: no error")
	}
}

func TestCacheDisabledGivesSameRecords(t *testing.T) {
	cached, _ := openFixture(t, geo.Options{})
	uncached, _ := openFixture(t, geo.Options{CacheEntries: -1, ASNCacheEntries: -1})
	tiny, _ := openFixture(t, geo.Options{CacheEntries: 1, ASNCacheEntries: 1})
	for round := 0; round < 3; round++ {
		for _, k := range geotest.Places {
			for _, lang := range langs {
				want := k.Want(lang)
				sameRecord(t, lookup(t, cached, k.IP, lang), want)
				sameRecord(t, lookup(t, uncached, k.IP, lang), want)
				sameRecord(t, lookup(t, tiny, k.IP, lang), want)
			}
		}
	}
}

// TestCallerCannotCorruptCache: coordinates are pointers; writing through
// them must not change later answers.
func TestCallerCannotCorruptCache(t *testing.T) {
	e, _ := openFixture(t, geo.Options{})
	r := lookup(t, e, geotest.MountainView.IP, ipatlas.English)
	*r.Latitude, *r.Longitude = 1, 2
	sameRecord(t, lookup(t, e, geotest.MountainView.IP, ipatlas.English), geotest.MountainView.Want(ipatlas.English))
}

func TestZeroZeroIsAPlace(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFlatCity(t, filepath.Join(dir, "c.mmdb"), "city ipv4", 4, []geotest.FlatRow{
		{Network: "41.1.0.0/16", CountryCode: "GH", City: "Null Island", Latitude: 0, Longitude: 0},
		{Network: "41.2.0.0/16", CountryCode: "GH", NoLocation: true},
	})
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := lookup(t, e, "41.1.2.3", ipatlas.English)
	if r.Latitude == nil || r.Longitude == nil || *r.Latitude != 0 || *r.Longitude != 0 {
		t.Errorf("0,0 location lost: %s", show(r))
	}
	r = lookup(t, e, "41.2.2.3", ipatlas.English)
	if r.Latitude != nil || r.Longitude != nil {
		t.Errorf("record without location got one: %s", show(r))
	}
	if r.TimeZone != "Africa/Accra" {
		t.Errorf("Ghana without location: time zone %q, want the country's only zone", r.TimeZone)
	}
}

// geoip2Dir writes the default fixture plus an operator's GeoIP2 City and
// ISP files.
func geoip2Dir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WriteGeoIP2(t, filepath.Join(dir, "GeoIP2-City.mmdb"), "GeoIP2-City", []geotest.GeoIP2Row{
		{
			Network: "8.8.8.0/24", ContinentCode: "NA", Continent: geotest.Name{EN: "North America", ZH: "北美洲"},
			CountryCode: "US", Country: geotest.Name{EN: "United States", ZH: "美国"},
			Subdivisions: []geotest.Name{{EN: "Virginia", ZH: "弗吉尼亚州"}, {EN: "Loudoun County"}},
			City:         geotest.Name{EN: "Ashburn", ZH: "阿什本"},
			Latitude:     39.0469, Longitude: -77.4903, TimeZone: "America/New_York", Postal: "20149",
		},
		{
			Network: "1.0.16.0/20", ContinentCode: "AS", Continent: geotest.Name{EN: "Asia", ZH: "亚洲"},
			CountryCode: "JP", Country: geotest.Name{EN: "Japan", ZH: "日本"},
			Subdivisions: []geotest.Name{{EN: "Tokyo", ZH: "东京都"}, {EN: "Chiyoda", ZH: "千代田区"}},
			City:         geotest.Name{EN: "Tokyo", ZH: "东京"},
			Latitude:     35.6893, Longitude: 139.6899, TimeZone: "Asia/Tokyo", Postal: "100-0001",
		},
		{
			Network: "175.16.199.0/24", ContinentCode: "AS", Continent: geotest.Name{EN: "Asia", ZH: "亚洲"},
			CountryCode: "CN", Country: geotest.Name{EN: "China", ZH: "中国"},
			Subdivisions: []geotest.Name{{EN: "Jilin Sheng", ZH: "吉林"}},
			City:         geotest.Name{EN: "Changchun", ZH: "长春"},
			Latitude:     43.88, Longitude: 125.3228, TimeZone: "Asia/Harbin",
		},
		{
			// No location and no time zone: the time zone is the
			// country's only one.
			Network: "1.0.32.0/20", ContinentCode: "AS", CountryCode: "JP",
			Country: geotest.Name{EN: "Japan", ZH: "日本"}, NoLocation: true,
		},
	})
	geotest.WriteASN(t, filepath.Join(dir, "GeoIP2-ISP.mmdb"), "GeoIP2-ISP", []geotest.ASNRow{
		{Network: "8.8.8.0/24", ASN: 15169, Org: "Google LLC", ISP: "Google Public DNS"},
		{Network: "1.0.16.0/20", ASN: 2519, Org: "ARTERIA Networks Corporation", ISP: "ARTERIA Networks"},
	})
	return dir
}

func TestGeoIP2Schema(t *testing.T) {
	dir := geoip2Dir(t)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	lat, lon := 35.6893, 139.6899
	tokyo := ipatlas.Record{
		IP: "1.0.16.1", Continent: "Asia", ContinentCode: "AS", Country: "Japan", CountryCode: "JP",
		Province: "Tokyo", ProvinceCode: "13", City: "Tokyo", District: "Chiyoda", ISP: "ARTERIA Networks", ASN: "AS2519",
		Latitude: &lat, Longitude: &lon, TimeZone: "Asia/Tokyo", Currency: "JPY", ZipCode: "100-0001", AreaCode: "81",
		Route: netip.MustParsePrefix("1.0.16.0/20"), Network: netip.MustParsePrefix("1.0.16.0/20"), LocationSource: "dataset",
		AccuracyRadius: accuracy.CityRadius[accuracy.GroupAsia], Confidence: ipatlas.ConfidenceMedium,
	}
	sameRecord(t, lookup(t, e, "1.0.16.1", ipatlas.English), tokyo)
	tokyo.Continent, tokyo.Country, tokyo.Province, tokyo.City, tokyo.District = "亚洲", "日本", "东京都", "东京", "千代田区"
	sameRecord(t, lookup(t, e, "1.0.16.1", ipatlas.Chinese), tokyo)

	// The operator's file wins over DB-IP's for the same network; the ISP
	// file's isp wins over the AS organization.
	us := lookup(t, e, "8.8.8.8", ipatlas.English)
	if us.City != "Ashburn" || us.Province != "Virginia" || us.District != "Loudoun County" || us.TimeZone != "America/New_York" ||
		us.ZipCode != "20149" || us.ISP != "Google Public DNS" || us.ASN != "AS15169" {
		t.Errorf("8.8.8.8 with GeoIP2 files: %s", show(us))
	}
	usZH := lookup(t, e, "8.8.8.8", ipatlas.Chinese)
	if usZH.City != "阿什本" || usZH.Province != "弗吉尼亚州" || usZH.District != "Loudoun County" || usZH.Country != "美国" {
		t.Errorf("8.8.8.8 in Chinese: %s", show(usZH))
	}

	// Where the operator's files have nothing, the default data answers.
	sameRecord(t, lookup(t, e, geotest.Beijing.IP, ipatlas.Chinese), geotest.Beijing.Want(ipatlas.Chinese))
	sameRecord(t, lookup(t, e, geotest.Nuremberg.IP, ipatlas.English), geotest.Nuremberg.Want(ipatlas.English))

	// A China city from a GeoIP2 file: Chinese names either from the
	// tables or from the file, never English.
	cc := lookup(t, e, "175.16.199.1", ipatlas.Chinese)
	if !strings.Contains(cc.Province, "吉林") || !strings.Contains(cc.City, "长春") || cc.TimeZone != "Asia/Harbin" || cc.Currency != "CNY" {
		t.Errorf("Changchun in Chinese: %s", show(cc))
	}
	ccEN := lookup(t, e, "175.16.199.1", ipatlas.English)
	if ccEN.City != "Changchun" || ccEN.Latitude == nil || *ccEN.Latitude != 43.88 {
		t.Errorf("Changchun in English: %s", show(ccEN))
	}
	checkLanguages(t, ccEN, ipatlas.English)

	jp := lookup(t, e, "1.0.32.1", ipatlas.English)
	if jp.Latitude != nil || jp.TimeZone != "Asia/Tokyo" || jp.Province != "" || jp.ASN != "" {
		t.Errorf("country-only GeoIP2 record: %s", show(jp))
	}

	// Datasets lists the operator's city file first.
	ds := e.Datasets()
	if len(ds) != 5 || ds[0].File != "GeoIP2-City.mmdb" || ds[0].Kind != "city" || ds[1].Kind != "city" {
		t.Errorf("Datasets() = %+v", ds)
	}
}

func TestGeoIP2CountryBelowDBIPCity(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WriteGeoIP2(t, filepath.Join(dir, "GeoLite2-Country.mmdb"), "GeoLite2-Country", []geotest.GeoIP2Row{
		{Network: "8.8.0.0/16", ContinentCode: "NA", CountryCode: "US", Country: geotest.Name{EN: "United States"}},
		{Network: "5.9.0.0/16", ContinentCode: "EU", CountryCode: "DE", Country: geotest.Name{EN: "Germany"}},
	})
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sameRecord(t, lookup(t, e, "8.8.8.8", ipatlas.English), geotest.MountainView.Want(ipatlas.English))
	de := lookup(t, e, "5.9.1.1", ipatlas.Chinese)
	if de.Country != "德国" || de.Continent != "欧洲" || de.City != "" || de.Currency != "EUR" || de.CountryCode != "DE" {
		t.Errorf("country-level record: %s", show(de))
	}
}

func TestUnsupportedTypeIsIgnored(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WriteASN(t, filepath.Join(dir, "anon.mmdb"), "GeoIP2-Anonymous-IP", []geotest.ASNRow{{Network: "8.8.8.0/24", ASN: 1, Org: "x"}})
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sameRecord(t, lookup(t, e, "8.8.8.8", ipatlas.English), geotest.MountainView.Want(ipatlas.English))
	for _, d := range e.Datasets() {
		if d.File == "anon.mmdb" {
			t.Errorf("unsupported file in service: %+v", d)
		}
	}
	infos, err := geo.Describe(dir)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, d := range infos {
		if d.File == "anon.mmdb" {
			found = d.Kind == "unsupported" && d.Networks == 1
		}
	}
	if !found {
		t.Errorf("Describe does not report anon.mmdb as unsupported: %+v", infos)
	}
}

func TestDescribe(t *testing.T) {
	dir := geoip2Dir(t)
	infos, err := geo.Describe(dir)
	if err != nil {
		t.Fatal(err)
	}
	// An IPv6 tree may hold IPv4 data too: the families say what a file
	// answers.
	want := map[string]struct {
		kind, dbType  string
		ipv, networks int
		families      string
	}{
		geotest.CityV4File: {"city", "city ipv4", 4, 4, "IPv4"},
		geotest.CityV6File: {"city", "city ipv6", 6, 2, "IPv6"},
		geotest.ASNFile:    {"asn", "ipatlas-ASN", 6, 5, "IPv4+IPv6"},
		"GeoIP2-City.mmdb": {"city", "GeoIP2-City", 6, 4, "IPv4+IPv6"},
		"GeoIP2-ISP.mmdb":  {"isp", "GeoIP2-ISP", 6, 2, "IPv4+IPv6"},
	}
	if len(infos) != len(want) {
		t.Fatalf("Describe: %d files, want %d: %+v", len(infos), len(want), infos)
	}
	for _, in := range infos {
		w, ok := want[in.File]
		if !ok || in.Kind != w.kind || in.DatabaseType != w.dbType || in.IPVersion != w.ipv || in.Networks != w.networks || in.BuildTime == "" ||
			in.Families != w.families {
			t.Errorf("Describe %s = %+v, want %+v", in.File, in, w)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := geo.Open(filepath.Join(t.TempDir(), "missing"), geo.Options{}); err == nil {
		t.Error("missing dir: no error")
	}
	empty := t.TempDir()
	if _, err := geo.Open(empty, geo.Options{}); !errors.Is(err, geo.ErrNoData) {
		t.Errorf("empty dir: %v, want ErrNoData", err)
	}
}

// A file whose search tree reaches a node by more than one path is
// corrupt: the tree of a valid file is a tree. Here every node of a chain
// points twice to the next, so a walk that followed every path would
// meet 2^20 of them for one record.
func TestSharedNodesAreCorrupt(t *testing.T) {
	for _, ipv := range []int{4, 6} {
		dir := t.TempDir()
		path := filepath.Join(dir, "shared.mmdb")
		dbType := geotest.CityV4Type
		if ipv == 6 {
			dbType = geotest.CityV6Type
		}
		geotest.WriteFlatCity(t, path, dbType, ipv, []geotest.FlatRow{
			{Network: "8.8.8.0/24", CountryCode: "US", City: "Mountain View", Latitude: 37.4, Longitude: -122.1},
		})
		shareNodes(t, path, 20)
		if _, err := geo.Describe(dir); err == nil || !strings.Contains(err.Error(), "shared.mmdb is corrupt") {
			t.Errorf("IPv%d: Describe = %v, want the file named corrupt", ipv, err)
		}
		if e, err := geo.Open(dir, geo.Options{}); err == nil || !strings.Contains(err.Error(), "shared.mmdb is corrupt") {
			if e != nil {
				e.Close()
			}
			t.Errorf("IPv%d: Open = %v, want the file named corrupt", ipv, err)
		}
	}
}

// shareNodes rewrites the first n+1 nodes of the MMDB file at path: each
// of the first n points twice to the next, and the last twice to the first
// record of the data section.
func shareNodes(t *testing.T, path string, n uint) {
	t.Helper()
	r, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	md := r.Metadata
	r.Close()
	if n >= md.NodeCount {
		t.Fatalf("%s has %d nodes, too few to chain %d", path, md.NodeCount, n)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	put := func(i uint, v uint32) { // both records of node i
		switch md.RecordSize {
		case 24:
			o := i * 6
			copy(b[o:], []byte{byte(v >> 16), byte(v >> 8), byte(v), byte(v >> 16), byte(v >> 8), byte(v)})
		case 28:
			o := i * 7
			copy(b[o:], []byte{byte(v >> 16), byte(v >> 8), byte(v), byte(v>>24&15)<<4 | byte(v>>24&15), byte(v >> 16), byte(v >> 8), byte(v)})
		case 32:
			o := i * 8
			copy(b[o:], []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		default:
			t.Fatalf("record size %d", md.RecordSize)
		}
	}
	for i := range n {
		put(i, uint32(i+1))
	}
	put(n, uint32(md.NodeCount)+16) // a pointer past the 16-byte separator: data offset 0
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAllowEmptyThenReload(t *testing.T) {
	dir := t.TempDir()
	e, err := geo.Open(dir, geo.Options{AllowEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// No data: one empty answer for the whole IPv4 space.
	sameRecord(t, lookup(t, e, "8.8.8.8", ipatlas.English), ipatlas.Record{IP: "8.8.8.8", Network: netip.MustParsePrefix("0.0.0.0/0")})
	if err := e.Reload(); !errors.Is(err, geo.ErrNoData) {
		t.Errorf("Reload of an empty dir: %v, want ErrNoData", err)
	}
	geotest.WriteFixture(t, dir)
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	sameRecord(t, lookup(t, e, "8.8.8.8", ipatlas.English), geotest.MountainView.Want(ipatlas.English))
}

func TestClosedEngine(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Lookup(netip.MustParseAddr("8.8.8.8"), ipatlas.English); !errors.Is(err, geo.ErrClosed) {
		t.Errorf("Lookup after Close: %v", err)
	}
	if err := e.Reload(); !errors.Is(err, geo.ErrClosed) {
		t.Errorf("Reload after Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRealData(t *testing.T) {
	dir := realdata.Dir(t)
	realdata.Whole(t)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, ip := range []string{"8.8.8.8", "2001:4860:4860::8888"} {
		for _, lang := range langs {
			r := lookup(t, e, ip, lang)
			t.Logf("%s %s: %s", ip, lang, show(r))
			// Google's IPv6 resolver is placed in Canada by DB-IP Lite:
			// only the IPv4 one is held to a country.
			if r.ASN != "AS15169" || r.ISP == "" || r.AreaCode != "1" || r.TimeZone == "" || r.Currency == "" ||
				r.Latitude == nil || r.City == "" || r.Country == "" || r.Continent == "" ||
				(ip == "8.8.8.8" && (r.CountryCode != "US" || r.Currency != "USD")) {
				t.Errorf("%s %s: %s", ip, lang, show(r))
			}
			checkLanguages(t, r, lang)
		}
	}
	for _, ip := range []string{"114.114.114.114", "223.5.5.5", "2400:3200::1"} {
		r := lookup(t, e, ip, ipatlas.Chinese)
		t.Logf("%s zh: %s", ip, show(r))
		if r.CountryCode != "CN" || !hasHan(r.Province) || !hasHan(r.City) || r.Country != "中国" || r.Currency != "CNY" ||
			!strings.HasPrefix(r.AreaCode, "0") || r.TimeZone != "Asia/Shanghai" {
			t.Errorf("%s zh: %s", ip, show(r))
		}
	}
	infos, err := geo.Describe(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		t.Logf("%+v", in)
	}
}

// TestHanInEnglishData: a few DB-IP "English" names are written in Han
// characters; they must not appear in English text.
func TestHanInEnglishData(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFlatCity(t, filepath.Join(dir, "c.mmdb"), "city ipv4", 4, []geotest.FlatRow{
		{Network: "1.36.80.0/24", CountryCode: "HK", State1: "Islands", City: "东涌", Latitude: 22.2877, Longitude: 113.9436},
	})
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	en := lookup(t, e, "1.36.80.1", ipatlas.English)
	checkLanguages(t, en, ipatlas.English)
	if en.City != "" || en.Province != "Islands" {
		t.Errorf("English: %s", show(en))
	}
	if zh := lookup(t, e, "1.36.80.1", ipatlas.Chinese); zh.City != "东涌" {
		t.Errorf("Chinese: %s", show(zh))
	}
}
