// Command build bundles the web page's front-end sources (web/ at the
// module root) into internal/web/dist with esbuild's Go API, so that the
// server embeds finished files and `go build` never needs npm.
//
// Run it after `npm ci` in web/ (which installs the npm packages the page
// imports) with `go generate ./internal/web` or `go run ./internal/web/build`.
// It writes:
//
//   - dist/index.html, account.html, console.html: web/*.html, the
//     html/templates of the lookup page, the owners' portal and the
//     operators' console;
//   - dist/assets/main-<hash>.js, account-<hash>.js, console-<hash>.js,
//     style-<hash>.css and app-<hash>.css: the bundles, named by content so
//     that they can be cached forever (the portal and the console load
//     style.css and app.css, the lookup page style.css alone);
//   - dist/assets/<static files>: web/static/* as they are (the favicon);
//   - dist/assets/licenses.txt: the licenses of the bundled npm packages;
//   - dist/manifest.json: the asset names, the bundled packages and the
//     hash of every input, which a test compares with the sources to catch a
//     committed bundle older than them.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Manifest is dist/manifest.json. The web package reads the asset names
// from it; the freshness test reads Inputs.
type Manifest struct {
	// Inputs is the SHA-256 of every file the bundle is made from (see
	// InputsHash): the page sources, the lock file and this generator.
	Inputs   string    `json:"inputs"`
	Script   string    `json:"script"` // path under dist, e.g. "assets/main-ABCD1234.js"
	Style    string    `json:"style"`
	Portal   string    `json:"portal"`    // the portal's script
	Console  string    `json:"console"`   // the console's script
	AppStyle string    `json:"app_style"` // the portal's and console's style, after Style
	Favicon  string    `json:"favicon"`
	Licenses string    `json:"licenses"`
	Packages []Package `json:"packages"` // npm packages with code in the bundle
}

// Package is one bundled npm package.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	License string `json:"license"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("build", flag.ContinueOnError)
	root := fl.String("root", "", "module root (default: found from the working directory)")
	out := fl.String("out", "", "output directory (default: <root>/internal/web/dist)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		r, err := ModuleRoot(wd)
		if err != nil {
			return err
		}
		*root = r
	}
	if *out == "" {
		*out = filepath.Join(*root, "internal", "web", "dist")
	}
	m, err := Bundle(*root, *out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "bundled web/ into %s: %s, %s (%d npm packages)\n", *out, m.Script, m.Style, len(m.Packages))
	return nil
}

// ModuleRoot walks up from dir to the directory holding go.mod.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
		d = parent
	}
}

// Where the inputs live, relative to the module root.
const (
	webDir       = "web"
	generatorDir = "internal/web/build"
)

