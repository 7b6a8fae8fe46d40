package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/geo/mmdbgen"
	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/oschwald/maxminddb-golang/v2"
)

// echoip (github.com/mpolden/echoip, the engine of ifconfig.co) is the
// outside reference: a lookup service that a self-hoster would compare
// ipatlas with. It answers GET /json?ip= from GeoLite2-schema files and
// meters nothing. It is not on the Go module proxy, so the harness builds
// it from a source tree, as its own module in a temporary copy: its
// dependencies come from the module proxy and never enter this module's
// go.mod.

// defaultEchoipSource is where the source sits beside a checkout in the
// project's workspace, relative to the repository root.
const defaultEchoipSource = "../shared/peers/echoip"

// echoipSource resolves -echoip: "off" disables it; empty means
// $IPATLAS_ECHOIP_SRC, else defaultEchoipSource. It returns "" and why
// when there is no usable source tree.
func echoipSource(flagValue string, getenv func(string) string) (dir, why string) {
	dir = flagValue
	if dir == "off" {
		return "", "turned off (-echoip off)"
	}
	if dir == "" {
		dir = getenv("IPATLAS_ECHOIP_SRC")
	}
	if dir == "" {
		dir = defaultEchoipSource
	}
	if _, err := os.Stat(filepath.Join(dir, "cmd", "echoip", "main.go")); err != nil {
		return "", fmt.Sprintf("no echoip source in %s (-echoip DIR or IPATLAS_ECHOIP_SRC names one)", dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err.Error()
	}
	return abs, ""
}

// buildEchoip copies the source tree into tmp and builds it there as its
// own module (GOWORK off, -mod=mod so that its go.sum may be completed
// from the proxy), returning the binary's path. The copy keeps the build
// from writing into the shared, read-only source.
func buildEchoip(ctx context.Context, src, tmp string) (string, error) {
	dst := filepath.Join(tmp, "echoip-src")
	if err := copyTree(src, dst); err != nil {
		return "", fmt.Errorf("copying echoip's source: %w", err)
	}
	bin := filepath.Join(tmp, "echoip")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/echoip")
	cmd.Dir = dst
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building echoip: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return bin, nil
}

// copyTree copies regular files and directories, skipping .git.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// File names of echoip's data, GeoLite2's own.
const (
	echoipCityFile = "GeoLite2-City.mmdb"
	echoipASNFile  = "GeoLite2-ASN.mmdb"
)

// echoipData returns a directory holding GeoLite2-schema city and ASN
// files written from the dataset in dataDir. Those of a real dataset
// take a minute or more to write, so they are kept in the user's cache
// directory, keyed by the dataset's description and file sizes; those of
// a generated one go into tmp.
func echoipData(ctx context.Context, dataDir, tmp string, generated bool, logf func(string, ...any)) (string, error) {
	out := filepath.Join(tmp, "echoip-data")
	if !generated {
		key, err := datasetKey(dataDir)
		if err != nil {
			return "", err
		}
		if cache, err := os.UserCacheDir(); err == nil {
			out = filepath.Join(cache, "ipatlas-load", "echoip-"+key)
		}
		if _, err := os.Stat(filepath.Join(out, echoipASNFile)); err == nil {
			return out, nil
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	logf("writing echoip's GeoLite2-schema files from %s into %s", dataDir, out)
	if !generated {
		logf("a real dataset is millions of networks: on a 2-core machine this takes a few minutes and several GB, once (the files are kept)")
	}
	start := time.Now()
	n, err := writeEchoipData(ctx, dataDir, out)
	if err != nil {
		return "", fmt.Errorf("writing echoip's data: %w", err)
	}
	logf("wrote %d city and %d ASN networks in %v", n.city, n.asn, time.Since(start).Round(time.Second))
	return out, nil
}

// datasetKey names a dataset's contents: its dataset.json (which pins
// every file's version) and the sizes of its files.
func datasetKey(dir string) (string, error) {
	h := sha256.New()
	if b, err := os.ReadFile(filepath.Join(dir, "dataset.json")); err == nil {
		h.Write(b)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".mmdb") {
			fmt.Fprintf(h, "%s %d %d\n", e.Name(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// mmdbwriter aliases these IPv6 networks to the IPv4 space in an IPv6
// tree, as MaxMind's own files do; a network inside one cannot be
// inserted, and its addresses are answered from the IPv4 data anyway.
var aliasedNetworks = []netip.Prefix{
	netip.MustParsePrefix("::ffff:0:0/96"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2002::/16"),
}

func aliased(p netip.Prefix) bool {
	for _, a := range aliasedNetworks {
		if a.Bits() <= p.Bits() && a.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

type echoipCounts struct{ city, asn int }

// writeEchoipData writes the city file from what ipatlas itself answers
// for each network of the dataset's city files (the engine's composed
// English record, so both servers answer the same names, coordinates and
// time zones), and the ASN file from the dataset's ASN file.
func writeEchoipData(ctx context.Context, dataDir, out string) (echoipCounts, error) {
	var n echoipCounts
	eng, err := geo.Open(dataDir, geo.Options{})
	if err != nil {
		return n, err
	}
	defer eng.Close()
	city, err := mmdbgen.NewGeoIP2Writer("GeoLite2-City")
	if err != nil {
		return n, err
	}
	var asn []mmdbgen.ASNRow
	for _, ds := range eng.Datasets() {
		if ds.Kind != "city" && ds.Kind != "asn" {
			continue
		}
		// A real dataset has about 15 million networks but 700,000
		// distinct records (by their offset in the file): each is
		// composed and converted once, and the tree holds one value per
		// record, not per network.
		values := make(map[uintptr]mmdbtype.DataType)
		r, err := maxminddb.Open(filepath.Join(dataDir, ds.File))
		if err != nil {
			return n, err
		}
		for res := range r.Networks() {
			if err := res.Err(); err != nil {
				r.Close()
				return n, fmt.Errorf("%s: %w", ds.File, err)
			}
			if (n.city+len(asn))%65536 == 0 && ctx.Err() != nil {
				r.Close()
				return n, ctx.Err()
			}
			p := res.Prefix()
			if p.Addr().Is6() && aliased(p) {
				continue
			}
			if ds.Kind == "asn" {
				var a struct {
					Number uint32 `maxminddb:"autonomous_system_number"`
					Org    string `maxminddb:"autonomous_system_organization"`
				}
				if err := res.Decode(&a); err != nil {
					r.Close()
					return n, fmt.Errorf("%s %s: %w", ds.File, p, err)
				}
				asn = append(asn, mmdbgen.ASNRow{Network: p.String(), ASN: a.Number, Org: a.Org})
				continue
			}
			v, ok := values[res.Offset()]
			if !ok {
				rec, err := eng.Lookup(p.Addr(), ipatlas.English)
				if err != nil {
					r.Close()
					return n, err
				}
				v = echoipRow(rec).Value()
				values[res.Offset()] = v
			}
			if err := city.InsertValue(p, v); err != nil {
				r.Close()
				return n, err
			}
			n.city++
		}
		r.Close()
	}
	if n.city == 0 || len(asn) == 0 {
		return n, fmt.Errorf("%s has no city or no ASN networks for echoip", dataDir)
	}
	n.asn = len(asn)
	if err := city.WriteFile(filepath.Join(out, echoipCityFile)); err != nil {
		return n, err
	}
	// The ASN file last: its presence marks a complete cache entry.
	return n, mmdbgen.WriteASN(filepath.Join(out, echoipASNFile), "GeoLite2-ASN", asn)
}

// echoipRow is the GeoLite2-schema row of ipatlas's English record.
func echoipRow(rec ipatlas.Record) mmdbgen.GeoIP2Row {
	row := mmdbgen.GeoIP2Row{
		ContinentCode: rec.ContinentCode, Continent: mmdbgen.Name{EN: rec.Continent},
		CountryCode: rec.CountryCode, Country: mmdbgen.Name{EN: rec.Country},
		City: mmdbgen.Name{EN: rec.City}, TimeZone: rec.TimeZone, Postal: rec.ZipCode,
		NoLocation: rec.Latitude == nil || rec.Longitude == nil,
	}
	if !row.NoLocation {
		row.Latitude, row.Longitude = *rec.Latitude, *rec.Longitude
	}
	if rec.Province != "" {
		row.Subdivisions = []mmdbgen.Name{{EN: rec.Province}}
	}
	return row
}

// startEchoip runs echoip on a free loopback port with the city file as
// its country and city database (a City file answers both, as MaxMind's
// do) and the ASN file, and waits for its /health.
func startEchoip(ctx context.Context, bin, dataDir, logPath string) (*proc, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	city := filepath.Join(dataDir, echoipCityFile)
	p, err := startProc(logPath, nil, bin, "-l", addr, "-f", city, "-c", city, "-a", filepath.Join(dataDir, echoipASNFile),
		"-t", filepath.Join(filepath.Dir(logPath), "no-templates"))
	if err != nil {
		return nil, "", err
	}
	if err := waitHealthy(ctx, newClient(1), "http://"+addr+"/health", 30*time.Second); err != nil {
		p.stop(5 * time.Second)
		return nil, "", fmt.Errorf("echoip: %w (log: %s)", err, logPath)
	}
	return p, addr, nil
}

// freePort asks the kernel for a free loopback port. echoip takes a port,
// not a listener, so another process could take it in between: then
// echoip fails to start and the run says so.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// echoipURLs are GET /json?ip= for each queried address.
func echoipURLs(base string, addrs []netip.Addr) []string {
	urls := make([]string, len(addrs))
	for i, a := range addrs {
		urls[i] = base + "/json?ip=" + url.QueryEscape(a.String())
	}
	return urls
}
