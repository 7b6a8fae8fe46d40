package geo

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/bits"
	"net/netip"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// DefaultAnswerCacheEntries bounds the cache of encoded records. An entry
// holds one record's JSON (about 450 bytes), so the full cache costs
// about 7 MB.
const DefaultAnswerCacheEntries = 1 << 14

// AppendJSON appends addr's record in lang, JSON-encoded, to dst: the very
// bytes encoding/json (with HTML escaping off, no trailing newline) writes
// for the record Lookup returns. Many addresses share one composed record,
// so its encoding is cached per record pair (city and ASN) and language,
// and a lookup that hits only writes its address in front of it: no
// reflection, no allocation. Errors are Lookup's.
//
// It composes the record from the same parts as Lookup; a test holds the
// two together, so a field Lookup gains must enter the key below (every
// input of the record but the address) or be encoded here.
func (e *Engine) AppendJSON(dst []byte, addr netip.Addr, lang ipatlas.Lang) ([]byte, error) {
	if !addr.IsValid() {
		return dst, errors.New("geo: invalid address")
	}
	g := e.acquire()
	if g == nil {
		return dst, ErrClosed
	}
	defer g.release()
	addr = addr.WithZone("")
	key := netaddr.Embedded(addr).Unmap()
	if lang != ipatlas.Chinese {
		lang = ipatlas.English
	}
	as, route, err := g.asn(key)
	if err != nil {
		return dst, err
	}
	city, source, err := e.cityOf(g, key, as)
	if err != nil {
		return dst, err
	}
	a := g.answers.get(city, as, lang)
	if a == nil {
		if a, err = encodeAnswer(city, as, lang); err != nil {
			return dst, err
		}
		// A part the part caches did not keep is a fresh value with a
		// pointer no later lookup returns: caching its answer would only
		// evict a useful one.
		if g.cityCache != nil && g.asnCache != nil {
			g.answers.put(a)
		}
	}
	// An address's text is digits, hex letters, dots and colons: nothing
	// JSON escapes.
	dst = append(dst, `{"ip":"`...)
	dst = addr.AppendTo(dst)
	dst = append(dst, '"')
	dst = append(dst, a.tail...)
	// The route and the privacy object belong to the address, not to the
	// parts: many networks share one ASN record, and the lists' ranges
	// follow neither file's networks. They are the record's last members.
	dst = append(dst, `"route":"`...)
	var asn uint32
	if as != nil {
		asn = as.number
		if route.IsValid() {
			dst = route.AppendTo(dst)
		}
	}
	dst = append(dst, '"')
	if pt := e.priv.Load(); pt != nil {
		p, tor, known := e.privacyOf(pt, key, asn)
		dst = appendPrivacy(append(dst, `,"privacy":`...), p, tor, known)
	}
	// Where the location comes from belongs to the address too: one
	// composed part may answer for the dataset and for a correction.
	dst = append(dst, `,"location_source":`...)
	dst = appendJSONString(dst, source)
	return append(dst, '}'), nil
}

// appendPrivacy appends p, with the Tor flag tor when known, as
// encoding/json writes it.
func appendPrivacy(dst []byte, p ipatlas.Privacy, tor, known bool) []byte {
	dst = append(dst, `{"hosting":`...)
	dst = strconv.AppendBool(dst, p.Hosting)
	dst = append(dst, `,"vpn":`...)
	dst = strconv.AppendBool(dst, p.VPN)
	if known {
		dst = append(dst, `,"tor":`...)
		dst = strconv.AppendBool(dst, tor)
	}
	dst = append(dst, `,"relay":`...)
	dst = strconv.AppendBool(dst, p.Relay)
	dst = append(dst, `,"service":`...)
	return append(appendJSONString(dst, p.Service), '}')
}

// appendJSONString appends s as a JSON string the way encoding/json (HTML
// escaping off) writes it. The lists' service names are plain ASCII, which
// needs no escape; anything else takes encoding/json's own path.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// answer is one encoded record, keyed by the parts it was composed from.
// Parts are immutable once cached and compared by identity: a part evicted
// from its cache and composed again is a new key, and a pointer held here
// keeps its part alive, so an address never names two parts.
type answer struct {
	city *cityData
	as   *asnData
	lang ipatlas.Lang
	tail []byte // the encoding after the "ip" member's value up to "route": `,"continent":...,`
}

// ipPrefix is how encoding/json starts a Record whose IP is empty; "ip" is
// Record's first field.
var ipPrefix = []byte(`{"ip":""`)

// routeSuffix is how encoding/json ends a Record with no route, no
// privacy object and no location source; Route, Privacy and
// LocationSource are Record's last fields.
var routeSuffix = []byte(`"route":"","location_source":""}`)

func encodeAnswer(city *cityData, as *asnData, lang ipatlas.Lang) (*answer, error) {
	var rec ipatlas.Record
	if city != nil {
		city.fill(&rec, lang, new([2]float64))
	}
	if as != nil {
		rec.ASN, rec.ISP = as.asn, as.isp
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&rec); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if !bytes.HasPrefix(b, ipPrefix) {
		return nil, errors.New("geo: ipatlas.Record no longer starts with its ip member")
	}
	// Without a route or a privacy object the record ends with its empty
	// route: the tail stops before it.
	b, ok := bytes.CutSuffix(b, routeSuffix)
	if !ok {
		return nil, errors.New("geo: ipatlas.Record no longer ends with its route, privacy and location_source members")
	}
	return &answer{city: city, as: as, lang: lang, tail: bytes.Clone(b[len(ipPrefix):])}, nil
}

// answerCache is a two-way set-associative, lock-free cache of answers,
// the twin of cache for a key of two parts and a language. Racing stores
// may drop an entry, which only costs a later miss.
type answerCache struct {
	slots []atomic.Pointer[answer]
	shift uint
}

// newAnswerCache returns a cache of at least n slots (a power of two, at
// least two); n <= 0 caches nothing.
func newAnswerCache(n int) answerCache {
	if n <= 0 {
		return answerCache{}
	}
	b := max(bits.Len(uint(n-1)), 1)
	return answerCache{slots: make([]atomic.Pointer[answer], 1<<b), shift: uint(64 - b)}
}

func (c *answerCache) set(city *cityData, as *asnData, lang ipatlas.Lang) uint64 {
	// The parts' addresses identify them (the heap does not move); their
	// low bits are alike, so they are mixed before Fibonacci hashing.
	k := uint64(uintptr(unsafe.Pointer(city))) ^ uint64(uintptr(unsafe.Pointer(as)))*0xff51afd7ed558ccd ^ uint64(lang)
	h := (k * 0x9E3779B97F4A7C15) >> c.shift
	return h &^ 1 & uint64(len(c.slots)-1)
}

func (c *answerCache) get(city *cityData, as *asnData, lang ipatlas.Lang) *answer {
	if len(c.slots) == 0 {
		return nil
	}
	i := c.set(city, as, lang)
	if a := c.slots[i].Load(); a != nil && a.city == city && a.as == as && a.lang == lang {
		return a
	}
	if a := c.slots[i+1].Load(); a != nil && a.city == city && a.as == as && a.lang == lang {
		return a
	}
	return nil
}

func (c *answerCache) put(a *answer) {
	if len(c.slots) == 0 {
		return
	}
	i := c.set(a.city, a.as, a.lang)
	if old := c.slots[i].Swap(a); old != nil && (old.city != a.city || old.as != a.as || old.lang != a.lang) {
		c.slots[i+1].Store(old)
	}
}
