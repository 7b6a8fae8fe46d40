package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// The owners' portal and the operators' console are pages that hold no
// data: their scripts ask the server's JSON endpoints for everything after
// the page loads, so one HTML document serves every path under their
// prefix (the scripts route by the path: /account/keys, /console/audit).

// Where the portal and the console live.
const (
	PortalPath  = "/account"
	ConsolePath = "/console"
	// ConsoleAssetPrefix is where ConsoleHandler serves the console's
	// assets itself: the admin listener has no /assets/ of its own.
	ConsoleAssetPrefix = "/console/assets/"
)

// PortalHandler serves the owners' portal at GET and HEAD /account and
// every path under it but /account/api/ (whose unknown paths are 404: an
// API client must not get a page). Its assets are under AssetPrefix,
// served by Handler on the same listener. Other methods are 405.
func PortalHandler() (http.Handler, error) {
	return newAppPage("account.html", PortalPath, "/", func(m Manifest) string { return m.Portal })
}

// ConsoleHandler serves the operators' console at GET and HEAD /console
// and every path under it, and the console's assets under
// ConsoleAssetPrefix. Other methods are 405.
func ConsoleHandler() (http.Handler, error) {
	return newAppPage("console.html", ConsolePath, ConsolePath+"/", func(m Manifest) string { return m.Console })
}

type appPage struct {
	prefix    string            // "/account"
	assetBase string            // what the page's asset URLs start with
	assets    map[string]*asset // served under assetBase+"assets/" when assetBase is not "/"
	page      []byte            // rendered once: the page is the same for everyone
}

// appCSP is the pages' policy: scripts, styles and requests to this
// origin only, no forms posting anywhere, no framing.
var appCSP = []string{strings.Join([]string{
	"default-src 'none'",
	"script-src 'self'",
	"style-src 'self'",
	"img-src 'self'",
	"connect-src 'self'",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
}, "; ")}

// appData is what account.html and console.html are executed with.
type appData struct {
	Base                                       string // "/" or "/console/": asset URLs are Base + a manifest path
	Script, Style, AppStyle, Favicon, Licenses string
}

func newAppPage(file, prefix, assetBase string, script func(Manifest) string) (http.Handler, error) {
	m, err := Embedded()
	if err != nil {
		return nil, err
	}
	src, err := dist.ReadFile("dist/" + file)
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New(file).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("web: the %s template: %w", file, err)
	}
	d := appData{
		Base: assetBase, Script: script(m), Style: m.Style, AppStyle: m.AppStyle,
		Favicon: m.Favicon, Licenses: m.Licenses,
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, &d); err != nil {
		return nil, fmt.Errorf("web: the %s template: %w", file, err)
	}
	assets, err := embeddedAssets()
	if err != nil {
		return nil, err
	}
	return &appPage{prefix: prefix, assetBase: assetBase, assets: assets, page: buf.Bytes()}, nil
}

func (p *appPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	path := r.URL.Path
	ours := path == p.prefix || strings.HasPrefix(path, p.prefix+"/")
	assetDir := p.assetBase + "assets/"
	switch {
	case !ours || strings.HasPrefix(path, p.prefix+"/api/"):
		http.NotFound(w, r)
	case !get:
		w.Header()["Allow"] = hdrAllow
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case p.assetBase != "/" && strings.HasPrefix(path, assetDir):
		serveAsset(w, r, p.assets, strings.TrimPrefix(path, assetDir))
	default:
		hd := w.Header()
		hd["Content-Type"] = hdrHTML
		hd["Cache-Control"] = hdrNoStore
		hd["Content-Security-Policy"] = appCSP
		hd["X-Content-Type-Options"] = hdrNosniff
		hd["Referrer-Policy"] = hdrNoReferer
		hd["X-Frame-Options"] = hdrDeny
		hd["Content-Length"] = []string{strconv.Itoa(len(p.page))}
		w.WriteHeader(http.StatusOK)
		w.Write(p.page)
	}
}
