package geo

import "testing"

func TestCacheTwoWays(t *testing.T) {
	c := newCache[int](1) // one set of two ways
	if len(c.slots) != 2 {
		t.Fatalf("%d slots, want 2", len(c.slots))
	}
	a, b, d := &entry[int]{src: 0, off: 10, v: 1}, &entry[int]{src: 0, off: 20, v: 2}, &entry[int]{src: 1, off: 10, v: 3}
	c.put(a)
	c.put(b)
	if c.get(0, 10) != a || c.get(0, 20) != b {
		t.Fatal("two keys of one set do not both stay")
	}
	c.put(b) // storing the same key again must not evict the other
	if c.get(0, 10) != a {
		t.Fatal("re-storing a key evicted its neighbour")
	}
	c.put(d) // same offset, other source: a distinct key
	if c.get(1, 10) != d || c.get(0, 20) != b || c.get(0, 10) != nil {
		t.Fatalf("third key: want it and the most recent other, got %v %v %v", c.get(1, 10), c.get(0, 20), c.get(0, 10))
	}
	var off *cache[int]
	off.put(a)
	if off.get(0, 10) != nil {
		t.Fatal("a disabled cache returned an entry")
	}
}

func TestShortest(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{float64(float32(37.422)), 37.422},
		{float64(float32(-122.085)), -122.085},
		{43.88, 43.88}, // a double stays as it is
		{0, 0},
	} {
		if got := shortest(c.in); got != c.want {
			t.Errorf("shortest(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		dbType string
		kind   kind
		schema schema
	}{
		{"city ipv4", kindCity, schemaFlat},
		{"city ipv6", kindCity, schemaFlat},
		{"country ipv4", kindCountry, schemaFlat},
		{"ipatlas-ASN", kindASN, schemaASN},
		{"GeoIP2-City", kindCity, schemaGeoIP2},
		{"GeoLite2-City", kindCity, schemaGeoIP2},
		{"GeoIP2-City-Europe", kindCity, schemaGeoIP2},
		{"GeoIP2-Enterprise", kindCity, schemaGeoIP2},
		{"DBIP-City-Lite", kindCity, schemaGeoIP2},
		{"GeoIP2-Country", kindCountry, schemaGeoIP2},
		{"GeoLite2-Country", kindCountry, schemaGeoIP2},
		{"GeoLite2-ASN", kindASN, schemaASN},
		{"DBIP-ASN-Lite", kindASN, schemaASN},
		{"GeoIP2-ISP", kindISP, schemaASN},
		{"GeoIP2-Anonymous-IP", kindUnsupported, schemaNone},
		{"GeoIP2-Connection-Type", kindUnsupported, schemaNone},
		{"something else", kindUnsupported, schemaNone},
	} {
		k, s, _ := classify(c.dbType)
		if k != c.kind || s != c.schema {
			t.Errorf("classify(%q) = %v/%d, want %v/%d", c.dbType, k, s, c.kind, c.schema)
		}
	}
}
