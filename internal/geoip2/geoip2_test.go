package geoip2_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/accuracy"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/geoip2"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"
)

// fixtureEngine opens the fixture dataset with the built-in privacy
// lists and a fresh Tor exit list naming 8.8.8.8.
func fixtureEngine(t *testing.T) *geo.Engine {
	t.Helper()
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(40, "8.8.8.8"), time.Now())
	e, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func answer(t *testing.T, e *geo.Engine, ip string) geo.Answer {
	t.Helper()
	a, err := e.Answer(netip.MustParseAddr(ip))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestNew checks the tree of each service against the fixture's places.
func TestNew(t *testing.T) {
	e := fixtureEngine(t)
	nb := geotest.Nuremberg
	a := answer(t, e, nb.IP)
	m := geoip2.New(&a, geoip2.CityService)
	de := geoip2.Country{IsInEuropeanUnion: true, ISOCode: "DE", Names: geoip2.Names{EN: "Germany", ZH: "德国"}}
	if m == nil || *m.Continent != (geoip2.Continent{Code: "EU", Names: geoip2.Names{EN: "Europe", ZH: "欧洲"}}) ||
		*m.Country != de || *m.RegisteredCountry != de || m.Country == m.RegisteredCountry ||
		m.City.Names.EN != "Nuremberg" || m.City.Names.ZH != a.CityZH || *m.Postal != (geoip2.Postal{Code: nb.ZipCode}) {
		t.Fatalf("city, Nuremberg: %+v", m)
	}
	if len(m.Subdivisions) != 1 || m.Subdivisions[0] != (geoip2.Subdivision{ISOCode: "BY", Names: geoip2.Names{EN: "Bavaria", ZH: a.ProvinceZH}}) {
		t.Errorf("subdivisions %+v", m.Subdivisions)
	}
	if l := m.Location; *l.Latitude != nb.Latitude || *l.Longitude != nb.Longitude || l.TimeZone != nb.TimeZone || int(l.AccuracyRadius) != a.AccuracyRadius || a.AccuracyRadius != accuracy.CityRadius[accuracy.GroupEurope] {
		t.Errorf("location %+v", l)
	}
	if m.Traits != (geoip2.Traits{ASN: 24940, ASOrganization: nb.ISP, ISP: nb.ISP, Organization: nb.ISP}) || m.ASN != 24940 || m.ASOrganization != nb.ISP {
		t.Errorf("traits %+v, top level %d %q", m.Traits, m.ASN, m.ASOrganization)
	}
	if m.Ipatlas != nil {
		t.Errorf("City has ipatlas's own keys: %+v", m.Ipatlas)
	}

	// Country: the continent and the countries alone.
	c := geoip2.New(&a, geoip2.CountryService)
	if c.City != nil || c.Location != nil || c.Postal != nil || c.Subdivisions != nil || c.Traits != (geoip2.Traits{}) ||
		*c.Country != de || *c.RegisteredCountry != de || c.Continent == nil {
		t.Errorf("country, Nuremberg: %+v", c)
	}

	// Insights: the flags, from the lists, and ipatlas's own keys.
	g := answer(t, e, "8.8.8.8")
	in := geoip2.New(&g, geoip2.InsightsService)
	if tr := in.Traits; !tr.IsAnonymous || !tr.IsHostingProvider || !tr.IsTorExitNode || tr.IsAnonymousVPN || tr.IsPublicProxy || tr.IsResidentialProxy {
		t.Errorf("insights, 8.8.8.8: %+v", tr)
	}
	if in.Country.IsInEuropeanUnion || int(in.Location.AccuracyRadius) != accuracy.CityRadius[accuracy.GroupNorthAmerica] {
		t.Errorf("insights, 8.8.8.8: %+v %+v", in.Country, in.Location)
	}
	if own := in.Ipatlas; own == nil || own.Privacy == nil || !own.Privacy.Hosting || own.Privacy.Tor == nil || !*own.Privacy.Tor ||
		own.Currency != "USD" || own.AreaCode != "1" || own.LocationSource != geo.SourceDataset || own.Confidence != ipatlas.ConfidenceMedium {
		t.Errorf("insights, 8.8.8.8, ipatlas: %+v", in.Ipatlas)
	}
	if city := geoip2.New(&g, geoip2.CityService); city.Traits.IsAnonymous || city.Traits.IsHostingProvider {
		t.Errorf("city has flags: %+v", city.Traits)
	}

	// A time zone alone, no AS; and nothing at all.
	sg := answer(t, e, geotest.Singapore.IP)
	s := geoip2.New(&sg, geoip2.InsightsService)
	if *s.Location != (geoip2.Location{TimeZone: "Asia/Singapore"}) || s.Traits.ASN != 0 || s.City != nil {
		t.Errorf("Singapore: %+v %+v", s.Location, s.Traits)
	}
	none := answer(t, e, geotest.UncoveredIP)
	for _, svc := range []geoip2.Service{geoip2.CountryService, geoip2.CityService, geoip2.InsightsService} {
		if m := geoip2.New(&none, svc); m != nil {
			t.Errorf("%s, service %d: %+v, want nil", geotest.UncoveredIP, svc, m)
		}
	}

	// A coarse location; a region with a code and no name.
	coarse := geo.Answer{CountryCode: "SG", HasLocation: true, Latitude: 1.3, Longitude: 103.8, ProvinceCode: "02",
		AccuracyRadius: accuracy.CoarseRadius, Confidence: ipatlas.ConfidenceLow}
	cm := geoip2.New(&coarse, geoip2.CityService)
	if cm.Location.AccuracyRadius != accuracy.CoarseRadius || len(cm.Subdivisions) != 1 || cm.Subdivisions[0].ISOCode != "02" {
		t.Errorf("coarse: %+v %+v", cm.Location, cm.Subdivisions)
	}
}

// TestNewIsNilWhenEmpty: New says nothing exactly when its tree would
// hold nothing besides the request's own members (the address, the
// account) and ipatlas's own keys: the web service's not-found and the
// export's gap are the same addresses.
func TestNewIsNilWhenEmpty(t *testing.T) {
	fields := []func(*geo.Answer){
		func(a *geo.Answer) { a.ContinentCode = "EU" }, func(a *geo.Answer) { a.ContinentZH = "欧洲" },
		func(a *geo.Answer) { a.CountryCode = "DE" }, func(a *geo.Answer) { a.Country = "Germany" },
		func(a *geo.Answer) { a.ProvinceCode = "BY" }, func(a *geo.Answer) { a.ProvinceZH = "巴伐利亚" },
		func(a *geo.Answer) { a.City = "Nuremberg" }, func(a *geo.Answer) { a.CityZH = "纽伦堡" },
		func(a *geo.Answer) { a.Postal = "90402" }, func(a *geo.Answer) { a.HasLocation = true },
		func(a *geo.Answer) { a.TimeZone = "Europe/Berlin" }, func(a *geo.Answer) { a.ASN = 24940 },
		func(a *geo.Answer) { a.PrivacyKnown, a.Hosting = true, true }, func(a *geo.Answer) { a.PrivacyKnown, a.VPN = true, true },
		func(a *geo.Answer) { a.PrivacyKnown, a.Relay = true, true }, func(a *geo.Answer) { a.PrivacyKnown, a.TorKnown, a.Tor = true, true, true },
	}
	own := geo.Answer{District: "Mitte", Currency: "EUR", AreaCode: "49", Source: geo.SourceOverride, PrivacyKnown: true, TorKnown: true, Service: "Example"}
	if m := geoip2.New(&own, geoip2.InsightsService); m != nil {
		t.Errorf("ipatlas's own fields alone: %+v", m)
	}
	for i, set := range fields {
		a := own
		set(&a)
		m := geoip2.New(&a, geoip2.InsightsService)
		if m == nil {
			t.Errorf("field %d: %+v says nothing", i, a)
			continue
		}
		m.Ipatlas = nil
		if reflect.ValueOf(*m).IsZero() {
			t.Errorf("field %d: %+v is an empty tree", i, a)
		}
	}
}

// fill sets every member of v, recursively, to a value that is not
// empty: a member the model gains is filled too.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		fill(v.Index(0), n)
		fill(v.Index(1), n)
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)) + "中")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n))
	case reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	default:
		panic("fill: a " + v.Type().String())
	}
}

