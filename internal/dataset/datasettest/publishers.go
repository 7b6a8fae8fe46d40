package datasettest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// fillerNetworks is how many /24s the GeoIP2-schema fixtures add to the
// listed networks, one in each 23.N.0.0/16 with a record of its own (the
// writer merges neighbours with equal records): enough search-tree nodes
// (a few thousand) for the plausibility check that a real dataset passes
// and a stub fails.
const fillerNetworks = 256

// FillerCity is the city of the filler networks (23.N.0.0/24).
const FillerCity = "Fillerton"

// ASNRow is one network of an ASN MMDB in the GeoLite2-ASN schema.
type ASNRow struct {
	Network string
	ASN     uint32
	Org     string
}

// ASNRows are the networks of the generated ASN MMDBs.
var ASNRows = []ASNRow{
	{"1.1.1.0/24", 13335, "Cloudflare, Inc."},
	{"8.8.8.0/24", 15169, "Google LLC"},
	{"81.2.69.0/24", 20712, "Andrews & Arnold Ltd"},
	{"2001:4860::/32", 15169, "Google LLC"},
}

func fixtureTree(t testing.TB, dbType string, built time.Time, extra ...string) *mmdbwriter.Tree {
	t.Helper()
	opts := mmdbwriter.Options{
		DatabaseType: dbType,
		IPVersion:    6,
		RecordSize:   28,
		BuildEpoch:   built.Unix(),
		Languages:    []string{"en"},
		Description:  map[string]string{"en": dbType + " (datasettest fixture)"},
	}
	if len(extra) > 0 {
		opts.Languages = append(opts.Languages, extra...)
	}
	tree, err := mmdbwriter.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func insertNet(t testing.TB, tree *mmdbwriter.Tree, network string, v mmdbtype.DataType) {
	t.Helper()
	_, n, err := net.ParseCIDR(network)
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Insert(n, v); err != nil {
		t.Fatalf("inserting %s: %v", network, err)
	}
}

func treeBytes(t testing.TB, tree *mmdbwriter.Tree) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func names(en string) mmdbtype.Map { return mmdbtype.Map{"en": mmdbtype.String(en)} }

// GeoIP2CityMMDB builds a city MMDB in MaxMind's GeoIP2 schema, which
// DB-IP's own Lite downloads share ("DBIP-City-Lite", "GeoLite2-City"):
// nets (IPv4 and IPv6) plus the filler networks, built at built.
func GeoIP2CityMMDB(t testing.TB, dbType string, built time.Time, nets []CityNetwork) []byte {
	t.Helper()
	tree := fixtureTree(t, dbType, built)
	rec := func(n CityNetwork) mmdbtype.Map {
		m := mmdbtype.Map{
			"country":  mmdbtype.Map{"iso_code": mmdbtype.String(n.CountryCode), "names": names(n.CountryCode)},
			"city":     mmdbtype.Map{"names": names(n.City)},
			"location": mmdbtype.Map{"latitude": mmdbtype.Float64(n.Latitude), "longitude": mmdbtype.Float64(n.Longitude)},
		}
		if n.State1 != "" {
			m["subdivisions"] = mmdbtype.Slice{mmdbtype.Map{"names": names(n.State1)}}
		}
		if n.Timezone != "" {
			m["location"].(mmdbtype.Map)["time_zone"] = mmdbtype.String(n.Timezone)
		}
		if n.Postcode != "" {
			m["postal"] = mmdbtype.Map{"code": mmdbtype.String(n.Postcode)}
		}
		return m
	}
	for i := range fillerNetworks {
		insertNet(t, tree, fmt.Sprintf("23.%d.0.0/24", i), rec(CityNetwork{CountryCode: "US", City: FillerCity, Latitude: 40, Longitude: -100 + float32(i)/10}))
	}
	for _, n := range nets {
		insertNet(t, tree, n.Network.String(), rec(n))
	}
	return treeBytes(t, tree)
}

// ASNMMDB builds an ASN MMDB in the GeoLite2-ASN schema ("GeoLite2-ASN",
// DB-IP's "DBIP-ASN-Lite (compat=GeoLite2-ASN)"): rows plus the filler
// networks (AS64512 and up), built at built.
func ASNMMDB(t testing.TB, dbType string, built time.Time, rows []ASNRow) []byte {
	t.Helper()
	tree := fixtureTree(t, dbType, built)
	rec := func(asn uint32, org string) mmdbtype.Map {
		return mmdbtype.Map{
			"autonomous_system_number":       mmdbtype.Uint32(asn),
			"autonomous_system_organization": mmdbtype.String(org),
		}
	}
	for i := range fillerNetworks {
		insertNet(t, tree, fmt.Sprintf("23.%d.0.0/24", i), rec(64512+uint32(i), "Filler Networks"))
	}
	for _, r := range rows {
		insertNet(t, tree, r.Network, rec(r.ASN, r.Org))
	}
	return treeBytes(t, tree)
}

// Gzip compresses b as one gzip member.
func Gzip(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fileServer serves bodies by path (query included), with faults to
// inject, and counts requests.
type fileServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	drop  map[string]int64
	gets  map[string]int
}

func newFileServer(t testing.TB, h func(fs *fileServer) http.Handler) *fileServer {
	fs := &fileServer{files: map[string][]byte{}, drop: map[string]int64{}, gets: map[string]int{}}
	fs.srv = httptest.NewServer(h(fs))
	t.Cleanup(fs.srv.Close)
	return fs
}

// serveFile answers a published body, or 404.
func (fs *fileServer) serveFile(w http.ResponseWriter, key, contentType string) {
	fs.mu.Lock()
	body, ok := fs.files[key]
	drop, dropping := fs.drop[key]
	fs.gets[key]++
	fs.mu.Unlock()
	if !ok {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if dropping {
		w.Write(body[:min(drop, int64(len(body))-1)])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // cuts the connection
	}
	w.Write(body)
}

// DBIP is an httptest server laid out like download.db-ip.com: each
// monthly Lite file at /free/NAME-YYYY-MM.mmdb.gz, gzipped, and 404 for a
// month not published (yet). Its methods are safe for concurrent use.
type DBIP struct {
	URL string
	fs  *fileServer
}

// NewDBIP starts an empty DB-IP download server; it stops when the test
// ends.
func NewDBIP(t testing.TB) *DBIP {
	t.Helper()
	d := &DBIP{}
	d.fs = newFileServer(t, func(fs *fileServer) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fs.serveFile(w, r.URL.Path, "application/gzip")
		})
	})
	d.URL = d.fs.srv.URL
	return d
}

