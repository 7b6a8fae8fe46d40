package export

import (
	"context"
	"hash/maphash"
	"io"
	"net/netip"
	"time"

	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geoip2"
	"github.com/ipatlas/ipatlas/internal/mmdbstream"
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
// inside (the file aliases it to the IPv4 tree, as MaxMind's files do),
// while the engine looks it up as the IPv6 address it is: an export
// leaves the engine's answers for it out.
var SixToFour = netip.MustParsePrefix("2002::/16")

// MMDBOptions describe the file.
type MMDBOptions struct {
	DatabaseType string            // "" means DatabaseType
	Description  map[string]string // by language: the sources' attribution
	BuildTime    time.Time         // the zero time means now
	Progress     func(done, total int)
	Context      context.Context // stops the walk (Options.Context)
	// TempDir holds the search tree and the records until the file is
	// written out (about the file's size); "" means os.TempDir.
	TempDir string
}

// Stats describe an export.
type Stats struct {
	Networks int // ranges with an answer (merged), each one or more CIDRs
	Prefixes int // CIDRs written (CSV rows; MMDB inserts)
	Records  int // distinct answers
}

// WriteMMDB writes the engine's answers for every public address to w
// as an MMDB in GeoIP2 City's layout (see MMDB). Its memory does not
// grow with the file: the networks stream into the file's tree in
// address order, and each record is written out once.
func WriteMMDB(w io.Writer, e *geo.Engine, opts MMDBOptions) (Stats, error) {
	f, err := NewMMDB(opts)
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	err = Walk(e, Options{Skip: []netip.Prefix{SixToFour}, Progress: opts.Progress, Context: opts.Context}, f.Insert)
	if err != nil {
		return f.st, err
	}
	return f.Finish(w)
}

// MMDB is an export file being built (mmdbstream): networks, inserted
// in address order, and their answers. Each answer's record is its GeoIP2
// model (geoip2.New, Insights' members) as geoip2.MMDBEncoder writes it:
// what the MaxMind web shape answers for an address of the network,
// without the address and the account, with the AS also at the top level
// and ipatlas's own keys. An answer that says nothing (geo.Answer.Empty)
// has no record. Close removes its temporary files.
type MMDB struct {
	w   *mmdbstream.Writer
	enc *geoip2.MMDBEncoder
	// records are found by a 128-bit hash of their answer rather than by
	// the answer itself, a few hundred bytes each: a million of them
	// would hold more memory than the file they make.
	records map[[2]uint64]mmdbstream.Record
	seeds   [2]maphash.Seed
	st      Stats
}

// NewMMDB starts a file described by opts (its Progress is WriteMMDB's).
func NewMMDB(opts MMDBOptions) (*MMDB, error) {
	dbType := opts.DatabaseType
	if dbType == "" {
		dbType = DatabaseType
	}
	w, err := mmdbstream.New(mmdbstream.Options{
		DatabaseType: dbType,
		Description:  opts.Description,
		Languages:    Languages,
		BuildTime:    opts.BuildTime,
		RecordSize:   28,
		TempDir:      opts.TempDir,
	})
	if err != nil {
		return nil, err
	}
	return &MMDB{w: w, enc: geoip2.NewMMDBEncoder(), records: map[[2]uint64]mmdbstream.Record{},
		seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}}, nil
}

// Insert adds the network r with answer a; an answer that says nothing
// is left out. r must come after the networks inserted before it.
func (f *MMDB) Insert(r netipx.IPRange, a *Answer) error {
	m := geoip2.New((*geo.Answer)(a), geoip2.InsightsService)
	if m == nil {
		return nil
	}
	f.st.Networks++
	k := [2]uint64{maphash.Comparable(f.seeds[0], *a), maphash.Comparable(f.seeds[1], *a)}
	rec, ok := f.records[k]
	if !ok {
		v, err := f.enc.Encode(m)
		if err != nil {
			return err
		}
		// Written out now, the record's parts need not be shared.
		f.enc.Reset()
		if rec, err = f.w.Data(v); err != nil {
			return err
		}
		f.records[k] = rec
	}
	for _, p := range r.Prefixes() {
		f.st.Prefixes++
		if err := f.w.Insert(p, rec); err != nil {
			return err
		}
	}
	return nil
}

// Finish writes the file to w, and lets go of the records' index.
func (f *MMDB) Finish(w io.Writer) (Stats, error) {
	f.st.Records = len(f.records)
	clear(f.records)
	return f.st, f.w.Finish(w)
}

// Close removes the file's temporary files.
func (f *MMDB) Close() error { return f.w.Close() }
