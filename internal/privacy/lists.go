// Package privacy answers "what kind of network is this address": it knows
// the public lists of hosting, VPN, relay and Tor exit addresses (their
// upstream URLs, formats, flags and the provider each names), parses them
// strictly, and compiles them into one Table that a lookup searches once.
//
// The lists live in a data directory as the upstream published them
// (privacy-<list>.txt, described by privacy.json, written by the dataset
// package); a list the directory lacks is read from the snapshot built into
// the binary, so a server without internet still answers every flag but
// Tor. The Tor exit list has no snapshot: exits change every hour.
package privacy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Flags are the kinds of network a list marks its addresses as.
type Flags uint8

// The flags of the privacy object.
const (
	Hosting Flags = 1 << iota
	VPN
	Tor
	Relay
)

// Format is how a list is written.
type Format uint8

const (
	// FormatCIDR is one CIDR per line (X4BNet's output lists, ipranges'
	// *_merged.txt).
	FormatCIDR Format = iota + 1
	// FormatASN is one AS per line, "AS<n>", optionally followed by
	// blanks and a "#" comment (X4BNet's input/*/ASN.txt).
	FormatASN
	// FormatAddr is one address per line (the Tor Project's bulk exit
	// list).
	FormatAddr
)

// List is one upstream list.
type List struct {
	Name     string // key in privacy.json; the file is privacy-<Name>.txt
	URL      string // upstream
	Upstream string // the repository or service it comes from: UpstreamX4BNet, UpstreamIPRanges, UpstreamTor
	Path     string // URL's path below the upstream's base (Mirrors)
	Format   Format
	Flags    Flags
	Service  string // the provider the list names; "" for mixed lists
	Source   string // who publishes it, for db info
	License  string // SPDX identifier
	// MinEntries is the fewest entries a download of the list may have:
	// well below what the list has held for years, and far above what a
	// truncated or placeholder file has.
	MinEntries int

	// The sanity bounds of Check. Widest4 and Widest6 are the shortest
	// prefix an entry may have (default /8 and /24, the widest ranges any
	// real list holds; a host for the Tor exits). MaxShare is the most of
	// the announced space of an address family (AnnouncedIPv4,
	// AnnouncedIPv6) the list may cover, in percent: about four times what
	// the snapshot's copy covers, and at least 0.01. MaxEntries, when
	// set, is the most entries a copy may have, for the lists a share
	// cannot bound (the Tor exits, the datacenter ASes).
	Widest4, Widest6 int
	MaxShare         float64
	MaxEntries       int

	// Owner marks a cloud operator's list of the address space it holds;
	// Tenant a list that also names the operators' shared pools its
	// workloads draw from (GitHub's holds the Azure ranges of its Actions
	// runners). Where a Tenant range lies inside an Owner range, the
	// address is the owner's, and the Owner list names it (see combine).
	Owner, Tenant bool
}

// File is the list's file name in a data directory.
func (l List) File() string { return "privacy-" + l.Name + ".txt" }

// Base URLs of the upstreams, and the Tor Project's list of current exit
// relays.
const (
	X4BNetURL   = "https://raw.githubusercontent.com/X4BNet/lists_vpn/main/"
	IPRangesURL = "https://raw.githubusercontent.com/lord-alfred/ipranges/main/"
	TorExitURL  = "https://check.torproject.org/torbulkexitlist"
)

// Upstreams of the lists.
const (
	UpstreamX4BNet   = "x4bnet"
	UpstreamIPRanges = "ipranges"
	UpstreamTor      = "tor"
)

// Mirrors are where the lists are fetched from, for operators who mirror
// them: the base URLs of the two repositories' raw files (a mirror serves
// the same paths below it) and the Tor list's URL. An empty field is the
// upstream.
type Mirrors struct {
	X4BNet   string
	IPRanges string
	Tor      string
}

// URLWith is where the list is fetched from with these mirrors.
func (l List) URLWith(m Mirrors) string {
	base := ""
	switch l.Upstream {
	case UpstreamX4BNet:
		base = m.X4BNet
	case UpstreamIPRanges:
		base = m.IPRanges
	case UpstreamTor:
		if m.Tor != "" {
			return m.Tor
		}
	}
	if base == "" {
		return l.URL
	}
	return strings.TrimSuffix(base, "/") + "/" + l.Path
}

// TorList is the name of the Tor exit list, which the server refreshes on
// its own, shorter schedule.
const TorList = "tor-exits"

// Lists are every list the service knows, in the order that breaks ties
// between the services of two equally specific ranges: relay and VPN
// operators first, then clouds, then the rest.
var Lists = buildLists()