func dbipPath(name, month string) string { return "/free/" + name + "-" + month + ".mmdb.gz" }

// Publish makes DB-IP serve mmdb, gzipped, as the file of name
// ("dbip-city-lite", "dbip-asn-lite") for month (YYYY-MM).
func (d *DBIP) Publish(t testing.TB, name, month string, mmdb []byte) {
	t.Helper()
	d.PublishRaw(name, month, Gzip(t, mmdb))
}

// PublishRaw serves body exactly as given as the file of name and month.
func (d *DBIP) PublishRaw(name, month string, body []byte) {
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	d.fs.files[dbipPath(name, month)] = body
}

// Drop makes every later download of the file send n bytes (at most all
// but the last) and then cut the connection.
func (d *DBIP) Drop(name, month string, n int64) {
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	d.fs.drop[dbipPath(name, month)] = n
}

// Requests counts the requests for a file, published or not.
func (d *DBIP) Requests(name, month string) int {
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	return d.fs.gets[dbipPath(name, month)]
}

// MaxMind is an httptest server speaking MaxMind's download protocol:
// GET /geoip/databases/EDITION/download?suffix=tar.gz with HTTP basic auth
// (account ID, licence key) redirects to a second server, the storage,
// which serves the tarball (EDITION_YYYYMMDD/EDITION.mmdb with the licence
// texts) and refuses requests that carry credentials, as a signed URL on
// another host would not need them; ?suffix=tar.gz.sha256 answers
// "<sha256 hex>  EDITION_YYYYMMDD.tar.gz". Wrong or missing credentials
// get 401. Its methods are safe for concurrent use.
type MaxMind struct {
	URL                   string
	AccountID, LicenseKey string

	api, storage *fileServer
	leaked       int // storage requests that carried an Authorization header
}