// webJSON is a tree as the web service sends it, decoded.
func webJSON(t *testing.T, m *geoip2.Model) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// readBack writes records to an MMDB at 1.0.0.i, one each, and reads
// each back as a GeoIP2 reader does, as JSON would decode it.
func readBack(t *testing.T, recs []mmdbtype.Map) []map[string]any {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoIP2-City", IPVersion: 6, RecordSize: 28, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if err := tree.Insert(netipx.PrefixIPNet(netip.PrefixFrom(netip.AddrFrom4([4]byte{1, 0, 0, byte(i)}), 32)), r); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	db, err := maxminddb.OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := make([]map[string]any, len(recs))
	for i := range recs {
		var v any
		if err := db.Lookup(netip.AddrFrom4([4]byte{1, 0, 0, byte(i)})).Decode(&v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// sameTree compares a tree's JSON and its MMDB record read back, but for
// the members the package comment names as one encoder's alone.
func sameTree(t *testing.T, label string, web, file map[string]any) {
	t.Helper()
	web, file = clone(web), clone(file)
	delete(web, "maxmind")
	if tr, ok := web["traits"].(map[string]any); ok {
		delete(tr, "ip_address")
		delete(tr, "network")
		if len(tr) == 0 {
			delete(web, "traits")
		}
	}
	delete(file, "autonomous_system_number")
	delete(file, "autonomous_system_organization")
	delete(file, "ipatlas")
	if !reflect.DeepEqual(web, file) {
		w, _ := json.Marshal(web)
		f, _ := json.Marshal(file)
		t.Errorf("%s: the web service's JSON\n%s\nthe file's record\n%s", label, w, f)
	}
}

func clone(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var c map[string]any
	json.Unmarshal(b, &c)
	return c
}

// TestMMDBMatchesJSON: the file's record of a tree, read back, is the web
// service's JSON of it but for the members the tags set apart: for a tree
// with every member filled (so a member the model gains is held too),
// and for the fixture's answers.
func TestMMDBMatchesJSON(t *testing.T) {
	var full geoip2.Model
	n := 0
	fill(reflect.ValueOf(&full).Elem(), &n)
	e := fixtureEngine(t)
	trees := []*geoip2.Model{&full}
	for _, ip := range []string{geotest.MountainView.IP, geotest.Beijing.IP, geotest.Singapore.IP, geotest.Nuremberg.IP, geotest.GoogleV6.IP, "104.28.28.1"} {
		a := answer(t, e, ip)
		trees = append(trees, geoip2.New(&a, geoip2.InsightsService))
	}
	enc := geoip2.NewMMDBEncoder()
	var recs []mmdbtype.Map
	for _, m := range trees {
		r, err := enc.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	back := readBack(t, recs)
	for i, m := range trees {
		web := webJSON(t, m)
		sameTree(t, "tree "+string(rune('0'+i)), web, back[i])
	}

	// The file's own members: the AS at the top level, ipatlas's keys.
	f := back[0]
	own, _ := json.Marshal(full.Ipatlas)
	var ownJSON any
	json.Unmarshal(own, &ownJSON)
	if f["autonomous_system_number"] != float64(full.ASN) || f["autonomous_system_organization"] != full.ASOrganization ||
		!reflect.DeepEqual(f["ipatlas"], ownJSON) {
		t.Errorf("the file's own members: %v %v %v, want %d %q %s", f["autonomous_system_number"], f["autonomous_system_organization"], f["ipatlas"],
			full.ASN, full.ASOrganization, own)
	}
	if _, ok := back[0]["traits"].(map[string]any)["ip_address"]; ok {
		t.Error("the file holds traits.ip_address")
	}
	// Traits with nothing but the address are left out of a file.
	sg := answer(t, e, geotest.Singapore.IP)
	r, err := enc.Encode(geoip2.New(&sg, geoip2.InsightsService))
	if _, ok := r["traits"]; ok || err != nil {
		t.Errorf("Singapore's empty traits: %v %v", r["traits"], err)
	}
}

// TestMMDBShares: equal parts of different records are one value, so an
// export holds each distinct part once.
func TestMMDBShares(t *testing.T) {
	e := fixtureEngine(t)
	enc := geoip2.NewMMDBEncoder()
	a, b := answer(t, e, geotest.MountainView.IP), answer(t, e, geotest.GoogleV6.IP)
	ra, err := enc.Encode(geoip2.New(&a, geoip2.InsightsService))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := enc.Encode(geoip2.New(&b, geoip2.InsightsService))
	if err != nil {
		t.Fatal(err)
	}
	same := func(x, y mmdbtype.DataType) bool { return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer() }
	for _, k := range []mmdbtype.String{"continent", "country", "city", "subdivisions", "location"} {
		if ra[k] == nil || !same(ra[k], rb[k]) {
			t.Errorf("%s is not shared: %v, %v", k, ra[k], rb[k])
		}
	}
	if !same(ra["country"], ra["registered_country"]) {
		t.Error("country and registered_country are two values")
	}
	if same(ra, rb) {
		t.Error("two records are one map")
	}
	nb := answer(t, e, geotest.Nuremberg.IP)
	rn, _ := enc.Encode(geoip2.New(&nb, geoip2.InsightsService))
	if same(rn["country"], ra["country"]) || same(rn["location"], ra["location"]) {
		t.Error("different parts shared")
	}
}
