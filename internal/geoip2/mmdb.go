package geoip2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// MMDBEncoder writes trees as MMDB records (mmdbwriter's values), as
// encoding/json writes them but for the fields whose mmdb tag differs
// (see the package comment): a struct is a map of its members by their
// tag's name, a pointer its value, a slice an array; a member tagged
// omitempty is left out when empty and one tagged omitzero when zero, as
// encoding/json leaves them out. Numbers keep GeoIP2's types: a uint8 or
// uint16 is a uint16 (accuracy_radius), a uint32 a uint32
// (autonomous_system_number), a float64 a double. What an MMDB cannot
// say is an error naming the member, never a gap: a nil the tags do not
// leave out (JSON's null), another type, a member its tags give no name.
//
// An export holds a million distinct records, each a tree of a dozen
// maps: the encoder shares every part (a names map, a country, a
// location) among the records that hold an equal one, so that they cost
// the memory of their distinct parts. It is not safe for concurrent use.
type MMDBEncoder struct {
	parts  map[string]part
	fields map[reflect.Type][]field
	last   uint64 // the number of the part shared last
	key    []byte // the scratch of the token value returns
	frames []*frame
	depth  int
}

// part is a shared map or array and its number, which stands for it in
// the key of the parts holding it.
type part struct {
	v  mmdbtype.DataType
	id uint64
}

// field is how a struct's member is encoded.
type field struct {
	index               int
	name                mmdbtype.String
	omitEmpty, omitZero bool
}

// NewMMDBEncoder returns an encoder with nothing shared yet.
func NewMMDBEncoder() *MMDBEncoder {
	return &MMDBEncoder{parts: map[string]part{}, fields: map[reflect.Type][]field{}}
}

// Reset forgets the parts shared so far: a writer that writes each record
// out as it comes, rather than holding them all, resets the encoder after
// each, so that its memory does not grow with the records.
func (e *MMDBEncoder) Reset() {
	clear(e.parts)
	e.last = 0
}

// Encode is m as an MMDB record. The record itself is new; its parts may
// be shared with the records encoded before.
func (e *MMDBEncoder) Encode(m *Model) (mmdbtype.Map, error) {
	rec, err := e.mapOf(reflect.ValueOf(m).Elem(), false)
	if err != nil {
		return nil, fmt.Errorf("geoip2: %w", err)
	}
	return rec, nil
}

// mapOf is struct v as a map, shared with its equal when share is set.
func (e *MMDBEncoder) mapOf(v reflect.Value, share bool) (mmdbtype.Map, error) {
	fs, err := e.fieldsOf(v.Type())
	if err != nil {
		return nil, err
	}
	fr := e.push()
	defer e.pop()
	for _, f := range fs {
		fv := v.Field(f.index)
		if f.omitEmpty && empty(fv) || f.omitZero && fv.IsZero() {
			continue
		}
		val, tok, err := e.value(fv)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", v.Type().Name(), f.name, err)
		}
		fr.names, fr.vals = append(fr.names, f.name), append(fr.vals, val)
		if share {
			fr.key = appendToken(appendToken(fr.key, []byte(f.name)), tok)
		}
	}
	if share {
		fr.key = append(fr.key, '{')
		if p, ok := e.parts[string(fr.key)]; ok {
			e.last = p.id
			return p.v.(mmdbtype.Map), nil
		}
	}
	m := make(mmdbtype.Map, len(fr.vals))
	for i, name := range fr.names {
		m[name] = fr.vals[i]
	}
	if share {
		e.share(fr.key, m)
	}
	return m, nil
}

// frame is the scratch of one level of the tree being encoded: its
// members, and the key they make.
type frame struct {
	names []mmdbtype.String
	vals  []mmdbtype.DataType
	key   []byte
}

// push is the next level's frame, emptied.
func (e *MMDBEncoder) push() *frame {
	if e.depth == len(e.frames) {
		e.frames = append(e.frames, new(frame))
	}
	fr := e.frames[e.depth]
	e.depth++
	fr.names, fr.vals, fr.key = fr.names[:0], fr.vals[:0], fr.key[:0]
	return fr
}

func (e *MMDBEncoder) pop() {
	e.depth--
	clear(e.frames[e.depth].vals[:cap(e.frames[e.depth].vals)]) // hold no record alive
}

