package cityindex

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func code(cc string) uint16 { return uint16(cc[0])<<8 | uint16(cc[1]) }

// sample is a table of three countries: one with a single row, one with
// more rows of one key than a block holds, so that the key's rows span
// three blocks, and keys that share prefixes, are long, or have a radius
// of their own.
func sample() []Row {
	long := strings.Repeat("long name ", 10) // past a nibble's 15
	rows := []Row{
		{"AD", "andorra la vella", "安道尔", Match{425078, 15211, 300, true, false}},
		{"US", "a", "甲", Match{1, 2, 300, true, false}},
		{"US", "ab", "乙", Match{-899999, -1799999, 17, true, false}},
		{"US", "abc", "丙", Match{900000, 1800000, 500, false, true}},
		{"US", long, "长", Match{10, 10, 300, true, false}},
		{"US", long + "x", "长", Match{10, 10, 300, true, true}}, // the same place again
	}
	for i := range 2*BlockRows + 5 {
		rows = append(rows, Row{"US", "springfield", fmt.Sprintf("春田%d", i), Match{400000 + int32(i), -800000, 300, false, false}})
	}
	rows = append(rows,
		Row{"US", "springfield east", "春田0", Match{400000, -800000, 300, true, true}}, // a place seen blocks before
		Row{"US", "zzz", "末", Match{0, 0, 65535, true, false}},
		Row{"ZW", "harare", "哈拉雷", Match{-178292, 310522, 500, true, false}},
	)
	return rows
}

func open(t testing.TB, rows []Row) *Table {
	t.Helper()
	d, err := Encode(rows)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Check(); err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestRoundTrip: All gives back the rows encoded, and Find every row of
// a key, in order, across blocks.
func TestRoundTrip(t *testing.T) {
	rows := sample()
	tab := open(t, rows)
	if got := slices.Collect(tab.All()); !slices.Equal(got, rows) {
		t.Errorf("All:\n got %v\nwant %v", got, rows)
	}
	keys := map[[2]string][]string{}
	for _, r := range rows {
		k := [2]string{r.Country, r.Key}
		keys[k] = append(keys[k], fmt.Sprint(r.Name, r.Match))
	}
	for k, want := range keys {
		if got := find(tab, k[0], k[1]); !slices.Equal(got, want) {
			t.Errorf("Find(%s, %q) = %v, want %v", k[0], k[1], got, want)
		}
	}
	for _, q := range [][2]string{
		{"US", ""}, {"US", "aa"}, {"US", "springfiel"}, {"US", "springfield e"}, {"US", "zzzz"},
		{"AA", "a"}, {"AE", "andorra la vella"}, {"ZZ", "harare"}, {"ZW", "a"},
	} {
		if got := find(tab, q[0], q[1]); len(got) != 0 {
			t.Errorf("Find(%s, %q) = %v, want nothing", q[0], q[1], got)
		}
	}
	var empty Table
	if got := find(&empty, "US", "a"); len(got) != 0 {
		t.Errorf("the empty table found %v", got)
	}
}

// find returns the name and Match of each row Find finds.
func find(t *Table, cc, key string) []string {
	var ms []string
	c := t.Find(code(cc), []byte(key))
	for c.Next() {
		ms = append(ms, fmt.Sprint(c.Name(), c.Match()))
	}
	return ms
}

// TestLayout: the places and the names are written once each, and a
// block holds BlockRows rows.
func TestLayout(t *testing.T) {
	rows := sample()
	d, err := Encode(rows)
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(d.Names, "\n"), "\n")
	if want := len(rows) - 2; len(names) != want { // 长 and 春田0 twice
		t.Errorf("%d names, want %d: %q", len(names), want, names)
	}
	if len(d.Places) != (len(rows)-2)*placeSize {
		t.Errorf("%d bytes of places for %d rows, two of them repeated", len(d.Places), len(rows))
	}
	tab, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	us := 0
	for _, r := range rows {
		if r.Country == "US" {
			us++
		}
	}
	// AD and ZW: a row each.
	if nb, want := tab.numBlocks(), 1+(us+BlockRows-1)/BlockRows+1; nb != want {
		t.Errorf("%d blocks, want %d", nb, want)
	}
}

