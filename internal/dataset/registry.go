package dataset

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/outbound"
)

// maxMetadataSize bounds a registry metadata document; a package's latest
// version is a few kilobytes.
const maxMetadataSize = 4 << 20

// latest is the part of a registry's "latest version" document we use.
type latest struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	License json.RawMessage `json:"license"`
	Dist    struct {
		Integrity string `json:"integrity"`
		Shasum    string `json:"shasum"`
		Tarball   string `json:"tarball"`
	} `json:"dist"`
}

// licenseString renders the registry's license field, which is a string in
// current packages and an object {type, url} in old ones.
func (l latest) licenseString() string {
	var s string
	if json.Unmarshal(l.License, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(l.License, &o) == nil {
		return o.Type
	}
	return ""
}

// latestURL is where a registry serves the newest version of a package.
// Scoped names keep their "@" and escape the slash, as npm does.
func latestURL(registry, name string) (string, error) {
	if err := outbound.CheckURL(registry); err != nil {
		return "", fmt.Errorf("invalid registry URL: %w", err)
	}
	base, err := url.Parse(strings.TrimRight(registry, "/"))
	if err != nil {
		return "", fmt.Errorf("invalid registry URL: %w", err)
	}
	return base.String() + "/" + strings.Replace(name, "/", "%2f", 1) + "/latest", nil
}

// fetchLatest reads the metadata of a package's latest version.
func fetchLatest(ctx context.Context, client *http.Client, registry, name string) (latest, error) {
	u, err := latestURL(registry, name)
	if err != nil {
		return latest{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return latest{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return latest{}, fmt.Errorf("reading package metadata: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return latest{}, fmt.Errorf("reading package metadata: GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataSize+1))
	if err != nil {
		return latest{}, fmt.Errorf("reading package metadata: %w", err)
	}
	if len(body) > maxMetadataSize {
		return latest{}, fmt.Errorf("reading package metadata: GET %s: larger than %d bytes", u, maxMetadataSize)
	}
	var l latest
	if err := json.Unmarshal(body, &l); err != nil {
		return latest{}, fmt.Errorf("reading package metadata: GET %s: %w", u, err)
	}
	if l.Name != "" && l.Name != name {
		return latest{}, fmt.Errorf("reading package metadata: GET %s: registry answered for package %q", u, l.Name)
	}
	if l.Version == "" {
		return latest{}, fmt.Errorf("reading package metadata: GET %s: no version", u)
	}
	if !isPlainName(l.Version) {
		return latest{}, fmt.Errorf("reading package metadata: GET %s: invalid version %q", u, l.Version)
	}
	t, err := url.Parse(l.Dist.Tarball)
	if err != nil || (t.Scheme != "https" && t.Scheme != "http") || t.Host == "" {
		return latest{}, fmt.Errorf("reading package metadata: GET %s: invalid tarball URL %q", u, l.Dist.Tarball)
	}
	return l, nil
}

// digest checks a download against the hash the registry published.
type digest struct {
	h    hash.Hash
	want []byte
	sri  string // what the manifest records
}

// newDigest picks the strongest hash the registry published: the SRI
// integrity string (sha512, else sha384, else sha256), or only when that is
// absent, the legacy hex sha1 shasum.
func newDigest(integrity, shasum string) (*digest, error) {
	rank := map[string]int{"sha256": 1, "sha384": 2, "sha512": 3}
	var best *digest
	bestRank := 0
	for _, tok := range strings.Fields(integrity) {
		alg, b64, ok := strings.Cut(tok, "-")
		if !ok || rank[alg] == 0 {
			continue
		}
		b64, _, _ = strings.Cut(b64, "?") // SRI options
		want, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("registry published a malformed integrity hash %q", tok)
		}
		var h hash.Hash
		switch alg {
		case "sha256":
			h = sha256.New()
		case "sha384":
			h = sha512.New384()
		case "sha512":
			h = sha512.New()
		}
		if len(want) != h.Size() {
			return nil, fmt.Errorf("registry published a malformed integrity hash %q", tok)
		}
		if rank[alg] > bestRank {
			best, bestRank = &digest{h: h, want: want, sri: alg + "-" + b64}, rank[alg]
		}
	}
	if best != nil {
		return best, nil
	}
	if strings.TrimSpace(integrity) != "" {
		return nil, fmt.Errorf("registry published no supported integrity hash in %q", integrity)
	}
	if shasum == "" {
		return nil, fmt.Errorf("registry published no integrity hash: refusing to install an unverified tarball")
	}
	want, err := hex.DecodeString(shasum)
	if err != nil || len(want) != sha1.Size {
		return nil, fmt.Errorf("registry published a malformed shasum %q", shasum)
	}
	return &digest{h: sha1.New(), want: want, sri: "sha1-" + base64.StdEncoding.EncodeToString(want)}, nil
}

func (d *digest) Write(p []byte) (int, error) { return d.h.Write(p) }

func (d *digest) check() error {
	got := d.h.Sum(nil)
	if subtle.ConstantTimeCompare(got, d.want) != 1 {
		alg, _, _ := strings.Cut(d.sri, "-")
		return fmt.Errorf("%w: tarball has %s-%s, registry published %s", ErrIntegrity,
			alg, base64.StdEncoding.EncodeToString(got), d.sri)
	}
	return nil
}

// download streams url into dst, at most max bytes, cancelling when no byte
// has arrived for stall: a dead connection must not hang a fetch forever,
// and a slow but live one must not be cut off by an overall deadline.
//
// auth, when not nil, adds credentials to the request.
func download(ctx context.Context, client *http.Client, u string, auth func(*http.Request), dst io.Writer, max int64, stall time.Duration, prog func(total int64) io.Writer) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if auth != nil {
		auth(req)
	}
	errStalled := fmt.Errorf("download stalled: no data for %s", stall)
	timer := time.AfterFunc(stall, func() { cancel(errStalled) })
	defer timer.Stop()
	resp, err := client.Do(req)
	if err != nil {
		return 0, downloadErr(ctx, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, statusErr(u, resp)
	}
	if resp.ContentLength > max {
		return 0, fmt.Errorf("%w: GET %s: tarball is %d bytes, more than the limit of %d", ErrUnsafeArchive, u, resp.ContentLength, max)
	}
	body := &watchdogReader{r: io.LimitReader(resp.Body, max+1), timer: timer, stall: stall}
	w := dst
	if prog != nil {
		w = io.MultiWriter(dst, prog(resp.ContentLength))
	}
	n, err := io.Copy(w, body)
	if err != nil {
		return n, downloadErr(ctx, u, err)
	}
	if n > max {
		return n, fmt.Errorf("%w: GET %s: tarball is more than the limit of %d bytes", ErrUnsafeArchive, u, max)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("GET %s: got %d of %d bytes", u, n, resp.ContentLength)
	}
	return n, nil
}

// downloadErr prefers the reason the context was cancelled (a stall) over
// the transport's generic "context canceled", and names the URL once: the
// client's *url.Error would name it again.
func downloadErr(ctx context.Context, u string, err error) error {
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		return fmt.Errorf("GET %s: %w", u, cause)
	}
	if ue, ok := err.(*url.Error); ok {
		err = urlError{ue}
	}
	return fmt.Errorf("GET %s: %w", u, err)
}

// urlError is a client's error without its operation and URL, which the
// message names already; it still unwraps to the *url.Error.
type urlError struct{ ue *url.Error }

func (e urlError) Error() string { return e.ue.Err.Error() }
func (e urlError) Unwrap() error { return e.ue }

// watchdogReader pushes the stall deadline back on every read that makes
// progress.
type watchdogReader struct {
	r     io.Reader
	timer *time.Timer
	stall time.Duration
}

func (w *watchdogReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.timer.Reset(w.stall)
	}
	return n, err
}

// statusError is an answer other than 200 OK.
type statusError struct {
	url    string
	code   int
	status string
}

func (e *statusError) Error() string { return fmt.Sprintf("GET %s: %s", e.url, e.status) }

// statusErr describes a response that is not 200 OK; a 401 or 403 also
// matches ErrUnauthorized.
func statusErr(u string, resp *http.Response) error {
	e := &statusError{url: u, code: resp.StatusCode, status: resp.Status}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return fmt.Errorf("%w: %w", ErrUnauthorized, e)
	}
	return e
}

// isStatus reports whether err is an answer with the given status code.
func isStatus(err error, code int) bool {
	var e *statusError
	return errors.As(err, &e) && e.code == code
}

// checkBaseURL checks the base URL of a download service. The error does
// not repeat the URL, whose password it may hold.
func checkBaseURL(base, what string) error {
	if err := outbound.CheckURL(base); err != nil {
		return fmt.Errorf("invalid %s URL: %w", what, err)
	}
	if u, _ := url.Parse(base); u.RawQuery != "" {
		return fmt.Errorf("invalid %s URL %s: want http(s)://host[/path], without a query", what, u.Redacted())
	}
	return nil
}
