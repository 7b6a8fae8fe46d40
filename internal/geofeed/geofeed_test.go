package geofeed

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	in := "\xef\xbb\xbf# comment\n" +
		"\n" +
		"192.0.2.0/24,us,us-ca,San Jose,95112\n" + // 3: lower case is fine
		"198.51.100.0/24,DE,DE-BE,Berlin\n" + // 4: four fields
		"2001:db8::/32, GB , GB-ENG ,\"London, City of\",,extra\n" + // 5: quoted, blanks, extra field
		"203.0.113.7,FR,,,\r\n" + // 6: a bare address, CRLF
		"bogus,US,,,\n" + // 7
		"192.0.2.1/24,US,,,\n" + // 8: host bits
		"192.0.2.0/25,XX,,,\n" + // 9: unknown country
		"192.0.2.0/26,USA,,,\n" + // 10
		"192.0.2.0/27,US,DE-BE,,\n" + // 11: region of another country
		"192.0.2.0/28,,,,\n" + // 12: no country
		"192.0.2.0/24,FR,,,\n" + // 13: duplicate
		"::ffff:192.0.2.0/120,US,,,\n" + // 14: mapped
		"192.0.2.0/29,US,US-CA,Bad\x01City,\n" + // 15
		"192.0.2.0/30,US,US-CA,\"unterminated,\n" + // 16
		"192.0.2.8/29,US,US-TOOLONG,,\n" + // 17
		"10.0.0.0/8,CN,CN-BJ,Beijing,100000" // 18: no final newline
	f, err := Parse(strings.NewReader(in), "feed.csv")
	if err != nil {
		t.Fatal(err)
	}
	// In address order.
	want := []Entry{
		{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Place: Place{Country: "CN", Region: "CN-BJ", City: "Beijing", Postal: "100000"}, Line: 18},
		{Prefix: netip.MustParsePrefix("192.0.2.0/24"), Place: Place{Country: "US", Region: "US-CA", City: "San Jose", Postal: "95112"}, Line: 3},
		{Prefix: netip.MustParsePrefix("198.51.100.0/24"), Place: Place{Country: "DE", Region: "DE-BE", City: "Berlin"}, Line: 4},
		{Prefix: netip.MustParsePrefix("203.0.113.7/32"), Place: Place{Country: "FR"}, Line: 6},
		{Prefix: netip.MustParsePrefix("2001:db8::/32"), Place: Place{Country: "GB", Region: "GB-ENG", City: "London, City of"}, Line: 5},
	}
	if got := slices.Collect(f.All()); !slices.Equal(got, want) {
		t.Errorf("entries:\n got %+v\nwant %+v", got, want)
	}
	if f.Skipped != len(f.Problems) {
		t.Errorf("skipped %d, problems %d", f.Skipped, len(f.Problems))
	}
	var lines []int
	for _, p := range f.Problems {
		lines = append(lines, p.Line)
		if !strings.HasPrefix(p.String(), "feed.csv:") || p.Reason == "" {
			t.Errorf("problem %q", p)
		}
	}
	if !slices.Equal(lines, []int{7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}) {
		t.Errorf("problem lines %v; problems %q", lines, f.Problems)
	}
	if f.Lines != 18 {
		t.Errorf("lines %d", f.Lines)
	}
	for _, c := range []struct {
		line int
		has  string
	}{{8, "host bits set (the prefix is 192.0.2.0/24)"}, {9, `unknown country code "XX"`}, {11, "not an ISO 3166-2 code of US"}, {13, "already on line 3"}} {
		i := slices.IndexFunc(f.Problems, func(p Problem) bool { return p.Line == c.line })
		if i < 0 || !strings.Contains(f.Problems[i].Reason, c.has) {
			t.Errorf("line %d: want a reason with %q, got %q", c.line, c.has, f.Problems)
		}
	}
}

