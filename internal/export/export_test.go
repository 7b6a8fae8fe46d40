package export_test

import (
	"bytes"
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/export"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"
)

// overrides places a network of no dataset record, one inside a dataset
// network, and one a spreadsheet would take for a formula.
const overrides = `198.51.99.0/24,JP,JP-13,Tokyo,
8.8.8.128/25,US,US-NY,New York,10001
2a00:1450:4001::/48,DE,DE-BY,"=cmd|' /C calc'!A0",
`

// fixtureEngine opens the fixture dataset with the built-in privacy
// lists, a fresh Tor exit list and an overrides file.
func fixtureEngine(t testing.TB) *geo.Engine {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(40, "8.8.4.4"), time.Now())
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	path := filepath.Join(dir, "overrides.csv")
	if err := os.WriteFile(path, []byte(overrides), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := geofeed.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e.SetOverrides(&geo.Overrides{File: path, Feed: f})
	return e
}

// mmdbRecord is the exported record as a GeoIP2 reader decodes it.
type mmdbRecord struct {
	Continent struct {
		Code  string            `maxminddb:"code"`
		Names map[string]string `maxminddb:"names"`
	} `maxminddb:"continent"`
	Country struct {
		ISOCode string            `maxminddb:"iso_code"`
		Names   map[string]string `maxminddb:"names"`
	} `maxminddb:"country"`
	Subdivisions []struct {
		ISOCode string            `maxminddb:"iso_code"`
		Names   map[string]string `maxminddb:"names"`
	} `maxminddb:"subdivisions"`
	City struct {
		Names map[string]string `maxminddb:"names"`
	} `maxminddb:"city"`
	Postal struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"postal"`
	Location struct {
		AccuracyRadius uint16   `maxminddb:"accuracy_radius"`
		Latitude       *float64 `maxminddb:"latitude"`
		Longitude      *float64 `maxminddb:"longitude"`
		TimeZone       string   `maxminddb:"time_zone"`
	} `maxminddb:"location"`
	ASN    uint32 `maxminddb:"autonomous_system_number"`
	ASOrg  string `maxminddb:"autonomous_system_organization"`
	Traits struct {
		ASN       uint32 `maxminddb:"autonomous_system_number"`
		ASOrg     string `maxminddb:"autonomous_system_organization"`
		ISP       string `maxminddb:"isp"`
		Hosting   bool   `maxminddb:"is_hosting_provider"`
		VPN       bool   `maxminddb:"is_anonymous_vpn"`
		Tor       bool   `maxminddb:"is_tor_exit_node"`
		Anonymous bool   `maxminddb:"is_anonymous"`
	} `maxminddb:"traits"`
	Ipatlas struct {
		District struct {
			Names map[string]string `maxminddb:"names"`
		} `maxminddb:"district"`
		Currency       string `maxminddb:"currency"`
		AreaCode       string `maxminddb:"area_code"`
		LocationSource string `maxminddb:"location_source"`
		Confidence     string `maxminddb:"confidence"`
		Privacy        *struct {
			Hosting bool   `maxminddb:"hosting"`
			VPN     bool   `maxminddb:"vpn"`
			Tor     *bool  `maxminddb:"tor"`
			Relay   bool   `maxminddb:"relay"`
			Service string `maxminddb:"service"`
		} `maxminddb:"privacy"`
	} `maxminddb:"ipatlas"`
}

// answer is the record read back as an export.Answer.
func (r *mmdbRecord) answer(t *testing.T) export.Answer {
	t.Helper()
	a := export.Answer{
		ContinentCode: r.Continent.Code, Continent: r.Continent.Names["en"], ContinentZH: r.Continent.Names["zh-CN"],
		CountryCode: r.Country.ISOCode, Country: r.Country.Names["en"], CountryZH: r.Country.Names["zh-CN"],
		City: r.City.Names["en"], CityZH: r.City.Names["zh-CN"],
		District: r.Ipatlas.District.Names["en"], DistrictZH: r.Ipatlas.District.Names["zh-CN"],
		Postal: r.Postal.Code, TimeZone: r.Location.TimeZone, Currency: r.Ipatlas.Currency, AreaCode: r.Ipatlas.AreaCode,
		ASN: r.ASN, ISP: r.ASOrg, Source: r.Ipatlas.LocationSource,
		AccuracyRadius: int(r.Location.AccuracyRadius), Confidence: r.Ipatlas.Confidence,
	}
	if len(r.Subdivisions) > 1 {
		t.Errorf("%d subdivisions, want at most 1", len(r.Subdivisions))
	}
	if len(r.Subdivisions) == 1 {
		s := r.Subdivisions[0]
		a.ProvinceCode, a.Province, a.ProvinceZH = s.ISOCode, s.Names["en"], s.Names["zh-CN"]
	}
	if r.Location.Latitude != nil && r.Location.Longitude != nil {
		a.Latitude, a.Longitude, a.HasLocation = *r.Location.Latitude, *r.Location.Longitude, true
	}
	if p := r.Ipatlas.Privacy; p != nil {
		a.PrivacyKnown, a.Hosting, a.VPN, a.Relay, a.Service = true, p.Hosting, p.VPN, p.Relay, p.Service
		if p.Tor != nil {
			a.TorKnown, a.Tor = true, *p.Tor
		}
	}
	// GeoIP2's keys say the same as ipatlas' own.
	tr := r.Traits
	if tr.ASN != r.ASN || tr.ASOrg != r.ASOrg || tr.ISP != r.ASOrg {
		t.Errorf("traits' AS %d %q %q, top level %d %q", tr.ASN, tr.ASOrg, tr.ISP, r.ASN, r.ASOrg)
	}
	if tr.Hosting != a.Hosting || tr.VPN != a.VPN || tr.Tor != a.Tor || tr.Anonymous != (a.VPN || a.Hosting || a.Tor || a.Relay) {
		t.Errorf("traits' flags %+v, ipatlas' %+v", tr, r.Ipatlas.Privacy)
	}
	return a
}

// TestMMDBReadBack reads every network of an export with
// maxminddb-golang, as Caddy's and Traefik's GeoIP2 plugins do, and checks
// that its record is the engine's answer for the network's first and last
// address, and that every public address of the data has one.
func TestMMDBReadBack(t *testing.T) {
	e := fixtureEngine(t)
	var buf bytes.Buffer
	built := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	st, err := export.WriteMMDB(&buf, e, export.MMDBOptions{Description: map[string]string{"en": "test attribution"}, BuildTime: built})
	if err != nil {
		t.Fatal(err)
	}
	r, err := maxminddb.OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	md := r.Metadata
	if md.DatabaseType != export.DatabaseType || md.BuildEpoch != uint(built.Unix()) || md.Description["en"] != "test attribution" ||
		len(md.Languages) != 2 || md.Languages[0] != "en" || md.Languages[1] != "zh-CN" || md.IPVersion != 6 {
		t.Errorf("metadata %+v", md)
	}
	if st.Networks == 0 || st.Records == 0 || st.Prefixes < st.Networks {
		t.Errorf("stats %+v", st)
	}

	exported := exportedSpace(t)
	var covered netipx.IPSetBuilder
	n := 0
	for res := range r.Networks() {
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		p := res.Prefix()
		var rec mmdbRecord
		if err := res.Decode(&rec); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got := rec.answer(t)
		for _, addr := range []netip.Addr{p.Masked().Addr(), netipx.PrefixLastIP(p)} {
			want, err := export.Lookup(e, addr)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s (%s): the export answers\n%+v\nthe engine\n%+v", p, addr, got, want)
			}
			holdsNetwork(t, e, exported, p, addr)
		}
		covered.AddPrefix(p)
		n++
	}
	if n != st.Prefixes {
		t.Errorf("%d networks read back, %d written", n, st.Prefixes)
	}
	set, _ := covered.IPSet()

	// Every known place, override and flag is in it, in both languages.
	for _, k := range geotest.Places {
		if !set.Contains(netip.MustParseAddr(k.IP)) {
			t.Errorf("%s (%s) is not in the export", k.Label, k.IP)
		}
	}
	for _, ip := range []string{"198.51.99.7", "8.8.8.200", "2a00:1450:4001::1", "8.8.4.4", "185.220.100.1"} {
		if !set.Contains(netip.MustParseAddr(ip)) {
			t.Errorf("%s is not in the export", ip)
		}
	}
	var rec mmdbRecord
	if err := r.Lookup(netip.MustParseAddr("8.8.8.200")).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if rec.City.Names["en"] != "New York" || rec.Ipatlas.LocationSource != geo.SourceOverride || rec.Postal.Code != "10001" ||
		rec.ASN != 15169 || rec.Subdivisions[0].ISOCode != "NY" {
		t.Errorf("the override inside Google's network answers %+v", rec)
	}
	rec = mmdbRecord{}
	if err := r.Lookup(netip.MustParseAddr("185.220.100.1")).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Traits.Tor || !rec.Traits.Anonymous {
		t.Errorf("a Tor exit answers traits %+v", rec.Traits)
	}
	// Mapped addresses are answered as the IPv4 inside, as the engine does.
	var mapped mmdbRecord
	if err := r.Lookup(netip.MustParseAddr(geotest.MappedIP)).Decode(&mapped); err != nil || mapped.City.Names["en"] != geotest.MountainView.City {
		t.Errorf("%s: %v, city %q", geotest.MappedIP, err, mapped.City.Names["en"])
	}
	// What ipatlas refuses to answer is not in it.
	for _, ip := range []string{"10.0.0.1", "127.0.0.1", "192.168.1.1", "fe80::1", "2001:db8::1", "fc00::1"} {
		if set.Contains(netip.MustParseAddr(ip)) {
			t.Errorf("the non-public %s is in the export", ip)
		}
	}
}

// exportedSpace is the space an export may hold: the public space but
// 6to4's.
func exportedSpace(t testing.TB) *netipx.IPSet {
	var b netipx.IPSetBuilder
	for _, p := range netaddr.Public() {
		b.AddPrefix(p)
	}
	b.RemovePrefix(export.SixToFour)
	s, err := b.IPSet()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// holdsNetwork checks that p, the export's network that holds addr,
// holds the network of the engine's answer for addr: the export merges
// networks of equal answers, never splits one. The engine's network may
// reach into space the export leaves out (private, reserved, 6to4), which
// cuts it there.
func holdsNetwork(t testing.TB, e *geo.Engine, exported *netipx.IPSet, p netip.Prefix, addr netip.Addr) {
	t.Helper()
	_, n, err := e.AnswerNetwork(addr)
	if err != nil {
		t.Fatal(err)
	}
	if p.Bits() <= n.Bits() && p.Contains(n.Addr()) {
		return
	}
	if !exported.ContainsPrefix(n) && n.Contains(addr) && n.Bits() < p.Bits() && n.Contains(p.Addr()) {
		return
	}
	t.Errorf("%s: the export's network %s does not hold the answer's network %s", addr, p, n)
}

// TestCSVRows checks the CSV rows of a walk: one per CIDR, the engine's
// answer, the header's columns.
func TestCSVRows(t *testing.T) {
	e := fixtureEngine(t)
	rows := 0
	err := export.Walk(e, export.Options{}, func(r netipx.IPRange, a *export.Answer) error {
		want, err := export.Lookup(e, r.To())
		if err != nil {
			return err
		}
		if *a != want {
			t.Errorf("%s: the walk's answer differs from the last address's", r)
		}
		for _, p := range r.Prefixes() {
			row := a.CSVRow(p.String())
			if len(row) != len(export.CSVHeader) {
				t.Fatalf("%d cells, %d columns", len(row), len(export.CSVHeader))
			}
			rows++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 {
		t.Fatal("no rows")
	}
}

// TestMMDBInterrupted: an export whose context ends stops with its error
// and leaves no temporary file.
func TestMMDBInterrupted(t *testing.T) {
	e := fixtureEngine(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tmp := t.TempDir()
	_, err := export.WriteMMDB(&bytes.Buffer{}, e, export.MMDBOptions{Context: ctx, TempDir: tmp})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WriteMMDB: %v, want context.Canceled", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
