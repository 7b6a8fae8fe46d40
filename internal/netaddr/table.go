package netaddr

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"
)

// row is one line of the table. A reachable row is a globally reachable
// exception carved out of a larger block that is not (the registries'
// "Globally Reachable: True" lines inside a "False" block); the most
// specific matching row decides.
type row struct {
	Block
	reachable bool
}

func special(prefix, name, nameZh, rfc string) row {
	return row{Block: Block{Prefix: netip.MustParsePrefix(prefix), Name: name, NameZh: nameZh, RFC: rfc}}
}

func reachable(prefix, name, rfc string) row {
	return row{Block: Block{Prefix: netip.MustParsePrefix(prefix), Name: name, RFC: rfc}, reachable: true}
}

// Names shared by IPv4 and IPv6 rows, so that a caller keying on Name sees
// one class, whatever the family.
const (
	loopback      = "loopback"
	loopbackZh    = "环回地址"
	linkLocal     = "link-local"
	linkLocalZh   = "链路本地地址"
	documentation = "documentation"
	docZh         = "文档示例地址"
	benchmarking  = "benchmarking"
	benchZh       = "基准测试地址"
	multicast     = "multicast"
	multicastZh   = "组播地址"
	reserved      = "reserved"
	reservedZh    = "保留地址"
	unspecified   = "unspecified"
	unspecZh      = "未指定地址"
	ietf          = "IETF protocol assignments"
	ietfZh        = "IETF 协议分配地址"
)

// table is the one list of special-purpose blocks, written from the IANA
// IPv4 and IPv6 Special-Purpose Address Registries (every "Globally
// Reachable: False" line and the "True" lines inside them), plus multicast
// (IANA multicast registries), IPv4 240.0.0.0/4, and the IPv6 space the IANA
// IPv6 Address Space registry lists as "Reserved by IETF" outside 2000::/3.
//
// Deliberately absent or special-cased:
//   - ::ffff:0:0/96 (IPv4-mapped), ::/96 (IPv4-compatible, RFC 4291 2.5.5.1)
//     and 64:ff9b::/96 (NAT64, RFC 6052) are judged by the IPv4 address they
//     carry (see Embedded), before this table is consulted for IPv6.
//   - 192.88.99.0/24, the deprecated 6to4 relay anycast block (RFC 7526),
//     is "N/A" in the registry, not "False", and lies in no other block: its
//     addresses are ordinary unicast space again and are looked up.
//   - Teredo 2001::/32 (RFC 4380) is "N/A" in the registry and lies inside
//     2001::/23, which is not globally reachable; no exception lifts it out.
//     It is reported as its own block rather than unwrapped: a Teredo address
//     names a host behind a NAT through an obfuscated client IPv4 address and
//     a relay server, so neither the IPv6 address nor the embedded IPv4
//     address says where the host is with any reliability, and Teredo is
//     retired in practice. Rejecting it with the reason "Teredo" is honest.
//   - 6to4 2002::/16 (RFC 3056) is "N/A" in the registry and lies inside
//     2000::/3: it is queryable and looked up as the IPv6 address it is
//     (RFC 7526 deprecated the relay anycast, not the addresses). But a 6to4
//     prefix is 2002:V4ADDR::/48 where V4ADDR must be the site's globally
//     unique IPv4 address; one built from a private, loopback, ... address
//     cannot be reached, so Classify reports the IPv4 block of V4ADDR. It is
//     not unwrapped by Embedded because lookup data keys it as IPv6.
var table = []row{
	// IPv4 Special-Purpose Address Registry.
	special("0.0.0.0/8", "this network", "本网络地址", "RFC 791"),
	special("0.0.0.0/32", unspecified, unspecZh, "RFC 1122"), // "this host on this network"
	special("10.0.0.0/8", "private-use", "私有地址", "RFC 1918"),
	special("100.64.0.0/10", "shared address space (CGNAT)", "共享地址空间（运营商级 NAT）", "RFC 6598"),
	special("127.0.0.0/8", loopback, loopbackZh, "RFC 1122"),
	special("169.254.0.0/16", linkLocal, linkLocalZh, "RFC 3927"),
	special("172.16.0.0/12", "private-use", "私有地址", "RFC 1918"),
	special("192.0.0.0/24", ietf, ietfZh, "RFC 6890"),
	special("192.0.0.0/29", "IPv4 service continuity prefix", "IPv4 服务连续性前缀", "RFC 7335"),
	special("192.0.0.8/32", "IPv4 dummy address", "IPv4 虚拟地址", "RFC 7600"),
	reachable("192.0.0.9/32", "Port Control Protocol anycast", "RFC 7723"),
	reachable("192.0.0.10/32", "Traversal Using Relays around NAT anycast", "RFC 8155"),
	special("192.0.0.170/31", "NAT64/DNS64 discovery", "NAT64/DNS64 发现地址", "RFC 8880"),
	special("192.0.2.0/24", documentation, docZh, "RFC 5737"), // TEST-NET-1
	special("192.168.0.0/16", "private-use", "私有地址", "RFC 1918"),
	special("198.18.0.0/15", benchmarking, benchZh, "RFC 2544"),
	special("198.51.100.0/24", documentation, docZh, "RFC 5737"), // TEST-NET-2
	special("203.0.113.0/24", documentation, docZh, "RFC 5737"),  // TEST-NET-3
	special("224.0.0.0/4", multicast, multicastZh, "RFC 5771"),
	special("240.0.0.0/4", reserved, reservedZh, "RFC 1112"),
	special("255.255.255.255/32", "limited broadcast", "受限广播地址", "RFC 919"),

	// IPv6 Special-Purpose Address Registry.
	special("::/128", unspecified, unspecZh, "RFC 4291"),
	special("::1/128", loopback, loopbackZh, "RFC 4291"),
	special("64:ff9b:1::/48", "local-use IPv4/IPv6 translation", "本地 IPv4/IPv6 转换地址", "RFC 8215"),
	special("100::/64", "discard-only", "仅丢弃地址", "RFC 6666"),
	special("100:0:0:1::/64", "dummy IPv6 prefix", "IPv6 虚拟前缀", "RFC 9780"),
	special("2001::/23", ietf, ietfZh, "RFC 2928"),
	special("2001::/32", "Teredo", "Teredo 隧道地址", "RFC 4380"),
	reachable("2001:1::1/128", "Port Control Protocol anycast", "RFC 7723"),
	reachable("2001:1::2/128", "Traversal Using Relays around NAT anycast", "RFC 8155"),
	reachable("2001:1::3/128", "DNS-SD Service Registration Protocol anycast", "RFC 9665"),
	special("2001:2::/48", benchmarking, benchZh, "RFC 5180"),
	reachable("2001:3::/32", "AMT", "RFC 7450"),
	reachable("2001:4:112::/48", "AS112-v6", "RFC 7535"),
	special("2001:10::/28", "deprecated ORCHID", "已弃用的 ORCHID 地址", "RFC 4843"),
	reachable("2001:20::/28", "ORCHIDv2", "RFC 7343"),
	reachable("2001:30::/28", "Drone Remote ID Protocol Entity Tags", "RFC 9374"),
	special("2001:db8::/32", documentation, docZh, "RFC 3849"),
	special("3fff::/20", documentation, docZh, "RFC 9637"),
	special("5f00::/16", "segment routing (SRv6) SIDs", "SRv6 段标识地址", "RFC 9602"),
	special("fc00::/7", "unique local", "唯一本地地址", "RFC 4193"),
	special("fe80::/10", linkLocal, linkLocalZh, "RFC 4291"),

	// IPv6 outside the registry above.
	special("fec0::/10", "site-local (deprecated)", "站点本地地址（已弃用）", "RFC 3879"),
	special("ff00::/8", multicast, multicastZh, "RFC 4291"),
	// IANA IPv6 Address Space: "Reserved by IETF" outside 2000::/3.
	special("::/8", reserved, reservedZh, "RFC 4291"),
	special("100::/8", reserved, reservedZh, "RFC 4291"),
	special("200::/7", reserved, reservedZh, "RFC 4048"),
	special("400::/6", reserved, reservedZh, "RFC 4291"),
	special("800::/5", reserved, reservedZh, "RFC 4291"),
	special("1000::/4", reserved, reservedZh, "RFC 4291"),
	special("4000::/3", reserved, reservedZh, "RFC 4291"),
	special("6000::/3", reserved, reservedZh, "RFC 4291"),
	special("8000::/3", reserved, reservedZh, "RFC 4291"),
	special("a000::/3", reserved, reservedZh, "RFC 4291"),
	special("c000::/3", reserved, reservedZh, "RFC 4291"),
	special("e000::/4", reserved, reservedZh, "RFC 4291"),
	special("f000::/5", reserved, reservedZh, "RFC 4291"),
	special("f800::/6", reserved, reservedZh, "RFC 4291"),
	special("fe00::/9", reserved, reservedZh, "RFC 4291"),
}