func buildLists() []List {
	x4b := func(name, path string, f Format, flags Flags, min int, share float64) List {
		return List{Name: name, URL: X4BNetURL + path, Upstream: UpstreamX4BNet, Path: path, Format: f, Flags: flags,
			Source: "X4BNet lists_vpn", License: "MIT", MinEntries: min, Widest4: 8, Widest6: 24, MaxShare: share}
	}
	out := []List{
		x4b("x4bnet-datacenter-asn", "input/datacenter/ASN.txt", FormatASN, Hosting, 300, 0),
		x4b("x4bnet-datacenter-ipv4", "output/datacenter/ipv4.txt", FormatCIDR, Hosting, 10000, 40),
		x4b("x4bnet-datacenter-ipv6", "output/datacenter/ipv6.txt", FormatCIDR, Hosting, 2000, 15),
		x4b("x4bnet-vpn-ipv4", "output/vpn/ipv4.txt", FormatCIDR, VPN, 2000, 0.5),
		x4b("x4bnet-vpn-ipv6", "output/vpn/ipv6.txt", FormatCIDR, VPN, 100, 1),
		// Exit relays: about 1,000 to 2,000 addresses, each a host.
		{Name: TorList, URL: TorExitURL, Upstream: UpstreamTor, Format: FormatAddr, Flags: Tor, Source: "The Tor Project", License: "CC0-1.0",
			MinEntries: 100, Widest4: 32, Widest6: 128, MaxShare: 0.01, MaxEntries: 5000},
	}
	out[0].MaxEntries = 5000 // the datacenter ASes: 906 in the snapshot
	// ipranges: one directory per operator, each the operator's own
	// published ranges; the minimum is about a fifth of the list's size
	// when the snapshot was taken, and 1 for lists of a handful. The
	// crawlers', monitors' and AI services' lists lie inside the clouds
	// too, but name the addresses the service itself holds (hosts and
	// small blocks), so they are not tenants: their name stays.
	const (
		owner  = 1
		tenant = 2
	)
	for _, o := range []struct {
		dir, service   string
		flags          Flags
		min4, min6     int     // 0: the operator publishes no such list
		share4, share6 float64 // MaxShare, percent
		role           int
	}{
		{"apple-proxy", "iCloud Private Relay", Relay, 500, 2000, 0.02, 0.01, 0},
		{"protonvpn", "Proton VPN", VPN | Hosting, 100, 0, 0.01, 0, 0},
		{"amazon", "Amazon AWS", Hosting, 300, 400, 15, 0.05, owner},
		{"google", "Google", Hosting, 20, 3, 3, 0.05, owner}, // goog.json and cloud.json: all of Google, not only its cloud
		{"microsoft", "Microsoft Azure", Hosting, 90, 12, 10, 0.5, owner},
		{"oracle", "Oracle Cloud", Hosting, 150, 0, 0.5, 0, owner},
		{"cloudflare", "Cloudflare", Hosting, 3, 1, 0.2, 0.03, owner},
		{"digitalocean", "DigitalOcean", Hosting, 35, 10, 0.5, 0.01, owner},
		{"linode", "Linode", Hosting, 45, 8, 0.2, 0.1, owner},
		{"vultr", "Vultr", Hosting, 25, 5, 0.2, 0.01, owner},
		{"github", "GitHub", Hosting, 800, 300, 4, 0.02, tenant},
		{"facebook", "Meta", Hosting, 5, 9, 0.1, 0.03, owner},
		{"twitter", "X (Twitter)", Hosting, 3, 1, 0.01, 0.02, owner},
		{"telegram", "Telegram", Hosting, 1, 1, 0.01, 0.01, owner},
		{"googlebot", "Googlebot", Hosting, 8, 5, 0.01, 0.01, 0},
		{"bing", "Bingbot", Hosting, 5, 0, 0.01, 0, 0},
		{"duckduckbot", "DuckDuckBot", Hosting, 90, 0, 0.01, 0, 0},
		{"duckassistbot", "DuckAssistBot", Hosting, 90, 0, 0.01, 0, 0},
		{"openai", "OpenAI", Hosting, 45, 0, 0.01, 0, 0},
		{"perplexity", "Perplexity", Hosting, 2, 0, 0.01, 0, 0},
		{"pingdom", "Pingdom", Hosting, 20, 10, 0.01, 0.01, 0},
		{"statuscake", "StatusCake", Hosting, 35, 0, 0.01, 0, 0},
	} {
		for _, v := range []struct {
			fam   string
			min   int
			share float64
		}{{"ipv4", o.min4, o.share4}, {"ipv6", o.min6, o.share6}} {
			if v.min == 0 {
				continue
			}
			path := o.dir + "/" + v.fam + "_merged.txt"
			out = append(out, List{Name: "ipranges-" + o.dir + "-" + v.fam, URL: IPRangesURL + path, Upstream: UpstreamIPRanges, Path: path,
				Format: FormatCIDR, Flags: o.flags, Service: o.service, Source: "lord-alfred/ipranges", License: "CC0-1.0", MinEntries: v.min,
				Widest4: 8, Widest6: 24, MaxShare: v.share, Owner: o.role == owner, Tenant: o.role == tenant})
		}
	}
	return out
}

