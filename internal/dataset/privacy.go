package dataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipatlas/ipatlas/internal/outbound"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// The privacy lists' lock file and the prefix of their temporary files.
const (
	privacyLockName  = ".ipatlas-privacy.lock"
	privacyTmpPrefix = ".ipatlas-privacy-tmp-"
)

// writePrivacyFile replaces dir/name with data atomically and durably.
func writePrivacyFile(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, privacyTmpPrefix+name+"-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	return syncDir(dir)
}

// DefaultMaxListSize bounds one privacy list download: the largest list
// is under 1 MB.
const DefaultMaxListSize = 32 << 20

// DefaultListTimeout bounds the whole download of one privacy list. The
// stall timeout alone cannot end a mirror that sends a byte now and then;
// a list of under 1 MB takes seconds on any live connection.
const DefaultListTimeout = 2 * time.Minute

// DefaultListConcurrency is how many privacy lists are fetched at once:
// a slow mirror holds up one slot, not the others' refresh, and two
// upstreams are not sent dozens of requests at once.
const DefaultListConcurrency = 4

// DefaultTorInterval is how often a server fetches the Tor exit list:
// exits come and go every hour, and the Tor Project rebuilds the list
// continuously.
const DefaultTorInterval = time.Hour

// PrivacyOptions configures FetchPrivacy. Only DataDir is required.
type PrivacyOptions struct {
	DataDir string
	Mirrors privacy.Mirrors
	// Lists are the names of the lists to fetch; every list of
	// privacy.Lists when empty.
	Lists      []string
	HTTPClient *http.Client // an outbound client with sensible timeouts if nil
	// Progress receives one line per list for people; nil discards.
	Progress     io.Writer
	Logger       *slog.Logger
	MaxSize      int64         // per list; DefaultMaxListSize if 0
	StallTimeout time.Duration // no byte for this long fails a list; DefaultStallTimeout if 0
	ListTimeout  time.Duration // a list not downloaded in this long fails; DefaultListTimeout if 0
	Concurrency  int           // lists fetched at once; DefaultListConcurrency if 0
	Now          func() time.Time
}

// PrivacyReport is what FetchPrivacy did.
type PrivacyReport struct {
	Manifest privacy.Manifest // privacy.json as it now is
	Fetched  []string         // lists of which a good copy was got, changed or not
	Changed  []string         // lists whose copy changed
	Refused  []string         // lists whose download was refused by its checks (privacy.json's Refused says why); each is in Failed too
	Failed   []ListFailure    // lists of which no good copy was got, in the order of privacy.Lists
	Tried    int              // lists tried
}

// What answers for a list whose fetch failed (ListFailure.Kept).
const (
	KeptFetched  = "fetched"  // the copy an earlier fetch installed
	KeptSnapshot = "snapshot" // the snapshot built into the binary
	KeptNothing  = ""         // nothing: the list's flag is unknown
)

// ListFailure is a list of which no good copy was got: its download
// failed, or was refused by the list's checks (Refused; Err says why).
type ListFailure struct {
	Name    string
	Err     error
	Refused bool // the download came whole but failed its checks (privacy.ErrMalformed or privacy.ErrImplausible)
	// Kept is what a server answers the list from meanwhile: KeptFetched,
	// KeptSnapshot (a server reads the snapshot of a list never fetched)
	// or KeptNothing (the Tor exit list has no snapshot).
	Kept string
}

