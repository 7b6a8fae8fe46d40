package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"go4.org/netipx"
)

// ASNCompiler turns ip-location-db's ASN CSVs (rows of
// range_start,range_end,asn,organization, the range inclusive) into one
// MMDB. Records follow the GeoLite2-ASN schema
// ({autonomous_system_number, autonomous_system_organization}), so the
// engine reads this file and MaxMind's ASN files the same way.
//
// The tree is an IPv6 tree in MaxMind's layout: IPv4 ranges live in the
// IPv4 subtree (::/96), where any MaxMind DB reader looks IPv4 addresses up,
// and ::ffff:0:0/96, 2001::/32 (Teredo) and 2002::/16 (6to4) are aliases
// of it. Rows that fall inside those aliases are skipped (Stats.Aliased).
// Reserved networks are kept: whether an address may be looked up at all is
// the classifier's business, not the data's.
type ASNCompiler struct {
	tree   *mmdbwriter.Tree
	values map[asnValue]mmdbtype.Map
	stats  ASNStats
}

// ASNStats counts what a compile did.
type ASNStats struct {
	Rows     int // CSV rows read
	Prefixes int // CIDR prefixes inserted (ranges split on CIDR boundaries)
	Aliased  int // prefixes skipped because they lie in an IPv4 alias subtree
	Repaired int // rows whose organization was not valid UTF-8 (bad bytes became U+FFFD)
}

type asnValue struct {
	asn uint32
	org string
}

// NewASNCompiler starts an empty ASN database. buildTime becomes its
// build_epoch: the date of the data, not of the compile.
func NewASNCompiler(buildTime time.Time, description string) (*ASNCompiler, error) {
	if description == "" {
		description = "Autonomous systems, compiled by ipatlas"
	}
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            ASNDatabaseType,
		Description:             map[string]string{"en": description},
		BuildEpoch:              buildTime.Unix(),
		IPVersion:               6,
		RecordSize:              28,
		IncludeReservedNetworks: true,
	})
	if err != nil {
		return nil, err
	}
	return &ASNCompiler{tree: tree, values: map[asnValue]mmdbtype.Map{}}, nil
}

// AddCSV inserts every row of one CSV file; name is used in errors. A
// malformed row fails the whole file: a half-read upstream file must not
// turn into a database with silent holes.
func (c *ASNCompiler) AddCSV(r io.Reader, name string) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = 4
	cr.ReuseRecord = true
	var buf []netip.Prefix
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		start, end, value, err := c.parseRow(rec)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		c.stats.Rows++
		buf = netipx.IPRangeFrom(start, end).AppendPrefixes(buf[:0])
		for _, p := range buf {
			err := c.tree.Insert(netipx.PrefixIPNet(p), value)
			var aliased *mmdbwriter.AliasedNetworkError
			switch {
			case errors.As(err, &aliased):
				c.stats.Aliased++
			case err != nil:
				return fmt.Errorf("%s:%d: inserting %s: %w", name, line, p, err)
			default:
				c.stats.Prefixes++
			}
		}
	}
}

func (c *ASNCompiler) parseRow(rec []string) (start, end netip.Addr, value mmdbtype.Map, err error) {
	start, err = parseRangeAddr(rec[0])
	if err != nil {
		return
	}
	end, err = parseRangeAddr(rec[1])
	if err != nil {
		return
	}
	if start.Is4() != end.Is4() {
		err = fmt.Errorf("range %s-%s mixes IPv4 and IPv6", rec[0], rec[1])
		return
	}
	if end.Less(start) {
		err = fmt.Errorf("range %s-%s ends before it starts", rec[0], rec[1])
		return
	}
	n, err := strconv.ParseUint(rec[2], 10, 32)
	if err != nil {
		err = fmt.Errorf("invalid AS number %q", rec[2])
		return
	}
	org := rec[3]
	if !utf8.ValidString(org) {
		// MMDB strings must be UTF-8 (a reader's Verify rejects anything
		// else), but one mis-encoded name is no reason to refuse 500,000
		// good rows: keep the row, mark the bad bytes, count it.
		org = strings.ToValidUTF8(org, "\uFFFD")
		c.stats.Repaired++
	}
	key := asnValue{uint32(n), org}
	value, ok := c.values[key]
	if !ok {
		value = mmdbtype.Map{"autonomous_system_number": mmdbtype.Uint32(key.asn)}
		// Absent, not empty, when unknown: the GeoLite2 convention.
		if key.org != "" {
			value["autonomous_system_organization"] = mmdbtype.String(key.org)
		}
		c.values[key] = value
	}
	return start, end, value, nil
}

func parseRangeAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("invalid address %q", s)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("invalid address %q: zones are not allowed", s)
	}
	return a, nil
}

// Stats reports what has been compiled so far.
func (c *ASNCompiler) Stats() ASNStats { return c.stats }

// WriteTo writes the MMDB.
func (c *ASNCompiler) WriteTo(w io.Writer) (int64, error) { return c.tree.WriteTo(w) }
