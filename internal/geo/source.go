package geo

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
)

// kind is what a source contributes to a record.
type kind uint8

const (
	kindUnsupported kind = iota
	kindCity             // city part, down to city and district
	kindCountry          // city part, country level only
	kindASN              // ASN part
	kindISP              // ASN part with the ISP's name
)

func (k kind) String() string {
	switch k {
	case kindCity:
		return "city"
	case kindCountry:
		return "country"
	case kindASN:
		return "asn"
	case kindISP:
		return "isp"
	}
	return "unsupported"
}

// schema is the layout of a source's data records.
type schema uint8

const (
	schemaNone   schema = iota
	schemaFlat          // DB-IP Lite via ip-location-db: country_code, state1, ...
	schemaGeoIP2        // MaxMind's: continent, country, subdivisions, city, ...
	schemaASN           // autonomous_system_number, autonomous_system_organization[, isp]
)

// Precedence ranks, lower first; see the package comment.
const (
	rankOperatorCity    = 10
	rankFlatCity        = 20
	rankOperatorCountry = 30
	rankFlatCountry     = 40

	rankISP         = 10
	rankOperatorASN = 20
	rankDefaultASN  = 30
)

// classify reads a database_type. The flat types are those of the
// ip-location-db MMDB packages ("city ipv4", "country ipv6"); the GeoIP2
// schema is shared by MaxMind's files and DB-IP's own MMDBs
// ("DBIP-City-Lite").
func classify(dbType string) (kind, schema, int) {
	lower := strings.ToLower(strings.TrimSpace(dbType))
	switch {
	case lower == "ipatlas-asn":
		return kindASN, schemaASN, rankDefaultASN
	case lower == "city" || strings.HasPrefix(lower, "city ipv"):
		return kindCity, schemaFlat, rankFlatCity
	case lower == "country" || strings.HasPrefix(lower, "country ipv"):
		return kindCountry, schemaFlat, rankFlatCountry
	}
	if !strings.HasPrefix(lower, "geoip2-") && !strings.HasPrefix(lower, "geolite2-") && !strings.HasPrefix(lower, "dbip-") {
		return kindUnsupported, schemaNone, 0
	}
	switch {
	case strings.Contains(lower, "city") || strings.Contains(lower, "enterprise"):
		return kindCity, schemaGeoIP2, rankOperatorCity
	case strings.Contains(lower, "isp"):
		return kindISP, schemaASN, rankISP
	case strings.Contains(lower, "asn"):
		return kindASN, schemaASN, rankOperatorASN
	case strings.Contains(lower, "country"):
		return kindCountry, schemaGeoIP2, rankOperatorCountry
	}
	return kindUnsupported, schemaNone, 0
}

// source is one open MMDB file.
type source struct {
	id     uint32 // index in its generation, part of the cache key
	kind   kind
	schema schema
	rank   int
	r      *maxminddb.Reader
	has4   bool // answers IPv4 addresses
	has6   bool // answers IPv6 addresses
	info   SourceInfo
	zones  *zoneIndex   // the file's zone index; nil when it has none that fits
	postal *postalIndex // the file's postal index; nil when it has none that fits
}

// part orders sources for Datasets: city-part sources, then ASN-part.
func (s *source) part() int {
	if s.kind == kindCity || s.kind == kindCountry {
		return 0
	}
	return 1
}

// sampleRecords is how many distinct data records Open decodes per file to
// catch a broken file at load rather than at lookup: all of a small file,
// a bounded sample of a large one so that loading stays fast.
const sampleRecords = 4096

// openSource opens and checks one file; full walks the whole file (for
// Describe), counting its networks.
func openSource(path string, full bool) (s *source, err error) {
	r, err := openReader(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("geo: %s is corrupt: %v", path, p)
		}
		if err != nil {
			r.Close()
			s = nil
		}
	}()
	md := r.Metadata
	s = &source{r: r, info: SourceInfo{
		File:         filepath.Base(path),
		DatabaseType: md.DatabaseType,
		IPVersion:    int(md.IPVersion),
		BuildTime:    md.BuildTime().UTC().Format(time.RFC3339),
		Description:  description(md.Description),
	}}
	s.kind, s.schema, s.rank = classify(md.DatabaseType)
	s.info.Kind = s.kind.String()
	switch md.IPVersion {
	case 4:
		s.has4 = true
	case 6:
		s.has6 = true
		has4, err := hasIPv4Data(r)
		if err != nil {
			return nil, fmt.Errorf("geo: %s is corrupt: %w", path, err)
		}
		s.has4 = has4
	default:
		return nil, fmt.Errorf("geo: %s has unsupported ip_version %d", path, md.IPVersion)
	}
	switch {
	case s.has4 && s.has6:
		s.info.Families = "IPv4+IPv6"
	case s.has4:
		s.info.Families = "IPv4"
	default:
		s.info.Families = "IPv6"
	}
	if err := s.check(full); err != nil {
		return nil, fmt.Errorf("geo: %s is corrupt: %w", path, err)
	}
	return s, nil
}

