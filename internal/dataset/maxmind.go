package dataset

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// DefaultMaxMindURL is MaxMind's download service.
const DefaultMaxMindURL = "https://download.maxmind.com"

// DefaultMaxMindEditions are fetched when no edition is named: the free
// city and ASN databases.
var DefaultMaxMindEditions = []string{"GeoLite2-City", "GeoLite2-ASN"}

// Licences of MaxMind's databases. They are not open licences: GeoLite2
// comes under MaxMind's GeoLite2 EULA (attribution required, among other
// terms), GeoIP2 under the customer's commercial agreement.
const (
	geoLite2License    = "LicenseRef-MaxMind-GeoLite2-EULA"
	geoLite2LicenseURL = "https://www.maxmind.com/en/geolite2/eula"
	geoIP2License      = "LicenseRef-MaxMind-GeoIP2-EULA"
	geoIP2LicenseURL   = "https://www.maxmind.com/en/end-user-license-agreement"
	// GeoLite2Attribution is the notice the GeoLite2 EULA asks for.
	GeoLite2Attribution = "This product includes GeoLite2 data created by MaxMind, available from https://www.maxmind.com"
	geoIP2Attribution   = "GeoIP2 data by MaxMind (https://www.maxmind.com), under the licensee's agreement with MaxMind"
)

// editionRe is what an edition ID looks like (GeoLite2-City, GeoIP2-ISP).
var editionRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// maxmindAccount is the configuration of the MaxMind source.
type maxmindAccount struct {
	base      string
	accountID string
	key       string
	editions  []string
}

func newMaxMindAccount(opts FetchOptions) (maxmindAccount, error) {
	a := maxmindAccount{base: opts.MaxMindURL, accountID: strings.TrimSpace(opts.MaxMindAccountID),
		key: strings.TrimSpace(opts.MaxMindLicenseKey), editions: opts.MaxMindEditions}
	if a.base == "" {
		a.base = DefaultMaxMindURL
	}
	if err := checkBaseURL(a.base, "MaxMind"); err != nil {
		return a, err
	}
	if a.accountID == "" || a.key == "" {
		return a, errors.New("the maxmind source needs an account ID and a licence key (https://www.maxmind.com/en/accounts/current/license-key)")
	}
	if len(a.editions) == 0 {
		a.editions = DefaultMaxMindEditions
	}
	seen := map[string]bool{}
	for _, ed := range a.editions {
		if !editionRe.MatchString(ed) {
			return a, fmt.Errorf("invalid MaxMind edition ID %q (e.g. GeoLite2-City)", ed)
		}
		if seen[ed] {
			return a, fmt.Errorf("MaxMind edition %s is named twice", ed)
		}
		seen[ed] = true
	}
	return a, nil
}

// auth adds the account's HTTP basic credentials. Go's client drops them
// when a redirect leaves the host (MaxMind redirects downloads to a
// storage host with a signed URL), so they are never sent elsewhere.
func (a maxmindAccount) auth(req *http.Request) { req.SetBasicAuth(a.accountID, a.key) }

// url is where an edition's tarball (suffix "tar.gz") or its SHA-256
// ("tar.gz.sha256") is served.
func (a maxmindAccount) url(edition, suffix string) string {
	return strings.TrimRight(a.base, "/") + "/geoip/databases/" + url.PathEscape(edition) + "/download?suffix=" + url.QueryEscape(suffix)
}

// maxSHA256Size bounds the .sha256 document: one line of a hash and a name.
const maxSHA256Size = 4 << 10

// published is what MaxMind's .sha256 document says of the latest tarball.
type published struct {
	sum     []byte
	version string // the release date of the tarball's name, YYYYMMDD; else the hash's first 12 hex digits
}

// sri is the hash in the manifest's form.
func (p published) sri() string { return "sha256-" + base64.StdEncoding.EncodeToString(p.sum) }

// tarballNameRe matches MaxMind's tarball names, GeoLite2-City_20260106.tar.gz.
var tarballNameRe = regexp.MustCompile(`_([0-9]{8})\.tar\.gz$`)

// latestSHA256 reads the SHA-256 MaxMind publishes for an edition's latest
// tarball, in sha256sum's format: "<64 hex digits>  <file name>".
func (f *fetcher) latestSHA256(ctx context.Context, edition string) (published, error) {
	u := f.mm.url(edition, "tar.gz.sha256")
	ctx, cancel := context.WithTimeout(ctx, f.stall)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return published{}, err
	}
	f.mm.auth(req)
	resp, err := f.client.Do(req)
	if err != nil {
		return published{}, fmt.Errorf("reading the published SHA-256: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return published{}, fmt.Errorf("reading the published SHA-256: %w", statusErr(u, resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSHA256Size))
	if err != nil {
		return published{}, fmt.Errorf("reading the published SHA-256: %w", err)
	}
	p, err := parseSHA256Doc(string(body))
	if err != nil {
		return published{}, fmt.Errorf("reading the published SHA-256: GET %s: %w", u, err)
	}
	return p, nil
}

// parseSHA256Doc reads a .sha256 document: "<64 hex digits>  <file name>",
// the name optional.
func parseSHA256Doc(doc string) (published, error) {
	line, _, _ := strings.Cut(doc, "\n")
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return published{}, errors.New("empty")
	}
	sum, err := hex.DecodeString(fields[0])
	if err != nil || len(sum) != sha256.Size {
		return published{}, fmt.Errorf("%q is not a SHA-256", fields[0])
	}
	p := published{sum: sum, version: hex.EncodeToString(sum)[:12]}
	if len(fields) > 1 {
		if m := tarballNameRe.FindStringSubmatch(fields[1]); m != nil {
			p.version = m[1]
		}
	}
	return p, nil
}

