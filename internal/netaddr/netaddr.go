// Package netaddr parses IP addresses strictly and classifies the
// special-purpose blocks of the IANA IPv4 and IPv6 registries that are not
// globally reachable. It is the single place that decides whether an address
// may be queried; the server and the Go client both use it.
package netaddr

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseError explains why a string is not an acceptable IP address.
type ParseError struct {
	Input  string // the trimmed input, cut to maxLen bytes so errors stay small
	Reason string // e.g. "zones are not allowed", "leading zeros are not allowed"
}

func (e *ParseError) Error() string { return "invalid IP address " + quote(e.Input) + ": " + e.Reason }

// Block is a special-purpose address block.
type Block struct {
	Prefix netip.Prefix
	Name   string // short English name: "loopback", "private-use", "documentation", ...
	NameZh string // the same in Chinese
	RFC    string // defining document, e.g. "RFC 1918"
}

// maxLen bounds the accepted text: the longest valid form,
// "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", is 45 bytes, and a bound
// keeps hostile megabyte inputs out of error messages and logs.
const maxLen = 64

// Rejection reasons. Tests compare against these, callers show them.
const (
	reasonEmpty       = "empty input"
	reasonTooLong     = "too long (an IP address has at most 45 characters)"
	reasonNUL         = "NUL bytes are not allowed"
	reasonUTF8        = "not valid UTF-8"
	reasonZone        = "zones are not allowed"
	reasonPort        = "ports are not allowed"
	reasonBrackets    = "brackets are not allowed"
	reasonCIDR        = "CIDR prefixes are not allowed; give a single address"
	reasonLeadingZero = "leading zeros are not allowed in IPv4 octets"
	reasonOctets      = "an IPv4 address has exactly four octets"
	reasonEmptyOctet  = "empty IPv4 octet"
	reasonDecimal     = "IPv4 octets must be decimal numbers"
	reasonRange       = "IPv4 octet out of range 0-255"
	reasonNotIP       = "not an IPv4 or IPv6 address"
	reasonIPv6        = "not a valid IPv6 address"
	reasonDoubleColon = `"::" may appear only once`
	reasonGroup       = "an IPv6 group has at most four hex digits"
)

// Parse reads one IPv4 or IPv6 address in text form. Surrounding whitespace
// is trimmed. Zones, leading zeros, ports, brackets and CIDR suffixes are
// rejected with a *ParseError that says which.
//
// Only ASCII whitespace (space, tab, CR, LF, VT, FF) is trimmed: other
// Unicode spaces are more likely a copy-and-paste accident worth reporting.
// IPv4-mapped text such as "::ffff:1.2.3.4" stays an IPv6 address; use
// Embedded to reach the IPv4 inside.
func Parse(s string) (netip.Addr, error) {
	t := trim(s)
	// netip.ParseAddr is strict about everything but zones, which need a
	// '%' and so never pass onlyAddrChars: when it accepts, so do we. The
	// slower diagnosis runs only to explain a failure.
	if len(t) <= maxLen && onlyAddrChars(t) {
		if a, err := netip.ParseAddr(t); err == nil {
			return a, nil
		}
	}
	reason := diagnose(t)
	if reason == "" {
		// What remains is text netip rejects for reasons diagnose does not
		// name, such as too many or too few IPv6 groups.
		reason = reasonIPv6
		if strings.IndexByte(t, ':') < 0 {
			reason = reasonNotIP
		}
	}
	return netip.Addr{}, newError(t, reason)
}

func trim(s string) string {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f' }
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func onlyAddrChars(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAddrChar(rune(s[i])) {
			return false
		}
	}
	return true
}

func newError(t, reason string) *ParseError {
	if len(t) > maxLen {
		t = t[:maxLen] + "..."
	}
	return &ParseError{Input: t, Reason: reason}
}

