package postal

import (
	"bytes"
	_ "embed"
	"sync"
)

// builtinSnapshot is the snapshot written by internal/postal/gen from
// GeoNames' postal codes: one code per place, for the places with the most
// codes, every place of the countries with few and the territories with
// one code, in GeoNames' format (less its second- and third-level
// subdivisions and accuracy, coordinates to three decimals, and a known
// subdivision by its ISO 3166-2 code), xz-compressed.
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
