package geo

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
)

// AppendJSON appends addr's record in lang, JSON-encoded, to dst: the very
// bytes encoding/json (with HTML escaping off, no trailing newline) writes
// for the record Lookup returns. It writes the cached parts' fields
// directly, with no reflection and no allocation, so it keeps no cache of
// encoded records: an encoding cached per record pair would cost more
// memory (and the collector's headroom over it) than writing the fields
// costs time. Errors are Lookup's.
//
// It composes the record from the same parts as Lookup; a test holds the
// two together, so a field Lookup gains must be written here too.
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
	if lang != ipatlas.Chinese {
		lang = ipatlas.English
	}
	ps, err := e.parts(g, addr)
	if err != nil {
		return dst, err
	}
	key, as, route, city, source := ps.key, ps.as, ps.route, ps.city, ps.source
	// An address's text is digits, hex letters, dots and colons: nothing
	// JSON escapes.
	dst = append(dst, `{"ip":"`...)
	dst = addr.AppendTo(dst)
	dst = append(dst, '"')
	dst = appendParts(dst, city, as, lang)
	// The route, the network and the privacy object belong to the
	// address, not to the parts: many networks share one ASN record, and
	// the lists' ranges follow neither file's networks. They are the
	// record's last members.
	dst = append(dst, `"route":"`...)
	var asn uint32
	if as != nil {
		asn = as.number
		if route.IsValid() {
			dst = route.AppendTo(dst)
		}
	}
	// The privacy lists' ranges bound the network too: they are looked
	// up before it is written, in its place before the privacy object.
	pt := e.priv.Load()
	var (
		p          ipatlas.Privacy
		tor, known bool
		bits       = ps.bits
	)
	if pt != nil {
		var pbits int
		p, tor, known, pbits = e.privacyOf(pt, key, asn)
		bits = max(bits, pbits)
	}
	dst = append(dst, `","network":"`...)
	dst = networkOf(addr, key, bits).AppendTo(dst)
	dst = append(dst, '"')
	if pt != nil {
		dst = appendPrivacy(append(dst, `,"privacy":`...), p, tor, known)
	}
	// Where the location comes from belongs to the address too: one
	// composed part may answer for the dataset and for a correction.
	dst = append(dst, `,"location_source":`...)
	dst = appendJSONString(dst, source)
	if radius, confidence := accuracyOf(city, source); radius != 0 {
		dst = strconv.AppendInt(append(dst, `,"accuracy_radius":`...), int64(radius), 10)
		dst = appendMember(dst, `,"confidence":`, confidence)
	}
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
// escaping off) writes it. A string of valid UTF-8 with no control
// character, quote, backslash, U+2028 or U+2029 is written as it is, as
// encoding/json writes it; anything else takes encoding/json's own path.
func appendJSONString(dst []byte, s string) []byte {
	plain := true
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			plain = false
			break
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if plain && !ascii {
		plain = utf8.ValidString(s) && !strings.Contains(s, "\u2028") && !strings.Contains(s, "\u2029")
	}
	if !plain {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s) // a string always encodes
		return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendParts appends the record's members from "continent" to
// "area_code" as encoding/json writes them, each followed by a comma: the
// members the city and ASN parts decide.
func appendParts(dst []byte, city *cityData, as *asnData, lang ipatlas.Lang) []byte {
	var (
		k             *countryData
		t             *place
		provinceCode  string
		tz, zip, area string
	)
	if city != nil {
		k, t = city.country, &city.text[lang]
		provinceCode, tz, zip, area = city.provinceCode, city.timeZone, city.zip, city.areaCode
	}
	var continent, continentCode, country, countryCode, currency string
	if k != nil {
		continent, country = k.names[lang].continent, k.names[lang].country
		continentCode, countryCode, currency = k.continentCode, k.countryCode, k.currency
	}
	var province, cityName, district string
	if t != nil {
		province, cityName, district = t.province, t.city, t.district
	}
	var asn, isp string
	if as != nil {
		asn, isp = as.asn, as.isp
	}
	dst = appendMember(dst, `,"continent":`, continent)
	dst = appendMember(dst, `,"continent_code":`, continentCode)
	dst = appendMember(dst, `,"country":`, country)
	dst = appendMember(dst, `,"country_code":`, countryCode)
	dst = appendMember(dst, `,"province":`, province)
	dst = appendMember(dst, `,"province_code":`, provinceCode)
	dst = appendMember(dst, `,"city":`, cityName)
	dst = appendMember(dst, `,"district":`, district)
	dst = appendMember(dst, `,"isp":`, isp)
	dst = appendMember(dst, `,"asn":`, asn)
	if city != nil && city.hasCoords {
		dst = appendFloat(append(dst, `,"latitude":`...), city.coords[0])
		dst = appendFloat(append(dst, `,"longitude":`...), city.coords[1])
	}
	dst = appendMember(dst, `,"time_zone":`, tz)
	dst = appendMember(dst, `,"currency":`, currency)
	dst = appendMember(dst, `,"zip_code":`, zip)
	dst = appendMember(dst, `,"area_code":`, area)
	return append(dst, ',')
}

func appendMember(dst []byte, name, s string) []byte {
	return appendJSONString(append(dst, name...), s)
}

// appendFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form only below 1e-6 or from
// 1e21 on, with the exponent's leading zero dropped. f is finite: compose
// keeps only coordinates that are (validCoord).
func appendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
