// Command thirdparty writes THIRD_PARTY.md: every module linked into the
// ipatlas binary, its version and its licence as licensecheck classifies
// the module's licence file, and refuses a module whose licence is not
// one the project may ship under Apache-2.0.
//
//	go run ./internal/thirdparty            # rewrites THIRD_PARTY.md
//	go run ./internal/thirdparty -out FILE  # writes elsewhere
//
// It asks the go command which modules the binary's packages come from
// (go list -deps), so a module used only by tests, generators or the load
// harness is not listed: it is not shipped.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/licensecheck"
)

// allowed are the licences a dependency of an Apache-2.0 program may have:
// the permissive ones, MPL-2.0 (its copyleft is per file and the files are
// unchanged), and ODbL-1.0 for the time zone polygons, a database whose
// attribution the data table carries.
var allowed = map[string]bool{
	"Apache-2.0":   true,
	"MIT":          true,
	"BSD-2-Clause": true,
	"BSD-3-Clause": true,
	"ISC":          true,
	"MPL-2.0":      true,
	"ODbL-1.0":     true,
}

// binary is the package whose dependencies are shipped.
const binary = "./cmd/ipatlas"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "thirdparty:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("thirdparty", flag.ContinueOnError)
	out := fs.String("out", "THIRD_PARTY.md", "the file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	mods, err := shipped(binary)
	if err != nil {
		return err
	}
	b, err := render(mods)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d modules\n", *out, len(mods))
	return nil
}

// module is one dependency with the licence found in its root.
type module struct {
	Path, Version, Dir string
	Licence            string // SPDX identifiers, " AND " between several
	File               string // the licence file's name
}

// shipped lists the modules whose packages pkg links, but the main module.
func shipped(pkg string) ([]module, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=Module", pkg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, stderr.String())
	}
	seen := map[string]bool{}
	var mods []module
	dec := json.NewDecoder(bytes.NewReader(outb))
	for {
		var p struct {
			Module *struct {
				Path, Version, Dir string
				Main               bool
				Replace            *struct{ Path, Version, Dir string }
			}
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		m := p.Module
		if m == nil || m.Main || seen[m.Path] {
			continue
		}
		seen[m.Path] = true
		mod := module{Path: m.Path, Version: m.Version, Dir: m.Dir}
		if m.Replace != nil {
			mod.Version, mod.Dir = m.Replace.Version, m.Replace.Dir
		}
		if err := classify(&mod); err != nil {
			return nil, err
		}
		mods = append(mods, mod)
	}
	slices.SortFunc(mods, func(a, b module) int { return strings.Compare(a.Path, b.Path) })
	return mods, nil
}

// classify finds the module's licence file and names its licence, or
// says why it cannot.
func classify(m *module) error {
	ents, err := os.ReadDir(m.Dir)
	if err != nil {
		return fmt.Errorf("%s: %v", m.Path, err)
	}
	for _, e := range ents {
		up := strings.ToUpper(e.Name())
		if e.IsDir() || !(strings.HasPrefix(up, "LICENSE") || strings.HasPrefix(up, "LICENCE") || strings.HasPrefix(up, "COPYING")) {
			continue
		}
		text, err := os.ReadFile(filepath.Join(m.Dir, e.Name()))
		if err != nil {
			return fmt.Errorf("%s: %v", m.Path, err)
		}
		cov := licensecheck.Scan(text)
		var ids []string
		for _, match := range cov.Match {
			if !slices.Contains(ids, match.ID) {
				ids = append(ids, match.ID)
			}
		}
		if len(ids) == 0 || cov.Percent < 75 {
			return fmt.Errorf("%s: %s is not a licence licensecheck knows (%.0f%% matched %v)", m.Path, e.Name(), cov.Percent, ids)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if !allowed[id] {
				return fmt.Errorf("%s: licence %s is not one an Apache-2.0 program may ship (allowed: %s)", m.Path, id, strings.Join(allowedList(), ", "))
			}
		}
		m.Licence, m.File = strings.Join(ids, " AND "), e.Name()
		return nil
	}
	return fmt.Errorf("%s: no licence file in %s", m.Path, m.Dir)
}

func allowedList() []string {
	var l []string
	for id := range allowed {
		l = append(l, id)
	}
	slices.Sort(l)
	return l
}

func render(mods []module) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`# Third-party code in the ipatlas binary

ipatlas is licensed under Apache-2.0 (see LICENSE). The binary links the
modules below, each under its own licence, whose text is in the module's
licence file. The data the service answers from has its own licences: see
"Data and attribution" in the README and ` + "`ipatlas db info`" + `.

Generated by ` + "`go run ./internal/thirdparty`" + ` from the modules that
` + "`go list -deps ./cmd/ipatlas`" + ` names; a test keeps it current and refuses a
licence an Apache-2.0 program may not ship.

| module | version | licence | file |
|---|---|---|---|
`)
	for _, m := range mods {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", m.Path, m.Version, m.Licence, m.File)
	}
	return b.Bytes(), nil
}