// diagnose returns why t, which netip.ParseAddr refused or was not shown,
// cannot be an address, or "" when it has no specific reason. It exists so
// that each common mistake gets its own reason rather than netip's generic
// message.
func diagnose(t string) string {
	switch {
	case t == "":
		return reasonEmpty
	case len(t) > maxLen:
		return reasonTooLong
	case strings.IndexByte(t, 0) >= 0:
		return reasonNUL
	case !utf8.ValidString(t):
		return reasonUTF8
	case strings.IndexByte(t, '[') >= 0 || strings.IndexByte(t, ']') >= 0:
		if strings.Contains(t, "]:") {
			return reasonPort
		}
		return reasonBrackets
	case strings.IndexByte(t, '%') >= 0:
		return reasonZone
	case strings.IndexByte(t, '/') >= 0:
		return reasonCIDR
	}
	if i := strings.IndexByte(t, ':'); i >= 0 && strings.IndexByte(t[i+1:], ':') < 0 &&
		strings.IndexByte(t[:i], '.') >= 0 && isDigits(t[i+1:]) {
		// "1.2.3.4:80": a single colon after a dotted host can only be a port.
		return reasonPort
	}
	for _, r := range t {
		if !isAddrChar(r) {
			return "unexpected character " + strconv.QuoteRune(r)
		}
	}
	colon := strings.LastIndexByte(t, ':')
	if colon < 0 {
		if strings.IndexByte(t, '.') < 0 {
			return reasonNotIP
		}
		return diagnose4(t)
	}
	if strings.Count(t, "::") > 1 || strings.Contains(t, ":::") {
		return reasonDoubleColon
	}
	groups := t
	if strings.IndexByte(t, '.') >= 0 {
		// The dotted part must be the last field of IPv6 text (RFC 4291
		// section 2.2); netip rejects dots anywhere else.
		if r := diagnose4(t[colon+1:]); r != "" {
			return r
		}
		groups = t[:colon]
	}
	for g := range strings.SplitSeq(groups, ":") {
		if len(g) > 4 {
			return reasonGroup
		}
	}
	return ""
}

// diagnose4 checks dotted-quad text octet by octet so that the reason names
// the actual fault. Leading zeros are refused because some parsers read
// "010" as octal 8 and others as decimal 10: the text is ambiguous.
func diagnose4(s string) string {
	if strings.Count(s, ".") != 3 {
		return reasonOctets
	}
	for f := range strings.SplitSeq(s, ".") {
		switch {
		case f == "":
			return reasonEmptyOctet
		case !isDigits(f):
			return reasonDecimal
		case len(f) > 1 && f[0] == '0':
			return reasonLeadingZero
		case len(f) > 3:
			return reasonRange
		}
		if n, _ := strconv.Atoi(f); n > 255 {
			return reasonRange
		}
	}
	return ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isAddrChar(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '.' || r == ':'
}

// Embedded returns the IPv4 address carried inside an IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) or NAT64 (64:ff9b::/96)
// address, and a itself otherwise. Classification and lookup use it.
//
// :: and ::1 are the IPv6 unspecified and loopback addresses, not
// IPv4-compatible forms of 0.0.0.0 and 0.0.0.1, so they come back unchanged.
// 6to4 (2002::/16) and Teredo (2001::/32) are not unwrapped: see table.
func Embedded(a netip.Addr) netip.Addr {
	if !a.Is6() {
		return a
	}
	if v4, ok := embedded4(halves(a)); ok {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v4)
		return netip.AddrFrom4(b)
	}
	return a
}

const nat64WKP = 0x0064_ff9b_0000_0000 // upper half of 64:ff9b::/96 (RFC 6052)

func halves(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// embedded4 finds the IPv4 address of a mapped, compatible or NAT64 address.
func embedded4(hi, lo uint64) (uint32, bool) {
	mid := lo >> 32
	if (hi == 0 && (mid == 0xffff || mid == 0 && lo > 1)) || (hi == nat64WKP && mid == 0) {
		return uint32(lo), true
	}
	return 0, false
}

// invalid is what Classify reports for the zero Addr: it cannot be queried.
var invalid = Block{Name: "invalid", NameZh: "无效地址"}

// Classify reports the special-purpose block holding a (judged by its
// embedded IPv4 address where it has one) when a is not globally
// reachable. ok is false for an address that may be queried.
//
// A 6to4 address whose embedded IPv4 address is not globally reachable is
// reported with that IPv4 block; see table for why. The zero Addr is
// reported as "invalid". Classify does not allocate.
func Classify(a netip.Addr) (b Block, ok bool) {
	if a.Is4() {
		v4 := a.As4()
		return classify4(binary.BigEndian.Uint32(v4[:]))
	}
	if !a.Is6() {
		return invalid, true
	}
	hi, lo := halves(a)
	if v4, ok := embedded4(hi, lo); ok {
		return classify4(v4)
	}
	if hi>>48 == 0x2002 {
		if b, ok := classify4(uint32(hi >> 16)); ok {
			return b, true
		}
	}
	return classify6(hi, lo)
}

// Family names the IP version a client sees: "IPv4" for IPv4 and
// IPv4-mapped addresses (a dual-stack listener reports IPv4 clients as
// ::ffff:a.b.c.d), "IPv6" for other IPv6 addresses, "" for the zero Addr.
func Family(a netip.Addr) string {
	switch {
	case a.Is4() || a.Is4In6():
		return "IPv4"
	case a.Is6():
		return "IPv6"
	}
	return ""
}

// Blocks returns every block that is not globally reachable, in table
// order. The caller owns the returned slice.
func Blocks() []Block {
	out := make([]Block, 0, len(table))
	for _, r := range table {
		if !r.reachable {
			out = append(out, r.Block)
		}
	}
	return out
}

func quote(s string) string { return strconv.Quote(s) }
