package mmdbgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad row or an unwritable path is an error, and no file (not even the
// temporary one) is left behind.
func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CityV4File)
	err := WriteFlatCity(path, CityV4Type, 4, []FlatRow{{Network: "8.8.8.0/33", CountryCode: "US"}})
	if err == nil || !strings.Contains(err.Error(), "8.8.8.0/33") {
		t.Errorf("bad network: %v, want an error naming it", err)
	}
	if err := WriteASN(filepath.Join(dir, "missing", ASNFile), ASNType, []ASNRow{{Network: "8.8.8.0/24", ASN: 15169}}); err == nil {
		t.Error("writing into a missing directory: no error")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	if err := WriteGeoIP2(path, "GeoLite2-City", []GeoIP2Row{{Network: "8.8.8.0/24", CountryCode: "US", Country: Name{EN: "United States"}}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Errorf("written file: %v", err)
	}
}
