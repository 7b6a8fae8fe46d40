package geo_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// corruptions damage a good file in ways a disk, a copy or a download can.
var corruptions = []struct {
	name   string
	damage func(t *testing.T, path string)
}{
	{"empty", func(t *testing.T, p string) { truncate(t, p, 0) }},
	{"truncated-half", func(t *testing.T, p string) { truncate(t, p, size(t, p)/2) }},
	{"truncated-tail", func(t *testing.T, p string) { truncate(t, p, size(t, p)-7) }},
	{"not-mmdb", func(t *testing.T, p string) {
		if err := os.WriteFile(p, []byte("<html>404 Not Found</html>\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}},
	{"zeroed-tree", func(t *testing.T, p string) {
		// Keep the metadata, scramble the search tree and data.
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		end := strings.LastIndex(string(b), "\xAB\xCD\xEFMaxMind.com")
		for i := 0; i < end; i++ {
			b[i] = 0xFF
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}},
	{"bad-data-section", func(t *testing.T, p string) {
		// Keep the tree, break every record: control bytes of an
		// invalid type/size.
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		end := strings.LastIndex(string(b), "\xAB\xCD\xEFMaxMind.com")
		sep := strings.Index(string(b), strings.Repeat("\x00", 16))
		if sep < 0 || end < 0 {
			t.Fatal("fixture layout not understood")
		}
		for i := sep + 16; i < end; i++ {
			b[i] = 0x5D // a 29+ byte "extended" size that overruns
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}},
}

func size(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func truncate(t *testing.T, p string, n int64) {
	if err := os.Truncate(p, n); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptFilesFailNamingTheFile(t *testing.T) {
	for _, file := range []string{geotest.CityV4File, geotest.ASNFile} {
		for _, c := range corruptions {
			t.Run(file+"/"+c.name, func(t *testing.T) {
				dir := t.TempDir()
				geotest.WriteFixture(t, dir)
				c.damage(t, filepath.Join(dir, file))
				_, err := geo.Open(dir, geo.Options{})
				if err == nil {
					t.Fatal("Open of a corrupt file: no error")
				}
				if !strings.Contains(err.Error(), file) {
					t.Errorf("error does not name %s: %v", file, err)
				}
				if _, err := geo.Describe(dir); err == nil || !strings.Contains(err.Error(), file) {
					t.Errorf("Describe: %v", err)
				}
			})
		}
	}
}

// TestMaxMindBrokenTestDatabases runs MaxMind's deliberately broken test
// files when the shared test data is present (by hand; the generated
// corruptions above are what CI relies on).
func TestMaxMindBrokenTestDatabases(t *testing.T) {
	for _, name := range []string{"GeoIP2-City-Test-Broken-Double-Format.mmdb", "GeoIP2-City-Test-Invalid-Node-Count.mmdb"} {
		src := filepath.Join("..", "..", "..", "shared", "testdata", "maxmind", name)
		b, err := os.ReadFile(src)
		if err != nil {
			t.Skipf("MaxMind's test databases are not at %s (optional, for checking by hand): %v", src, err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = geo.Open(dir, geo.Options{})
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestReloadKeepsServingOnCorruptFile: a reload that meets a corrupt file
// fails naming it and the previous dataset stays in service.
func TestReloadKeepsServingOnCorruptFile(t *testing.T) {
	e, dir := openFixture(t, geo.Options{})
	// Replace by rename, as fetches do: rewriting a file in service in
	// place is outside the contract (it is memory-mapped).
	bad := filepath.Join(t.TempDir(), "bad.mmdb")
	install(t, filepath.Join(dir, geotest.CityV4File), bad)
	truncate(t, bad, 100)
	install(t, bad, filepath.Join(dir, geotest.CityV4File))
	err := e.Reload()
	if err == nil || !strings.Contains(err.Error(), geotest.CityV4File) {
		t.Fatalf("Reload: %v", err)
	}
	sameRecord(t, lookup(t, e, "8.8.8.8", ipatlas.English), geotest.MountainView.Want(ipatlas.English))
}

// variant writes a city file in which MountainView's city is called name,
// so that tests can tell datasets apart.
func variant(t *testing.T, path, name string) {
	k := geotest.MountainView
	geotest.WriteFlatCity(t, path, geotest.CityV4Type, 4, []geotest.FlatRow{{
		Network: k.Network, CountryCode: k.CountryCode, State1: k.Province, City: name,
		Latitude: k.Latitude, Longitude: k.Longitude, Postcode: k.ZipCode,
	}, {
		Network: geotest.Beijing.Network, CountryCode: "CN", State1: "Beijing", City: "Beijing",
		Latitude: geotest.Beijing.Latitude, Longitude: geotest.Beijing.Longitude,
	}})
}

// install copies src over dst the way `db fetch` does: write a hidden
// temporary file, rename it into place.
func install(t testing.TB, src, dst string) {
	b, err := os.ReadFile(src)
	if err != nil {
		t.Error(err)
		return
	}
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".part")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Error(err)
	}
}

// TestReloadUnderConcurrentLookups swaps datasets back and forth while
// many goroutines look up: every lookup must succeed and answer one of the
// two datasets' records in full, never a mixture, an error or a closed
// reader (run with -race).
func TestReloadUnderConcurrentLookups(t *testing.T) {
	e, dir := openFixture(t, geo.Options{})
	side := t.TempDir()
	variant(t, filepath.Join(side, "a.mmdb"), "Mountain View")
	variant(t, filepath.Join(side, "b.mmdb"), "Other View")

	wantA := geotest.MountainView.Want(ipatlas.English)
	wantB := wantA
	wantB.City = "Other View"
	wantBJ := map[ipatlas.Lang]ipatlas.Record{}
	for _, lang := range langs {
		wantBJ[lang] = geotest.Beijing.Want(lang)
	}

	const reloads = 40
	var stop atomic.Bool
	var lookups, seenA, seenB atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			us, bj := netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr(geotest.Beijing.IP)
			for i := 0; !stop.Load() || i < 200; i++ {
				r, err := e.Lookup(us, ipatlas.English)
				if err != nil {
					t.Errorf("lookup during reload: %v", err)
					return
				}
				switch {
				case sameValues(r, wantA):
					seenA.Add(1)
				case sameValues(r, wantB):
					seenB.Add(1)
				default:
					t.Errorf("lookup during reload: %s", show(r))
					return
				}
				lang := langs[i%2]
				r, err = e.Lookup(bj, lang)
				if err != nil || !sameValues(r, wantBJ[lang]) {
					t.Errorf("lookup during reload: %s, %v", show(r), err)
					return
				}
				lookups.Add(2)
			}
		}()
	}
	for i := 0; i < reloads; i++ {
		src := "a.mmdb"
		if i%2 == 1 {
			src = "b.mmdb"
		}
		install(t, filepath.Join(side, src), filepath.Join(dir, geotest.CityV4File))
		if err := e.Reload(); err != nil {
			t.Fatalf("Reload %d: %v", i, err)
		}
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // let lookups straddle swaps
		}
	}
	stop.Store(true)
	wg.Wait()
	if seenA.Load() == 0 || seenB.Load() == 0 {
		t.Errorf("lookups saw dataset A %d times and B %d times; the swap was not exercised", seenA.Load(), seenB.Load())
	}
	t.Logf("%d lookups over %d reloads (A %d, B %d)", lookups.Load(), reloads, seenA.Load(), seenB.Load())
}

func sameValues(a, b ipatlas.Record) bool {
	if (a.Latitude == nil) != (b.Latitude == nil) || (a.Longitude == nil) != (b.Longitude == nil) {
		return false
	}
	if a.Latitude != nil && (*a.Latitude != *b.Latitude || *a.Longitude != *b.Longitude) {
		return false
	}
	a.Latitude, a.Longitude, b.Latitude, b.Longitude = nil, nil, nil, nil
	return a == b
}

// TestCloseDuringLookups: Close while lookups run; lookups either succeed
// with correct data or report ErrClosed.
func TestCloseDuringLookups(t *testing.T) {
	dir := t.TempDir()
	geotest.WriteFixture(t, dir)
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := geotest.MountainView.Want(ipatlas.English)
	var wg sync.WaitGroup
	started := make(chan struct{}, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if i == 10 {
					started <- struct{}{}
				}
				r, err := e.Lookup(netip.MustParseAddr("8.8.8.8"), ipatlas.English)
				if err == geo.ErrClosed {
					return
				}
				if err != nil || !sameValues(r, want) {
					t.Errorf("lookup during Close: %s, %v", show(r), err)
					return
				}
			}
		}()
	}
	for range 8 {
		<-started
	}
	if err := e.Close(); err != nil {
		t.Error(err)
	}
	wg.Wait()
}

// TestWatchPicksUpRenamedFile: a new file renamed into the data dir, as
// `db fetch` installs it, is served without a restart; a corrupt one is
// not, and the previous data stays.
func TestWatchPicksUpRenamedFile(t *testing.T) {
	logs := &syncBuffer{}
	e, dir := openFixture(t, geo.Options{Debounce: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Watch(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	side := t.TempDir()
	variant(t, filepath.Join(side, "b.mmdb"), "Renamed View")
	// Watch may not have subscribed yet when the first rename happens:
	// rename again until the change shows, within a generous deadline.
	deadline := time.Now().Add(20 * time.Second)
	for {
		install(t, filepath.Join(side, "b.mmdb"), filepath.Join(dir, geotest.CityV4File))
		if waitCity(e, "Renamed View", 500*time.Millisecond) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the renamed-in file was not picked up")
		}
	}

	// A corrupt file renamed in is refused; the previous data stays.
	bad := filepath.Join(side, "bad.mmdb")
	if err := os.WriteFile(bad, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	install(t, bad, filepath.Join(dir, geotest.CityV4File))
	for end := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), "still serving the previous one"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no failed reload logged for the corrupt file; log:\n%s", logs.String())
		}
	}
	if !strings.Contains(logs.String(), geotest.CityV4File) {
		t.Errorf("the failed reload's log does not name the file:\n%s", logs.String())
	}
	if c := city(e); c != "Renamed View" {
		t.Errorf("after a corrupt file: city %q, want the previous data", c)
	}
	// Then a good one again: it must be picked up, proving the watch
	// survived the failed reload.
	variant(t, filepath.Join(side, "c.mmdb"), "Third View")
	install(t, filepath.Join(side, "c.mmdb"), filepath.Join(dir, geotest.CityV4File))
	if !waitCity(e, "Third View", 20*time.Second) {
		t.Fatal("the watch stopped after a failed reload")
	}
}

func city(e *geo.Engine) string {
	r, err := e.Lookup(netip.MustParseAddr("8.8.8.8"), ipatlas.English)
	if err != nil {
		return "error: " + err.Error()
	}
	return r.City
}

func waitCity(e *geo.Engine, want string, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if city(e) == want {
			return true
		}
	}
	return false
}

// syncBuffer is a log sink that the test reads while the watcher writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatchReloadsOnlyTheLists: a new privacy list (privacy.json written
// last, as every hourly Tor fetch does) is put in service without reading
// the MMDB files again.
func TestWatchReloadsOnlyTheLists(t *testing.T) {
	logs := &syncBuffer{}
	e, dir := openFixture(t, geo.Options{Debounce: 20 * time.Millisecond, BuiltinPrivacy: true,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Watch(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	tor := func() bool {
		r, err := e.Lookup(netip.MustParseAddr("8.8.8.8"), ipatlas.English)
		return err == nil && r.Privacy != nil && r.Privacy.Tor != nil && *r.Privacy.Tor
	}
	// Watch may not have subscribed yet when the first write happens:
	// write again until the change shows, within a generous deadline.
	for deadline := time.Now().Add(20 * time.Second); !tor(); {
		geotest.WritePrivacyList(t, dir, privacy.TorList, geotest.TorExits(200, "8.8.8.8"), time.Now())
		for end := time.Now().Add(500 * time.Millisecond); !tor() && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		}
		if time.Now().After(deadline) {
			t.Fatal("the new Tor list was not put in service")
		}
	}
	if strings.Contains(logs.String(), "dataset loaded") {
		t.Errorf("the MMDB files were read again for a new privacy list:\n%s", logs.String())
	}
}