// FailureMessage says, in one line without the errors, how many lists
// failed (how many of them were refused by their checks) and what answers
// for them meanwhile; "" when none failed.
func (r PrivacyReport) FailureMessage() string {
	if len(r.Failed) == 0 {
		return ""
	}
	var fetched, snapshot, refused int
	var nothing []string
	for _, f := range r.Failed {
		if f.Refused {
			refused++
		}
		switch f.Kept {
		case KeptFetched:
			fetched++
		case KeptSnapshot:
			snapshot++
		default:
			nothing = append(nothing, f.Name)
		}
	}
	var kept []string
	if fetched > 0 {
		kept = append(kept, fmt.Sprintf("%d keep the copy fetched earlier", fetched))
	}
	if snapshot > 0 {
		kept = append(kept, fmt.Sprintf("%d answer from the built-in snapshot", snapshot))
	}
	for _, name := range nothing {
		if name == privacy.TorList {
			kept = append(kept, "no Tor exit list is in service, so the tor flag is unknown")
		} else {
			kept = append(kept, "no copy of "+name+" is in service")
		}
	}
	if len(r.Failed) == 1 {
		what := strings.Join(kept, "")
		switch r.Failed[0].Kept {
		case KeptFetched:
			what = "the copy fetched earlier stays in service"
		case KeptSnapshot:
			what = "it answers from the built-in snapshot"
		}
		if r.Failed[0].Refused {
			return fmt.Sprintf("the privacy list %s was refused by its checks: %s", r.Failed[0].Name, what)
		}
		return fmt.Sprintf("the privacy list %s could not be fetched: %s", r.Failed[0].Name, what)
	}
	var of string
	if refused > 0 {
		of = fmt.Sprintf(" (%d of them refused by their checks)", refused)
	}
	return fmt.Sprintf("%d of %d privacy lists could not be fetched%s: %s", len(r.Failed), max(r.Tried, len(r.Failed)), of, strings.Join(kept, "; "))
}