// InputsHash is the SHA-256 of every input of the bundle: each file under
// web/ except node_modules (whose exact versions package-lock.json pins),
// and this generator's non-test Go files, since a change of build options
// changes the output as much as a change of source does. Paths and
// contents both count, in a stable order.
func InputsHash(root string) (string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, webDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	gen, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(generatorDir), "*.go"))
	if err != nil {
		return "", err
	}
	for _, p := range gen {
		if !strings.HasSuffix(p, "_test.go") {
			files = append(files, p)
		}
	}
	rel := make([]string, 0, len(files))
	for _, p := range files {
		r, err := filepath.Rel(root, p)
		if err != nil {
			return "", err
		}
		rel = append(rel, filepath.ToSlash(r))
	}
	slices.Sort(rel)
	h := sha256.New()
	for _, r := range rel {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(r)))
		if err != nil {
			return "", err
		}
		// Length-prefixed so that no two different file sets hash alike.
		fmt.Fprintf(h, "%s\x00%d\x00", r, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Bundle builds the page from root/web into out, replacing what out held.
func Bundle(root, out string) (*Manifest, error) {
	web := filepath.Join(root, webDir)
	if _, err := os.Stat(filepath.Join(web, "node_modules")); err != nil {
		return nil, fmt.Errorf("%s/node_modules is missing: run `npm ci` in %s first", webDir, web)
	}
	inputs, err := InputsHash(root)
	if err != nil {
		return nil, fmt.Errorf("hashing the inputs: %w", err)
	}
	assets := filepath.Join(out, "assets")
	res := api.Build(api.BuildOptions{
		AbsWorkingDir: web,
		EntryPoints:   []string{"src/main.js", "src/account.js", "src/console.js", "src/style.css", "src/app.css"},
		Bundle:        true,
		Outdir:        assets,
		EntryNames:    "[name]-[hash]",
		Format:        api.FormatIIFE,
		Platform:      api.PlatformBrowser,
		// Every browser of the last few years; the page uses fetch,
		// AbortController, async functions and CSS custom properties.
		Target:            api.ES2020,
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		Charset:           api.CharsetUTF8, // the Chinese labels stay readable and smaller than \u escapes
		LegalComments:     api.LegalCommentsEndOfFile,
		Metafile:          true,
		Write:             false,
		LogLevel:          api.LogLevelWarning,
	})
	if len(res.Errors) > 0 {
		msgs := api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage})
		return nil, fmt.Errorf("esbuild:\n%s", strings.Join(msgs, ""))
	}

	m := &Manifest{Inputs: inputs}
	files := map[string][]byte{} // path under out -> contents
	for _, f := range res.OutputFiles {
		rel, err := filepath.Rel(out, f.Path)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		files[rel] = f.Contents
		entry, _, _ := strings.Cut(path.Base(rel), "-")
		switch entry + path.Ext(rel) {
		case "main.js":
			m.Script = rel
		case "account.js":
			m.Portal = rel
		case "console.js":
			m.Console = rel
		case "style.css":
			m.Style = rel
		case "app.css":
			m.AppStyle = rel
		}
	}
	if m.Script == "" || m.Portal == "" || m.Console == "" || m.Style == "" || m.AppStyle == "" {
		return nil, errors.New("esbuild did not produce every script and style sheet")
	}

	for _, name := range []string{"index.html", "account.html", "console.html"} {
		page, err := os.ReadFile(filepath.Join(web, name))
		if err != nil {
			return nil, err
		}
		files[name] = page
	}

	static, err := os.ReadDir(filepath.Join(web, "static"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range static {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(web, "static", e.Name()))
		if err != nil {
			return nil, err
		}
		files["assets/"+e.Name()] = b
		if strings.HasPrefix(e.Name(), "favicon.") {
			m.Favicon = "assets/" + e.Name()
		}
	}

	pkgs, licenses, err := bundledPackages(web, res.Metafile)
	if err != nil {
		return nil, err
	}
	m.Packages = pkgs
	m.Licenses = "assets/licenses.txt"
	files[m.Licenses] = licenses

	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	files["manifest.json"] = append(mj, '\n')

	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	for rel, b := range files {
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// bundledPackages names the npm packages whose files esbuild put into the
// bundle (from its metafile) and concatenates their license texts: the
// ISC and MIT licenses ask for the notice to travel with the code.
func bundledPackages(web, metafile string) ([]Package, []byte, error) {
	var meta struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(metafile), &meta); err != nil {
		return nil, nil, fmt.Errorf("reading esbuild's metafile: %w", err)
	}
	seen := map[string]bool{}
	for in := range meta.Inputs {
		if name, ok := packageOf(in); ok {
			seen[name] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)

	var pkgs []Package
	var text bytes.Buffer
	text.WriteString("Third-party software bundled into the ipatlas web page.\n")
	text.WriteString("Map shapes: Natural Earth (public domain), via the world-atlas package.\n")
	for _, n := range names {
		dir := filepath.Join(web, "node_modules", filepath.FromSlash(n))
		var pj struct {
			Version string `json:"version"`
			License string `json:"license"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, &pj); err != nil {
			return nil, nil, fmt.Errorf("%s/package.json: %w", n, err)
		}
		pkgs = append(pkgs, Package{Name: n, Version: pj.Version, License: pj.License})
		fmt.Fprintf(&text, "\n%s\n%s %s (%s)\n%s\n", strings.Repeat("=", 72), n, pj.Version, pj.License, strings.Repeat("=", 72))
		lic, err := licenseText(dir)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", n, err)
		}
		text.Write(bytes.TrimSpace(lic))
		text.WriteByte('\n')
	}
	return pkgs, text.Bytes(), nil
}

// packageOf returns the npm package of a metafile input path such as
// "node_modules/d3-geo/src/path/index.js" or
// "node_modules/@scope/pkg/index.js".
func packageOf(input string) (string, bool) {
	i := strings.LastIndex(input, "node_modules/")
	if i < 0 {
		return "", false
	}
	parts := strings.SplitN(input[i+len("node_modules/"):], "/", 3)
	if strings.HasPrefix(parts[0], "@") && len(parts) >= 2 {
		return parts[0] + "/" + parts[1], true
	}
	return parts[0], parts[0] != ""
}

func licenseText(dir string) ([]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		n := strings.ToUpper(e.Name())
		if strings.HasPrefix(n, "LICENSE") || strings.HasPrefix(n, "LICENCE") {
			return os.ReadFile(filepath.Join(dir, e.Name()))
		}
	}
	return nil, errors.New("no LICENSE file")
}