func description(m map[string]string) string {
	if d, ok := m["en"]; ok {
		return d
	}
	for _, d := range m {
		return d
	}
	return ""
}

// errSharedNodes is a search tree whose walk meets more ends (records
// pointing to data or to nothing) than a tree of its size can have: its
// nodes are shared beyond the aliases of the IPv4 subtree. Without this
// bound a corrupt file whose nodes each point twice to the next is walked
// once per path, 2^depth times: a 24-node IPv4 file took seconds to open,
// an IPv6 one would take forever.
var errSharedNodes = errors.New("the search tree has more paths than records: its nodes are shared")

// maxWalkEnds is how many ends a walk of r's tree may meet, aliases
// included. A tree of n nodes has 2n records, each the end of one path
// from the root; an IPv6 file may point up to three more places to its
// IPv4 subtree (::ffff:0:0/96, 2001::/32 and 2002::/16 in MaxMind's
// files), each a copy of at most 2n ends.
func maxWalkEnds(r *maxminddb.Reader) uint {
	return 4 * 2 * r.Metadata.NodeCount
}

// walk is every end of r's tree within prefix, in address order: data,
// nothing and aliases of the IPv4 subtree alike, so that every path the
// walk follows is counted.
func walk(r *maxminddb.Reader, prefix netip.Prefix) iter.Seq2[maxminddb.Result, error] {
	return func(yield func(maxminddb.Result, error) bool) {
		ends, limit := uint(0), maxWalkEnds(r)
		for res := range r.NetworksWithin(prefix, maxminddb.IncludeNetworksWithoutData(), maxminddb.IncludeAliasedNetworks()) {
			if err := res.Err(); err != nil {
				yield(res, err)
				return
			}
			if ends++; ends > limit {
				yield(res, errSharedNodes)
				return
			}
			if !yield(res, nil) {
				return
			}
		}
	}
}

// everything is the prefix of a whole tree of r.
func everything(r *maxminddb.Reader) netip.Prefix {
	if r.Metadata.IPVersion == 4 {
		return netip.PrefixFrom(netip.IPv4Unspecified(), 0)
	}
	return netip.PrefixFrom(netip.IPv6Unspecified(), 0)
}

// hasIPv4Data reports whether an IPv6 tree has any data in its IPv4
// subtree: the default IPv6 city file has none, so IPv4 lookups skip it.
func hasIPv4Data(r *maxminddb.Reader) (bool, error) {
	for res, err := range walk(r, netip.PrefixFrom(netip.IPv4Unspecified(), 0)) {
		if err != nil || res.Found() {
			return err == nil, err
		}
	}
	return false, nil
}

// check walks the file's tree, decoding each distinct record with the
// source's schema, for a sample of records or (full) the whole file; full
// also counts the networks with data, each once.
func (s *source) check(full bool) error {
	seen := make(map[uintptr]struct{})
	for res, err := range walk(s.r, everything(s.r)) {
		if err != nil {
			return err
		}
		if !res.Found() {
			continue
		}
		off := res.Offset()
		if _, ok := seen[off]; ok {
			continue
		}
		if !full && len(seen) >= sampleRecords {
			return nil
		}
		seen[off] = struct{}{}
		switch s.schema {
		case schemaFlat, schemaGeoIP2:
			_, err = s.decodeCity(res)
		case schemaASN:
			_, err = decodeASN(res)
		default:
			var v any
			err = res.Decode(&v)
		}
		if err != nil {
			return fmt.Errorf("record of %s: %w", res.Prefix(), err)
		}
	}
	if full {
		// The count skips the aliases of the IPv4 subtree, which the
		// walk above included: a network is counted once. That walk
		// bounded the tree, and this one follows fewer paths.
		networks := 0
		for res := range s.r.Networks() {
			if err := res.Err(); err != nil {
				return err
			}
			networks++
		}
		s.info.Networks = networks
	}
	return nil
}

