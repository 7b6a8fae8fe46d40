package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/export"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/realdata"
	"github.com/oschwald/maxminddb-golang/v2"
	"go4.org/netipx"
)

// TestMaxMindMatchesExport holds the two encoders of the GeoIP2 model
// together on the real dataset: for a sample of addresses, the MaxMind
// shape's Insights answer and the record an export holds for the address,
// read back as a GeoIP2 reader reads it, are the same tree, but for the
// members package geoip2 names as one encoder's alone (the request's
// traits.ip_address and maxmind; the file's top-level AS and ipatlas
// keys); and an address the shape answers IP_ADDRESS_NOT_FOUND has no
// record in the file.
func TestMaxMindMatchesExport(t *testing.T) {
	dir := realdata.Dir(t)
	e := realEnv(t, dir)
	// The privacy lists built in, so that flags are compared too.
	engine, err := geo.Open(dir, geo.Options{BuiltinPrivacy: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	e.srv.deps.Geo = engine
	acct, k := e.customer(t, account.Enterprise, 100000, 100000)

	seed := uint64(time.Now().UnixNano())
	t.Logf("random addresses from seed %d", seed)
	r := mrand.New(mrand.NewPCG(seed, 0))
	addrs := []netip.Addr{netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("104.28.28.1")}
	for i := range 300 {
		// IPv4; RIPE's IPv6 space, where DB-IP places everything; and all
		// of IPv6's global unicast, much of which no data covers.
		p := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("2a00::/12"), netip.MustParsePrefix("2000::/3")}[i%3]
		if a := publicIn(r, p); !export.SixToFour.Contains(a) {
			addrs = append(addrs, a)
		}
	}

	// The export's records of the sample's addresses, each its own
	// network, as the export writes any network: in address order.
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	f, err := export.NewMMDB(export.MMDBOptions{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, a := range addrs {
		ans, err := export.Lookup(engine, a)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Insert(netipx.IPRangeFrom(a, a), &ans); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := f.Finish(&buf); err != nil {
		t.Fatal(err)
	}
	db, err := maxminddb.OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var found, notFound, flagged int
	for _, a := range addrs {
		res := mmGet(t, e, "/geoip/v2.1/insights/"+a.String(), acct.ID, k.Secret)
		rec := db.Lookup(a)
		if res.Code == 404 {
			if code := mmCode(t, res); code != maxmindNotFound || rec.Found() {
				t.Errorf("%s: the shape answers %s, the file has a record: %v", a, code, rec.Found())
			}
			notFound++
			continue
		}
		if res.Code != 200 || !rec.Found() {
			t.Fatalf("%s: the shape answers %d %s, the file has a record: %v", a, res.Code, res.Body, rec.Found())
		}
		found++
		var web map[string]any
		if err := json.Unmarshal(res.Body.Bytes(), &web); err != nil {
			t.Fatal(err)
		}
		var raw any
		if err := rec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		file := asJSON(t, raw)

		// The request's members: the address and the account.
		traits, _ := web["traits"].(map[string]any)
		if traits["ip_address"] != a.String() {
			t.Errorf("%s: ip_address %v", a, traits["ip_address"])
		}
		delete(traits, "ip_address")
		// The answer's network, which the file's reader gives from its
		// tree (TestExportNetworksHoldTheAnswers).
		if n, err := netip.ParsePrefix(fmt.Sprint(traits["network"])); err != nil || !n.Contains(a) {
			t.Errorf("%s: network %v", a, traits["network"])
		}
		delete(traits, "network")
		if len(traits) == 0 {
			delete(web, "traits")
		}
		if traits["is_anonymous"] == true {
			flagged++
		}
		delete(web, "maxmind")
		// The file's: the AS at the top level, as in traits, and
		// ipatlas's keys.
		if traits["autonomous_system_number"] != file["autonomous_system_number"] ||
			traits["autonomous_system_organization"] != file["autonomous_system_organization"] {
			t.Errorf("%s: the file's top-level AS %v %v, traits' %v %v", a, file["autonomous_system_number"],
				file["autonomous_system_organization"], traits["autonomous_system_number"], traits["autonomous_system_organization"])
		}
		delete(file, "autonomous_system_number")
		delete(file, "autonomous_system_organization")
		delete(file, "ipatlas")

		if !reflect.DeepEqual(web, file) {
			w, _ := json.Marshal(web)
			b, _ := json.Marshal(file)
			t.Errorf("%s: the shape answers\n%s\nthe file holds\n%s", a, w, b)
		}
	}
	t.Logf("%d addresses answered alike, %d (%d with a flag) found, %d found in neither", found+notFound, found, flagged, notFound)
	if found < 100 || notFound == 0 {
		t.Errorf("the sample had %d addresses found and %d not: both kinds are meant to be compared", found, notFound)
	}
}

// asJSON is v as encoding/json decodes its JSON into a map.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
