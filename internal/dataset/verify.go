package dataset

import (
	"bytes"
	"fmt"
	"os"

	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/oschwald/maxminddb-golang/v2"
)

// metadataStartMarker precedes the metadata section of every MMDB file.
var metadataStartMarker = []byte("\xAB\xCD\xEFMaxMind.com")

// verifyMMDB opens an MMDB file and runs maxminddb's full verification
// (metadata, search tree, every data record) over it.
//
// DB-IP's files as published on npm carry an empty description map. The
// MaxMind DB format allows that, but Verify, which is deliberately stricter
// than the format, rejects it before looking at anything else. For such files
// the tree and data are verified on an in-memory copy whose metadata is
// re-encoded with a description added; everything Verify checks apart from
// the metadata bytes is then checked on exactly the file's bytes.
//
// label names the file in errors (path may be a temporary name).
func verifyMMDB(path, label string) (maxminddb.Metadata, error) {
	db, err := maxminddb.Open(path)
	if err != nil {
		return maxminddb.Metadata{}, fmt.Errorf("%s is not a valid MMDB: %w", label, err)
	}
	md := db.Metadata
	if len(md.Description) > 0 {
		err = db.Verify()
		db.Close()
		if err != nil {
			return md, fmt.Errorf("%s failed verification: %w", label, err)
		}
		return md, nil
	}
	db.Close()

	buf, err := os.ReadFile(path)
	if err != nil {
		return md, err
	}
	patched, err := withDescription(buf, md)
	if err != nil {
		return md, fmt.Errorf("%s is not a valid MMDB: %w", label, err)
	}
	db, err = maxminddb.OpenBytes(patched)
	if err != nil {
		return md, fmt.Errorf("%s is not a valid MMDB: %w", label, err)
	}
	defer db.Close()
	if err := db.Verify(); err != nil {
		return md, fmt.Errorf("%s failed verification: %w", label, err)
	}
	return md, nil
}

// withDescription returns a copy of an MMDB file whose metadata section is
// re-encoded from md, with a placeholder description.
func withDescription(buf []byte, md maxminddb.Metadata) ([]byte, error) {
	i := bytes.LastIndex(buf, metadataStartMarker)
	if i < 0 {
		return nil, fmt.Errorf("metadata marker not found")
	}
	languages := mmdbtype.Slice{}
	for _, l := range md.Languages {
		languages = append(languages, mmdbtype.String(l))
	}
	meta := mmdbtype.Map{
		"binary_format_major_version": mmdbtype.Uint16(md.BinaryFormatMajorVersion),
		"binary_format_minor_version": mmdbtype.Uint16(md.BinaryFormatMinorVersion),
		"build_epoch":                 mmdbtype.Uint64(md.BuildEpoch),
		"database_type":               mmdbtype.String(md.DatabaseType),
		"description":                 mmdbtype.Map{"en": mmdbtype.String("(none)")},
		"ip_version":                  mmdbtype.Uint16(md.IPVersion),
		"languages":                   languages,
		"node_count":                  mmdbtype.Uint32(md.NodeCount),
		"record_size":                 mmdbtype.Uint16(md.RecordSize),
	}
	end := i + len(metadataStartMarker)
	w := &encoder{}
	w.Grow(end + 512)
	w.Write(buf[:end])
	if _, err := meta.WriteTo(w); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// encoder lets mmdbwriter's own encoder serialize a value without
// pointers, which is what a metadata section needs.
type encoder struct{ bytes.Buffer }

func (e *encoder) WriteOrWritePointer(t mmdbtype.DataType) (int64, error) { return t.WriteTo(e) }
