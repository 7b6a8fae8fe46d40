package ipatlas_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ipatlas/ipatlas"
)

// fullRecord has every field set, coordinates included.
func fullRecord() ipatlas.Record {
	lat, lon := 37.4, -122.1
	return ipatlas.Record{
		IP: "8.8.8.8", Continent: "North America", ContinentCode: "NA", Country: "United States",
		CountryCode: "US", Province: "California", ProvinceCode: "CA", City: "Mountain View", District: "Santa Clara",
		ISP: "Google LLC", ASN: "AS15169", Latitude: &lat, Longitude: &lon,
		TimeZone: "America/Los_Angeles", Currency: "USD", ZipCode: "94043", AreaCode: "1",
		Route:          netip.MustParsePrefix("8.8.8.0/24"),
		Privacy:        &ipatlas.Privacy{Hosting: true, Tor: new(false), Service: "Google"},
		LocationSource: "dataset", AccuracyRadius: 20, Confidence: ipatlas.ConfidenceHigh,
		Hostname: "dns.google", HostnameConfirmed: new(true),
	}
}

func jsonObject(t *testing.T, v any) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRecordFieldsAreRecordTags: the names a "fields" list may hold are
// exactly Record's JSON keys, in its order. A field added to Record
// without being made selectable fails here.
func TestRecordFieldsAreRecordTags(t *testing.T) {
	var tags []string
	rt := reflect.TypeFor[ipatlas.Record]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		tags = append(tags, name)
	}
	if got := ipatlas.RecordFields(); !slices.Equal(got, tags) {
		t.Fatalf("RecordFields() = %v\nRecord's keys   %v", got, tags)
	}
	// PartialRecord has the same keys in the same order.
	pt := reflect.TypeFor[ipatlas.PartialRecord]()
	for i := range pt.NumField() {
		name, _, _ := strings.Cut(pt.Field(i).Tag.Get("json"), ",")
		if name != tags[i] {
			t.Errorf("PartialRecord field %d is %q, Record's is %q", i, name, tags[i])
		}
	}
}

// TestPartialEachField selects each field alone: the JSON object holds
// "ip" and that field, with the value the full record has, even when the
// value is empty.
func TestPartialEachField(t *testing.T) {
	full := fullRecord()
	fullJSON := jsonObject(t, &full)
	empty := ipatlas.Record{IP: "1.1.1.1"}
	emptyJSON := jsonObject(t, &empty)
	for _, name := range ipatlas.RecordFields() {
		set, err := ipatlas.ParseFields([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		got := jsonObject(t, set.Partial(&full))
		want := map[string]json.RawMessage{"ip": fullJSON["ip"], name: fullJSON[name]}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("fields [%s]: %v, want %v", name, keysOf(got), keysOf(want))
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Errorf("fields [%s]: %s = %s, want %s", name, k, got[k], v)
			}
		}
		// An empty string field is still sent, the host name included
		// (asked for, and none), and whether it is confirmed, as null;
		// unknown coordinates are not (as in a full record).
		got = jsonObject(t, set.Partial(&empty))
		_, inFull := emptyJSON[name]
		inFull = inFull || name == "hostname" || name == "hostname_confirmed"
		if _, has := got[name]; has != inFull || len(got) != 1+btoi(inFull && name != "ip") {
			t.Errorf("fields [%s] of an empty record: %v", name, keysOf(got))
		}
		if name == "hostname_confirmed" && string(got[name]) != "null" {
			t.Errorf("fields [%s] of an empty record: %s, want null", name, got[name])
		}
		// Apply keeps that field and "ip" and clears the others.
		want2 := ipatlas.Record{IP: full.IP}
		i := slices.Index(ipatlas.RecordFields(), name)
		reflect.ValueOf(&want2).Elem().Field(i).Set(reflect.ValueOf(full).Field(i))
		if applied := set.Apply(full); !reflect.DeepEqual(applied, want2) {
			t.Errorf("Apply([%s]) = %+v, want %+v", name, applied, want2)
		}
	}
	defaults := full
	defaults.Hostname, defaults.HostnameConfirmed = "", nil
	if got := ipatlas.FieldSet(0).Apply(full); !reflect.DeepEqual(got, defaults) {
		t.Errorf("Apply with the default fields = %+v, want the record without its host name", got)
	}
}

