// Package netaddr parses IP addresses strictly and classifies the
// special-purpose blocks of the IANA IPv4 and IPv6 registries that are not
// globally reachable. It is the single place that decides whether an address
// may be queried; the server and the Go client both use it.
package netaddr

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
)

// ParseError explains why a string is not an acceptable IP address, in
// both languages the service answers in, so that no caller has to fall
// back to English for a Chinese answer.
type ParseError struct {
	Input    string // the trimmed input, cut to maxLen bytes so errors stay small
	Reason   string // e.g. "zones are not allowed", "leading zeros are not allowed"
	ReasonZh string // the same in Chinese
}

func (e *ParseError) Error() string { return "invalid IP address " + quote(e.Input) + ": " + e.Reason }

// ReasonIn is the reason in lang.
func (e *ParseError) ReasonIn(lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return e.ReasonZh
	}
	return e.Reason
}

// Detail is the text every InvalidIP answer carries after the code's own
// text, in lang: the input, quoted, and the rule it broke, so that one of
// many addresses can be told apart.
func (e *ParseError) Detail(lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return quote(e.Input) + "：" + e.ReasonZh
	}
	return quote(e.Input) + ": " + e.Reason
}

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

// reason is why a text is refused, in English and Chinese.
type reason struct{ en, zh string }

// Rejection reasons. Tests compare against these, callers show them.
var (
	reasonEmpty       = reason{"empty input", "输入为空"}
	reasonTooLong     = reason{"too long (an IP address has at most 45 characters)", "过长（IP 地址最多 45 个字符）"}
	reasonNUL         = reason{"NUL bytes are not allowed", "不允许包含 NUL 字节"}
	reasonUTF8        = reason{"not valid UTF-8", "不是有效的 UTF-8 文本"}
	reasonZone        = reason{"zones are not allowed", "不允许带区域标识"}
	reasonPort        = reason{"ports are not allowed", "不允许带端口号"}
	reasonBrackets    = reason{"brackets are not allowed", "不允许带方括号"}
	reasonCIDR        = reason{"CIDR prefixes are not allowed; give a single address", "不允许使用 CIDR 前缀，请给出单个地址"}
	reasonLeadingZero = reason{"leading zeros are not allowed in IPv4 octets", "IPv4 地址的各段不允许有前导零"}
	reasonOctets      = reason{"an IPv4 address has exactly four octets", "IPv4 地址必须恰好有四段"}
	reasonEmptyOctet  = reason{"empty IPv4 octet", "IPv4 地址有空段"}
	reasonDecimal     = reason{"IPv4 octets must be decimal numbers", "IPv4 地址的各段必须是十进制数"}
	reasonRange       = reason{"IPv4 octet out of range 0-255", "IPv4 地址的段超出 0-255 范围"}
	reasonNotIP       = reason{"not an IPv4 or IPv6 address", "不是 IPv4 或 IPv6 地址"}
	reasonIPv6        = reason{"not a valid IPv6 address", "不是有效的 IPv6 地址"}
	reasonDoubleColon = reason{`"::" may appear only once`, `"::" 只能出现一次`}
	reasonGroup       = reason{"an IPv6 group has at most four hex digits", "IPv6 地址的每组最多四个十六进制数字"}
)

// unexpected is the reason for a character no address contains.
func unexpected(r rune) reason {
	q := strconv.QuoteRune(r)
	return reason{"unexpected character " + q, "含有不应出现的字符 " + q}
}

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
	r := diagnose(t)
	if r.en == "" {
		// What remains is text netip rejects for reasons diagnose does not
		// name, such as too many or too few IPv6 groups.
		r = reasonIPv6
		if strings.IndexByte(t, ':') < 0 {
			r = reasonNotIP
		}
	}
	return netip.Addr{}, newError(t, r)
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

func newError(t string, r reason) *ParseError {
	if len(t) > maxLen {
		t = t[:maxLen] + "..."
	}
	return &ParseError{Input: t, Reason: r.en, ReasonZh: r.zh}
}

