package names

import "testing"

func TestIsISO3166_2(t *testing.T) {
	for _, c := range []struct {
		code string
		want bool
	}{
		{"US-CA", true},
		{"US-PR", true},   // an outlying area, also a country code of its own
		{"GB-BST", true},  // a unitary authority, below England
		{"GB-ENG", true},  // a country of the United Kingdom
		{"IT-RM", true},   // a metropolitan city, below Lazio
		{"IN-TS", true},   // Telangana, a state since 2014
		{"FR-75C", true},  // Paris, since 2024
		{"CN-11", true},   // withdrawn in 2017 for CN-BJ
		{"FR-A", true},    // withdrawn in 2016 for FR-GES
		{"CI-ZZ", true},   // Zanzan
		{"AD-02", true},   // the table's first record
		{"ZW-MW", true},   // and its last
		{"US-ZZ", false},  // no such state
		{"DE-CA", false},  // California's code under another country
		{"US-", false},    // no code
		{"US-CAL", false}, // one letter too many
		{"us-ca", false},  // the table is in upper case
		{"USCA", false},   // no hyphen
		{"", false},
		{"A-BCDEF", false},
		{"ZZ-ZZZ", false}, // past the last record
		{"AA-01", false},  // before the first
	} {
		if got := IsISO3166_2(c.code); got != c.want {
			t.Errorf("IsISO3166_2(%q) = %v, want %v", c.code, got, c.want)
		}
	}
	if n := len(isoSubdivisions) / isoRecordLen; n < 5000 || len(isoSubdivisions)%isoRecordLen != 0 {
		t.Errorf("%d bytes, %d records", len(isoSubdivisions), n)
	}
	if a := testing.AllocsPerRun(100, func() { IsISO3166_2("GB-BST") }); a != 0 {
		t.Errorf("%v allocations per lookup", a)
	}
}