// flatRecord is the DB-IP Lite schema of the ip-location-db packages.
type flatRecord struct {
	CountryCode string  `maxminddb:"country_code"`
	State1      string  `maxminddb:"state1"`
	State2      string  `maxminddb:"state2"`
	City        string  `maxminddb:"city"`
	Postcode    string  `maxminddb:"postcode"`
	Latitude    float64 `maxminddb:"latitude"`
	Longitude   float64 `maxminddb:"longitude"`
	Timezone    string  `maxminddb:"timezone"`
}

// localNames is the part of a GeoIP2 names map the record uses.
type localNames struct {
	EN string `maxminddb:"en"`
	ZH string `maxminddb:"zh-CN"`
}

// geoip2Record is the part of MaxMind's City/Country schema the record
// uses.
type geoip2Record struct {
	Continent struct {
		Code  string     `maxminddb:"code"`
		Names localNames `maxminddb:"names"`
	} `maxminddb:"continent"`
	Country struct {
		ISOCode string     `maxminddb:"iso_code"`
		Names   localNames `maxminddb:"names"`
	} `maxminddb:"country"`
	Subdivisions []struct {
		Names localNames `maxminddb:"names"`
	} `maxminddb:"subdivisions"`
	City struct {
		Names localNames `maxminddb:"names"`
	} `maxminddb:"city"`
	Location struct {
		Latitude  float64 `maxminddb:"latitude"`
		Longitude float64 `maxminddb:"longitude"`
		TimeZone  string  `maxminddb:"time_zone"`
	} `maxminddb:"location"`
	Postal struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"postal"`
}

// decodeCity reads one record of a city or country source.
func (s *source) decodeCity(res maxminddb.Result) (cityInput, error) {
	// NaN marks "absent": 0,0 is a real place.
	nan := math.NaN()
	switch s.schema {
	case schemaFlat:
		v := flatRecord{Latitude: nan, Longitude: nan}
		if err := res.Decode(&v); err != nil {
			return cityInput{}, err
		}
		return cityInput{
			countryCode: v.CountryCode,
			province:    localNames{EN: v.State1},
			district:    localNames{EN: v.State2},
			city:        localNames{EN: v.City},
			lat:         v.Latitude,
			lon:         v.Longitude,
			timeZone:    v.Timezone,
			zip:         v.Postcode,
		}, nil
	case schemaGeoIP2:
		var v geoip2Record
		v.Location.Latitude, v.Location.Longitude = nan, nan
		if err := res.Decode(&v); err != nil {
			return cityInput{}, err
		}
		in := cityInput{
			continentCode:  v.Continent.Code,
			continentNames: v.Continent.Names,
			countryCode:    v.Country.ISOCode,
			countryNames:   v.Country.Names,
			city:           v.City.Names,
			lat:            v.Location.Latitude,
			lon:            v.Location.Longitude,
			timeZone:       v.Location.TimeZone,
			zip:            v.Postal.Code,
		}
		if len(v.Subdivisions) > 0 {
			in.province = v.Subdivisions[0].Names
		}
		if len(v.Subdivisions) > 1 {
			in.district = v.Subdivisions[1].Names
		}
		return in, nil
	}
	return cityInput{}, fmt.Errorf("not a city source")
}

// asnRecord is GeoLite2-ASN's schema (also ipatlas-ASN's) plus
// GeoIP2-ISP's isp.
type asnRecord struct {
	Number uint64 `maxminddb:"autonomous_system_number"`
	Org    string `maxminddb:"autonomous_system_organization"`
	ISP    string `maxminddb:"isp"`
}

// asnData is the composed ASN part of a record.
type asnData struct {
	asn    string // "AS15169"
	isp    string
	number uint32 // 0 when the record has none
}

func decodeASN(res maxminddb.Result) (asnData, error) {
	var v asnRecord
	if err := res.Decode(&v); err != nil {
		return asnData{}, err
	}
	var d asnData
	if v.Number > 0 {
		d.asn = "AS" + strconv.FormatUint(v.Number, 10)
		if v.Number <= math.MaxUint32 {
			d.number = uint32(v.Number)
		}
	}
	d.isp = strings.TrimSpace(v.ISP)
	if d.isp == "" {
		d.isp = strings.TrimSpace(v.Org)
	}
	return d, nil
}