func TestParseLongLine(t *testing.T) {
	in := "192.0.2.0/24,US,,,\n192.0.2.0/25,US,," + strings.Repeat("x", 100<<10) + "\n198.51.100.0/24,DE,,,\n"
	f, err := Parse(strings.NewReader(in), "f")
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 2 || f.Entry(1).Line != 3 || len(f.Problems) != 1 || f.Problems[0].Line != 2 {
		t.Errorf("entries %+v problems %+v", slices.Collect(f.All()), f.Problems)
	}
}

// The fixtures in the layout of each feed of the built-in list parse
// without a skipped line.
func TestBuiltinFormats(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.csv")
	if len(files) < 4 {
		t.Fatalf("fixtures: %v", files)
	}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		feed, err := ParseFeed(f, file)
		f.Close()
		if err != nil || len(feed.Problems) > 0 || feed.Len() < 4 {
			t.Errorf("%s: %v, %d entries, problems %q", file, err, feed.Len(), feed.Problems)
			continue
		}
		// iCloud Private Relay writes GB-EN for England (ISO: GB-ENG):
		// its lines apply without the region.
		var want []DroppedRegion
		if filepath.Base(file) == "icloud-private-relay.csv" {
			want = []DroppedRegion{{Region: "GB-EN", Lines: 2, FirstLine: 3}}
		}
		if !slices.Equal(feed.DroppedRegions, want) || feed.RegionsDropped != len(want)*2 {
			t.Errorf("%s: dropped regions %+v (%d lines), want %+v", file, feed.DroppedRegions, feed.RegionsDropped, want)
		}
		for e := range feed.All() {
			if want != nil && e.Country == "GB" && (e.Region != "" || e.City != "London") {
				t.Errorf("%s: %+v", file, e)
			}
		}
	}
}

func TestParseSources(t *testing.T) {
	all, err := ParseSources(nil)
	if err != nil || len(all) != len(Builtin) {
		t.Fatalf("default: %v %v", all, err)
	}
	for _, s := range all {
		if !s.Builtin || len(s.ASes) == 0 || !slices.IsSorted(s.ASes) || s.Name == "" {
			t.Errorf("built-in %+v", s)
		}
	}
	got, err := ParseSources([]string{"none", "https://feeds.example.net/geo.csv AS64501 64500 as64501"})
	if err != nil || len(got) != 1 || got[0].Name != "feeds.example.net" || !slices.Equal(got[0].ASes, []uint32{64500, 64501}) || got[0].Builtin {
		t.Errorf("none and one feed: %+v %v", got, err)
	}
	got, err = ParseSources([]string{Builtin[0].URL, "http://other.example/f.csv"})
	if err != nil || len(got) != len(Builtin)+1 || !slices.Equal(got[0].ASes, Builtin[0].ASes) || got[0].Name != Builtin[0].Name {
		t.Errorf("a built-in URL given again: %+v %v", got, err)
	}
	got, err = ParseSources([]string{Builtin[0].URL + " AS1"})
	if err != nil || !slices.Equal(got[0].ASes, []uint32{1}) {
		t.Errorf("a built-in feed with other ASes: %+v %v", got, err)
	}
	for _, bad := range []string{"ftp://x.example/f.csv", "not a url", "https://x.example/f.csv ASX", "https://x.example/f.csv AS0",
		"https://user:secret@x.example/f.csv", ""} {
		if _, err := ParseSources([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error shows the password: %v", bad, err)
		}
	}
	if _, err := ParseSources([]string{"https://x.example/f.csv", "https://x.example/f.csv AS1"}); err == nil {
		t.Error("a feed given twice")
	}
}

func TestFetchAndLoad(t *testing.T) {
	var body atomic.Value
	var status atomic.Int32
	body.Store("192.0.2.0/24,US,US-CA,San Jose,\n198.51.100.0/24,DE,,,\n192.0.2.0/33,US,,,\n203.0.113.0/25,FR,,,\n203.0.113.128/25,FR,,,\n")
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Last-Modified", "Mon, 02 Nov 2026 10:00:00 GMT")
		w.WriteHeader(int(status.Load()))
		w.Write([]byte(body.Load().(string)))
	}))
	defer srv.Close()
	dir := t.TempDir()
	s, err := ParseSource(srv.URL + "/feed.csv AS64500")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Load(dir, s); c != nil || err != nil {
		t.Fatalf("nothing fetched yet: %v %v", c, err)
	}
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c, err := Fetch(context.Background(), srv.Client(), dir, s, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Entries != 4 || c.Problems != 1 || !c.FetchedAt.Equal(now) || c.Modified.IsZero() || c.Feed.Len() != 4 {
		t.Errorf("copy %+v", c)
	}
	loaded, err := Load(dir, s)
	if err != nil || loaded == nil || loaded.SHA256 != c.SHA256 || loaded.Feed.Len() != 4 || loaded.Feed.Problems[0].File != loaded.File {
		t.Fatalf("loaded %+v %v", loaded, err)
	}

	// A failed, empty or much shorter download keeps the copy.
	for _, c := range []struct {
		status int
		body   string
	}{{404, "not found"}, {200, "# nothing\n"}, {200, "192.0.2.0/24,US,,,\n"}} {
		status.Store(int32(c.status))
		body.Store(c.body)
		if _, err := Fetch(context.Background(), srv.Client(), dir, s, now); err == nil {
			t.Errorf("%d %q: no error", c.status, c.body)
		}
		if l, _ := Load(dir, s); l == nil || l.SHA256 != loaded.SHA256 {
			t.Errorf("%d %q replaced the copy", c.status, c.body)
		}
	}
	// Another feed of the same host has its own file.
	other, _ := ParseSource(srv.URL + "/other.csv")
	if baseName(other) == baseName(s) {
		t.Error("two feeds of one host share a file")
	}
}

