package geofeed

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"
	"github.com/ipatlas/ipatlas/internal/outbound"
)

// Dir is the directory of the data dir that holds the fetched feeds: per
// feed, the copy as published (NAME.csv) and what is known of it
// (NAME.json), written after the copy.
const Dir = "geofeeds"

// DefaultInterval is how often a server fetches the feeds again. Operators
// change their feeds when they move a prefix, a few times a month.
const DefaultInterval = 24 * time.Hour

// Copy is a feed's copy in the data dir.
type Copy struct {
	Source    Source    `json:"source"`
	FetchedAt time.Time `json:"fetched_at"`
	// Modified is the server's Last-Modified for this copy, when it sent
	// one.
	Modified time.Time `json:"modified,omitzero"`
	Size     int64     `json:"size"`
	SHA256   string    `json:"sha256"`
	Entries  int       `json:"entries"`
	// Problems counts the lines of the copy that were skipped.
	Problems int `json:"problems"`

	// File is the copy's path; Feed is the copy parsed. Neither is
	// stored.
	File string `json:"-"`
	Feed *Feed  `json:"-"`
}

// baseName is the file name of s's copy without its extension: the
// feed's name for people and a hash of its URL, so that two feeds of one
// host never share a file.
func baseName(s Source) string {
	sum := sha256.Sum256([]byte(s.URL))
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '_'
	}, s.Name)
	if len(name) > 64 {
		name = name[:64]
	}
	return name + "-" + hex.EncodeToString(sum[:4])
}

// Load reads s's copy from the data dir; nil and no error when there is
// none. The copy is parsed with the bounds of a download (MaxSize,
// MaxEntries): a copy stored by a hostile feed costs no more than the
// feed did.
func Load(dataDir string, s Source) (*Copy, error) {
	c, err := loadMeta(dataDir, s)
	if c == nil || err != nil {
		return nil, err
	}
	f, err := os.Open(c.File)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if c.Feed, err = ParseFeed(f, c.File); err != nil {
		return nil, fmt.Errorf("geofeed: %s: %w", c.File, err)
	}
	return c, nil
}

// loadMeta reads the description of s's copy, without the copy; nil and
// no error when there is none.
func loadMeta(dataDir string, s Source) (*Copy, error) {
	dir := filepath.Join(dataDir, Dir)
	base := baseName(s)
	b, err := os.ReadFile(filepath.Join(dir, base+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c Copy
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("geofeed: %s: %w", filepath.Join(dir, base+".json"), err)
	}
	c.File = filepath.Join(dir, base+".csv")
	// The copy's own source is the one configured now (its ASes may have
	// changed since it was fetched); the URL is what made the file name.
	c.Source = s
	return &c, nil
}

// MaxRatio bounds how much a compressed body may inflate: CSV feeds
// compress five to twenty times; a body that inflates a thousand times
// is built to exhaust memory or disk.
const MaxRatio = 100

// ratioSlack is what a compressed body may inflate to before MaxRatio
// applies: the first block of a small body may inflate more.
const ratioSlack = 1 << 20

// ErrCompressionRatio is a compressed body that inflates past MaxRatio.
var ErrCompressionRatio = fmt.Errorf("geofeed: the compressed body inflates more than %d times", MaxRatio)

// Fetch downloads s, parses it as it arrives while writing it beside the
// copy in the data dir, and, when it is good, renames it over the copy,
// writes its description, and returns it. A download that fails, holds no
// good entry, or has fewer than half the entries of the copy in service
// leaves that copy in place and is an error: a feed half-written by its
// publisher must not unplace half its addresses. The body is bounded as
// read from the network (MaxSize) and as decompressed (MaxSize, and
// MaxRatio times what was read). client nil means an outbound client
// with a 2-minute timeout.
//
// A failure is recorded beside the copy (LastFailure), until a fetch
// succeeds: db info tells a feed that was never tried from one whose
// tries fail. A fetch cut short by ctx records nothing.
func Fetch(ctx context.Context, client *http.Client, dataDir string, s Source, now time.Time) (*Copy, error) {
	c, err := fetch(ctx, client, dataDir, s, now)
	failed := filepath.Join(dataDir, Dir, baseName(s)+".failed.json")
	switch {
	case err == nil:
		if rerr := os.Remove(failed); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return c, fmt.Errorf("geofeed %s: %w", s.URL, rerr)
		}
	case ctx.Err() == nil:
		b, merr := json.MarshalIndent(Failure{At: now.UTC(), Error: err.Error()}, "", "  ")
		if merr == nil && os.MkdirAll(filepath.Dir(failed), 0o755) == nil {
			// The record is a help to the operator; failing to write it
			// changes nothing of the fetch's outcome.
			_ = writeFile(filepath.Dir(failed), filepath.Base(failed), append(b, '\n'))
		}
	}
	return c, err
}