// FetchPrivacy downloads the privacy lists into the data directory.
//
// Each list is downloaded whole, parsed strictly in its format and checked
// for plausibility (privacy.List.Plausible: enough entries, and at least
// half of the copy in service) and against its sanity bounds
// (privacy.List.Check: not padded, not covering more of the Internet than
// the real list could) before it is written under a temporary name and
// renamed into place; the manifest is written last, and only when it
// changed. So an empty, truncated, malformed, placeholder or padded
// download never replaces a good copy, and a list that fails keeps the
// copy it had (the built-in snapshot, for a list never fetched). A
// download refused by these checks is a failure of its list (in
// rep.Failed, with the reason, and in rep.Refused), and privacy.json keeps
// the last refusal of each list (URL, time, reason) until a good copy
// comes; a download that failed for want of the network says nothing
// about the list and leaves a refusal recorded before in place.
//
// Lists are independent: a few are fetched at once, each within its own
// deadline, so that a slow mirror holds up only its own lists; the error
// names each one that failed (rep.Failed too), and the others are still
// installed.
func FetchPrivacy(ctx context.Context, opts PrivacyOptions) (PrivacyReport, error) {
	var rep PrivacyReport
	if opts.DataDir == "" {
		return rep, errors.New("dataset: no data dir")
	}
	if err := CheckMirrors(opts.Mirrors); err != nil {
		return rep, err
	}
	client := opts.HTTPClient
	if client == nil {
		client = outbound.NewClient(outbound.Options{ResponseHeaderTimeout: time.Minute})
	}
	maxSize := opts.MaxSize
	if maxSize <= 0 {
		maxSize = DefaultMaxListSize
	}
	stall := opts.StallTimeout
	if stall <= 0 {
		stall = DefaultStallTimeout
	}
	deadline := opts.ListTimeout
	if deadline <= 0 {
		deadline = DefaultListTimeout
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = DefaultListConcurrency
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	lists := privacy.Lists
	if len(opts.Lists) > 0 {
		lists = nil
		for _, name := range opts.Lists {
			l, ok := privacy.Named(name)
			if !ok {
				return rep, fmt.Errorf("dataset: no privacy list %q", name)
			}
			lists = append(lists, l)
		}
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return rep, err
	}
	// The lists have their own lock and temporary names: a fetch of the
	// lists and one of the dataset never wait for each other, and neither
	// removes the other's files in progress.
	unlock, err := lockFile(opts.DataDir, privacyLockName)
	if err != nil {
		return rep, err
	}
	defer unlock()
	if stale, _ := filepath.Glob(filepath.Join(opts.DataDir, privacyTmpPrefix+"*")); len(stale) > 0 {
		for _, f := range stale {
			os.Remove(f)
		}
		log.Info("removed temporary files of an interrupted fetch of the privacy lists", "files", len(stale))
	}
	oldManifest, _ := os.ReadFile(filepath.Join(opts.DataDir, privacy.ManifestFile))
	m, err := privacy.ReadManifest(opts.DataDir)
	if err != nil {
		log.Warn("ignoring an unreadable privacy manifest: every list is fetched again", "err", err)
		m = privacy.Manifest{}
	}

	type result struct {
		st   privacy.ListState
		prev privacy.ListState
		have bool
		err  error
	}
	results := make([]result, len(lists))
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, workers)
		pmu   sync.Mutex // progress lines, one at a time
	)
	for i, l := range lists {
		prev, have := m.State(l.Name)
		if have && !filePresent(opts.DataDir, l.File(), prev.Size) {
			have = false
		}
		results[i] = result{prev: prev, have: have}
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				results[i].err = fmt.Errorf("%s: %w", l.Name, ctx.Err())
				return
			}
			defer func() { <-slots }()
			lctx, cancel := context.WithTimeoutCause(ctx, deadline,
				fmt.Errorf("not downloaded within %s: %w", deadline, context.DeadlineExceeded))
			st, err := fetchList(lctx, client, l, l.URLWith(opts.Mirrors), prev, have, opts.DataDir, maxSize, stall, now)
			cancel()
			results[i].st, results[i].err = st, err
			pmu.Lock()
			defer pmu.Unlock()
			switch {
			case isRefusal(err):
				log.Debug("a privacy list's download was refused by its checks", "list", l.Name, "err", err)
				fmt.Fprintf(progress, "%s: refused: %v\n", l.Name, err)
			case err != nil:
				log.Debug("fetching a privacy list failed", "list", l.Name, "err", err)
				fmt.Fprintf(progress, "%s: failed: %v\n", l.Name, err)
			case have && st.SHA256 == prev.SHA256 && st.URL == prev.URL:
				fmt.Fprintf(progress, "%s: unchanged (%d entries)\n", l.Name, st.Entries)
				log.Debug("privacy list unchanged", "list", l.Name, "entries", st.Entries)
			default:
				fmt.Fprintf(progress, "%s: %d entries, %d bytes from %s\n", l.Name, st.Entries, st.Size, st.URL)
				log.Info("privacy list installed", "list", l.Name, "entries", st.Entries, "bytes", st.Size, "url", st.URL)
			}
		})
	}
	wg.Wait()

	var errs []error
	rep.Tried = len(lists)
	for i, l := range lists {
		r := results[i]
		// privacy.json keeps the last download refused of each list
		// until a good copy comes; a failed one (the network, a
		// deadline) says nothing about the list.
		refused := isRefusal(r.err)
		if r.err == nil || refused {
			m.Refused = slices.DeleteFunc(m.Refused, func(f privacy.Refusal) bool { return f.Name == l.Name })
		}
		if refused {
			m.Refused = append(m.Refused, privacy.Refusal{Name: l.Name, URL: l.URLWith(opts.Mirrors), At: now().UTC(), Reason: r.err.Error()})
			rep.Refused = append(rep.Refused, l.Name)
		}
		if r.err != nil {
			f := ListFailure{Name: l.Name, Err: r.err, Refused: refused, Kept: KeptNothing}
			if r.have {
				f.Kept = KeptFetched
			} else if _, ok, _ := privacy.Snapshot(l.Name); ok {
				f.Kept = KeptSnapshot
			}
			rep.Failed = append(rep.Failed, f)
			errs = append(errs, r.err)
			continue
		}
		rep.Fetched = append(rep.Fetched, l.Name)
		if !r.have || r.st.SHA256 != r.prev.SHA256 || r.st.URL != r.prev.URL {
			rep.Changed = append(rep.Changed, l.Name)
		}
		m.Lists = slices.DeleteFunc(m.Lists, func(s privacy.ListState) bool { return s.Name == l.Name })
		m.Lists = append(m.Lists, r.st)
	}
	if m.Lists == nil {
		m.Lists = []privacy.ListState{} // "lists": [], not null
	}
	slices.SortFunc(m.Lists, func(a, b privacy.ListState) int { return listOrder(a.Name) - listOrder(b.Name) })
	b, err := json.MarshalIndent(m, "", "  ")
	b = append(b, '\n')
	// Unchanged, the manifest is not rewritten: a server watching the
	// data dir would read the lists again for nothing. With no manifest
	// before, one is written when there is a list or a refusal to record.
	if err == nil && !bytes.Equal(b, oldManifest) && (oldManifest != nil || len(m.Lists) > 0 || len(m.Refused) > 0) {
		err = writePrivacyFile(opts.DataDir, privacy.ManifestFile, b)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("writing %s: %w", privacy.ManifestFile, err))
	}
	rep.Manifest = m
	return rep, errors.Join(errs...)
}

