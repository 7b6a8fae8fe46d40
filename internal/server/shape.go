package server

import "strings"

// A shape is one answer format of the public API: ipatlas's own, or the
// request and answer forms of another service, so that its programs and
// clients move to ipatlas by their base URL. Every shape answers through
// the metered query (query.go); what is its own is in one value, made in
// its file (shape_*.go) and registered in shapes (routes.go), from which
// the router and its areas are built:
//
//   - prefix: where its paths are (area);
//   - routes: its routes, and root those it serves at the root when a
//     setting asks for them;
//   - render: its error body, for its routes' failures and for the
//     failures outside a route in its area;
//   - key: how its callers name their key (nil: requestKey, ipatlas's
//     ways).
//
// A failure's code is ipatlas's; a shape whose format tells apart more
// than the code does finds the cause in failure.why (a key scheme's own
// error, errQuotaSpent) and keeps its own codes in its file.
type shape struct {
	name string // "echoip", for errors
	// prefix is where the shape's paths are: those under it, and the
	// prefix without its slash ("/ipinfo"). "" is every path.
	prefix string
	// area, when set, is where the shape's paths are instead of prefix.
	area   func(path string) bool
	routes []route
	// root are routes outside the prefix that the shape also serves
	// when rootSetting is on; New refuses them when another route takes
	// one of their paths (checkRoots).
	root        []route
	rootSetting string // "Config.EchoIPRoot"
	render      renderer
	key         keyScheme
}

// holds reports whether a path is in the shape's area: under its prefix
// (or in area), or one of its routes at the root.
func (sh *shape) holds(path string) bool {
	switch {
	case sh.area != nil:
		if sh.area(path) {
			return true
		}
	case strings.HasPrefix(path, sh.prefix) || path+"/" == sh.prefix:
		return true
	}
	for _, rr := range sh.root {
		p := rr.pattern
		if _, after, ok := strings.Cut(p, " "); ok {
			p = after
		}
		if p == path {
			return true
		}
	}
	return false
}