// value is v as an MMDB value, and the token that stands for it in the
// key of the part holding it: a scalar's type and value, a shared part's
// number. The token is the encoder's scratch, valid until the next call.
func (e *MMDBEncoder) value(v reflect.Value) (mmdbtype.DataType, []byte, error) {
	tok := e.key[:0]
	var val mmdbtype.DataType
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice:
		if v.IsNil() {
			return nil, nil, errors.New("nil, which an MMDB cannot say (JSON's null): tag it omitempty")
		}
		if v.Kind() == reflect.Pointer {
			return e.value(v.Elem())
		}
		return e.sliceOf(v)
	case reflect.Struct:
		m, err := e.mapOf(v, true)
		if err != nil {
			return nil, nil, err
		}
		return m, e.token(), nil
	case reflect.String:
		val, tok = mmdbtype.String(v.String()), append(append(tok, 's'), v.String()...)
	case reflect.Bool:
		val, tok = mmdbtype.Bool(v.Bool()), append(tok, 'f')
		if v.Bool() {
			tok[0] = 't'
		}
	case reflect.Uint8, reflect.Uint16:
		val, tok = mmdbtype.Uint16(v.Uint()), binary.AppendUvarint(append(tok, 'h'), v.Uint())
	case reflect.Uint32:
		val, tok = mmdbtype.Uint32(v.Uint()), binary.AppendUvarint(append(tok, 'u'), v.Uint())
	case reflect.Float64:
		val, tok = mmdbtype.Float64(v.Float()), binary.BigEndian.AppendUint64(append(tok, 'd'), math.Float64bits(v.Float()))
	default:
		return nil, nil, fmt.Errorf("no MMDB type for a %s", v.Type())
	}
	e.key = tok
	return val, tok, nil
}

// sliceOf is slice v as an array, shared with its equal.
func (e *MMDBEncoder) sliceOf(v reflect.Value) (mmdbtype.DataType, []byte, error) {
	fr := e.push()
	defer e.pop()
	for i := range v.Len() {
		val, tok, err := e.value(v.Index(i))
		if err != nil {
			return nil, nil, err
		}
		fr.vals, fr.key = append(fr.vals, val), appendToken(fr.key, tok)
	}
	fr.key = append(fr.key, '[')
	if p, ok := e.parts[string(fr.key)]; ok {
		e.last = p.id
		return p.v, e.token(), nil
	}
	s := mmdbtype.Slice(slices.Clone(fr.vals))
	e.share(fr.key, s)
	return s, e.token(), nil
}

// share makes v the part with key, a key no part has yet; token then
// stands for it.
func (e *MMDBEncoder) share(key []byte, v mmdbtype.DataType) {
	e.last = uint64(len(e.parts))
	e.parts[string(key)] = part{v: v, id: e.last}
}

// token is the token of the part shared last: its number.
func (e *MMDBEncoder) token() []byte {
	e.key = binary.AppendUvarint(append(e.key[:0], '#'), e.last)
	return e.key
}

// appendToken appends tok to key with its length, so that no two lists
// of tokens make one key.
func appendToken(key, tok []byte) []byte {
	return append(binary.AppendUvarint(key, uint64(len(tok))), tok...)
}

// empty is encoding/json's omitempty test.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// fieldsOf is how t's members are encoded: by the mmdb tag where there is
// one, else the json tag; "-" leaves a member out.
func (e *MMDBEncoder) fieldsOf(t reflect.Type) ([]field, error) {
	if fs, ok := e.fields[t]; ok {
		return fs, nil
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, ok := sf.Tag.Lookup("mmdb")
		if !ok {
			tag, ok = sf.Tag.Lookup("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("%s.%s has no name in a json or mmdb tag", t.Name(), sf.Name)
		case name == "-":
			continue
		}
		f := field{index: i, name: mmdbtype.String(name)}
		for o := range strings.SplitSeq(opts, ",") {
			f.omitEmpty = f.omitEmpty || o == "omitempty"
			f.omitZero = f.omitZero || o == "omitzero"
		}
		fs = append(fs, f)
	}
	e.fields[t] = fs
	return fs, nil
}