// TestFindAllocates: a lookup allocates nothing.
func TestFindAllocates(t *testing.T) {
	tab := open(t, sample())
	key := []byte("springfield")
	n := testing.AllocsPerRun(100, func() {
		c := tab.Find(code("US"), key)
		for c.Next() {
			_, _ = c.Match(), c.Name()
		}
	})
	if n != 0 {
		t.Errorf("%v allocations a lookup", n)
	}
}

// TestEncodeRejects: what the format cannot hold is an error, not a
// table that reads back otherwise.
func TestEncodeRejects(t *testing.T) {
	ok := Row{"US", "a", "甲", Match{0, 0, 300, true, false}}
	for name, rows := range map[string][]Row{
		"out of order":  {ok, {"US", "0", "甲", ok.Match}},
		"country order": {ok, {"AD", "b", "甲", ok.Match}},
		"country":       {{"USA", "a", "甲", ok.Match}},
		"empty key":     {{"US", "", "甲", ok.Match}},
		"long key":      {{"US", strings.Repeat("a", MaxKey+1), "甲", ok.Match}},
		"name":          {{"US", "a", "甲\n乙", Match{0, 0, 300, true, false}}},
		"empty name":    {{"US", "a", "", Match{0, 0, 300, true, false}}},
		"latitude":      {{"US", "a", "甲", Match{900001, 0, 300, true, false}}},
		"longitude":     {{"US", "a", "甲", Match{0, -1800001, 300, true, false}}},
	} {
		if _, err := Encode(rows); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestCheckRejects: Check finds a changed byte in every part, where it
// makes the table unreadable.
func TestCheckRejects(t *testing.T) {
	d, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Open(d)
	if err != nil {
		t.Fatal(err)
	}
	rows := len(d.Keys) - len(tab.rows)
	us := rows + tab.blockOffset(1) // "a", then "ab", then "abc"
	r := reader{t: tab, end: len(tab.rows)}
	r.enter(1)
	r.row()
	r.row()
	abc := rows + r.pos
	for name, mutate := range map[string]func(d *Data){
		"row header":     func(d *Data) { d.Keys[rows] = 0xff },
		"key order":      func(d *Data) { d.Keys[us+2] = 'z' },
		"shared length":  func(d *Data) { d.Keys[abc+1], d.Keys[abc+2] = 1<<4|1, 'b' }, // "abc" as "a" and "b" after "ab"
		"directory":      func(d *Data) { d.Keys[headerSize] = 1 },
		"name offset":    func(d *Data) { d.Places[0] = 1 },
		"latitude range": func(d *Data) { d.Places[5] = 0xff },
	} {
		c := Data{Keys: slices.Clone(d.Keys), Places: slices.Clone(d.Places), Names: d.Names}
		mutate(&c)
		tab, err := Open(c)
		if err == nil {
			err = tab.Check()
		}
		if err == nil {
			t.Errorf("%s: the changed table passes", name)
		}
	}
	if _, err := Open(Data{Keys: d.Keys[:len(d.Keys)-1], Places: d.Places, Names: d.Names}); err == nil {
		t.Error("a truncated index opens")
	}
	if _, err := Open(Data{Keys: d.Keys, Places: d.Places[8:], Names: d.Names}); err == nil {
		t.Error("another table's places open")
	}
}

// FuzzCheck: lookups in any index Check accepts stay within its bytes.
func FuzzCheck(f *testing.F) {
	d, err := Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(d.Keys, "springfield")
	f.Add(d.Keys[:40], "a")
	f.Fuzz(func(t *testing.T, keys []byte, key string) {
		tab, err := Open(Data{Keys: keys, Places: d.Places, Names: d.Names})
		if err != nil || tab.Check() != nil {
			return
		}
		for r := range tab.All() {
			find(tab, r.Country, r.Key)
		}
		find(tab, "US", key)
	})
}
