// Package web owns the human face of ipatlas: the HTML page of GET / on
// the main host and its static assets. Which requests to GET / get the
// page is Wants's rule (negotiate.go); the server answers the others (curl
// and JSON clients) with the caller's address, and answers the page's own
// requests (GET /api/ip/me for its map, /ipv4 and /ipv6).
//
// The page's sources live in web/ at the module root and are bundled with
// esbuild into dist/ by `go generate` (see ./build); dist/ is committed and
// embedded, so the binary serves everything itself, offline, without a CDN
// and without npm on the build machine.
package web

//go:generate go run ./build

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ipatlas/ipatlas/internal/names"
)

//go:embed dist
var dist embed.FS

// Manifest is dist/manifest.json, written by the generator.
type Manifest struct {
	Inputs   string `json:"inputs"` // SHA-256 of the sources the bundle was made from
	Script   string `json:"script"` // paths under dist, e.g. "assets/main-ABCD1234.js"
	Style    string `json:"style"`
	Portal   string `json:"portal"`    // the portal's script
	Console  string `json:"console"`   // the console's script
	AppStyle string `json:"app_style"` // the portal's and console's style, after Style
	Favicon  string `json:"favicon"`
	Licenses string `json:"licenses"`
	Packages []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		License string `json:"license"`
	} `json:"packages"`
}

// Embedded returns the manifest of the embedded bundle.
func Embedded() (Manifest, error) {
	var m Manifest
	b, err := dist.ReadFile("dist/manifest.json")
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("dist/manifest.json: %w", err)
	}
	return m, nil
}

// AssetPrefix is the path under which Handler serves the page's assets.
const AssetPrefix = "/assets/"

// Options configures Handler.
type Options struct {
	// ClientAddr returns the caller's address as the server established it
	// (the socket peer, or what trusted proxies forwarded). Required. An
	// invalid Addr means the server cannot tell (a Unix socket without a
	// proxy in front).
	ClientAddr func(*http.Request) netip.Addr

	// IPv4URL and IPv6URL are where the page asks for the visitor's
	// address of each family: endpoints reachable over that family only,
	// answering the address as plain text. Either a path on this origin
	// ("/ipv4", the default, and "/ipv6") or an absolute http(s) URL of a
	// host with only an A or only an AAAA record
	// ("https://ipv4.example.com/"); endpoints on another origin must send
	// Access-Control-Allow-Origin: *, as the server's /ipv4 and /ipv6 do.
	//
	// With the same-origin defaults the browser reaches both over the one
	// connection it chose for the page, so the other family shows as
	// unavailable even when the visitor has it: deployments that want both
	// families shown give each its own host.
	IPv4URL, IPv6URL string

	// Logger receives template failures; nil discards them.
	Logger *slog.Logger
}

// Handler serves the page at GET and HEAD / (to every request it gets: the
// caller decides with Wants which ones those are) and the page's assets
// under AssetPrefix. Other paths are 404 and other methods 405, in plain
// text, for use on its own; mounted in a router it only sees what the
// router sends it.
func Handler(opts Options) (http.Handler, error) {
	if opts.ClientAddr == nil {
		return nil, errors.New("web: Options.ClientAddr is required")
	}
	if opts.IPv4URL == "" {
		opts.IPv4URL = "/ipv4"
	}
	if opts.IPv6URL == "" {
		opts.IPv6URL = "/ipv6"
	}
	var origins []string
	for i, u := range []string{opts.IPv4URL, opts.IPv6URL} {
		o, err := endpointOrigin(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", [...]string{"Options.IPv4URL", "Options.IPv6URL"}[i], err)
		}
		if o != "" && !slices.Contains(origins, o) {
			origins = append(origins, o)
		}
	}
	m, err := Embedded()
	if err != nil {
		return nil, err
	}
	src, err := dist.ReadFile("dist/index.html")
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New("index.html").Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("web: the page template: %w", err)
	}
	assets, err := embeddedAssets()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{
		opts:     opts,
		manifest: m,
		tmpl:     tmpl,
		assets:   assets,
		log:      log,
		sources:  names.Sources(),
		csp: []string{strings.Join([]string{
			"default-src 'none'",
			"script-src 'self'",
			"style-src 'self'",
			"img-src 'self'",
			"connect-src " + strings.Join(append([]string{"'self'"}, origins...), " "),
			"base-uri 'none'",
			"form-action 'none'",
			"frame-ancestors 'none'",
		}, "; ")},
	}
	return h, nil
}

// endpointOrigin checks a family endpoint's URL and returns the CSP
// source that admits it when it is on another origin ("" for a path on
// this one).
func endpointOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("web: endpoint URL %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(u.Path, "/") && !strings.HasPrefix(raw, "//"):
		return "", nil
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil:
		if strings.HasPrefix(u.Host, "[") {
			// CSP host sources cannot name an IPv6 literal; only the
			// scheme can admit it.
			return u.Scheme + ":", nil
		}
		return u.Scheme + "://" + u.Host, nil
	}
	return "", fmt.Errorf("web: endpoint URL %q: want a path starting with / or an absolute http(s) URL", raw)
}

type handler struct {
	opts     Options
	manifest Manifest
	tmpl     *template.Template
	assets   map[string]*asset // by path under AssetPrefix
	log      *slog.Logger
	csp      []string
	sources  []names.Source // attributed in the footer
}