// diagnose returns why t, which netip.ParseAddr refused or was not shown,
// cannot be an address, or the zero reason when it has no specific one. It exists so
// that each common mistake gets its own reason rather than netip's generic
// message.
func diagnose(t string) reason {
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
			return unexpected(r)
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
		if r := diagnose4(t[colon+1:]); r.en != "" {
			return r
		}
		groups = t[:colon]
	}
	for g := range strings.SplitSeq(groups, ":") {
		if len(g) > 4 {
			return reasonGroup
		}
	}
	return reason{}
}

// diagnose4 checks dotted-quad text octet by octet so that the reason names
// the actual fault. Leading zeros are refused because some parsers read
// "010" as octal 8 and others as decimal 10: the text is ambiguous.
func diagnose4(s string) reason {
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
	return reason{}
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

// Why says in lang why a, which Classify put in b, cannot be queried:
// "10.0.0.1 is a private-use address (RFC 1918)", "10.0.0.1 是私有地址（RFC
// 1918）". It is the one PrivateIP detail: the query API, /api/ip/me, the
// Go client and the command line all show it. A name of more than one word
// ("shared address space (CGNAT)") reads better as a block.
func (b Block) Why(a netip.Addr, lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		name := b.NameZh
		if name == "" {
			name = "非公网地址"
		}
		s := a.String() + " 是" + name
		if b.RFC != "" {
			s += "（" + b.RFC + "）"
		}
		return s
	}
	var s string
	switch name := b.Name; {
	case name == "":
		s = a.String() + " is not globally reachable"
	case strings.IndexByte(name, ' ') >= 0:
		s = a.String() + " belongs to the " + name + " block"
	default:
		article := "a "
		if strings.IndexByte("aeiouAEIOU", name[0]) >= 0 {
			article = "an "
		}
		s = a.String() + " is " + article + name + " address"
	}
	if b.RFC != "" {
		s += " (" + b.RFC + ")"
	}
	return s
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

// Public returns the addresses Classify lets be queried, as ranges in
// address order (IPv4, then IPv6): both address spaces without the blocks
// that are not globally reachable, with their reachable exceptions. The
// ranges of ::/96, ::ffff:0:0/96 and 64:ff9b::/96, which Classify judges by
// the IPv4 address inside, are left out: they are the IPv4 ranges. 6to4
// (2002::/16) is in it where the IPv4 address it carries is.
func Public() []netip.Prefix {
	v4 := carve(netip.MustParsePrefix("0.0.0.0/0"))
	// carve leaves 6to4 out: Classify judges it by the IPv4 address in
	// its second and third groups.
	out := carve(netip.MustParsePrefix("::/0"))
	for _, p := range v4 {
		b := p.Addr().As4()
		out = append(out, netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x02, b[0], b[1], b[2], b[3]}), 16+p.Bits()))
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return append(v4, out...)
}

var sixToFour = netip.MustParsePrefix("2002::/16")

// carve splits p into the prefixes of it that are globally reachable.
func carve(p netip.Prefix) []netip.Prefix {
	// The most specific row that covers p whole decides for p unless a
	// more specific row lies inside it.
	if p.Bits() >= sixToFour.Bits() && sixToFour.Contains(p.Addr()) {
		return nil
	}
	var decide *row
	inside := p.Bits() < sixToFour.Bits() && p.Contains(sixToFour.Addr())
	for i := range table {
		r := &table[i]
		rp := r.Prefix
		switch {
		case rp.Bits() <= p.Bits() && rp.Contains(p.Addr()):
			if decide == nil || rp.Bits() > decide.Prefix.Bits() {
				decide = r
			}
		case rp.Bits() > p.Bits() && p.Contains(rp.Addr()):
			inside = true
		}
	}
	if !inside {
		if decide != nil && !decide.reachable {
			return nil
		}
		return []netip.Prefix{p}
	}
	lo := netip.PrefixFrom(p.Addr(), p.Bits()+1)
	hiAddr := p.Addr().As16()
	bit := p.Bits()
	if p.Addr().Is4() {
		bit += 96
	}
	hiAddr[bit/8] |= 0x80 >> (bit % 8)
	hi := netip.AddrFrom16(hiAddr)
	if p.Addr().Is4() {
		hi = hi.Unmap()
	}
	return append(carve(lo), carve(netip.PrefixFrom(hi, p.Bits()+1))...)
}
