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
	"github.com/ipatlas/ipatlas/internal/geoip2"
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
// as an MMDB in GeoIP2 City's layout (see MMDB).
func WriteMMDB(w io.Writer, e *geo.Engine, opts MMDBOptions) (Stats, error) {
	f, err := NewMMDB(opts)
	if err != nil {
		return Stats{}, err
	}
	err = Walk(e, Options{Skip: []netip.Prefix{SixToFour}, Progress: opts.Progress}, f.Insert)
	if err != nil {
		return f.st, err
	}
	return f.Finish(w)
}

// MMDB is an export file being built: networks and their answers, held
// in memory until Finish. Each answer's record is its GeoIP2 model
// (geoip2.New, Insights' members) as geoip2.MMDBEncoder writes it: what
// the MaxMind web shape answers for an address of the network, without
// the address and the account, with the AS also at the top level and
// ipatlas's own keys. An answer that says nothing (geo.Answer.Empty) has
// no record.
type MMDB struct {
	tree *mmdbwriter.Tree
	keys *identityKeys
	enc  *geoip2.MMDBEncoder
	// records are found by a 128-bit hash of their answer rather than by
	// the answer itself, a few hundred bytes each: a million of them
	// would hold more memory than the file they make.
	records map[[2]uint64]mmdbtype.Map
	seeds   [2]maphash.Seed
	st      Stats
}

// NewMMDB starts a file described by opts (its Progress is WriteMMDB's).
func NewMMDB(opts MMDBOptions) (*MMDB, error) {
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
		return nil, err
	}
	return &MMDB{tree: tree, keys: keys, enc: geoip2.NewMMDBEncoder(), records: map[[2]uint64]mmdbtype.Map{},
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}, nil
}

// Insert adds the network r with answer a; an answer that says nothing
// is left out. r must not overlap a network inserted before.
func (f *MMDB) Insert(r netipx.IPRange, a *Answer) error {
	m := geoip2.New((*geo.Answer)(a), geoip2.InsightsService)
	if m == nil {
		return nil
	}
	f.st.Networks++
	k := [2]uint64{maphash.Comparable(f.seeds[0], *a), maphash.Comparable(f.seeds[1], *a)}
	rec, ok := f.records[k]
	if !ok {
		var err error
		if rec, err = f.enc.Encode(m); err != nil {
			return err
		}
		f.records[k] = rec
		f.keys.add(rec)
	}
	for _, p := range r.Prefixes() {
		f.st.Prefixes++
		if err := f.tree.Insert(netipx.PrefixIPNet(p), rec); err != nil {
			return err
		}
	}
	return nil
}

// Finish writes the file to w, and lets go of the records' index.
func (f *MMDB) Finish(w io.Writer) (Stats, error) {
	f.st.Records = len(f.records)
	clear(f.records)
	_, err := f.tree.WriteTo(w)
	return f.st, err
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
