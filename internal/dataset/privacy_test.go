package dataset_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// upstreams serves the privacy lists as their upstreams lay them out:
// the two repositories' raw files under /x4bnet/ and /ipranges/ (the
// snapshot's copies, in their exact format), the Tor list at /tor. A
// test replaces a file's body, or its whole answer, through set.
type upstreams struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   map[string][]byte
	handlers map[string]http.HandlerFunc
}

func newUpstreams(t *testing.T) *upstreams {
	t.Helper()
	u := &upstreams{bodies: map[string][]byte{}, handlers: map[string]http.HandlerFunc{}}
	for _, l := range privacy.Lists {
		b, ok, err := privacy.Snapshot(l.Name)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			u.bodies["/"+l.Upstream+"/"+l.Path] = b
		}
	}
	u.bodies["/tor"] = []byte(torExits(1200))
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		h, b := u.handlers[r.URL.Path], u.bodies[r.URL.Path]
		u.mu.Unlock()
		switch {
		case h != nil:
			h(w, r)
		case b == nil:
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Last-Modified", "Sat, 22 Aug 2026 10:00:00 GMT")
			w.Write(b)
		}
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstreams) path(l privacy.List) string {
	if l.Upstream == privacy.UpstreamTor {
		return "/tor"
	}
	return "/" + l.Upstream + "/" + l.Path
}

func (u *upstreams) setBody(l privacy.List, b []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.bodies[u.path(l)] = b
	delete(u.handlers, u.path(l))
}

func (u *upstreams) setHandler(l privacy.List, h http.HandlerFunc) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.handlers[u.path(l)] = h
}

func (u *upstreams) mirrors() privacy.Mirrors {
	return privacy.Mirrors{X4BNet: u.URL + "/x4bnet/", IPRanges: u.URL + "/ipranges", Tor: u.URL + "/tor"}
}

// torExits is a list in the Tor Project's bulk exit list format: one
// IPv4 address per line.
func torExits(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "185.220.%d.%d\n", 100+i/256, i%256)
	}
	return b.String()
}

var testLists = []string{"x4bnet-datacenter-asn", "x4bnet-vpn-ipv4", "ipranges-amazon-ipv6", "ipranges-apple-proxy-ipv4", privacy.TorList}

func named(t *testing.T, name string) privacy.List {
	l, ok := privacy.Named(name)
	if !ok {
		t.Fatal(name)
	}
	return l
}

