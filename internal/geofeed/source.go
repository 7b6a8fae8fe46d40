package geofeed

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Source is a published feed: where it is and which ASes it speaks for.
type Source struct {
	// Name is how records name the feed ("geofeed:" and Name in their
	// location_source): a built-in feed's own name, else the URL's host.
	Name string `json:"name"`
	URL  string `json:"url"`
	// ASes are the ASes whose announced addresses the feed may place;
	// sorted; empty, any announced address.
	ASes []uint32 `json:"ases,omitempty"`
	// Builtin is a feed of the built-in list.
	Builtin bool `json:"builtin,omitempty"`
}

// String is the source as a setting writes it: its URL, then its ASes.
func (s Source) String() string {
	var b strings.Builder
	b.WriteString(s.URL)
	for _, n := range s.ASes {
		b.WriteString(" AS")
		b.WriteString(strconv.FormatUint(uint64(n), 10))
	}
	return b.String()
}

// None is the value of --geofeed that turns the built-in list off.
const None = "none"

// Builtin is the built-in list: operators that publish a feed for their
// own addresses at a stable URL, each with the ASes that announce them
// (as the default ASN data names them). A feed placing addresses its ASes
// do not announce is refused for those addresses.
var Builtin = []Source{
	{Name: "netflix", URL: "https://raw.githubusercontent.com/Netflix/nflx-geofeed/main/geofeed.csv",
		ASes: []uint32{2906, 40027, 55095, 394406}},
	{Name: "starlink", URL: "https://geoip.starlinkisp.net/feed.csv",
		ASes: []uint32{14593, 27277, 40714, 397763}},
	// iCloud Private Relay's egress addresses are announced by Apple and
	// by the networks that run its egress nodes for it (Akamai's relay
	// AS, Cloudflare, Fastly); the feed is trusted there and nowhere else.
	{Name: "icloud-private-relay", URL: "https://mask-api.icloud.com/egress-ip-ranges.csv",
		ASes: []uint32{714, 6185, 13335, 36183, 54113}},
	{Name: "google-cloud", URL: "https://www.gstatic.com/ipranges/cloud_geofeed",
		ASes: []uint32{15169, 19527, 36040, 36492, 139070, 139190, 396982}},
	{Name: "cloudflare-warp", URL: "https://api.cloudflare.com/local-ip-ranges.csv",
		ASes: []uint32{13335, 209242}},
}

func init() {
	for i := range Builtin {
		Builtin[i].Builtin = true
	}
}

// ParseSources reads the values of --geofeed: each "URL [AS...]", the
// URL an http or https URL, each AS written "AS2906" or "2906", separated
// by blanks. The built-in list comes first unless one value is "none";
// a value naming a built-in feed's URL replaces it, with the ASes given
// (or the built-in ones when none is). Two values with one URL are an
// error.
func ParseSources(values []string) ([]Source, error) {
	out := []Source{} // not nil: "none" is a choice
	builtin := true
	for _, v := range values {
		if strings.EqualFold(strings.TrimSpace(v), None) {
			builtin = false
		}
	}
	if builtin {
		out = slices.Clone(Builtin)
	}
	given := map[string]bool{}
	for _, v := range values {
		if strings.EqualFold(strings.TrimSpace(v), None) {
			continue
		}
		s, err := ParseSource(v)
		if err != nil {
			return nil, err
		}
		if given[s.URL] {
			return nil, fmt.Errorf("geofeed %s is given twice", s.URL)
		}
		given[s.URL] = true
		if i := slices.IndexFunc(out, func(b Source) bool { return b.URL == s.URL }); i >= 0 {
			if len(s.ASes) == 0 {
				s.ASes = out[i].ASes
			}
			s.Name, s.Builtin = out[i].Name, true
			out[i] = s
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseSource reads one "URL [AS...]".
func ParseSource(v string) (Source, error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return Source{}, fmt.Errorf("empty geofeed: want \"URL [AS...]\"")
	}
	u, err := url.Parse(fields[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Source{}, fmt.Errorf("geofeed %q: want an http or https URL, then the ASes it speaks for (\"https://example.net/geofeed.csv AS64500 AS64501\")", short(fields[0]))
	}
	if u.User != nil {
		return Source{}, fmt.Errorf("geofeed %q: a URL with a user name or password would show in logs and db info", u.Redacted())
	}
	s := Source{Name: u.Hostname(), URL: u.String()}
	for _, f := range fields[1:] {
		digits := strings.TrimPrefix(strings.TrimPrefix(f, "AS"), "as")
		n, err := strconv.ParseUint(digits, 10, 32)
		if err != nil || n == 0 {
			return Source{}, fmt.Errorf("geofeed %s: %q is not an AS number (want AS64500 or 64500)", s.URL, short(f))
		}
		s.ASes = append(s.ASes, uint32(n))
	}
	slices.Sort(s.ASes)
	s.ASes = slices.Compact(s.ASes)
	return s, nil
}
