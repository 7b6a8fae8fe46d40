package server

import (
	"net/http"
	"net/netip"
	"strings"
)

// Which forwarding header a trusted proxy maintains; see Config.ForwardedHeader.
const (
	HeaderAuto          = ""
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded"
)

// proxies is the set of trusted proxy networks.
type proxies []netip.Prefix

// newProxies normalizes the configured prefixes: IPv4-mapped IPv6 prefixes
// (::ffff:10.0.0.0/104) become the IPv4 prefixes they stand for, because
// peers are compared in their unmapped form.
func newProxies(ps []netip.Prefix) proxies {
	out := make(proxies, 0, len(ps))
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		if a := p.Addr(); a.Is4In6() {
			if p.Bits() < 96 {
				continue // wider than the mapped range: no IPv4 meaning
			}
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out
}

func (ps proxies) contains(a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the address of the socket peer, unmapped (an IPv4 client on
// a dual-stack socket is reported as ::ffff:a.b.c.d and is IPv4) and
// without a zone. It is invalid when RemoteAddr holds no IP (a Unix socket).
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(remote); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

// clientAddr is the address of the client: the socket peer, unless the
// peer is a trusted proxy; then the right-most address of the forwarding
// header that is not itself a trusted proxy. Walking from the right matters:
// every proxy appends what it saw, so the entries on the left are whatever
// the client chose to send and are never believed.
//
// When every entry is trusted, the left-most one is the client (a request
// from inside the proxies' own network). When the walk meets an entry that
// is not an address ("unknown", an obfuscated identifier, garbage), it
// stops and the last trusted hop is the client: nothing beyond that entry
// can be attributed.
func clientAddr(r *http.Request, trusted proxies, header string) netip.Addr {
	peer := peerAddr(r.RemoteAddr)
	if len(trusted) == 0 || !peer.IsValid() || !trusted.contains(peer) {
		return peer
	}
	switch header {
	case HeaderXForwardedFor:
		return walkXFF(r.Header.Values("X-Forwarded-For"), peer, trusted)
	case HeaderForwarded:
		return walkForwarded(r.Header.Values("Forwarded"), peer, trusted)
	}
	// Auto: X-Forwarded-For when the proxy sent one, because that is the
	// header nearly every proxy maintains (and a client's forged Forwarded
	// header is then ignored); Forwarded otherwise.
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		return walkXFF(xff, peer, trusted)
	}
	return walkForwarded(r.Header.Values("Forwarded"), peer, trusted)
}

// walkXFF walks X-Forwarded-For lines (a repeated header is one list, in
// order) from the right.
func walkXFF(lines []string, peer netip.Addr, trusted proxies) netip.Addr {
	last := peer
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for line != "" {
			var item string
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				item, line = line[j+1:], line[:j]
			} else {
				item, line = line, ""
			}
			item = strings.TrimSpace(item)
			if item == "" {
				continue // "a, , b" and trailing commas carry nothing
			}
			a, ok := parseNodeAddr(item)
			if !ok {
				return last
			}
			if !trusted.contains(a) {
				return a
			}
			last = a
		}
	}
	return last
}

// walkForwarded walks the for= parameters of RFC 7239 Forwarded lines from
// the right. An element without for= says nothing about the client, so the
// walk stops there like at garbage.
func walkForwarded(lines []string, peer netip.Addr, trusted proxies) netip.Addr {
	fors := forwardedFor(lines)
	last := peer
	for i := len(fors) - 1; i >= 0; i-- {
		a, ok := parseNodeAddr(fors[i])
		if !ok {
			return last
		}
		if !trusted.contains(a) {
			return a
		}
		last = a
	}
	return last
}

// forwardedFor returns the for= value of every element of the Forwarded
// header lines, in order, unquoted; "" for an element without one. Quoted
// strings may hold ',' and ';' (RFC 7239 section 4 uses RFC 7230
// quoted-string), so the split respects quotes. Malformed input never
// fails: it yields values that parseNodeAddr rejects.
func forwardedFor(lines []string) []string { return forwardedParam(lines, "for") }

// forwardedParam returns the value of the parameter param (for, proto...)
// of every element of the Forwarded header lines, as forwardedFor does.
func forwardedParam(lines []string, param string) []string {
	var out []string
	for _, line := range lines {
		var (
			val          string // the element's first for= value
			hasFor, seen bool   // seen: the element has any pair at all
		)
		endElement := func() {
			if seen {
				if !hasFor {
					val = ""
				}
				out = append(out, val)
			}
			val, hasFor, seen = "", false, false
		}
		for i := 0; i < len(line); {
			i = skipOWS(line, i)
			if i >= len(line) {
				break
			}
			switch line[i] {
			case ',':
				endElement()
				i++
				continue
			case ';':
				i++
				continue
			}
			// One pair: token "=" ( token / quoted-string ). Each pass
			// consumes at least one byte, so the loop ends.
			start := i
			for i < len(line) && line[i] != '=' && line[i] != ',' && line[i] != ';' {
				i++
			}
			name := strings.TrimSpace(line[start:i])
			var value string
			if i < len(line) && line[i] == '=' {
				value, i = forwardedValue(line, i+1)
			}
			seen = true
			if !hasFor && strings.EqualFold(name, param) {
				val, hasFor = value, true
			}
		}
		endElement()
	}
	return out
}

// forwardedValue reads a token or quoted-string starting at s[i] and
// returns it (unquoted) with the index past it.
func forwardedValue(s string, i int) (string, int) {
	i = skipOWS(s, i)
	if i < len(s) && s[i] == '"' {
		var b strings.Builder
		for i++; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
			case '"':
				return b.String(), i + 1
			default:
				b.WriteByte(s[i])
			}
		}
		return "\x00unterminated", i // never an address
	}
	start := i
	for i < len(s) && s[i] != ',' && s[i] != ';' {
		i++
	}
	return strings.TrimSpace(s[start:i]), i
}

func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// parseNodeAddr reads one forwarded node: "1.2.3.4", "1.2.3.4:80",
// "2001:db8::1", "[2001:db8::1]" or "[2001:db8::1]:80". The result is
// unmapped and zone-free. RFC 7239 obfuscated identifiers ("unknown",
// "_hidden") are not addresses.
func parseNodeAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Addr{}, false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		rest := s[end+1:]
		if rest != "" && (rest[0] != ':' || !isPort(rest[1:])) {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
		return a.Unmap().WithZone(""), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	// "a.b.c.d:port": only IPv4 may carry a port without brackets.
	if i := strings.LastIndexByte(s, ':'); i > 0 && isPort(s[i+1:]) {
		if a, err := netip.ParseAddr(s[:i]); err == nil && a.Is4() {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