// TestFetchPrivacy: every list is fetched from its mirror URL, installed
// with its state in privacy.json, and compiles; a second fetch of the same
// copies changes nothing.
func TestFetchPrivacy(t *testing.T) {
	u := newUpstreams(t)
	dir := t.TempDir()
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	opts := dataset.PrivacyOptions{DataDir: dir, Mirrors: u.mirrors(), Now: func() time.Time { return now }}
	rep, err := dataset.FetchPrivacy(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Fetched) != len(privacy.Lists) || len(rep.Changed) != len(privacy.Lists) || len(rep.Manifest.Lists) != len(privacy.Lists) {
		t.Fatalf("fetched %d, changed %d, manifest %d; want %d each", len(rep.Fetched), len(rep.Changed), len(rep.Manifest.Lists), len(privacy.Lists))
	}
	for _, l := range privacy.Lists {
		st, ok := rep.Manifest.State(l.Name)
		b, err := os.ReadFile(filepath.Join(dir, l.File()))
		if !ok || err != nil || int64(len(b)) != st.Size || st.URL != u.URL+u.path(l) || !st.FetchedAt.Equal(now) ||
			!st.Modified.Equal(time.Date(2026, 8, 22, 10, 0, 0, 0, time.UTC)) || st.Entries == 0 {
			t.Errorf("%s: %+v, %v", l.Name, st, err)
		}
	}
	tab, err := privacy.Load(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, li := range tab.Lists() {
		if li.Builtin {
			t.Errorf("%s read from the snapshot after a fetch", li.Name)
		}
	}
	rep, err = dataset.FetchPrivacy(context.Background(), opts)
	if err != nil || len(rep.Changed) != 0 || len(rep.Fetched) != len(privacy.Lists) {
		t.Errorf("second fetch: changed %v, fetched %d, %v", rep.Changed, len(rep.Fetched), err)
	}
}

// TestFetchPrivacyKeepsGoodCopy: an empty, truncated, malformed,
// implausibly short or failed download of any list never replaces the
// copy in service, and the other lists are still updated.
func TestFetchPrivacyKeepsGoodCopy(t *testing.T) {
	u := newUpstreams(t)
	dir := t.TempDir()
	opts := dataset.PrivacyOptions{DataDir: dir, Mirrors: u.mirrors(), Lists: testLists, StallTimeout: 5 * time.Second}
	if _, err := dataset.FetchPrivacy(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	good := map[string][]byte{}
	for _, name := range testLists {
		b, err := os.ReadFile(filepath.Join(dir, named(t, name).File()))
		if err != nil {
			t.Fatal(err)
		}
		good[name] = b
	}
	bad := map[string]func(b []byte) http.HandlerFunc{
		"empty": func([]byte) http.HandlerFunc { return func(w http.ResponseWriter, r *http.Request) {} },
		"cut mid-line": func(b []byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.Write(b[:len(b)/2+3]) }
		},
		"cut short of its Content-Length": func(b []byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", fmt.Sprint(len(b)))
				w.Write(b[:len(b)/2])
			}
		},
		"cut at a line": func(b []byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Write(b[:bytes.IndexByte(b[len(b)/3:], '\n')+len(b)/3+1])
			}
		},
		"an HTML error page": func([]byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte("<!DOCTYPE html>\n<html><body>Rate limited</body></html>\n"))
			}
		},
		"a line of garbage": func(b []byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Write(b)
				w.Write([]byte("999.1.2.3/8\n"))
			}
		},
		"404": func([]byte) http.HandlerFunc { return http.NotFound },
		"503": func([]byte) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }
		},
	}
	for _, victim := range testLists {
		for what, h := range bad {
			l := named(t, victim)
			inService, err := os.ReadFile(filepath.Join(dir, l.File()))
			if err != nil {
				t.Fatal(err)
			}
			u.setHandler(l, h(good[victim]))
			// The others get a new, good copy meanwhile.
			other := named(t, privacy.TorList)
			if victim == privacy.TorList {
				other = named(t, "x4bnet-vpn-ipv4")
			}
			fresh := append(bytes.Clone(good[other.Name]), []byte("# "+victim+" "+what+"\n")...)
			u.setBody(other, fresh)
			rep, err := dataset.FetchPrivacy(context.Background(), opts)
			if err == nil {
				t.Errorf("%s served %s: no error", victim, what)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, l.File())); !bytes.Equal(b, inService) {
				t.Errorf("%s served %s: the copy in service was replaced", victim, what)
			}
			if st, _ := rep.Manifest.State(victim); st.Size != int64(len(inService)) {
				t.Errorf("%s served %s: manifest says %+v", victim, what, st)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, other.File())); !bytes.Equal(b, fresh) {
				t.Errorf("%s served %s: %s was not updated", victim, what, other.Name)
			}
			if _, err := privacy.Load(dir, false); err != nil {
				t.Errorf("%s served %s: the data dir no longer loads: %v", victim, what, err)
			}
			u.setBody(l, good[victim])
			u.setBody(other, good[other.Name])
		}
	}
}

// TestFetchPrivacyFirstCopyMustBePlausible: with no copy in service, a
// short list is still refused: the built-in snapshot stays in use.
func TestFetchPrivacyFirstCopyMustBePlausible(t *testing.T) {
	u := newUpstreams(t)
	dir := t.TempDir()
	l := named(t, privacy.TorList)
	u.setBody(l, []byte(torExits(10)))
	_, err := dataset.FetchPrivacy(context.Background(), dataset.PrivacyOptions{DataDir: dir, Mirrors: u.mirrors(), Lists: []string{l.Name}})
	if !errors.Is(err, privacy.ErrMalformed) {
		t.Errorf("a 10-exit list: %v, want ErrMalformed", err)
	}
	if _, err := os.Stat(filepath.Join(dir, l.File())); err == nil {
		t.Error("a 10-exit list was installed")
	}
}

