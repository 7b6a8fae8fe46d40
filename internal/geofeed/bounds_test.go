package geofeed

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lines is a feed generated as it is read: n lines written by line, never
// held whole.
type lines struct {
	n, i int
	line func(i int) string
	buf  []byte
}

func (l *lines) Read(p []byte) (int, error) {
	for len(l.buf) < len(p) && l.i < l.n {
		l.buf = append(l.buf, l.line(l.i)...)
		l.i++
	}
	if len(l.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.buf)
	l.buf = l.buf[:copy(l.buf, l.buf[n:])]
	return n, nil
}

// host is the i-th /32 of 10.0.0.0/8.
func host(i int) string {
	b := make([]byte, 0, 48)
	b = append(b, "10."...)
	b = strconv.AppendInt(b, int64(i>>16&0xff), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(i>>8&0xff), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(i&0xff), 10)
	return string(append(b, "/32,US,US-CA,San Jose,95112\n"...))
}

// A feed of bad lines keeps the first MaxProblems of them and counts the
// rest; each bad line past them costs no reason and almost no allocation.
func TestParseKeepsFirstProblems(t *testing.T) {
	const n = 20_000
	bad := func(i int) string {
		if i == n/2 {
			return "192.0.2.0/24,US,,,\n"
		}
		return fmt.Sprintf("bogus%d,US,,,\n", i)
	}
	f, err := Parse(&lines{n: n, line: bad}, "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 1 || f.Skipped != n-1 || len(f.Problems) != MaxProblems || f.Lines != n {
		t.Fatalf("entries %d, skipped %d, problems %d, lines %d", f.Len(), f.Skipped, len(f.Problems), f.Lines)
	}
	for i, p := range f.Problems {
		if p.Line != i+1 || !strings.Contains(p.Reason, "is not an IP prefix") {
			t.Fatalf("problem %d: %v", i, p)
		}
	}
	// Repeated prefixes are skipped lines too, merged by line number: the
	// first MaxProblems skipped lines are lines 1, 3, 4, ... 101.
	dup := func(i int) string {
		if i%2 == 0 {
			return "bogus,US,,,\n"
		}
		return "192.0.2.0/24,US,,,\n"
	}
	f, err = Parse(&lines{n: 1000, line: dup}, "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != 1 || f.Skipped != 999 || len(f.Problems) != MaxProblems || f.Problems[99].Line != 101 ||
		!strings.Contains(f.Problems[2].Reason, "already on line 2") {
		t.Fatalf("entries %d, skipped %d, problems %v", f.Len(), f.Skipped, f.Problems)
	}
}

// Parsing allocates about one small string a line (the prefix's text),
// whether the line is good or bad: a feed's memory is what it keeps, not
// what it reads.
func TestParseAllocations(t *testing.T) {
	const n = 20_000
	for _, c := range []struct {
		name string
		line func(int) string
	}{
		{"good lines, one place", host},
		{"bad lines", func(i int) string { return fmt.Sprintf("10.0.0.%d/32,XX,,,\n", i%256) }},
		{"bad cities", func(i int) string { return fmt.Sprintf("10.0.0.%d/32,US,,Bad\u202ecity,\n", i%256) }},
	} {
		var text []string
		for i := range n {
			text = append(text, c.line(i))
		}
		in := strings.Join(text, "")
		allocs := testing.AllocsPerRun(1, func() {
			if _, err := Parse(strings.NewReader(in), "f.csv"); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 1.25*n {
			t.Errorf("%s: %.0f allocations for %d lines", c.name, allocs, n)
		}
	}
	f, err := Parse(&lines{n: n, line: host}, "f.csv")
	if err != nil {
		t.Fatal(err)
	}
	if f.Len() != n || len(f.Places()) != 1 {
		t.Errorf("%d entries, %d places", f.Len(), len(f.Places()))
	}
}

// A feed of more than MaxEntries good lines is refused whole.
func TestParseEntriesBound(t *testing.T) {
	in := &lines{n: MaxEntries + 1, line: host}
	if _, err := Parse(in, "f.csv"); !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("%d entries: %v", MaxEntries+1, err)
	}
	// Refused at the last line, not before: the bound is MaxEntries.
	if in.i != in.n || len(in.buf) > 0 {
		t.Errorf("refused after %d of %d lines", in.i, in.n)
	}
}

// Names with invisible formatting characters (bidirectional overrides,
// zero-width spaces and marks) or line separators are refused, as control
// characters are.
func TestParseInvisibleCharacters(t *testing.T) {
	for _, r := range []rune{'\u202e', '\u200b', '\u200e', '\u2028', '\u2066', '\ufeff'} {
		for _, line := range []string{"192.0.2.0/24,US,US-CA,San" + string(r) + "Jose,\n", "192.0.2.0/24,US,US-CA,San Jose,95" + string(r) + "112\n"} {
			f, err := Parse(strings.NewReader(line), "f.csv")
			if err != nil {
				t.Fatal(err)
			}
			if f.Len() != 0 || len(f.Problems) != 1 || !strings.Contains(f.Problems[0].Reason, fmt.Sprintf("U+%04X", r)) {
				t.Errorf("%q: %d entries, problems %v", line, f.Len(), f.Problems)
			}
		}
	}
	// A city's name is kept whole, whatever it looks like.
	f, err := Parse(strings.NewReader(`192.0.2.0/24,US,US-CA,"=HYPERLINK(""http://evil.example/"",""x"")",`+"\n"), "f.csv")
	if err != nil || f.Len() != 1 || f.Entry(0).City != `=HYPERLINK("http://evil.example/","x")` {
		t.Errorf("%v %+v", err, f.Entry(0))
	}
}

// feedServer serves body with the given Content-Encoding, counting what
// it wrote.
func feedServer(t *testing.T, encoding string, write func(w io.Writer)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if encoding != "" {
			w.Header().Set("Content-Encoding", encoding)
		}
		write(w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A gzip body is decoded and kept decoded; one that inflates past
// MaxRatio is refused, without reading it all, and keeps the copy.
func TestFetchCompressed(t *testing.T) {
	dir := t.TempDir()
	feed := strings.Repeat("192.0.2.0/24,US,US-CA,San Jose,\n", 1) + "198.51.100.0/24,DE,,,\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(feed))
	zw.Close()
	srv := feedServer(t, "gzip", func(w io.Writer) { w.Write(gz.Bytes()) })
	s, _ := ParseSource(srv.URL + "/feed.csv")
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	c, err := Fetch(context.Background(), srv.Client(), dir, s, now)
	if err != nil || c.Feed.Len() != 2 || c.Size != int64(len(feed)) {
		t.Fatalf("gzip feed: %v %+v", err, c)
	}
	if b, _ := os.ReadFile(c.File); string(b) != feed {
		t.Errorf("the copy is %q", b)
	}

	// A bomb: valid lines, then gigabytes of one byte.
	var served countingWriter
	bomb := feedServer(t, "gzip", func(w io.Writer) {
		served.w = w
		zw, _ := gzip.NewWriterLevel(&served, gzip.BestCompression)
		zw.Write([]byte(feed))
		chunk := bytes.Repeat([]byte("#"), 1<<20)
		for range 4 << 10 { // 4 GiB
			if _, err := zw.Write(chunk); err != nil {
				return
			}
		}
		zw.Close()
	})
	bs, _ := ParseSource(bomb.URL + "/feed.csv")
	if _, err := Fetch(context.Background(), bomb.Client(), dir, bs, now); !errors.Is(err, ErrCompressionRatio) {
		t.Fatalf("a gzip bomb: %v", err)
	}
	if served.n > 64<<20 {
		t.Errorf("the bomb wrote %d compressed bytes before the fetch gave up", served.n)
	}
	// The first feed's copy is untouched, and nothing is left behind.
	if l, err := Load(dir, s); err != nil || l.SHA256 != c.SHA256 {
		t.Errorf("the copy after a bomb: %v %+v", err, l)
	}
	// Nothing is left behind but the record of the failure.
	files, _ := os.ReadDir(filepath.Join(dir, Dir))
	if len(files) != 3 {
		t.Errorf("files left: %v", files)
	}
	if f, err := LastFailure(dir, bs); err != nil || f == nil || !strings.Contains(f.Error, "inflates more than") || !f.At.Equal(now.UTC()) {
		t.Errorf("the bomb's failure as recorded: %+v %v", f, err)
	}
	if f, err := LastFailure(dir, s); err != nil || f != nil {
		t.Errorf("a feed whose fetch succeeded has a failure recorded: %+v %v", f, err)
	}

	// An encoding Fetch cannot bound is refused.
	br := feedServer(t, "br", func(w io.Writer) { w.Write([]byte("x")) })
	brs, _ := ParseSource(br.URL + "/feed.csv")
	if _, err := Fetch(context.Background(), br.Client(), dir, brs, now); err == nil || !strings.Contains(err.Error(), "Content-Encoding") {
		t.Errorf("br: %v", err)
	}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// The copy in the data dir is parsed with a download's bounds: a stored
// copy of a hostile feed keeps its first problems only.
func TestLoadBounded(t *testing.T) {
	dir := t.TempDir()
	s, _ := ParseSource("https://feeds.example.net/geo.csv")
	if err := os.MkdirAll(filepath.Join(dir, Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, Dir, baseName(s))
	var b bytes.Buffer
	io.Copy(&b, &lines{n: 50_000, line: func(i int) string {
		if i == 7 {
			return host(i)
		}
		return "bogus,US,,,\n"
	}})
	if err := os.WriteFile(base+".csv", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".json", []byte(`{"entries": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir, s)
	if err != nil || c.Feed.Len() != 1 || c.Feed.Skipped != 49_999 || len(c.Feed.Problems) != MaxProblems {
		t.Fatalf("%v %+v", err, c)
	}
}

// A feed naming more than MaxPlaces distinct places is refused whole: each
// place is resolved and composed, so a new place on every line would cost
// far more than the entries.
func TestParsePlacesBound(t *testing.T) {
	in := &lines{n: MaxPlaces + 1, line: func(i int) string {
		return host(i)[:len(host(i))-len("San Jose,95112\n")] + "City " + strconv.Itoa(i) + ",\n"
	}}
	if _, err := Parse(in, "f.csv"); !errors.Is(err, ErrTooManyPlaces) {
		t.Fatalf("%d places: %v", MaxPlaces+1, err)
	}
	if in.i != in.n || len(in.buf) > 0 {
		t.Errorf("refused after %d of %d lines", in.i, in.n)
	}
}