// defaultFields are the names of the zero FieldSet: every field but the
// optional ones.
func defaultFields() []string {
	return slices.DeleteFunc(ipatlas.RecordFields(), func(n string) bool { return n == "hostname" || n == "hostname_confirmed" })
}

// The host name fields are selectable but not in the default selection:
// a DNS lookup is made only for a query that names them.
func TestOptionalFields(t *testing.T) {
	var all ipatlas.FieldSet
	for _, n := range []string{"hostname", "hostname_confirmed"} {
		if all.Has(n) {
			t.Errorf("the default selection has %s", n)
		}
		s, err := ipatlas.ParseFields([]string{n})
		if err != nil || !s.Has(n) || s.All() || !slices.Equal(s.Names(), []string{"ip", n}) {
			t.Errorf("[%s]: %v %v", n, s.Names(), err)
		}
	}
	if !slices.Equal(all.Names(), defaultFields()) {
		t.Errorf("default names %v", all.Names())
	}
	// Every field, the optional ones included, is not the default.
	every, _ := ipatlas.ParseFields(ipatlas.RecordFields())
	if every.All() || !every.Has("hostname") || !every.Has("city") || !slices.Equal(every.Names(), ipatlas.RecordFields()) {
		t.Errorf("every field: all=%v %v", every.All(), every.Names())
	}
	// The default fields and the host name: everything in a full record,
	// and the host name.
	s, _ := ipatlas.ParseFields(append(defaultFields(), "hostname"))
	full := fullRecord()
	got := jsonObject(t, s.Partial(&full))
	if _, ok := got["hostname_confirmed"]; ok || string(got["hostname"]) != `"dns.google"` || string(got["privacy"]) == "" || len(got) != len(defaultFields())+1 {
		t.Errorf("default fields and hostname: %v", keysOf(got))
	}
	if full.Text("hostname") != "dns.google" || full.Text("hostname_confirmed") != "true" || (&ipatlas.Record{}).Text("hostname_confirmed") != "" {
		t.Error("Text of the host name fields")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func keysOf(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestParseFields(t *testing.T) {
	for _, tc := range []struct {
		in    []string
		all   bool
		names []string
	}{
		{nil, true, defaultFields()},
		{[]string{}, true, defaultFields()},
		{[]string{"ip"}, false, []string{"ip"}},
		{[]string{"city", "country", "city"}, false, []string{"ip", "country", "city"}},
		{[]string{"latitude", "ip", "longitude"}, false, []string{"ip", "latitude", "longitude"}},
		// Every default field named is the same as none: one canonical
		// value.
		{defaultFields()[1:], true, defaultFields()},
	} {
		s, err := ipatlas.ParseFields(tc.in)
		if err != nil {
			t.Fatalf("%v: %v", tc.in, err)
		}
		if s.All() != tc.all || !slices.Equal(s.Names(), tc.names) {
			t.Errorf("%v: all=%v names %v, want all=%v %v", tc.in, s.All(), s.Names(), tc.all, tc.names)
		}
		if !s.Has("ip") {
			t.Errorf("%v: no ip", tc.in)
		}
		if want := strings.Join(tc.names, ","); !tc.all && s.String() != want {
			t.Errorf("%v: String() = %q, want %q", tc.in, s.String(), want)
		}
	}
	all, _ := ipatlas.ParseFields(defaultFields())
	if all != 0 || all.String() != "" {
		t.Errorf("all fields: %d %q, want the zero FieldSet", all, all.String())
	}
	for _, bad := range []string{"City", "cityy", "", " city", "data", strings.Repeat("x", 100)} {
		_, err := ipatlas.ParseFields([]string{"city", bad})
		var e *ipatlas.Error
		if !errors.As(err, &e) || e.Code != ipatlas.CodeInvalidRequest || !strings.Contains(e.Message, `"`+bad[:min(len(bad), 32)]) {
			t.Errorf("%q: %v, want InvalidRequest naming it", bad, err)
		}
		if len(e.Message) > 400 {
			t.Errorf("%q: message of %d bytes", bad, len(e.Message))
		}
	}
	if s, _ := ipatlas.ParseFields([]string{"city"}); s.Has("country") || !s.Has("city") || s.Has("nope") {
		t.Errorf("Has on [city]: %v", s.Names())
	}
}

// Text names every scalar field by its JSON key and writes coordinates,
// the route and the network as they read back.
func TestRecordText(t *testing.T) {
	lat, lon := 37.4225, -122.0841
	r := ipatlas.Record{IP: "8.8.8.8", Continent: "North America", ContinentCode: "NA", Country: "United States",
		CountryCode: "US", Province: "California", ProvinceCode: "CA", City: "Mountain View", District: "d", ISP: "Google LLC",
		ASN: "AS15169", Latitude: &lat, Longitude: &lon, TimeZone: "America/Los_Angeles", Currency: "USD",
		ZipCode: "94043", AreaCode: "1", Route: netip.MustParsePrefix("8.8.8.0/24"), Network: netip.MustParsePrefix("8.8.8.0/25"),
		Privacy: &ipatlas.Privacy{Hosting: true}, LocationSource: "dataset", AccuracyRadius: 20, Confidence: ipatlas.ConfidenceHigh,
		Hostname: "dns.google", HostnameConfirmed: new(false)}
	for _, k := range ipatlas.RecordFields() {
		got := r.Text(k)
		if k == "privacy" {
			if got != "" {
				t.Errorf("Text(privacy) = %q, want \"\": each caller writes the object its own way", got)
			}
			continue
		}
		if got == "" {
			t.Errorf("Text(%q) is empty", k)
		}
	}
	if r.Text("latitude") != "37.4225" || r.Text("longitude") != "-122.0841" || r.Text("route") != "8.8.8.0/24" || r.Text("network") != "8.8.8.0/25" {
		t.Errorf("coordinates, route and network: %q %q %q %q", r.Text("latitude"), r.Text("longitude"), r.Text("route"), r.Text("network"))
	}
	var empty ipatlas.Record
	if empty.Text("latitude") != "" || empty.Text("route") != "" || empty.Text("nope") != "" {
		t.Error("unset or unknown fields are not empty")
	}
}

// hostname_confirmed, once named, is always in the answer: true or false
// when the forward lookup answered, null when that is unknown; and a
// client reads each back as the record had it.
func TestHostnameConfirmedWhenNamed(t *testing.T) {
	set, err := ipatlas.ParseFields([]string{"hostname_confirmed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v    *bool
		want string
	}{{new(true), "true"}, {new(false), "false"}, {nil, "null"}} {
		r := ipatlas.Record{IP: "192.0.2.1", HostnameConfirmed: c.v}
		b, err := json.Marshal(set.Partial(&r))
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"ip":"192.0.2.1","hostname_confirmed":` + c.want + `}`; string(b) != want {
			t.Errorf("%s, want %s", b, want)
		}
		var back ipatlas.Record
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.HostnameConfirmed, c.v) || !reflect.DeepEqual(set.Apply(r), r) {
			t.Errorf("%s read back as %v, applied as %+v", b, back.HostnameConfirmed, set.Apply(r))
		}
	}
	// Not named: not in the answer, whatever the record holds.
	city, _ := ipatlas.ParseFields([]string{"city"})
	r := ipatlas.Record{IP: "192.0.2.1", HostnameConfirmed: new(true)}
	if b, _ := json.Marshal(city.Partial(&r)); strings.Contains(string(b), "hostname") {
		t.Errorf("fields [city]: %s", b)
	}
}
