package geo_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/realdata"
)

// recordsOnly is a Locator that is not an AnswerLocator: LookupAnswer
// composes its answer from the two records.
type recordsOnly struct{ geo.Locator }

// checkAnswer holds Engine.Answer, one lookup, to the answer its records
// in English and Chinese make, for each address.
func checkAnswer(t *testing.T, e *geo.Engine, addrs []netip.Addr) {
	t.Helper()
	for _, a := range addrs {
		got, err := e.Answer(a)
		if err != nil {
			t.Fatal(err)
		}
		want, err := geo.LookupAnswer(recordsOnly{e}, a)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: one lookup answers\n%+v\nthe records\n%+v", a, got, want)
		}
		if via, err := geo.LookupAnswer(e, a); err != nil || via != got {
			t.Fatalf("%s: LookupAnswer on the engine %+v, %v", a, via, err)
		}
	}
}

// TestAnswerMatchesRecords: the answer in both languages says what the
// records in each language say, with and without the privacy lists and a
// fresh Tor list, for an override, an address of no data, a mapped
// address and one with a zone; and the engine's errors are Lookup's.
func TestAnswerMatchesRecords(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(40, "8.8.4.4"), time.Now())
	var addrs []netip.Addr
	for _, k := range geotest.Places {
		p := netip.MustParsePrefix(k.Network)
		addrs = append(addrs, p.Addr(), p.Addr().Next())
	}
	addrs = append(addrs, netip.MustParseAddr(geotest.UncoveredIP), netip.MustParseAddr(geotest.MappedIP),
		netip.MustParseAddr("2a01:4f8::1%eth0"), netip.MustParseAddr("8.8.4.4"), netip.MustParseAddr("104.28.28.1"),
		netip.MustParseAddr("8.8.8.1"))
	for _, opts := range []geo.Options{{}, {BuiltinPrivacy: true}} {
		e, err := geo.Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		e.SetOverrides(&geo.Overrides{File: "o.csv", Feed: parseFeed(t, "o.csv", "8.8.8.1/32,SG,SG-02,,\n")})
		checkAnswer(t, e, addrs)

		sg, err := e.Answer(netip.MustParseAddr("8.8.8.1"))
		if err != nil || sg.CountryCode != "SG" || sg.ProvinceCode != "02" || sg.Source != geo.SourceOverride || sg.ASN != 15169 {
			t.Errorf("the override: %+v, %v", sg, err)
		}
		none, err := e.Answer(netip.MustParseAddr(geotest.UncoveredIP))
		if err != nil || !none.Empty() {
			t.Errorf("%s: %+v, %v; want an empty answer", geotest.UncoveredIP, none, err)
		}
		if opts.BuiltinPrivacy {
			tor, _ := e.Answer(netip.MustParseAddr("8.8.4.4"))
			if !tor.PrivacyKnown || !tor.TorKnown || !tor.Tor {
				t.Errorf("a Tor exit: %+v", tor)
			}
		}
		if _, err := e.Answer(netip.Addr{}); err == nil {
			t.Error("the zero address: no error")
		}
		e.Close()
		if _, err := e.Answer(addrs[0]); err != geo.ErrClosed {
			t.Errorf("after Close: %v", err)
		}
	}
}

// The same on the real dataset, when there is one, IPv4 and IPv6.
func TestRealAnswerMatchesRecords(t *testing.T) {
	dir := realdata.Dir(t)
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	addrs := randomPublicIPv4(2000)
	for _, a := range addrs[:200] {
		// The same spread over IPv6: RIPE's space, where DB-IP has data.
		b := a.As4()
		addrs = append(addrs, netip.AddrFrom16([16]byte{0x2a, 0x00 | b[0]&0x0f, b[1], b[2], b[3], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}))
	}
	checkAnswer(t, e, addrs)
}

// Empty: an answer is empty until any place, AS or raised flag is in it,
// and ipatlas's own fields alone do not count.
func TestAnswerEmpty(t *testing.T) {
	var zero geo.Answer
	if !zero.Empty() {
		t.Error("the zero answer is not empty")
	}
	own := geo.Answer{District: "Mitte", Currency: "EUR", AreaCode: "49", Source: geo.SourceOverride,
		PrivacyKnown: true, TorKnown: true, Service: "Example VPN"}
	if !own.Empty() {
		t.Errorf("ipatlas's own fields alone: %+v not empty", own)
	}
	for name, set := range map[string]func(*geo.Answer){
		"continent code": func(a *geo.Answer) { a.ContinentCode = "EU" }, "continent": func(a *geo.Answer) { a.Continent = "Europe" },
		"continent zh": func(a *geo.Answer) { a.ContinentZH = "欧洲" }, "country code": func(a *geo.Answer) { a.CountryCode = "DE" },
		"country": func(a *geo.Answer) { a.Country = "Germany" }, "country zh": func(a *geo.Answer) { a.CountryZH = "德国" },
		"province code": func(a *geo.Answer) { a.ProvinceCode = "BY" }, "province": func(a *geo.Answer) { a.Province = "Bavaria" },
		"province zh": func(a *geo.Answer) { a.ProvinceZH = "巴伐利亚" }, "city": func(a *geo.Answer) { a.City = "Nuremberg" },
		"city zh": func(a *geo.Answer) { a.CityZH = "纽伦堡" }, "postal": func(a *geo.Answer) { a.Postal = "90402" },
		"coordinates": func(a *geo.Answer) { a.HasLocation = true }, "time zone": func(a *geo.Answer) { a.TimeZone = "Europe/Berlin" },
		"AS": func(a *geo.Answer) { a.ASN = 24940 }, "hosting": func(a *geo.Answer) { a.Hosting = true },
		"vpn": func(a *geo.Answer) { a.VPN = true }, "relay": func(a *geo.Answer) { a.Relay = true },
		"tor": func(a *geo.Answer) { a.Tor = true },
	} {
		a := own
		set(&a)
		if a.Empty() {
			t.Errorf("%s: %+v is empty", name, a)
		}
	}
	// AnswerOf reads the AS's number from the record's text.
	if a := geo.AnswerOf(ipatlas.Record{ASN: "AS15169"}, ipatlas.Record{}); a.ASN != 15169 {
		t.Errorf("AS15169: %d", a.ASN)
	}
}