// TestPrivacyUpdaterCheck: a check that got a good copy puts it in
// service, one that got none does not.
func TestPrivacyUpdaterCheck(t *testing.T) {
	u := newUpstreams(t)
	dir := t.TempDir()
	calls := 0
	up := dataset.NewPrivacyUpdater(dataset.PrivacyUpdaterOptions{
		Fetch:     dataset.PrivacyOptions{DataDir: dir, Mirrors: u.mirrors()},
		Installed: func() error { calls++; return nil },
	})
	if err := up.Check(context.Background(), []string{privacy.TorList}); err != nil || calls != 1 {
		t.Fatalf("check: %v, %d calls", err, calls)
	}
	u.setHandler(named(t, privacy.TorList), http.NotFound)
	if err := up.Check(context.Background(), []string{privacy.TorList}); err == nil || calls != 1 {
		t.Errorf("failed check: %v, %d calls", err, calls)
	}
}

// TestFetchPrivacyRefusesImplausible: a copy that parses but fails its
// bounds (a padded Tor list, a mirror adding a /8 to Telegram's seven
// ranges) never replaces the copy in service; privacy.json records the
// refusal until a good copy comes, and the lists in service show it.
func TestFetchPrivacyRefusesImplausible(t *testing.T) {
	u := newUpstreams(t)
	dir := t.TempDir()
	lists := []string{privacy.TorList, "ipranges-telegram-ipv4", "ipranges-vultr-ipv6"}
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	opts := dataset.PrivacyOptions{DataDir: dir, Mirrors: u.mirrors(), Lists: lists, Now: func() time.Time { return now }}
	if _, err := dataset.FetchPrivacy(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	inService := map[string][]byte{}
	for _, name := range lists {
		inService[name], _ = os.ReadFile(filepath.Join(dir, named(t, name).File()))
	}
	tor, telegram := named(t, privacy.TorList), named(t, "ipranges-telegram-ipv4")
	u.setBody(tor, []byte(torExits(1200)+"8.8.8.8\n"+strings.Repeat("8.8.4.4\n", 4000)))
	good, _, _ := privacy.Snapshot(telegram.Name)
	u.setBody(telegram, append(bytes.Clone(good), "73.0.0.0/8\n"...))
	rep, err := dataset.FetchPrivacy(context.Background(), opts)
	if !errors.Is(err, privacy.ErrImplausible) || !slices.Equal(rep.Refused, []string{tor.Name, telegram.Name}) {
		t.Fatalf("refused %q, %v; want both, ErrImplausible", rep.Refused, err)
	}
	for _, name := range lists {
		if b, _ := os.ReadFile(filepath.Join(dir, named(t, name).File())); !bytes.Equal(b, inService[name]) {
			t.Errorf("%s: the copy in service was replaced", name)
		}
	}
	m, err := privacy.ReadManifest(dir)
	if err != nil || len(m.Refused) != 2 {
		t.Fatalf("privacy.json: %+v, %v", m.Refused, err)
	}
	for _, r := range m.Refused {
		if r.URL != u.URL+u.path(named(t, r.Name)) || !r.At.Equal(now) || !strings.Contains(r.Reason, "implausible list") {
			t.Errorf("refusal %+v", r)
		}
	}
	tab, err := privacy.Load(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if f, _ := tab.Lookup(netip.MustParseAddr("8.8.8.8"), 0); f&privacy.Tor != 0 {
		t.Error("8.8.8.8 is a Tor exit after a padded list was refused")
	}
	if _, s := tab.Lookup(netip.MustParseAddr("73.170.12.34"), 0); s != "" {
		t.Errorf("a Comcast address names %q", s)
	}
	if got := len(tab.Refused()); got != 2 {
		t.Errorf("the table shows %d refusals, want 2", got)
	}
	for _, li := range tab.Lists() {
		if li.Name == "ipranges-vultr-ipv6" && (li.Refused.Count != 4 || li.Entries != 23) {
			t.Errorf("Vultr's IPv6 list: %+v, want 4 entries refused and 23 in service", li)
		}
	}

	// A good copy clears the refusal; a failed download (the network)
	// leaves the other in place.
	u.setBody(telegram, good)
	u.setHandler(tor, http.NotFound)
	rep, err = dataset.FetchPrivacy(context.Background(), opts)
	if err == nil || len(rep.Refused) != 0 {
		t.Fatalf("refused %q, %v", rep.Refused, err)
	}
	if m, _ := privacy.ReadManifest(dir); len(m.Refused) != 1 || m.Refused[0].Name != tor.Name {
		t.Errorf("privacy.json after a good Telegram copy and a 404 for Tor: %+v", m.Refused)
	}
}

// TestPrivacyUpdaterCheckRefused: a check whose only news is a refusal
// still reloads, so that the datasets listing shows it.
func TestPrivacyUpdaterCheckRefused(t *testing.T) {
	u := newUpstreams(t)
	calls := 0
	up := dataset.NewPrivacyUpdater(dataset.PrivacyUpdaterOptions{
		Fetch:     dataset.PrivacyOptions{DataDir: t.TempDir(), Mirrors: u.mirrors()},
		Installed: func() error { calls++; return nil },
	})
	u.setBody(named(t, privacy.TorList), []byte(torExits(1200)+strings.Repeat("8.8.8.8\n", 5000)))
	if err := up.Check(context.Background(), []string{privacy.TorList}); !errors.Is(err, privacy.ErrImplausible) || calls != 1 {
		t.Errorf("check of a padded list: %v, %d calls", err, calls)
	}
}

// TestFetchPrivacySlowMirror: a mirror that sends a byte now and then,
// never idle long enough for the stall timeout, holds up neither the
// other lists (fetched meanwhile) nor the fetch beyond its list's own
// deadline.
func TestFetchPrivacySlowMirror(t *testing.T) {
	u := newUpstreams(t)
	dir := t.TempDir()
	slow := named(t, testLists[0])
	var (
		mu       sync.Mutex
		served   = map[string]bool{}
		sawOther = make(chan bool, 1)
	)
	for _, name := range testLists[1:] {
		body := []byte(torExits(1200))
		if name != privacy.TorList {
			b, _, err := privacy.Snapshot(name)
			if err != nil {
				t.Fatal(err)
			}
			body = b
		}
		u.setHandler(named(t, name), func(w http.ResponseWriter, r *http.Request) {
			w.Write(body)
			mu.Lock()
			served[name] = true
			mu.Unlock()
		})
	}
	u.setHandler(slow, func(w http.ResponseWriter, r *http.Request) {
		// One byte at a time until the client gives up (at most a
		// minute, so that a fetch without a deadline ends too), noting
		// whether the other lists were served meanwhile.
		saw := false
		defer func() { sawOther <- saw }()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		stop := time.After(time.Minute)
		for {
			mu.Lock()
			saw = saw || len(served) == len(testLists)-1
			mu.Unlock()
			if _, err := w.Write([]byte("#")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	opts := dataset.PrivacyOptions{DataDir: dir, Mirrors: u.mirrors(), Lists: testLists,
		StallTimeout: time.Second, ListTimeout: 3 * time.Second}
	rep, err := dataset.FetchPrivacy(context.Background(), opts)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not downloaded within 3s") {
		t.Errorf("the slow list's error: %v, want its deadline", err)
	}
	if len(rep.Failed) != 1 || rep.Failed[0].Name != slow.Name || rep.Failed[0].Kept != dataset.KeptSnapshot {
		t.Errorf("failed: %+v, want %s alone, answered from the snapshot", rep.Failed, slow.Name)
	}
	if len(rep.Fetched) != len(testLists)-1 {
		t.Errorf("fetched %v, want every list but %s", rep.Fetched, slow.Name)
	}
	if !<-sawOther {
		t.Error("the other lists waited for the slow one")
	}
}

// TestPrivacyUpdaterCheckLogsOneWarning: a server without internet logs
// one warning per check, saying how many lists failed, the first reason
// and what answers for them; each failure, naming its URL once, goes to
// the debug level.
func TestPrivacyUpdaterCheckLogsOneWarning(t *testing.T) {
	dir := t.TempDir()
	dead := "http://127.0.0.1:1" // nothing listens on port 1
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	up := dataset.NewPrivacyUpdater(dataset.PrivacyUpdaterOptions{
		Fetch:  dataset.PrivacyOptions{DataDir: dir, Mirrors: privacy.Mirrors{X4BNet: dead, IPRanges: dead, Tor: dead + "/tor"}},
		Logger: log,
	})
	if err := up.Check(context.Background(), nil); err == nil {
		t.Fatal("no error with every list unreachable")
	}
	var warns, debugs []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		switch {
		case strings.Contains(line, "level=WARN"):
			warns = append(warns, line)
		case strings.Contains(line, "level=DEBUG"):
			debugs = append(debugs, line)
			if n := strings.Count(line, dead); n != 1 {
				t.Errorf("a failure names its URL %d times: %s", n, line)
			}
		default:
			t.Errorf("a line neither warning nor debug: %s", line)
		}
	}
	n := len(privacy.Lists)
	if len(warns) != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", len(warns), logs.String())
	}
	w := warns[0]
	for _, want := range []string{fmt.Sprintf("%d of %d privacy lists", n, n), fmt.Sprintf("%d answer from the built-in snapshot", n-1),
		"no Tor exit list is in service, so the tor flag is unknown", "first_err=", "connection refused"} {
		if !strings.Contains(w, want) {
			t.Errorf("the warning lacks %q: %s", want, w)
		}
	}
	if strings.Count(w, dead) != 1 || strings.Contains(w, "copies in service stay") {
		t.Errorf("the warning names more than the first failure, or claims copies that are not there: %s", w)
	}
	if len(debugs) != n {
		t.Errorf("%d debug lines, want one per list (%d)", len(debugs), n)
	}
	// Nothing was fetched and there was no manifest: none is written
	// (a manifest of no lists would say nothing).
	if _, err := os.Stat(filepath.Join(dir, privacy.ManifestFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("privacy.json after a check that fetched nothing: %v", err)
	}
}

// TestFetchPrivacyManifest: privacy.json never holds a null list, and is
// not rewritten when nothing in it changed (a server watching the data dir
// would read it again for nothing).
func TestFetchPrivacyManifest(t *testing.T) {
	u := newUpstreams(t)
	dir := t.TempDir()
	path := filepath.Join(dir, privacy.ManifestFile)
	// A manifest an earlier version wrote after a fetch that got nothing.
	if err := os.WriteFile(path, []byte(`{"lists": null}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tor := named(t, privacy.TorList)
	u.setHandler(tor, http.NotFound)
	opts := dataset.PrivacyOptions{DataDir: dir, Mirrors: u.mirrors(), Lists: []string{tor.Name}}
	if _, err := dataset.FetchPrivacy(context.Background(), opts); err == nil {
		t.Fatal("no error for a 404")
	}
	b, err := os.ReadFile(path)
	if err != nil || strings.Contains(string(b), "null") || !strings.Contains(string(b), `"lists": []`) {
		t.Errorf("privacy.json: %s, %v; want an empty list", b, err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.FetchPrivacy(context.Background(), opts); err == nil {
		t.Fatal("no error for a 404")
	}
	if after, err := os.Stat(path); err != nil || !os.SameFile(before, after) {
		t.Errorf("privacy.json was rewritten though nothing changed: %v", err)
	}
}