func FuzzParse(f *testing.F) {
	f.Add("192.0.2.0/24,US,US-CA,San Jose,95112\n# c\n2001:db8::/32,GB,GB-ENG,\"London, x\",\n")
	f.Add("\xef\xbb\xbf1.2.3.4,de\r\n")
	f.Add("a,\"b\nc\",d\n")
	f.Fuzz(func(t *testing.T, in string) {
		feed, err := Parse(strings.NewReader(in), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[netip.Prefix]bool{}
		for e := range feed.All() {
			if !e.Prefix.IsValid() || e.Prefix.Masked() != e.Prefix || len(e.Country) != 2 || seen[e.Prefix] {
				t.Fatalf("bad entry %+v", e)
			}
			seen[e.Prefix] = true
		}
	})
}

// A region is checked against ISO 3166-2 itself, not only its shape: a
// code of no subdivision of the country skips the line with its reason;
// the codes of every level are accepted (a London borough, an Italian
// metropolitan city, an Indian state of 2014), and so are withdrawn ones.
func TestParseRegionCodes(t *testing.T) {
	in := "8.8.4.0/24,US,US-ZZ,Nowhere\n" + // 1
		"192.0.2.0/24,GB,GB-BST,Bristol\n" + // 2: a unitary authority
		"198.51.100.0/24,IT,it-rm,Rome\n" + // 3: a metropolitan city, in lower case
		"203.0.113.0/24,IN,IN-TS,Hyderabad\n" + // 4: Telangana
		"10.0.0.0/8,CN,CN-11,Beijing\n" + // 5: withdrawn in 2017 (now CN-BJ)
		"11.0.0.0/8,DE,DE-CA,\n" + // 6: the shape of a code, of no German subdivision
		"12.0.0.0/8,FR,FR-ZZZ,Paris\n" + // 7
		"13.0.0.0/8,CI,CI-ZZ,\n" // 8: Zanzan, a real code ending in ZZ
	f, err := Parse(strings.NewReader(in), "overrides.csv")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for e := range f.All() {
		got = append(got, e.Region)
	}
	slices.Sort(got)
	if want := []string{"CI-ZZ", "CN-11", "GB-BST", "IN-TS", "IT-RM"}; !slices.Equal(got, want) {
		t.Errorf("regions accepted: %q, want %q", got, want)
	}
	var problems []string
	for _, p := range f.Problems {
		problems = append(problems, p.String())
	}
	want := []string{
		`overrides.csv:1: region "US-ZZ" is not an ISO 3166-2 code of US`,
		`overrides.csv:6: region "DE-CA" is not an ISO 3166-2 code of DE`,
		`overrides.csv:7: region "FR-ZZZ" is not an ISO 3166-2 code of FR`,
	}
	if !slices.Equal(problems, want) || f.Skipped != 3 {
		t.Errorf("problems (%d skipped):\n%s\nwant:\n%s", f.Skipped, strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// In a published feed, a region of the right shape that is no ISO 3166-2
// code is dropped, not its line, and counted; a malformed region or one
// of another country still skips the line.
func TestParseFeedDropsUnknownRegion(t *testing.T) {
	in := "8.8.4.0/24,US,US-ZZ,Nowhere\n" + // 1
		"8.8.5.0/24,US,US-ZZ,Elsewhere\n" + // 2
		"8.8.6.0/24,GB,gb-en,London\n" + // 3
		"8.8.7.0/24,US,DE-BE,Berlin\n" + // 4: another country's
		"8.8.8.0/24,US,US-TOOLONG,\n" + // 5
		"8.8.9.0/24,GB,GB-BST,Bristol\n" // 6
	f, err := ParseFeed(strings.NewReader(in), "feed.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Prefix: netip.MustParsePrefix("8.8.4.0/24"), Place: Place{Country: "US", City: "Nowhere"}, Line: 1},
		{Prefix: netip.MustParsePrefix("8.8.5.0/24"), Place: Place{Country: "US", City: "Elsewhere"}, Line: 2},
		{Prefix: netip.MustParsePrefix("8.8.6.0/24"), Place: Place{Country: "GB", City: "London"}, Line: 3},
		{Prefix: netip.MustParsePrefix("8.8.9.0/24"), Place: Place{Country: "GB", Region: "GB-BST", City: "Bristol"}, Line: 6},
	}
	if got := slices.Collect(f.All()); !slices.Equal(got, want) {
		t.Errorf("entries:\n got %+v\nwant %+v", got, want)
	}
	if want := []DroppedRegion{{"US-ZZ", 2, 1}, {"GB-EN", 1, 3}}; !slices.Equal(f.DroppedRegions, want) || f.RegionsDropped != 3 {
		t.Errorf("dropped %+v (%d lines), want %+v", f.DroppedRegions, f.RegionsDropped, want)
	}
	if f.Skipped != 2 || len(f.Problems) != 2 || f.Problems[0].Line != 4 || f.Problems[1].Line != 5 {
		t.Errorf("skipped %d: %q", f.Skipped, f.Problems)
	}
}

// netflixFeed is Netflix's published feed, beside the repository.
const netflixFeed = "../../../shared/data/geofeeds/netflix-geofeed.csv"

// Every region code of a real published feed is an ISO 3166-2 code: a
// check stricter than ISO's own list would refuse an operator's good
// lines. 45 lines of Netflix's feed name a code that is not a first-level
// subdivision of package names' tables (GB-BST, GB-WSM, IT-RM, IN-TS: 9
// codes).
func TestRealFeedRegionsAccepted(t *testing.T) {
	in, err := os.Open(netflixFeed)
	if err != nil {
		t.Skipf("no Netflix feed beside the repository (../shared/data/geofeeds, laid by CI): %v", err)
	}
	defer in.Close()
	f, err := Parse(in, netflixFeed) // as strict as an overrides file
	if err != nil {
		t.Fatal(err)
	}
	regions := 0
	for e := range f.All() {
		if e.Region != "" {
			regions++
		}
	}
	if f.Skipped != 0 || f.Len() < 600 || regions < 590 {
		t.Errorf("%d entries, %d with a region, %d lines skipped: %q", f.Len(), regions, f.Skipped, f.Problems)
	}
	t.Logf("%d entries, %d with a region code, none skipped", f.Len(), regions)
}