// Failure is the last failed fetch of a feed.
type Failure struct {
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// LastFailure is the last failed fetch of s since its last good one; nil
// when there is none.
func LastFailure(dataDir string, s Source) (*Failure, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, Dir, baseName(s)+".failed.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f Failure
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("geofeed: %s: %w", baseName(s)+".failed.json", err)
	}
	return &f, nil
}

func fetch(ctx context.Context, client *http.Client, dataDir string, s Source, now time.Time) (*Copy, error) {
	if client == nil {
		client = outbound.NewClient(outbound.Options{Timeout: 2 * time.Minute})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "ipatlas (geofeed)")
	// Asked for by name, a gzip body is not decoded by the transport:
	// Fetch decodes it, bounded.
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("geofeed %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("geofeed %s: %s", s.URL, resp.Status)
	}
	wire := &countingReader{r: io.LimitReader(resp.Body, MaxSize+1)}
	var body io.Reader = wire
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return nil, fmt.Errorf("geofeed %s: gzip body: %w", s.URL, err)
		}
		body = &ratioReader{r: zr, wire: wire}
	default:
		return nil, fmt.Errorf("geofeed %s: unsupported Content-Encoding %q (gzip or none)", s.URL, short(enc))
	}

	dir := filepath.Join(dataDir, Dir)
	base := baseName(s)
	file := filepath.Join(dir, base+".csv")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	pending, err := renameio.NewPendingFile(file, renameio.WithPermissions(0o644))
	if err != nil {
		return nil, fmt.Errorf("geofeed %s: %w", s.URL, err)
	}
	defer pending.Cleanup()
	sum := sha256.New()
	kept := &countingReader{r: io.TeeReader(body, io.MultiWriter(pending, sum))}
	feed, err := ParseFeed(kept, file)
	if wire.n > MaxSize {
		err = ErrTooLarge
	}
	if err != nil {
		return nil, fmt.Errorf("geofeed %s: %w", s.URL, err)
	}
	if feed.Len() == 0 {
		return nil, fmt.Errorf("geofeed %s: no usable entry in %d lines (%d skipped): keeping the copy in service", s.URL, feed.Lines, feed.Skipped)
	}
	prev, err := loadMeta(dataDir, s)
	if err == nil && prev != nil && feed.Len() < prev.Entries/2 {
		return nil, fmt.Errorf("geofeed %s: %d usable entries, fewer than half the %d of the copy in service: keeping that copy", s.URL, feed.Len(), prev.Entries)
	}
	c := &Copy{Source: s, FetchedAt: now.UTC(), Size: kept.n, SHA256: hex.EncodeToString(sum.Sum(nil)),
		Entries: feed.Len(), Problems: feed.Skipped, File: file, Feed: feed}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		c.Modified = t.UTC()
	}
	if err := pending.CloseAtomicallyReplace(); err != nil {
		return nil, fmt.Errorf("geofeed %s: %w", s.URL, err)
	}
	meta, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeFile(dir, base+".json", append(meta, '\n')); err != nil {
		return nil, fmt.Errorf("geofeed %s: %w", s.URL, err)
	}
	return c, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader is a decompressed body that fails once it is more than
// MaxRatio times what was read from the network (past ratioSlack).
type ratioReader struct {
	r    io.Reader
	wire *countingReader
	n    int64
}

func (z *ratioReader) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	z.n += int64(n)
	if z.n > ratioSlack && z.n > MaxRatio*z.wire.n {
		return n, ErrCompressionRatio
	}
	if errors.Is(err, io.ErrUnexpectedEOF) && z.wire.n > MaxSize {
		return n, ErrTooLarge
	}
	return n, err
}

// writeFile replaces dir/name with data: a temporary file, synced and
// renamed (renameio), so that a reader sees the old copy or the new one.
func writeFile(dir, name string, data []byte) error {
	return renameio.WriteFile(filepath.Join(dir, name), data, 0o644)
}

// LoadFile reads a local feed (an overrides file). A missing file is an
// error.
func LoadFile(path string) (*Feed, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}
