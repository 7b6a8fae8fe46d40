//go:build unix

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
)

// A `db fetch` killed with SIGKILL, while it downloads a new version and
// while it compiles one it has downloaded, leaves the installed dataset as
// it was (every file matching the manifest, which still names the old
// versions) and a server on the data dir answering from the old data
// throughout; the next fetch removes what the killed ones left behind and
// installs the new versions, which the server then serves.
func TestFetchKilled(t *testing.T) {
	skipKillTestUnderRace(t)
	if testing.Short() {
		t.Skip("-short: the fetch-kill test runs fetches in child processes")
	}
	bin := ipatlasBinary(t)
	const v1, v2 = "1.0.2026010100", "1.0.2026020100"
	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, v1)...)
	dir := t.TempDir()
	if out, err := exec.Command(bin, "db", "fetch", "--data-dir", dir, "--registry", reg.URL).CombinedOutput(); err != nil {
		t.Fatalf("first db fetch: %v\n%s", err, out)
	}
	oldManifest, err := os.ReadFile(filepath.Join(dir, dataset.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, map[string]string{dataset.CityPackage: v1, dataset.ASNPackage: v1})

	// A server on the data dir, queried all along. Before the last fetch
	// every answer must be the old data's; after it, old or new.
	const token = "fetch-kill-token-for-the-serve-tests"
	s := startServe(t, nil, serveArgs(dir, filepath.Join(t.TempDir(), "s.db"), "--key-rate", "0", "--admin-token", token)...)
	newKey, _ := roomyKey(t, s.admin, token, "fetch-kill")
	old := answer{"Mountain View", "AS15169"}
	updated := answer{"Sunnyvale", "AS64496"}
	q := startQuerying(t, "http://"+s.public, newKey, "8.8.8.8", old)
	start := time.Now()
	step := func(what string) { t.Logf("%6.2fs %s", time.Since(start).Seconds(), what) }

	// The new versions: 8.8.8.0/24 moves to another city and AS; the ASN
	// data is large enough that compiling it takes a while (about a
	// second: the window for kill point 2).
	const rows = 40_000
	city2 := cityPackageWith(t, v2, "8.8.8.0/24", "Sunnyvale")
	asn2 := bigASNPackage(t, v2, rows)
	step("built the new packages")

	// Kill point 1: the city tarball stalls half-way; the fetch is killed
	// while it waits for the rest.
	half := int64(len(reg.Publish(t, city2)) / 2)
	reg.StallTarball(dataset.CityPackage, half)
	fetch := startFetch(t, bin, dir, reg.URL)
	waitForTemp(t, dir, "tarball", half, fetch)
	fetch.kill(t)
	step("killed the first fetch")
	left := tempFiles(t, dir)
	t.Logf("killed mid-download (%d of %d bytes); left behind: %v", half, 2*half, left)
	if len(left) == 0 {
		t.Error("the kill mid-download left no temporary file: it came too late to test anything")
	}
	checkUnchanged(t, dir, oldManifest)
	checkInstalled(t, dir, map[string]string{dataset.CityPackage: v1, dataset.ASNPackage: v1})
	q.check(t, "after the kill mid-download")

	// Kill point 2: the city package is up to date; the new ASN tarball
	// arrives whole and the fetch is killed as soon as it has, while it
	// compiles and verifies the new asn.mmdb (nothing is renamed into
	// place before that is done).
	reg.Heal()
	reg.Publish(t, datasettest.CityPackage(t, v1))
	asnTarball := reg.Publish(t, asn2)
	fetch = startFetch(t, bin, dir, reg.URL)
	waitForTemp(t, dir, "tarball", int64(len(asnTarball)), fetch)
	fetch.kill(t)
	step("killed the second fetch")
	left = tempFiles(t, dir)
	t.Logf("killed after the ASN download, while staging; left behind: %v", left)
	if !hasTemp(left, "tarball") {
		t.Errorf("the downloaded tarball's temporary file is gone: the kill came after the fetch had finished with it (%v)\n%s", left, fetch.out)
	}
	checkUnchanged(t, dir, oldManifest)
	checkInstalled(t, dir, map[string]string{dataset.CityPackage: v1, dataset.ASNPackage: v1})
	q.check(t, "after the kill while staging")

	// A fetch that runs to the end cleans up and installs both new
	// versions; the server picks them up without a restart.
	reg.Publish(t, city2)
	// The packages are installed one after the other, each atomically: a
	// reload in between serves the new city data with the old ASN data.
	q.allow(answer{updated.city, old.asn})
	q.allow(updated)
	out, err := exec.Command(bin, "db", "fetch", "--data-dir", dir, "--registry", reg.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("db fetch after the kills: %v\n%s", err, out)
	}
	step("fetched to the end")
	if !strings.Contains(string(out), "removed") || !strings.Contains(string(out), "interrupted fetch") {
		t.Errorf("the fetch after the kills did not report removing their temporary files:\n%s", out)
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Errorf("temporary files after a complete fetch: %v", left)
	}
	checkInstalled(t, dir, map[string]string{dataset.CityPackage: v2, dataset.ASNPackage: v2})
	q.waitFor(t, updated, 30*time.Second)
	n := q.stop(t)
	t.Logf("%d queries answered during the test, every one from a consistent dataset", n)
}

