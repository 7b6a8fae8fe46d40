package export

import (
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"net/netip"
	"reflect"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"go4.org/netipx"
)

// DatabaseType is the default database_type of an exported MMDB. Readers
// that serve GeoIP2's City model (MaxMind's libraries for Go, Python,
// Node, Java, .NET, PHP, Ruby) refuse a file whose type is not one of
// MaxMind's City names, while nginx's and HAProxy's modules and
// libmaxminddb read any type: MaxMind's own name keeps every one of them
// working. The description says the file is ipatlas' export.
const DatabaseType = "GeoIP2-City"

// Languages are the locales of the names maps.
var Languages = []string{"en", "zh-CN"}

// SixToFour is 6to4's prefix, which an MMDB answers by the IPv4 address
// inside (mmdbwriter aliases it to the IPv4 tree, as MaxMind's files do),
// while the engine looks it up as the IPv6 address it is: an export
// leaves the engine's answers for it out.
var SixToFour = netip.MustParsePrefix("2002::/16")

// MMDBOptions describe the file.
type MMDBOptions struct {
	DatabaseType string            // "" means DatabaseType
	Description  map[string]string // by language: the sources' attribution
	BuildTime    time.Time         // the zero time means now
	Progress     func(done, total int)
}

// Stats describe an export.
type Stats struct {
	Networks int // ranges with an answer (merged), each one or more CIDRs
	Prefixes int // CIDRs written (CSV rows; MMDB inserts)
	Records  int // distinct answers
}