// Header values shared by every response; net/http only reads them.
var (
	hdrHTML      = []string{"text/html; charset=utf-8"}
	hdrNoStore   = []string{"no-store"}
	hdrVary      = []string{"Accept, User-Agent"}
	hdrNosniff   = []string{"nosniff"}
	hdrNoReferer = []string{"no-referrer"}
	hdrDeny      = []string{"DENY"}
	hdrAllow     = []string{"GET, HEAD"}
)

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case r.URL.Path == "/" && get:
		h.serveRoot(w, r)
	case strings.HasPrefix(r.URL.Path, AssetPrefix) && get:
		h.serveAsset(w, r)
	case r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, AssetPrefix):
		w.Header()["Allow"] = hdrAllow
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

// serveRoot is the page at GET / on the main host.
func (h *handler) serveRoot(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd["Vary"] = hdrVary
	hd["Cache-Control"] = hdrNoStore // the page shows the caller's own address
	h.servePage(w, r, h.opts.ClientAddr(r))
}

// pageData is what index.html is executed with.
type pageData struct {
	Script, Style, Favicon, Licenses string
	IPv4URL, IPv6URL                 string
	Addr                             string // the caller as the server sees it, for the no-script text
	Host                             string // for the "curl <host>" hint
	Sources                          []names.Source
}

func (h *handler) servePage(w http.ResponseWriter, r *http.Request, addr netip.Addr) {
	d := pageData{
		Script:   h.manifest.Script,
		Style:    h.manifest.Style,
		Favicon:  h.manifest.Favicon,
		Licenses: h.manifest.Licenses,
		IPv4URL:  h.opts.IPv4URL,
		IPv6URL:  h.opts.IPv6URL,
		Addr:     "unknown",
		Host:     r.Host,
		Sources:  h.sources,
	}
	if addr.IsValid() {
		d.Addr = addr.String()
	}
	if len(d.Host) > 255 || d.Host == "" {
		d.Host = "this-host"
	}
	var buf bytes.Buffer
	if err := h.tmpl.Execute(&buf, &d); err != nil {
		// Only a broken template gets here, and the tests execute it.
		h.log.LogAttrs(r.Context(), slog.LevelError, "rendering the page", slog.String("err", err.Error()))
		http.Error(w, "error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd["Content-Type"] = hdrHTML
	hd["Content-Security-Policy"] = h.csp
	hd["X-Content-Type-Options"] = hdrNosniff
	hd["Referrer-Policy"] = hdrNoReferer
	hd["X-Frame-Options"] = hdrDeny
	hd["Content-Length"] = []string{strconv.Itoa(buf.Len())}
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes()) // net/http drops it for HEAD
}

// asset is one embedded file, with its gzip form when that is smaller.
type asset struct {
	data, gz     []byte
	ctype        string
	etag, gzEtag string
	cache        string
}

// embeddedAssets are read and compressed once per process: every Handler
// serves the same immutable files.
var embeddedAssets = sync.OnceValues(loadAssets)

// loadAssets reads dist/assets. Bundles are named by their content
// hash and cached for a year; the other files (favicon, licenses) for a
// day.
func loadAssets() (map[string]*asset, error) {
	sub, err := fs.Sub(dist, "dist/assets")
	if err != nil {
		return nil, err
	}
	out := map[string]*asset{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := &asset{
			data:  b,
			ctype: contentType(p),
			etag:  `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`,
			cache: "public, max-age=86400",
		}
		if contentHashed(p) {
			a.cache = "public, max-age=31536000, immutable"
		}
		if gz := gzipBytes(b); len(gz) < len(b)*9/10 {
			a.gz = gz
			a.gzEtag = a.etag[:len(a.etag)-1] + `-gz"`
		}
		out[p] = a
		return nil
	})
	return out, err
}

// contentTypes are the types of the files the generator writes; fixed
// here rather than read from the system's MIME tables, which differ.
var contentTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".txt":  "text/plain; charset=utf-8",
	".json": "application/json",
	".png":  "image/png",
}

func contentType(name string) string {
	if t, ok := contentTypes[path.Ext(name)]; ok {
		return t
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// contentHashed reports whether an asset name carries esbuild's content
// hash ("main-VMUAEURJ.js").
func contentHashed(name string) bool {
	base := strings.TrimSuffix(name, path.Ext(name))
	i := strings.LastIndexByte(base, '-')
	return i > 0 && len(base)-i-1 == 8
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func (h *handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	serveAsset(w, r, h.assets, strings.TrimPrefix(r.URL.Path, AssetPrefix))
}

// serveAsset answers with the asset of that name (a path under
// dist/assets), or 404.
func serveAsset(w http.ResponseWriter, r *http.Request, assets map[string]*asset, name string) {
	a, ok := assets[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	hd := w.Header()
	hd["Content-Type"] = []string{a.ctype}
	hd["Cache-Control"] = []string{a.cache}
	hd["X-Content-Type-Options"] = hdrNosniff
	body, etag := a.data, a.etag
	if a.gz != nil {
		hd["Vary"] = []string{"Accept-Encoding"}
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			body, etag = a.gz, a.gzEtag
			hd["Content-Encoding"] = []string{"gzip"}
		}
	}
	hd["Etag"] = []string{etag}
	// ServeContent answers If-None-Match with 304 and Range requests.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding value allows gzip: named
// (or "*") without q=0.
func acceptsGzip(ae string) bool {
	for part := range strings.SplitSeq(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.TrimSpace(name)
		if !strings.EqualFold(name, "gzip") && name != "*" {
			continue
		}
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f == 0 {
					return false
				}
			}
		}
		return true
	}
	return false
}