// answer is what the test looks at in a query's record.
type answer struct{ city, asn string }

// querier queries one address in a loop and records any failure or any
// answer that is not one of the allowed ones.
type querier struct {
	mu      sync.Mutex
	allowed []answer
	bad     []string
	last    answer
	n       atomic.Int64
	done    chan struct{}
	stopped chan struct{}
}

func startQuerying(t *testing.T, base, key, ip string, allowed answer) *querier {
	t.Helper()
	q := &querier{allowed: []answer{allowed}, done: make(chan struct{}), stopped: make(chan struct{})}
	c := &http.Client{Timeout: 10 * time.Second}
	body := fmt.Sprintf(`{"ip": %q}`, ip)
	go func() {
		defer close(q.stopped)
		for {
			select {
			case <-q.done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			req, _ := http.NewRequest(http.MethodPost, base+"/api/ip-query", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := c.Do(req)
			var got answer
			problem := ""
			if err != nil {
				problem = err.Error()
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var env ipatlas.Envelope
				if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &env) != nil || !env.Success || env.Data == nil {
					problem = fmt.Sprintf("%s %s", resp.Status, b)
				} else {
					got = answer{env.Data.City, env.Data.ASN}
				}
			}
			q.n.Add(1)
			q.mu.Lock()
			ok := problem == ""
			if ok {
				ok = false
				for _, a := range q.allowed {
					ok = ok || got == a
				}
				if !ok {
					problem = fmt.Sprintf("answered %+v, allowed %+v", got, q.allowed)
				}
				q.last = got
			}
			if !ok && len(q.bad) < 10 {
				q.bad = append(q.bad, problem)
			}
			q.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		select {
		case <-q.done:
		default:
			close(q.done)
		}
		<-q.stopped
	})
	return q
}

func (q *querier) allow(a answer) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.allowed = append(q.allowed, a)
}

// check fails the test if a query went wrong so far, and makes sure the
// querier is still answered.
func (q *querier) check(t *testing.T, when string) {
	t.Helper()
	n := q.n.Load()
	for deadline := time.Now().Add(10 * time.Second); q.n.Load() < n+3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no query answered for 10s", when)
		}
	}
	q.report(t, when)
}

func (q *querier) report(t *testing.T, when string) {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, b := range q.bad {
		t.Errorf("%s: a query during the test: %s", when, b)
	}
	if len(q.bad) > 0 {
		t.FailNow()
	}
}

// waitFor waits until the querier's latest answer is a.
func (q *querier) waitFor(t *testing.T, a answer, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		q.mu.Lock()
		last := q.last
		q.mu.Unlock()
		if last == a {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still answers %+v %v after the new dataset was installed, want %+v", last, timeout, a)
		}
	}
}

func (q *querier) stop(t *testing.T) int64 {
	t.Helper()
	close(q.done)
	<-q.stopped
	q.report(t, "at the end")
	return q.n.Load()
}

// fetchChild is `ipatlas db fetch` in a subprocess.
type fetchChild struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

func startFetch(t *testing.T, bin, dir, registry string) *fetchChild {
	t.Helper()
	f := &fetchChild{out: &syncBuffer{}, exited: make(chan struct{})}
	f.cmd = exec.Command(bin, "db", "fetch", "--data-dir", dir, "--registry", registry)
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.out
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		f.cmd.Wait()
		close(f.exited)
	}()
	t.Cleanup(func() {
		f.cmd.Process.Kill()
		<-f.exited
	})
	return f
}