// isRefusal reports whether a list's download came whole but was refused
// by its checks (its format, plausibility or sanity bounds), as opposed to
// failing for want of the network or time.
// CheckMirrors checks the privacy lists' mirror URLs (outbound.CheckURL):
// a password in one would show in every failure's message.
func CheckMirrors(m privacy.Mirrors) error {
	for _, u := range []struct{ what, url string }{{"X4BNet", m.X4BNet}, {"ipranges", m.IPRanges}, {"Tor exit list", m.Tor}} {
		if u.url == "" {
			continue
		}
		if err := outbound.CheckURL(u.url); err != nil {
			return fmt.Errorf("dataset: invalid %s mirror URL: %w", u.what, err)
		}
	}
	return nil
}

func isRefusal(err error) bool {
	return errors.Is(err, privacy.ErrMalformed) || errors.Is(err, privacy.ErrImplausible)
}

func listOrder(name string) int {
	return slices.IndexFunc(privacy.Lists, func(l privacy.List) bool { return l.Name == name })
}

// filePresent reports whether dir/name exists with this size.
func filePresent(dir, name string, size int64) bool {
	fi, err := os.Stat(filepath.Join(dir, name))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// fetchList downloads one list and, when it is good and differs from the
// copy in service, installs it. It returns the list's new state.
func fetchList(ctx context.Context, client *http.Client, l privacy.List, u string, prev privacy.ListState, have bool,
	dir string, maxSize int64, stall time.Duration, now func() time.Time) (privacy.ListState, error) {
	var buf bytes.Buffer
	var modified time.Time
	if _, err := downloadModified(ctx, client, u, &buf, maxSize, stall, &modified); err != nil {
		return privacy.ListState{}, fmt.Errorf("%s: %w", l.Name, err)
	}
	b := buf.Bytes()
	e, err := l.Parse(b)
	if err != nil {
		return privacy.ListState{}, fmt.Errorf("GET %s: %w", u, err)
	}
	prevEntries := 0
	if have {
		prevEntries = prev.Entries
	}
	if err := l.Plausible(e.Len(), prevEntries); err != nil {
		return privacy.ListState{}, fmt.Errorf("GET %s: %w", u, err)
	}
	if _, _, err := l.Check(e); err != nil {
		return privacy.ListState{}, fmt.Errorf("GET %s: %w", u, err)
	}
	sum := sha256.Sum256(b)
	st := privacy.ListState{Name: l.Name, URL: u, Modified: modified.UTC(), FetchedAt: now().UTC(), Size: int64(len(b)),
		SHA256: hex.EncodeToString(sum[:]), Entries: e.Len()}
	if have && st.SHA256 == prev.SHA256 {
		return st, nil // the file in place is this copy
	}
	if err := writePrivacyFile(dir, l.File(), b); err != nil {
		return privacy.ListState{}, fmt.Errorf("%s: installing: %w", l.Name, err)
	}
	return st, nil
}

// downloadModified is download that also reports the response's
// Last-Modified (the zero time when absent or unreadable).
func downloadModified(ctx context.Context, client *http.Client, u string, dst io.Writer, max int64, stall time.Duration, modified *time.Time) (int64, error) {
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusOK {
			if t, perr := http.ParseTime(resp.Header.Get("Last-Modified")); perr == nil {
				*modified = t
			}
		}
		return resp, err
	})
	return download(ctx, &c, u, nil, dst, max, stall, nil)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// PrivacyUpdaterOptions configures a PrivacyUpdater.
