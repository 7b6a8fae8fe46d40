package web

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Format is a representation of GET /: what Wants picks for a request.
type Format uint8

const (
	FormatText Format = iota // the caller's address and a newline
	FormatJSON               // ipatlas.MyIPResponse
	FormatHTML               // the page
)

func (f Format) String() string {
	switch f {
	case FormatJSON:
		return "json"
	case FormatHTML:
		return "html"
	}
	return "text"
}

// offers are the media types of the formats, in the order that breaks
// ties: when a client accepts several equally, the smallest answer wins,
// so "*/*" and "text/*" get plain text.
var offers = [...]struct {
	f        Format
	typ, sub string
}{
	{FormatText, "text", "plain"},
	{FormatJSON, "application", "json"},
	{FormatHTML, "text", "html"},
}

// cliAgents are the User-Agent prefixes (compared case-insensitively) of
// the command-line clients people type the service's name into. They get
// plain text even when their default Accept asks for something else
// (HTTPie sends "application/json, */*;q=0.5"), unless the Accept header
// rules plain text out: `curl -H 'Accept: application/json'` gets JSON.
var cliAgents = [...]string{"curl/", "wget/", "wget2/", "httpie/"}

func isCLI(ua string) bool {
	for _, p := range cliAgents {
		if len(ua) >= len(p) && strings.EqualFold(ua[:len(p)], p) {
			return true
		}
	}
	return false
}

// negotiate picks the format of GET / from the Accept header (all its
// lines joined with ",") and the User-Agent.
//
// The weight of each format is that of the most specific media range
// matching it (RFC 9110, section 12.5.1), so "text/plain;q=0, */*" rules
// plain text out. A browser names text/html explicitly and gets the page;
// no Accept, "*/*" (curl, wget, most HTTP libraries) and anything that
// accepts none of the formats get plain text, the answer scripts expect.
func negotiate(accept, ua string) Format {
	accept = strings.TrimSpace(accept)
	if accept == "" || accept == "*/*" {
		return FormatText
	}
	q := weights(accept)
	if q[FormatText] > 0 && isCLI(ua) {
		return FormatText
	}
	best, bestQ := FormatText, 0.0
	for _, o := range offers {
		if q[o.f] > bestQ {
			best, bestQ = o.f, q[o.f]
		}
	}
	return best
}

// weights returns the weight of each format under accept: 0 for a format
// that no range matches or that is refused with q=0.
func weights(accept string) [len(offers)]float64 {
	var q [len(offers)]float64
	var spec [len(offers)]int // specificity of the range that set q; -1: none yet
	for i := range spec {
		spec[i] = -1
	}
	for part := range strings.SplitSeq(accept, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue // a malformed range names nothing
		}
		typ, sub, ok := strings.Cut(mt, "/")
		if !ok {
			continue
		}
		w := 1.0
		if s, ok := params["q"]; ok {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			w = f
		}
		for _, o := range offers {
			s := -1
			switch {
			case typ == o.typ && sub == o.sub:
				s = 2
			case typ == o.typ && sub == "*":
				s = 1
			case typ == "*" && sub == "*":
				s = 0
			}
			if s > spec[o.f] {
				spec[o.f], q[o.f] = s, w
			}
		}
	}
	return q
}

// Wants is the Format GET / answers r in: plain text for curl, wget and
// HTTPie, JSON for Accept: application/json, the page for browsers. The
// answer must carry Vary: Accept, User-Agent.
func Wants(r *http.Request) Format {
	accept := r.Header.Get("Accept")
	if vs := r.Header.Values("Accept"); len(vs) > 1 {
		accept = strings.Join(vs, ",")
	}
	return negotiate(accept, r.UserAgent())
}
