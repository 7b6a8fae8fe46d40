package dataset

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
)

// DefaultDBIPURL is where DB-IP publishes its free Lite databases.
const DefaultDBIPURL = "https://download.db-ip.com"

// Attribution texts of DB-IP's own Lite databases (CC BY 4.0).
const (
	DBIPCityAttribution = "IP geolocation by DB-IP (https://db-ip.com), licensed under CC BY 4.0"
	DBIPASNAttribution  = "IP to ASN data by DB-IP (https://db-ip.com), licensed under CC BY 4.0"
)

// minNodes is the fewest search-tree nodes a downloaded database may have.
// A real one has hundreds of thousands (DB-IP's city Lite millions); an
// empty or stub file that is valid MMDB has a handful.
const minNodes = 1000

// dbipEdition is one of DB-IP's monthly Lite databases.
type dbipEdition struct {
	name        string // file name prefix: NAME-YYYY-MM.mmdb.gz
	kind        string
	typePrefix  string // its database_type starts with this, in any case
	attribution string
}

var dbipEditions = []dbipEdition{
	{"dbip-city-lite", KindCity, "dbip-city", DBIPCityAttribution},
	{"dbip-asn-lite", KindASN, "dbip-asn", DBIPASNAttribution},
}

// file is the name the edition is installed under.
func (e dbipEdition) file() string { return e.name + ".mmdb" }

// dbipURL is where DB-IP publishes an edition's file of a month.
func dbipURL(base, name, month string) string {
	return strings.TrimRight(base, "/") + "/free/" + name + "-" + month + ".mmdb.gz"
}

// fetchDBIP installs the newest monthly file of an edition: this month's,
// or while it is not published yet (a 404), last month's. DB-IP publishes
// no hash of its Lite files, so what is checked is the gzip stream (its
// CRC-32 and length), the MMDB structure (maxminddb's Verify), the database
// type, the build date (not in the future, not before the previous month)
// and the size of the search tree.
func (f *fetcher) fetchDBIP(ctx context.Context, e dbipEdition, installed Package, have bool) (Package, bool, error) {
	now := f.now().UTC()
	months := []string{now.Format("2006-01"), now.AddDate(0, 0, -now.Day()).Format("2006-01")}
	upToDate := func(month string) bool {
		return have && !f.force && installed.Version == month && installed.SourceOf() == SourceDBIP && filesPresent(f.dir, installed)
	}
	for i, month := range months {
		if upToDate(month) {
			f.rep.info(e.name, fmt.Sprintf("%s is installed and up to date", month), "version", month)
			return installed, false, nil
		}
		p, err := f.installDBIP(ctx, e, month, installed, have)
		if err != nil && isStatus(err, http.StatusNotFound) && i == 0 {
			f.rep.info(e.name, fmt.Sprintf("%s is not published yet (%v); trying %s", month, err, months[1]), "version", month)
			continue
		}
		if err != nil {
			return Package{}, false, err
		}
		return p, true, nil
	}
	return Package{}, false, fmt.Errorf("neither %s nor %s is published", months[0], months[1])
}