type PrivacyUpdaterOptions struct {
	Fetch PrivacyOptions // Lists is ignored: the updater fetches every list
	// TorInterval is how often the Tor exit list is fetched, Interval how
	// often the other lists are: DefaultTorInterval and
	// DefaultUpdateInterval if 0, never if negative. Both are jittered by
	// ±10%.
	TorInterval time.Duration
	Interval    time.Duration
	// Installed is called after every fetch that got at least one good
	// copy, changed or not (the engine's ReloadPrivacy): a confirmed Tor
	// list is a fresh one; and after one that refused a copy, so that the
	// refusal shows. Its error is logged.
	Installed func() error
	Logger    *slog.Logger
}

// PrivacyUpdater keeps the privacy lists of a data directory current: the
// Tor exit list at once and then hourly, the others daily.
type PrivacyUpdater struct {
	opts PrivacyUpdaterOptions
	log  *slog.Logger
}

// NewPrivacyUpdater returns a PrivacyUpdater; it does nothing until Run.
func NewPrivacyUpdater(opts PrivacyUpdaterOptions) *PrivacyUpdater {
	if opts.TorInterval == 0 {
		opts.TorInterval = DefaultTorInterval
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultUpdateInterval
	}
	u := &PrivacyUpdater{opts: opts, log: opts.Logger}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	if u.opts.Fetch.Logger == nil {
		u.opts.Fetch.Logger = u.log
	}
	return u
}

// Run fetches the Tor list at once (the binary has no snapshot of it) and
// the other lists within the first tenth of their interval (at most five
// minutes), then each on its own schedule, until ctx is done. It returns
// at once when both are off.
func (u *PrivacyUpdater) Run(ctx context.Context) {
	var others []string
	for _, l := range privacy.Lists {
		if l.Name != privacy.TorList {
			others = append(others, l.Name)
		}
	}
	const never = time.Duration(math.MaxInt64)
	torNext, othersNext := time.Duration(0), never
	if u.opts.TorInterval < 0 {
		torNext = never
	}
	if u.opts.Interval > 0 {
		first := min(u.opts.Interval/10, 5*time.Minute)
		othersNext = first/2 + jitter(first)/2
	}
	for {
		wait := min(torNext, othersNext)
		if wait == never {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if torNext != never {
			torNext -= wait
		}
		if othersNext != never {
			othersNext -= wait
		}
		var lists []string
		if torNext <= 0 {
			lists = append(lists, privacy.TorList)
			torNext = jitter(u.opts.TorInterval)
		}
		if othersNext <= 0 {
			lists = append(lists, others...)
			othersNext = jitter(u.opts.Interval)
		}
		u.Check(ctx, lists)
	}
}

// Check fetches the named lists once and, if any copy was good or any
// download was refused (so that the refusal shows), calls Installed. A
// check that fails logs one warning: how many lists failed (a refused
// download is a failure of its list), the first reason and what answers
// for them meanwhile; each failure is logged at debug level.
func (u *PrivacyUpdater) Check(ctx context.Context, lists []string) error {
	opts := u.opts.Fetch
	opts.Lists = lists
	rep, err := FetchPrivacy(ctx, opts)
	// A refusal is put in service too, so that the datasets listing shows it.
	good := len(rep.Fetched) > 0 || len(rep.Refused) > 0
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, ErrBusy):
		u.log.Info("another fetch holds the privacy lists; trying again at the next interval", "err", err)
	case len(rep.Failed) > 0:
		u.log.Warn(rep.FailureMessage(), "failed", len(rep.Failed), "tried", rep.Tried, "first_err", rep.Failed[0].Err)
	default:
		u.log.Warn("fetching the privacy lists failed; the lists in service stay", "err", err)
	}
	if good && u.opts.Installed != nil {
		if rerr := u.opts.Installed(); rerr != nil {
			u.log.Error("new privacy lists could not be put in service; still serving the previous ones", "err", rerr)
			err = errors.Join(err, rerr)
		}
	}
	return err
}
