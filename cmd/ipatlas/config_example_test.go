package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configExample is the example config file of the repository.
const configExample = "../../docs/ipatlas.conf.example"

// exampleSetting is a setting line of the example: "#key = value", the
// key commented out at its default or at an example value.
var exampleSetting = regexp.MustCompile(`^#([a-z0-9_]+) = ?(.*)$`)

// The example config file holds every key the config file may hold, each
// once, commented out: as shipped it changes nothing. Uncommented all
// together it is a valid config for serve and for the client commands,
// and every setting that has a default is shown at it.
func TestConfigExample(t *testing.T) {
	raw, err := os.ReadFile(configExample)
	if err != nil {
		t.Fatal(err)
	}
	var uncommented strings.Builder
	values := map[string]string{} // by key, "-" spelling
	for n, line := range strings.Split(string(raw), "\n") {
		m := exampleSetting.FindStringSubmatch(line)
		if m == nil {
			if line != "" && !strings.HasPrefix(line, "#") {
				t.Errorf("%s:%d: %q is neither a comment nor a commented-out setting", configExample, n+1, line)
			}
			if strings.HasPrefix(line, "#") && len(line) > 1 && !strings.HasPrefix(line, "# ") && !strings.HasPrefix(line, "##") {
				t.Errorf("%s:%d: %q: write a setting as \"#key = value\", a comment as \"# text\"", configExample, n+1, line)
			}
			continue
		}
		key := strings.ReplaceAll(m[1], "_", "-")
		if _, dup := values[key]; dup {
			t.Errorf("%s:%d: %s appears twice", configExample, n+1, m[1])
		}
		values[key] = m[2]
		uncommented.WriteString(m[1] + " = " + m[2] + "\n")
	}

	var missing []string
	for k := range configKeys() {
		if _, ok := values[k]; !ok {
			missing = append(missing, strings.ReplaceAll(k, "-", "_"))
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%s lacks %s: add each, commented out at its default, with a comment saying what it does", configExample, strings.Join(missing, ", "))
	}

	getenv := mapEnv(map[string]string{"XDG_DATA_HOME": "/xdg"})
	defaults, err := parseServeConfig(nil, testEnv(getenv))
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := parseServeConfig([]string{"--config", configExample}, testEnv(getenv))
	if err != nil {
		t.Fatalf("serve --config %s: %v", configExample, err)
	}
	if !reflect.DeepEqual(shipped, defaults) {
		t.Errorf("the example as shipped changes serve's settings:\n%+v\nwant the defaults:\n%+v", shipped, defaults)
	}

	all := filepath.Join(t.TempDir(), "ipatlas.conf")
	if err := os.WriteFile(all, []byte(uncommented.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := parseServeConfig([]string{"--config", all}, testEnv(getenv)); err != nil {
		t.Errorf("serve with every setting of the example uncommented: %v", err)
	}
	cf := &clientFlags{config: all}
	if _, err := cf.resolve(testEnv(getenv)); err != nil {
		t.Errorf("a client command with every setting of the example uncommented: %v", err)
	}

	// A setting shown at a value other than its default would mislead:
	// both are applied, and must give the same configuration. The data
	// dir, the store and the feeds have descriptive defaults, shown at
	// example values.
	for _, s := range serveSettings {
		v, ok := values[s.name]
		if !ok || s.def == "" || s.name == "data-dir" || s.name == "store" || s.name == "geofeed" {
			continue
		}
		var fromDef, fromExample serveConfig
		if err := s.apply(&fromDef, splitValue(s, s.def)); err != nil {
			t.Fatalf("%s: its default %q: %v", s.name, s.def, err)
		}
		if err := s.apply(&fromExample, splitValue(s, v)); err != nil {
			t.Errorf("%s = %s: %v", s.name, v, err)
			continue
		}
		if !reflect.DeepEqual(fromDef, fromExample) {
			t.Errorf("%s is shown as %q; its default is %q", strings.ReplaceAll(s.name, "-", "_"), v, s.def)
		}
	}
}

// splitValue is a config file's value as a setting's apply takes it.
func splitValue(s setting, v string) []string {
	if s.repeat {
		return splitList(v)
	}
	return []string{v}
}