// NewMaxMind starts a MaxMind download server for one account; it stops
// when the test ends.
func NewMaxMind(t testing.TB, accountID, licenseKey string) *MaxMind {
	t.Helper()
	m := &MaxMind{AccountID: accountID, LicenseKey: licenseKey}
	m.storage = newFileServer(t, func(fs *fileServer) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "" {
				fs.mu.Lock()
				m.leaked++
				fs.mu.Unlock()
				http.Error(w, "credentials sent to the storage host", http.StatusBadRequest)
				return
			}
			fs.serveFile(w, r.URL.Path, "application/gzip")
		})
	})
	// "localhost" rather than the API's 127.0.0.1: another host name, so
	// that the client's handling of credentials on a cross-host redirect
	// is what it is against MaxMind.
	storageURL := strings.Replace(m.storage.srv.URL, "127.0.0.1", "localhost", 1)
	m.api = newFileServer(t, func(fs *fileServer) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /geoip/databases/{edition}/download", func(w http.ResponseWriter, r *http.Request) {
			id, key, ok := r.BasicAuth()
			if !ok || id != m.AccountID || key != m.LicenseKey {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"code":"INVALID_LICENSE_KEY","error":"Invalid account ID or license key"}`)
				return
			}
			ed := r.PathValue("edition")
			switch r.URL.Query().Get("suffix") {
			case "tar.gz":
				fs.mu.Lock()
				name := string(fs.files[ed+"/name"])
				fs.gets[ed+"/tar.gz"]++
				fs.mu.Unlock()
				if name == "" {
					http.Error(w, "Not Found", http.StatusNotFound)
					return
				}
				http.Redirect(w, r, storageURL+"/"+name+"?X-Amz-Signature=fixture", http.StatusFound)
			case "tar.gz.sha256":
				fs.serveFile(w, ed+"/sha256", "text/plain")
			default:
				http.Error(w, "bad suffix", http.StatusBadRequest)
			}
		})
		return mux
	})
	m.URL = m.api.srv.URL
	return m
}

// Publish makes mmdb the latest release of edition, dated date
// (YYYYMMDD), with the correct SHA-256. It returns the tarball.
func (m *MaxMind) Publish(t testing.TB, edition, date string, mmdb []byte) []byte {
	t.Helper()
	dir := edition + "_" + date
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	mod := time.Date(2026, 1, 6, 12, 0, 0, 0, time.UTC)
	for _, e := range []struct {
		name string
		body []byte
		dir  bool
	}{
		{dir + "/", nil, true},
		{dir + "/COPYRIGHT.txt", []byte("Database and Contents Copyright (c) MaxMind, Inc.\n"), false},
		{dir + "/LICENSE.txt", []byte("Use of this MaxMind product is governed by MaxMind's GeoLite2 End User License Agreement.\n"), false},
		{dir + "/" + edition + ".mmdb", mmdb, false},
	} {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg, ModTime: mod}
		if e.dir {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	tgz := buf.Bytes()
	sum := sha256.Sum256(tgz)
	name := dir + ".tar.gz"
	m.api.mu.Lock()
	m.api.files[edition+"/name"] = []byte(name)
	m.api.files[edition+"/sha256"] = []byte(hex.EncodeToString(sum[:]) + "  " + name + "\n")
	m.api.mu.Unlock()
	m.storage.mu.Lock()
	m.storage.files["/"+name] = tgz
	m.storage.mu.Unlock()
	return tgz
}

// SetSHA256 replaces the published .sha256 document of edition.
func (m *MaxMind) SetSHA256(edition, doc string) {
	m.api.mu.Lock()
	defer m.api.mu.Unlock()
	m.api.files[edition+"/sha256"] = []byte(doc)
}

// Drop makes every later download of edition's current tarball send n
// bytes (at most all but the last) and then cut the connection.
func (m *MaxMind) Drop(edition string, n int64) {
	m.api.mu.Lock()
	name := string(m.api.files[edition+"/name"])
	m.api.mu.Unlock()
	m.storage.mu.Lock()
	defer m.storage.mu.Unlock()
	m.storage.drop["/"+name] = n
}

// Downloads counts tarball requests of edition (before the redirect).
func (m *MaxMind) Downloads(edition string) int {
	m.api.mu.Lock()
	defer m.api.mu.Unlock()
	return m.api.gets[edition+"/tar.gz"]
}

// LeakedCredentials counts storage requests that carried credentials.
func (m *MaxMind) LeakedCredentials() int {
	m.storage.mu.Lock()
	defer m.storage.mu.Unlock()
	return m.leaked
}
