package score

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// MaxTruths bounds a truth file: far more than any public ground truth
// holds, and few enough that its rows and their answers fit in memory.
const MaxTruths = 10_000_000

// Truth is one row of ground truth: an address and where it really is.
type Truth struct {
	Addr    netip.Addr
	Country string // ISO 3166-1 alpha-2, upper case
	Lat     float64
	Lon     float64
	// Kind is the row's own label ("probe", "anchor"), "" when the file
	// has no kind column or the row leaves it empty.
	Kind string
}

// ReadTruth reads a CSV of ip,country,latitude,longitude[,kind], with or
// without that header line. A malformed row is an error naming its line:
// a score over a file read in part would not say what it claims.
func ReadTruth(r io.Reader) ([]Truth, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var out []Truth
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, err
		}
		if len(out) == 0 && line == 1 && strings.EqualFold(strings.TrimSpace(rec[0]), "ip") {
			continue
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		t, err := parseTruth(rec)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if len(out) == MaxTruths {
			return nil, fmt.Errorf("line %d: more than %d rows", line, MaxTruths)
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, errors.New("no rows: want ip,country,latitude,longitude[,kind]")
	}
	return out, nil
}

func parseTruth(rec []string) (Truth, error) {
	if len(rec) < 4 || len(rec) > 5 {
		return Truth{}, fmt.Errorf("%d fields: want ip,country,latitude,longitude[,kind]", len(rec))
	}
	var t Truth
	var err error
	if t.Addr, err = netip.ParseAddr(strings.TrimSpace(rec[0])); err != nil {
		return Truth{}, fmt.Errorf("ip %q: not an IP address", rec[0])
	}
	t.Addr = t.Addr.Unmap()
	cc := strings.ToUpper(strings.TrimSpace(rec[1]))
	if len(cc) != 2 || cc[0] < 'A' || cc[0] > 'Z' || cc[1] < 'A' || cc[1] > 'Z' {
		return Truth{}, fmt.Errorf("country %q: want a two-letter ISO code", rec[1])
	}
	t.Country = cc
	if t.Lat, err = coordinate(rec[2], 90); err != nil {
		return Truth{}, fmt.Errorf("latitude %q: %w", rec[2], err)
	}
	if t.Lon, err = coordinate(rec[3], 180); err != nil {
		return Truth{}, fmt.Errorf("longitude %q: %w", rec[3], err)
	}
	if len(rec) == 5 {
		t.Kind = strings.TrimSpace(rec[4])
	}
	return t, nil
}

func coordinate(s string, limit float64) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("not a number")
	}
	if v < -limit || v > limit {
		return 0, fmt.Errorf("out of -%g to %g", limit, limit)
	}
	return v, nil
}