// fetchMaxMind installs the latest tarball of an edition, verified against
// the SHA-256 MaxMind publishes for it. An edition whose installed
// tarball has the published hash is up to date: checking costs one small
// request.
func (f *fetcher) fetchMaxMind(ctx context.Context, edition string, installed Package, have bool) (Package, bool, error) {
	pub, err := f.latestSHA256(ctx, edition)
	if err != nil {
		return Package{}, false, err
	}
	if have && !f.force && installed.SourceOf() == SourceMaxMind && installed.Integrity == pub.sri() && filesPresent(f.dir, installed) {
		f.rep.info(edition, fmt.Sprintf("%s is installed and up to date", installed.Version), "version", installed.Version)
		return installed, false, nil
	}
	switch {
	case have && installed.SourceOf() == SourceMaxMind && installed.Version != pub.version:
		f.rep.info(edition, fmt.Sprintf("updating %s to %s", installed.Version, pub.version), "version", pub.version, "from", installed.Version)
	case have && installed.SourceOf() == SourceMaxMind:
		f.rep.info(edition, fmt.Sprintf("reinstalling %s", pub.version), "version", pub.version)
	default:
		f.rep.info(edition, fmt.Sprintf("installing %s", pub.version), "version", pub.version)
	}

	u := f.mm.url(edition, "tar.gz")
	tmp, err := createTemp(f.dir, "tarball")
	if err != nil {
		return Package{}, false, err
	}
	defer tmp.abort()
	start := f.now()
	h := sha256.New()
	f.rep.info(edition, "downloading "+u, "url", u)
	n, err := download(ctx, f.client, u, f.mm.auth, io.MultiWriter(tmp, h), f.maxTar, f.stall, f.rep.bar(edition))
	if err != nil {
		return Package{}, false, err
	}
	if got := h.Sum(nil); subtle.ConstantTimeCompare(got, pub.sum) != 1 {
		return Package{}, false, fmt.Errorf("%w: tarball has sha256 %x, MaxMind published %x", ErrIntegrity, got, pub.sum)
	}
	took := f.now().Sub(start)
	f.rep.info(edition, fmt.Sprintf("downloaded %s in %s (%s), sha256 verified", mib(n), took.Round(time.Millisecond), rate(n, took)),
		"bytes", n, "duration", took)
	if _, err := tmp.f.Seek(0, io.SeekStart); err != nil {
		return Package{}, false, err
	}
	s, err := f.extractMMDB(ctx, tmp.f, edition+".mmdb")
	if err != nil {
		return Package{}, false, err
	}
	md, err := f.checkDatabase(s, func(dbType string) bool { return strings.EqualFold(dbType, edition) }, edition)
	if err != nil {
		removeStaged([]stagedFile{s})
		return Package{}, false, err
	}
	if err := ctx.Err(); err != nil {
		removeStaged([]stagedFile{s})
		return Package{}, false, err
	}
	if err := f.install(ctx, []stagedFile{s}); err != nil {
		return Package{}, false, err
	}
	p := Package{
		Source:      SourceMaxMind,
		Name:        edition,
		Kind:        maxmindKind(edition),
		Version:     pub.version,
		BuildDate:   md.BuildTime().UTC(),
		License:     geoIP2License,
		LicenseURL:  geoIP2LicenseURL,
		Attribution: geoIP2Attribution,
		Integrity:   pub.sri(),
		Tarball:     u,
		FetchedAt:   f.now().UTC().Truncate(time.Second),
		Files:       []File{{Name: s.name, Size: s.size, SHA256: s.sum}},
	}
	if strings.HasPrefix(strings.ToLower(edition), "geolite2-") {
		p.License, p.LicenseURL, p.Attribution = geoLite2License, geoLite2LicenseURL, GeoLite2Attribution
	}
	took = f.now().Sub(start)
	f.rep.info(edition, fmt.Sprintf("installed %s in %s", pub.version, took.Round(time.Millisecond)), "version", pub.version, "duration", took)
	return p, true, nil
}

// maxmindKind is the manifest kind of an edition.
func maxmindKind(edition string) string {
	lower := strings.ToLower(edition)
	switch {
	case strings.Contains(lower, "asn"), strings.Contains(lower, "isp"):
		return KindASN
	case strings.Contains(lower, "country"):
		return KindCountry
	}
	return KindCity
}

// extractMMDB stages the one file called name of a MaxMind tarball, which
// holds it in a dated directory (GeoLite2-City_20260106/GeoLite2-City.mmdb)
// next to the licence and copyright texts.
func (f *fetcher) extractMMDB(ctx context.Context, r io.Reader, name string) (stagedFile, error) {
	staged, err := f.stageEntries(bufio.NewReaderSize(&ctxReader{ctx, r}, 1<<20), func(rel string) bool { return rel == name })
	if err != nil {
		removeStaged(staged)
		return stagedFile{}, err
	}
	if len(staged) == 0 {
		return stagedFile{}, fmt.Errorf("tarball has no %s", name)
	}
	return staged[0], nil
}