// Named returns the list with this name.
func Named(name string) (List, bool) {
	for _, l := range Lists {
		if l.Name == name {
			return l, true
		}
	}
	return List{}, false
}

// Entries is a parsed list.
type Entries struct {
	Prefixes []netip.Prefix // masked; addresses of FormatAddr as single-address prefixes
	ASNs     []uint32
}

// Len is the number of entries.
func (e Entries) Len() int { return len(e.Prefixes) + len(e.ASNs) }

// ErrMalformed means a list is not in its format, is empty, is cut short
// or is implausibly small: it must never replace a good copy.
var ErrMalformed = errors.New("malformed list")

// Parse reads a list in its format, strictly: every line must be an
// entry, a comment ("#") or blank, and the file must end with a newline (a
// download cut mid-line does not).
func (l List) Parse(b []byte) (Entries, error) {
	var e Entries
	if len(b) == 0 {
		return e, fmt.Errorf("%s: %w: empty", l.Name, ErrMalformed)
	}
	if b[len(b)-1] != '\n' {
		return e, fmt.Errorf("%s: %w: does not end with a newline (cut short?)", l.Name, ErrMalformed)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		if err := l.parseLine(line, &e); err != nil {
			return Entries{}, fmt.Errorf("%s: %w: line %d: %v", l.Name, ErrMalformed, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Entries{}, fmt.Errorf("%s: %w: %v", l.Name, ErrMalformed, err)
	}
	if e.Len() == 0 {
		return Entries{}, fmt.Errorf("%s: %w: no entries", l.Name, ErrMalformed)
	}
	return e, nil
}

// Plausible reports whether a new copy of the list with n entries may
// replace one with prev entries (0 when there is none): it must hold at
// least MinEntries, and at least half as many as the copy it replaces, so
// that a copy cut at a line boundary or a placeholder never wins.
func (l List) Plausible(n, prev int) error {
	if n < l.MinEntries {
		return fmt.Errorf("%s: %w: %d entries, fewer than the %d a real copy has", l.Name, ErrMalformed, n, l.MinEntries)
	}
	if n < prev/2 {
		return fmt.Errorf("%s: %w: %d entries, fewer than half of the %d of the copy in service", l.Name, ErrMalformed, n, prev)
	}
	return nil
}

func (l List) parseLine(line string, e *Entries) error {
	switch l.Format {
	case FormatCIDR:
		p, err := netip.ParsePrefix(line)
		if err != nil {
			return err
		}
		e.Prefixes = append(e.Prefixes, p.Masked())
	case FormatAddr:
		// An address, or one written as a prefix (a mirror may): Check
		// refuses a prefix wider than a host.
		if strings.IndexByte(line, '/') >= 0 {
			p, err := netip.ParsePrefix(line)
			if err != nil {
				return fmt.Errorf("not an address: %q", short(line))
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			e.Prefixes = append(e.Prefixes, p.Masked())
			return nil
		}
		a, err := netip.ParseAddr(line)
		if err != nil || a.Zone() != "" {
			return fmt.Errorf("not an address: %q", short(line))
		}
		a = a.Unmap()
		e.Prefixes = append(e.Prefixes, netip.PrefixFrom(a, a.BitLen()))
	case FormatASN:
		f, _, _ := strings.Cut(line, "#")
		f = strings.TrimSpace(f)
		if len(f) < 3 || !strings.EqualFold(f[:2], "AS") {
			return fmt.Errorf("not an AS number: %q", short(line))
		}
		n, err := strconv.ParseUint(f[2:], 10, 32)
		if err != nil || f[2] == '+' {
			return fmt.Errorf("not an AS number: %q", short(line))
		}
		e.ASNs = append(e.ASNs, uint32(n))
	default:
		return fmt.Errorf("unknown format %d", l.Format)
	}
	return nil
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// GeoIP2Anonymous is GeoIP2's is_anonymous: true when any of its
// anonymizer flags holds, hosting included (a server anyone can rent
// hides who is behind it), or the address is an anonymising relay, which
// has no flag of its own there. The GeoIP2 model (package geoip2), which
// the web-service shape and the MMDB export both write, answers it by this
// rule.
func GeoIP2Anonymous(vpn, hosting, tor, relay bool) bool {
	return vpn || hosting || tor || relay
}
