package dataset

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

func TestNewDigestPicksStrongestPublishedHash(t *testing.T) {
	body := []byte("tarball bytes")
	s512 := sha512.Sum512(body)
	s256 := sha256.Sum256(body)
	s1 := sha1.Sum(body)
	b64 := base64.StdEncoding.EncodeToString
	wrong := sha512.Sum512([]byte("other"))
	cases := []struct {
		name, integrity, shasum string
		wantAlg                 string // "" when newDigest must fail
		match                   bool
	}{
		{"sha512", "sha512-" + b64(s512[:]), "", "sha512", true},
		{"sha512 preferred over sha1 in SRI and shasum", "sha1-" + b64(s1[:]) + " sha512-" + b64(s512[:]), hex.EncodeToString(s1[:]), "sha512", true},
		{"sha256", "sha256-" + b64(s256[:]), "", "sha256", true},
		{"wrong sha512 despite right shasum", "sha512-" + b64(wrong[:]), hex.EncodeToString(s1[:]), "sha512", false},
		{"shasum only", "", hex.EncodeToString(s1[:]), "sha1", true},
		{"wrong shasum", "", strings.Repeat("00", 20), "sha1", false},
		{"no hash at all", "", "", "", false},
		{"only unsupported algorithms", "md5-" + b64(make([]byte, 16)), hex.EncodeToString(s1[:]), "", false},
		{"truncated sha512", "sha512-" + b64(s512[:32]), "", "", false},
		{"bad base64", "sha512-!!!", "", "", false},
		{"bad shasum", "", "xyz", "", false},
		{"SRI options", "sha512-" + b64(s512[:]) + "?foo", "", "sha512", true},
	}
	for _, c := range cases {
		d, err := newDigest(c.integrity, c.shasum)
		if c.wantAlg == "" {
			if err == nil {
				t.Errorf("%s: accepted", c.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !strings.HasPrefix(d.sri, c.wantAlg+"-") {
			t.Errorf("%s: uses %s, want %s", c.name, d.sri, c.wantAlg)
		}
		d.Write(body)
		if err := d.check(); (err == nil) != c.match || (err != nil && !errors.Is(err, ErrIntegrity)) {
			t.Errorf("%s: check() = %v, want match %v", c.name, err, c.match)
		}
	}
}

func TestLatestURL(t *testing.T) {
	cases := map[string]string{
		"https://registry.npmjs.org":         "https://registry.npmjs.org/@ip-location-db%2fasn/latest",
		"https://registry.npmjs.org/":        "https://registry.npmjs.org/@ip-location-db%2fasn/latest",
		"https://mirror.example/npm/":        "https://mirror.example/npm/@ip-location-db%2fasn/latest",
		"http://127.0.0.1:4873/some/path///": "http://127.0.0.1:4873/some/path/@ip-location-db%2fasn/latest",
	}
	for reg, want := range cases {
		got, err := latestURL(reg, ASNPackage)
		if err != nil || got != want {
			t.Errorf("latestURL(%q) = %q, %v; want %q", reg, got, err, want)
		}
	}
	for _, bad := range []string{"", "registry.npmjs.org", "file:///etc", "https://", "ht tp://x"} {
		if _, err := latestURL(bad, ASNPackage); err == nil {
			t.Errorf("latestURL(%q) accepted", bad)
		}
	}
}

func TestVersionDate(t *testing.T) {
	cases := map[string]time.Time{
		"2.3.2026061719": time.Date(2026, 6, 17, 19, 0, 0, 0, time.UTC),
		"1.0.20260102":   time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"2.3.2026139919": {}, // month 13
		"1.2.3":          {},
		"latest":         {},
		"":               {},
	}
	for v, want := range cases {
		if got := versionDate(v); !got.Equal(want) {
			t.Errorf("versionDate(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestWalkTarballLimitsTotalSize(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"package/a", "package/b", "package/c"} {
		body := bytes.Repeat([]byte{'x'}, 4000)
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write(body)
	}
	tw.Close()
	gz.Close()
	seen := 0
	err := walkTarball(bytes.NewReader(buf.Bytes()), archiveLimits{maxFile: 5000, maxTotal: 9000}, func(string, io.Reader) error {
		seen++
		return nil
	})
	if !errors.Is(err, ErrUnsafeArchive) {
		t.Errorf("walkTarball: %v after %d entries, want ErrUnsafeArchive", err, seen)
	}
	err = walkTarball(bytes.NewReader(buf.Bytes()), archiveLimits{maxFile: 5000, maxTotal: 1 << 20}, func(string, io.Reader) error { return nil })
	if err != nil {
		t.Errorf("walkTarball within limits: %v", err)
	}
}

func FuzzWalkTarball(f *testing.F) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Name: "package/x", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	tw.Write([]byte("abc"))
	tw.Close()
	gz.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		walkTarball(bytes.NewReader(in), archiveLimits{maxFile: 1 << 16, maxTotal: 1 << 18}, func(name string, r io.Reader) error {
			if !isPlainName(filepath.Base(name)) || strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
				t.Fatalf("unsafe name %q passed", name)
			}
			_, err := io.Copy(io.Discard, r)
			return err
		})
	})
}

// writeMMDB writes a small MMDB with the given description.
func writeMMDB(t *testing.T, description map[string]string) string {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "test", Description: description, IPVersion: 6})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		ipnet := &net.IPNet{IP: net.IPv4(20, byte(i), 0, 0).To4(), Mask: net.CIDRMask(16, 32)}
		if err := tree.Insert(ipnet, mmdbtype.Map{"n": mmdbtype.Uint32(i), "s": mmdbtype.String(strings.Repeat("v", i))}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "test.mmdb")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func TestVerifyMMDB(t *testing.T) {
	for name, desc := range map[string]map[string]string{"with description": {"en": "x"}, "empty description": nil} {
		t.Run(name, func(t *testing.T) {
			path := writeMMDB(t, desc)
			md, err := verifyMMDB(path, "test.mmdb")
			if err != nil || md.DatabaseType != "test" {
				t.Fatalf("good file: %+v, %v", md, err)
			}
			// Damage the data section (after the tree, before the
			// metadata): opening still works, verification must not.
			b, _ := os.ReadFile(path)
			tree := int(md.NodeCount) * int(md.RecordSize) / 4
			for i := tree + 16; i < tree+16+200 && i < len(b); i++ {
				b[i] = 0xff
			}
			os.WriteFile(path, b, 0o644)
			if _, err := verifyMMDB(path, "test.mmdb"); err == nil || !strings.Contains(err.Error(), "test.mmdb") {
				t.Errorf("damaged data section: %v", err)
			}
		})
	}
}