// WriteMMDB writes the engine's answers for every public address to w
// as an MMDB in GeoIP2 City's layout (see Record).
func WriteMMDB(w io.Writer, e *geo.Engine, opts MMDBOptions) (Stats, error) {
	dbType := opts.DatabaseType
	if dbType == "" {
		dbType = DatabaseType
	}
	built := opts.BuildTime
	if built.IsZero() {
		built = time.Now()
	}
	keys := &identityKeys{ids: map[uintptr]uint64{}}
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            dbType,
		Description:             opts.Description,
		Languages:               Languages,
		BuildEpoch:              built.Unix(),
		IPVersion:               6,
		RecordSize:              28,
		IncludeReservedNetworks: true, // the walk keeps to netaddr's public space
		KeyGenerator:            keys,
	})
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	// Records are found by a 128-bit hash of their answer rather than by
	// the answer itself, a few hundred bytes each: a million of them
	// would hold more memory than the file they make.
	records := map[[2]uint64]mmdbtype.Map{}
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	names := nameMaps{}
	err = Walk(e, Options{Skip: []netip.Prefix{SixToFour}, Progress: opts.Progress}, func(r netipx.IPRange, a *Answer) error {
		st.Networks++
		k := [2]uint64{maphash.Comparable(seeds[0], *a), maphash.Comparable(seeds[1], *a)}
		m, ok := records[k]
		if !ok {
			m = a.record(names)
			records[k] = m
			keys.add(m)
		}
		for _, p := range r.Prefixes() {
			st.Prefixes++
			if err := tree.Insert(netipx.PrefixIPNet(p), m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	st.Records = len(records)
	clear(records)
	if _, err := tree.WriteTo(w); err != nil {
		return st, err
	}
	return st, nil
}

// identityKeys tells the writer's records apart by identity: every
// distinct answer is one map, built once, so hashing its contents on each
// of millions of inserts would only repeat what the answers' equality
// already did.
type identityKeys struct {
	ids map[uintptr]uint64
	buf [8]byte
}

func (k *identityKeys) add(m mmdbtype.Map) {
	k.ids[reflect.ValueOf(m).Pointer()] = uint64(len(k.ids) + 1)
}

func (k *identityKeys) Key(v mmdbtype.DataType) ([]byte, error) {
	m, ok := v.(mmdbtype.Map)
	if !ok {
		return nil, errors.New("export: a record that is not a map")
	}
	id, ok := k.ids[reflect.ValueOf(m).Pointer()]
	if !ok {
		return nil, errors.New("export: a record that was not built by the export")
	}
	binary.BigEndian.PutUint64(k.buf[:], id)
	return k.buf[:], nil
}

// nameMaps shares the parts of records among them: a names map per pair
// of names, and each part (continent, country, location, traits, ...)
// per value, so that a million distinct records hold a few small maps
// each rather than a tree of them.
type nameMaps map[any]mmdbtype.DataType

func (n nameMaps) of(en, zh string) mmdbtype.Map {
	return n.part([2]string{en, zh}, func() mmdbtype.DataType {
		m := mmdbtype.Map{}
		if en != "" {
			m["en"] = mmdbtype.String(en)
		}
		if zh != "" {
			m["zh-CN"] = mmdbtype.String(zh)
		}
		return m
	}).(mmdbtype.Map)
}

// part is the shared part with key k (a comparable value naming what it
// is built from), built on first use.
func (n nameMaps) part(k any, build func() mmdbtype.DataType) mmdbtype.DataType {
	if v, ok := n[k]; ok {
		return v
	}
	v := build()
	n[k] = v
	return v
}

type (
	continentKey struct{ code, en, zh string }
	countryKey   struct{ code, en, zh string }
	subKey       struct{ code, en, zh string }
	cityKey      struct{ en, zh string }
	locationKey  struct {
		lat, lon float64
		has      bool
		tz       string
	}
	traitsKey struct {
		asn                   uint32
		isp                   string
		known, host, vpn, tor bool
		relay                 bool
	}
	ownKey struct {
		known, host, vpn, relay, torKnown, tor bool
		service, distEN, distZH, currency      string
		area, source                           string
	}
)

// record is the answer in GeoIP2 City's layout: continent, country,
// subdivisions (the province), city, postal, location and traits (the AS
// and the privacy flags, named as GeoIP2's Anonymous IP and Enterprise
// databases name them); the AS also at the top level, as GeoLite2-ASN
// has it, and what GeoIP2 has no key for under "ipatlas".
func (a *Answer) record(n nameMaps) mmdbtype.Map {
	m := mmdbtype.Map{}
	if a.ContinentCode != "" {
		m["continent"] = n.part(continentKey{a.ContinentCode, a.Continent, a.ContinentZH}, func() mmdbtype.DataType {
			return mmdbtype.Map{"code": mmdbtype.String(a.ContinentCode), "names": n.of(a.Continent, a.ContinentZH)}
		})
	}
	if a.CountryCode != "" {
		m["country"] = n.part(countryKey{a.CountryCode, a.Country, a.CountryZH}, func() mmdbtype.DataType {
			return mmdbtype.Map{"iso_code": mmdbtype.String(a.CountryCode), "names": n.of(a.Country, a.CountryZH)}
		})
	}
	if a.Province != "" || a.ProvinceZH != "" || a.ProvinceCode != "" {
		m["subdivisions"] = n.part(subKey{a.ProvinceCode, a.Province, a.ProvinceZH}, func() mmdbtype.DataType {
			sub := mmdbtype.Map{}
			if a.ProvinceCode != "" {
				sub["iso_code"] = mmdbtype.String(a.ProvinceCode)
			}
			if a.Province != "" || a.ProvinceZH != "" {
				sub["names"] = n.of(a.Province, a.ProvinceZH)
			}
			return mmdbtype.Slice{sub}
		})
	}
	if a.City != "" || a.CityZH != "" {
		m["city"] = n.part(cityKey{a.City, a.CityZH}, func() mmdbtype.DataType {
			return mmdbtype.Map{"names": n.of(a.City, a.CityZH)}
		})
	}
	if a.Postal != "" {
		m["postal"] = mmdbtype.Map{"code": mmdbtype.String(a.Postal)}
	}
	if a.HasLocation || a.TimeZone != "" {
		m["location"] = n.part(locationKey{a.Latitude, a.Longitude, a.HasLocation, a.TimeZone}, func() mmdbtype.DataType {
			loc := mmdbtype.Map{}
			if a.HasLocation {
				loc["latitude"], loc["longitude"] = mmdbtype.Float64(a.Latitude), mmdbtype.Float64(a.Longitude)
			}
			if a.TimeZone != "" {
				loc["time_zone"] = mmdbtype.String(a.TimeZone)
			}
			return loc
		})
	}
	if a.ASN != 0 {
		m["autonomous_system_number"] = mmdbtype.Uint32(a.ASN)
		if a.ISP != "" {
			m["autonomous_system_organization"] = mmdbtype.String(a.ISP)
		}
	}
	tk := traitsKey{asn: a.ASN, isp: a.ISP}
	if a.PrivacyKnown {
		tk.known, tk.host, tk.vpn, tk.tor, tk.relay = true, a.Hosting, a.VPN, a.Tor, a.Relay
	}
	if tk != (traitsKey{known: tk.known}) {
		m["traits"] = n.part(tk, func() mmdbtype.DataType {
			traits := mmdbtype.Map{}
			if a.ASN != 0 {
				traits["autonomous_system_number"] = mmdbtype.Uint32(a.ASN)
				if a.ISP != "" {
					traits["autonomous_system_organization"] = mmdbtype.String(a.ISP)
					traits["isp"] = mmdbtype.String(a.ISP)
				}
			}
			if tk.host {
				traits["is_hosting_provider"] = mmdbtype.Bool(true)
			}
			if tk.vpn {
				traits["is_anonymous_vpn"] = mmdbtype.Bool(true)
			}
			if tk.tor {
				traits["is_tor_exit_node"] = mmdbtype.Bool(true)
			}
			if privacy.GeoIP2Anonymous(tk.vpn, tk.host, tk.tor, tk.relay) {
				traits["is_anonymous"] = mmdbtype.Bool(true)
			}
			return traits
		})
	}
	ok := ownKey{service: a.Service, distEN: a.District, distZH: a.DistrictZH, currency: a.Currency, area: a.AreaCode, source: a.Source}
	if a.PrivacyKnown {
		ok.known, ok.host, ok.vpn, ok.relay, ok.torKnown, ok.tor = true, a.Hosting, a.VPN, a.Relay, a.TorKnown, a.Tor
	}
	if ok != (ownKey{}) {
		m["ipatlas"] = n.part(ok, func() mmdbtype.DataType {
			own := mmdbtype.Map{}
			if ok.known {
				p := mmdbtype.Map{"hosting": mmdbtype.Bool(ok.host), "vpn": mmdbtype.Bool(ok.vpn), "relay": mmdbtype.Bool(ok.relay)}
				if ok.torKnown {
					p["tor"] = mmdbtype.Bool(ok.tor)
				}
				if ok.service != "" {
					p["service"] = mmdbtype.String(ok.service)
				}
				own["privacy"] = p
			}
			if ok.distEN != "" || ok.distZH != "" {
				own["district"] = mmdbtype.Map{"names": n.of(ok.distEN, ok.distZH)}
			}
			if ok.currency != "" {
				own["currency"] = mmdbtype.String(ok.currency)
			}
			if ok.area != "" {
				own["area_code"] = mmdbtype.String(ok.area)
			}
			if ok.source != "" {
				own["location_source"] = mmdbtype.String(ok.source)
			}
			return own
		})
	}
	return m
}
