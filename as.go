package ipatlas

import (
	"math/big"
	"net/netip"
	"strconv"
	"strings"
)

// AS is what the service knows of one autonomous system: the "data" object
// of an AS query.
type AS struct {
	ASN         string `json:"asn"` // "AS15169"
	Name        string `json:"name"`
	Country     string `json:"country"`      // in the answer's language
	CountryCode string `json:"country_code"` // ISO 3166-1 alpha-2; "" when unknown
	// NumIPs is the number of IPv4 addresses the AS announces: the sum of
	// the sizes of Prefixes, which never overlap.
	NumIPs uint64 `json:"num_ips"`
	// Prefixes and Prefixes6 are the AS's announced prefixes, IPv4 and
	// IPv6, in address order: at most ASPageSize of each on one page of
	// the answer (Page of Pages); NumPrefixes and NumPrefixes6 count them
	// all.
	Prefixes     []ASPrefix `json:"prefixes"`
	Prefixes6    []ASPrefix `json:"prefixes6"`
	NumPrefixes  int        `json:"num_prefixes"`
	NumPrefixes6 int        `json:"num_prefixes6"`
	Page         int        `json:"page"`
	Pages        int        `json:"pages"`
	// Hosting is whether the AS is on the datacenter list (hosting, cloud
	// and VPN operators).
	Hosting bool `json:"hosting"`
}

// ASPageSize is how many prefixes of each family one page of an AS's
// answer lists: the largest ASes announce tens of thousands, and an answer
// is bounded before it is built.
const ASPageSize = 1000

// PageAS cuts as's prefixes to page (from 1; less is 1) of ASPageSize of
// each family, and records the counts and the page. A page past the last
// has no prefixes.
func PageAS(as *AS, page int) {
	as.NumPrefixes, as.NumPrefixes6 = len(as.Prefixes), len(as.Prefixes6)
	as.Page = max(1, page)
	as.Pages = max(1, (as.NumPrefixes+ASPageSize-1)/ASPageSize, (as.NumPrefixes6+ASPageSize-1)/ASPageSize)
	cut := func(ps []ASPrefix) []ASPrefix {
		lo := min(len(ps), (as.Page-1)*ASPageSize)
		hi := min(len(ps), lo+ASPageSize)
		return ps[lo:hi:hi]
	}
	as.Prefixes, as.Prefixes6 = cut(as.Prefixes), cut(as.Prefixes6)
}

// ASEnvelope is the body of every answer of the AS query (GET
// /api/asn/{asn}): Envelope with an AS as its data.
type ASEnvelope struct {
	Success bool      `json:"success"`
	Data    *AS       `json:"data,omitempty"`
	Error   string    `json:"error,omitempty"`
	Code    ErrorCode `json:"code,omitempty"`
	Meta    Meta      `json:"meta"`
}

// ASPrefix is one announced prefix of an AS.
type ASPrefix struct {
	Netblock netip.Prefix `json:"netblock"`
	// Size is the number of addresses, in decimal: a string because an
	// IPv6 prefix can hold more than any JSON number represents exactly.
	Size string `json:"size"`
}

// PrefixSize returns the number of addresses in p, in decimal.
func PrefixSize(p netip.Prefix) string {
	host := p.Addr().BitLen() - p.Bits()
	if host < 64 {
		return strconv.FormatUint(1<<host, 10)
	}
	return new(big.Int).Lsh(big.NewInt(1), uint(host)).String()
}

// MaxASN is the largest AS number (they are 32-bit, RFC 6793).
const MaxASN = 1<<32 - 1

// ParseAS reads an AS number written "AS15169", "as15169" or "15169". A
// value that is not one (no digits, a sign, anything after the digits, more
// than 32 bits) is an *Error with CodeInvalidAS naming it.
func ParseAS(s string) (uint32, error) {
	digits := s
	if len(digits) >= 2 && strings.EqualFold(digits[:2], "AS") {
		digits = digits[2:]
	}
	ok := digits != "" && len(digits) <= 10
	for i := 0; ok && i < len(digits); i++ {
		ok = digits[i] >= '0' && digits[i] <= '9'
	}
	var n uint64
	if ok {
		var err error
		n, err = strconv.ParseUint(digits, 10, 32)
		ok = err == nil
	}
	if !ok {
		return 0, &Error{Code: CodeInvalidAS, Message: "invalid AS number " + strconv.Quote(ShortFieldName(s)) +
			`: write "AS" and a number up to 4294967295, e.g. AS15169`}
	}
	return uint32(n), nil
}

// InvalidASDetail says, in lang, why s is not an AS number: the detail an
// InvalidAS answer gives after the code's text. The client says the same
// when it refuses s before asking.
func InvalidASDetail(s string, lang Lang) string {
	q := strconv.Quote(ShortFieldName(s))
	if lang == Chinese {
		return q + " 不是AS号；请写 AS 加一个不大于 4294967295 的数字，例如 AS15169"
	}
	return q + ` is not an AS number; write "AS" and a number up to 4294967295, e.g. AS15169`
}

// FormatAS writes an AS number as the service does: "AS15169".
func FormatAS(n uint32) string { return "AS" + strconv.FormatUint(uint64(n), 10) }