func (f *fetcher) installDBIP(ctx context.Context, e dbipEdition, month string, installed Package, have bool) (Package, error) {
	u := dbipURL(f.dbipURL, e.name, month)
	tmp, err := createTemp(f.dir, e.name+".mmdb.gz")
	if err != nil {
		return Package{}, err
	}
	defer tmp.abort()
	start := f.now()
	f.rep.info(e.name, "downloading "+u, "url", u)
	n, err := download(ctx, f.client, u, nil, tmp, f.maxTar, f.stall, f.rep.bar(e.name))
	if err != nil {
		return Package{}, err
	}
	switch {
	case have && installed.SourceOf() == SourceDBIP && installed.Version != month:
		f.rep.info(e.name, fmt.Sprintf("updating %s to %s", installed.Version, month), "version", month, "from", installed.Version)
	case have && installed.SourceOf() == SourceDBIP:
		f.rep.info(e.name, fmt.Sprintf("reinstalling %s", month), "version", month)
	default:
		f.rep.info(e.name, fmt.Sprintf("installing %s", month), "version", month)
	}
	if _, err := tmp.f.Seek(0, io.SeekStart); err != nil {
		return Package{}, err
	}
	s, err := f.gunzip(ctx, tmp.f, e.file())
	if err != nil {
		return Package{}, err
	}
	md, err := f.checkDatabase(s, func(dbType string) bool {
		return strings.HasPrefix(strings.ToLower(dbType), e.typePrefix)
	}, e.typePrefix+"*")
	if err != nil {
		removeStaged([]stagedFile{s})
		return Package{}, err
	}
	// DB-IP builds each month's file at the turn of the month: one built
	// long before is an old file under a new name.
	if first, _ := time.Parse("2006-01", month); md.BuildTime().Before(first.AddDate(0, -1, 0)) {
		removeStaged([]stagedFile{s})
		return Package{}, fmt.Errorf("%w: %s for %s says it was built at %s", ErrImplausible, s.name, month,
			md.BuildTime().UTC().Format(time.RFC3339))
	}
	if err := ctx.Err(); err != nil {
		removeStaged([]stagedFile{s})
		return Package{}, err
	}
	if err := f.install(ctx, []stagedFile{s}); err != nil {
		return Package{}, err
	}
	took := f.now().Sub(start)
	f.rep.info(e.name, fmt.Sprintf("installed %s (%s, built %s, %s downloaded) in %s", month, md.DatabaseType,
		md.BuildTime().UTC().Format(time.DateOnly), mib(n), took.Round(time.Millisecond)), "version", month, "duration", took)
	return Package{
		Source:      SourceDBIP,
		Name:        e.name,
		Kind:        e.kind,
		Version:     month,
		BuildDate:   md.BuildTime().UTC(),
		License:     license,
		LicenseURL:  licenseURL,
		Attribution: e.attribution,
		Tarball:     u,
		FetchedAt:   f.now().UTC().Truncate(time.Second),
		Files:       []File{{Name: s.name, Size: s.size, SHA256: s.sum}},
	}, nil
}

// gunzip decompresses a downloaded .gz into a staged file named name,
// reading to the end of the stream so that its CRC-32 and length are
// checked, and stopping at the file size limit.
func (f *fetcher) gunzip(ctx context.Context, r io.Reader, name string) (stagedFile, error) {
	gz, err := gzip.NewReader(&ctxReader{ctx, r})
	if err != nil {
		return stagedFile{}, fmt.Errorf("reading %s: %w", name+".gz", err)
	}
	defer gz.Close()
	t, err := createTemp(f.dir, name)
	if err != nil {
		return stagedFile{}, err
	}
	n, err := io.Copy(t, io.LimitReader(gz, f.limits.maxFile+1))
	if err != nil {
		t.abort()
		return stagedFile{}, fmt.Errorf("decompressing %s: %w", name+".gz", err)
	}
	if n > f.limits.maxFile {
		t.abort()
		return stagedFile{}, fmt.Errorf("%w: %s decompresses to more than the limit of %d bytes", ErrUnsafeArchive, name, f.limits.maxFile)
	}
	return t.finish()
}

// checkDatabase verifies a staged MMDB (see verifyMMDB) and checks that it
// is plausibly what was asked for: a database type that wantType accepts
// (described by want in errors), a build date neither before 2010 nor in
// the future, and at least minNodes nodes.
func (f *fetcher) checkDatabase(s stagedFile, wantType func(string) bool, want string) (maxminddb.Metadata, error) {
	md, err := verifyMMDB(s.tmp, s.name)
	if err != nil {
		return md, err
	}
	if !wantType(md.DatabaseType) {
		return md, fmt.Errorf("%w: %s has database type %q, want %s", ErrImplausible, s.name, md.DatabaseType, want)
	}
	built := md.BuildTime()
	if built.Before(time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)) || built.After(f.now().Add(48*time.Hour)) {
		return md, fmt.Errorf("%w: %s says it was built at %s", ErrImplausible, s.name, built.UTC().Format(time.RFC3339))
	}
	if md.NodeCount < minNodes {
		return md, fmt.Errorf("%w: %s has %d search tree nodes, fewer than the %d of any real dataset", ErrImplausible, s.name, md.NodeCount, minNodes)
	}
	f.rep.info(s.name, fmt.Sprintf("verified %s (%s, IPv%d, built %s, %d nodes, %s)", s.name, md.DatabaseType, md.IPVersion,
		built.UTC().Format(time.DateOnly), md.NodeCount, mib(s.size)), "file", s.name)
	return md, nil
}