func (f *fetchChild) kill(t *testing.T) {
	t.Helper()
	f.cmd.Process.Signal(syscall.SIGKILL)
	<-f.exited
	if ws, ok := f.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("db fetch ended on its own (%v) before the kill:\n%s", f.cmd.ProcessState, f.out)
	}
}

// tempFiles lists what fetches leave in the data dir while they work.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".ipatlas-tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

func hasTemp(files []string, kind string) bool {
	for _, f := range files {
		if strings.HasPrefix(f, ".ipatlas-tmp-"+kind) {
			return true
		}
	}
	return false
}

// waitForTemp waits until the fetch's temporary file of that kind holds at
// least size bytes.
func waitForTemp(t *testing.T, dir, kind string, size int64, f *fetchChild) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(dir, ".ipatlas-tmp-"+kind+"*"))
		for _, p := range m {
			if st, err := os.Stat(p); err == nil && st.Size() >= size {
				return
			}
		}
		select {
		case <-f.exited:
			t.Fatalf("db fetch exited (%v) before its %s file reached %d bytes:\n%s", f.cmd.ProcessState, kind, size, f.out)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("db fetch's %s file never reached %d bytes:\n%s", kind, size, f.out)
		}
	}
}

// checkUnchanged checks that the manifest is byte for byte the old one.
func checkUnchanged(t *testing.T, dir string, manifest []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, dataset.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, manifest) {
		t.Errorf("the manifest changed:\n%s\nwas:\n%s", b, manifest)
	}
}

// checkInstalled checks that the manifest names the versions and that
// every file it lists has its recorded size and SHA-256.
func checkInstalled(t *testing.T, dir string, versions map[string]string) {
	t.Helper()
	m, err := dataset.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range versions {
		p, ok := m.Package(name)
		if !ok || p.Version != v {
			t.Errorf("the manifest has %s at %q, want %s", name, p.Version, v)
			continue
		}
		for _, f := range p.Files {
			sum, n, err := sha256File(filepath.Join(dir, f.Name))
			if err != nil || sum != f.SHA256 || n != f.Size {
				t.Errorf("%s (%s %s): sha256 %s, %d bytes, %v; the manifest says %s, %d bytes", f.Name, name, v, sum, n, err, f.SHA256, f.Size)
			}
		}
	}
}

// cityPackageWith is the fixture city package at version with one
// network's city changed.
func cityPackageWith(t *testing.T, version, network, city string) datasettest.Package {
	t.Helper()
	nets := append([]datasettest.CityNetwork(nil), datasettest.CityIPv4...)
	found := false
	for i := range nets {
		if nets[i].Network == netip.MustParsePrefix(network) {
			nets[i].City = city
			found = true
		}
	}
	if !found {
		t.Fatalf("no %s in the fixture", network)
	}
	p := datasettest.CityPackage(t, version)
	for i, e := range p.Entries {
		if e.Name == "package/"+dataset.CityIPv4File {
			p.Entries[i].Body = datasettest.CityMMDB(t, 4, nets)
		}
	}
	return p
}

// bigASNPackage is an ASN package at version with rows IPv4 ranges of
// 256 addresses and 8.8.8.0/24 in AS64496.
func bigASNPackage(t *testing.T, version string, rows int) datasettest.Package {
	t.Helper()
	var csv bytes.Buffer
	csv.WriteString("8.8.8.0,8.8.8.255,64496,Example Moved Networks\n")
	for i := range rows {
		// From 11.0.0.0 up: clear of 8.8.8.0/24.
		a := 11<<24 + uint32(i)<<8
		fmt.Fprintf(&csv, "%d.%d.%d.0,%d.%d.%d.255,%d,Org %d\n", a>>24, a>>16&255, a>>8&255, a>>24, a>>16&255, a>>8&255, 65000+i%500, i%997)
	}
	p := datasettest.ASNPackage(t, version)
	for i, e := range p.Entries {
		switch e.Name {
		case "package/asn-ipv4.csv":
			p.Entries[i].Body = csv.Bytes()
		case "package/asn-ipv4-num.csv":
			p.Entries[i].Body = nil
		}
	}
	return p
}

func sha256File(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return fmt.Sprintf("%x", h.Sum(nil)), n, err
}