// The index buckets rows by the address's first byte, most specific first,
// so that Classify tests a handful of masks instead of the whole table and
// never allocates.
type rule4 struct {
	base, mask uint32
	bits       int
	i          int // index into table
}

type rule6 struct {
	hi, lo, mhi, mlo uint64
	bits             int
	i                int
}

var (
	index4 [256][]rule4
	index6 [256][]rule6
)

func init() {
	for i, r := range table {
		p := r.Prefix.Masked()
		bits := p.Bits()
		if p.Addr().Is4() {
			mask := ^uint32(0) << (32 - bits)
			if bits == 0 {
				mask = 0
			}
			b := p.Addr().As4()
			base := binary.BigEndian.Uint32(b[:])
			for f := range 256 {
				if uint32(f)<<24&mask == base&mask&0xff000000 {
					index4[f] = append(index4[f], rule4{base: base, mask: mask, bits: bits, i: i})
				}
			}
			continue
		}
		mhi, mlo := mask128(bits)
		b := p.Addr().As16()
		hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
		for f := range 256 {
			if uint64(f)<<56&mhi == hi&mhi&0xff00_0000_0000_0000 {
				index6[f] = append(index6[f], rule6{hi: hi, lo: lo, mhi: mhi, mlo: mlo, bits: bits, i: i})
			}
		}
	}
	for f := range 256 {
		slices.SortStableFunc(index4[f], func(a, b rule4) int { return cmp.Compare(b.bits, a.bits) })
		slices.SortStableFunc(index6[f], func(a, b rule6) int { return cmp.Compare(b.bits, a.bits) })
	}
}

func mask128(bits int) (hi, lo uint64) {
	switch {
	case bits == 0:
		return 0, 0
	case bits <= 64:
		return ^uint64(0) << (64 - bits), 0
	case bits == 128:
		return ^uint64(0), ^uint64(0)
	default:
		return ^uint64(0), ^uint64(0) << (128 - bits)
	}
}

func classify4(v uint32) (Block, bool) {
	for _, r := range index4[v>>24] {
		if v&r.mask == r.base {
			return verdict(r.i)
		}
	}
	return Block{}, false
}

func classify6(hi, lo uint64) (Block, bool) {
	for _, r := range index6[hi>>56] {
		if hi&r.mhi == r.hi && lo&r.mlo == r.lo {
			return verdict(r.i)
		}
	}
	return Block{}, false
}

func verdict(i int) (Block, bool) {
	if table[i].reachable {
		return Block{}, false
	}
	return table[i].Block, true
}
