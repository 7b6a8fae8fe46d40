package postal

import (
	"bytes"
	_ "embed"
	"sync"
)

// builtinSnapshot is the snapshot written by internal/postal/gen from
// GeoNames' postal codes: one code per place, for the places with the most
// codes and the territories with one, in GeoNames' format, xz-compressed.
//
//go:embed snapshot/postal-codes.txt.xz
var builtinSnapshot []byte

// BuiltinSource names the built-in snapshot where a source is shown.
const BuiltinSource = "builtin:postal-codes.txt.xz"

// Builtin returns the Index of the snapshot built into the binary. It is
// decoded at each call (a second or two), so that no process keeps it
// longer than it needs it.
func Builtin() (*Index, error) {
	return Load(bytes.NewReader(builtinSnapshot), int64(len(builtinSnapshot)))
}

// BuiltinID is the ID of Builtin's Index.
var BuiltinID = sync.OnceValue(func() uint64 {
	id, _ := FileID(bytes.NewReader(builtinSnapshot))
	return id
})
