package netaddr

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"net/netip"
)

// U128 is an address as a 128-bit number, for tables of ranges that sort
// and step addresses: an IPv6 address, or an IPv4 address in Lo.
type U128 struct{ Hi, Lo uint64 }

// MaxU128 is the last IPv6 address, ffff:...:ffff.
var MaxU128 = U128{Hi: ^uint64(0), Lo: ^uint64(0)}

// U128Of is a's 16-byte form as a number.
func U128Of(a netip.Addr) U128 {
	hi, lo := halves(a)
	return U128{Hi: hi, Lo: lo}
}

// Addr is x as an IPv6 address.
func (x U128) Addr() netip.Addr {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x.Hi)
	binary.BigEndian.PutUint64(b[8:], x.Lo)
	return netip.AddrFrom16(b)
}

// Cmp orders x and y as numbers.
func (x U128) Cmp(y U128) int {
	if c := cmp.Compare(x.Hi, y.Hi); c != 0 {
		return c
	}
	return cmp.Compare(x.Lo, y.Lo)
}

// Next is x + 1, wrapping at MaxU128.
func (x U128) Next() U128 {
	lo := x.Lo + 1
	hi := x.Hi
	if lo == 0 {
		hi++
	}
	return U128{Hi: hi, Lo: lo}
}

// Prev is x - 1, wrapping at zero.
func (x U128) Prev() U128 {
	if x.Lo == 0 {
		return U128{Hi: x.Hi - 1, Lo: ^uint64(0)}
	}
	return U128{Hi: x.Hi, Lo: x.Lo - 1}
}

// BlockBits is the prefix length of the largest CIDR block that holds x
// and lies within [first, last] (first <= x <= last), in a family of
// width bits (32 for IPv4 in Lo, 128 for IPv6): the block of x's first
// len-n bits, for the smallest such length.
func BlockBits(x, first, last U128, width int) int {
	// A block of 2^h addresses holding x starts at or after first when
	// x and first agree above bit h, or first's low h bits are zero; it
	// ends at or before last likewise, with last's low h bits all ones.
	lo := max(x.xor(first).bitLen()-1, first.trailingZeros())
	hi := max(x.xor(last).bitLen()-1, last.not().trailingZeros())
	return width - min(lo, hi, width)
}

func (x U128) xor(y U128) U128 { return U128{Hi: x.Hi ^ y.Hi, Lo: x.Lo ^ y.Lo} }

func (x U128) not() U128 { return U128{Hi: ^x.Hi, Lo: ^x.Lo} }

func (x U128) bitLen() int {
	if x.Hi != 0 {
		return 64 + bits.Len64(x.Hi)
	}
	return bits.Len64(x.Lo)
}

func (x U128) trailingZeros() int {
	if x.Lo != 0 {
		return bits.TrailingZeros64(x.Lo)
	}
	return 64 + bits.TrailingZeros64(x.Hi)
}