func TestParseSHA256Doc(t *testing.T) {
	const sum = "7f83b1657ff1fc53b92dc18148a1d65dfc2d4b1fa3d677284addd200126d9069"
	for _, c := range []struct{ doc, version, err string }{
		{sum + "  GeoLite2-City_20260106.tar.gz\n", "20260106", ""},
		{sum + "\n", sum[:12], ""},
		{strings.ToUpper(sum) + " *GeoIP2-ISP_20251230.tar.gz", "20251230", ""},
		{sum + "  GeoLite2-City.tar.gz", sum[:12], ""},
		{"", "", "empty"},
		{sum[:62] + "  x.tar.gz", "", "not a SHA-256"},
		{"<html>", "", "not a SHA-256"},
	} {
		p, err := parseSHA256Doc(c.doc)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.doc, err, c.err)
			}
			continue
		}
		if err != nil || p.version != c.version || hex.EncodeToString(p.sum) != sum {
			t.Errorf("%q: %+v, %v; want version %s", c.doc, p, err, c.version)
		}
	}
}

func FuzzParseSHA256Doc(f *testing.F) {
	f.Add("7f83b1657ff1fc53b92dc18148a1d65dfc2d4b1fa3d677284addd200126d9069  GeoLite2-City_20260106.tar.gz\n")
	f.Fuzz(func(t *testing.T, doc string) {
		p, err := parseSHA256Doc(doc)
		if err == nil && (len(p.sum) != sha256.Size || p.version == "" || !isPlainName(p.version)) {
			t.Fatalf("%q parsed to %+v", doc, p)
		}
	})
}
