package main

// Settings: the one config file that server and client commands read, the
// data dir and store of the commands that use them directly, and the
// resolved settings of the commands that talk to a service (lookup, myip,
// ping, usage).

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/client"
)

// settingsHelp states the one precedence rule and the config file format,
// in the program's and every client command's --help.
const settingsHelp = `Settings: each is taken from its flag, else its environment variable
(IPATLAS_ and the flag name in capitals, "-" as "_"), else the config file,
else its default. The config file is --config FILE, else $IPATLAS_CONFIG,
else ipatlas/config in the user config dir ($XDG_CONFIG_HOME or ~/.config;
see os.UserConfigDir), if it exists. It holds "key = value" lines whose keys
are the flag names ("-" or "_"), e.g. "listen = [::]:8080" or
"api_key = ipa_..."; # starts a comment line; values may be double-quoted;
repeatable settings may be repeated or comma-separated. One file may hold
server and client settings: each command takes its own.
`

// clientSettingsHelp documents the shared settings in every client
// command's --help.
const clientSettingsHelp = `Client settings (flag, environment variable, config file key):
  --url URL         query service (lookup, ping, usage)   IPATLAS_URL       url
                    default http://localhost:8080
  --ipv4-url URL    IPv4-only Get-my-IP endpoint          IPATLAS_IPV4_URL  ipv4_url
                    default {url}/ipv4
  --ipv6-url URL    IPv6-only Get-my-IP endpoint          IPATLAS_IPV6_URL  ipv6_url
                    default {url}/ipv6
  --test-url URL    auto-detection service                IPATLAS_TEST_URL  test_url
                    default {url}
  --key KEY         API key (prefer the variable or the   IPATLAS_API_KEY   api_key
                    file: a flag shows in the process list)
  --cache-ttl D     lookup cache lifetime, 24h to 48h,    IPATLAS_CACHE_TTL cache_ttl
                    or "off"; default 24h
  --config FILE     config file                           IPATLAS_CONFIG

Lookups are cached in ipatlas/lookups of the user cache dir
($XDG_CACHE_HOME or ~/.cache; see os.UserCacheDir).

` + settingsHelp

// clientConfigKeys are the config file's keys of the client commands.
var clientConfigKeys = []string{"url", "ipv4-url", "ipv6-url", "test-url", "api-key", "cache-ttl"}

// secretConfigKeys earn a warning when the file holding them is readable
// by others.
var secretConfigKeys = []string{"api-key", "admin-token", "maxmind-license-key"}

// configKeys are every key the config file may hold, and whether a key
// may be repeated.
func configKeys() map[string]bool {
	known := map[string]bool{}
	for _, k := range clientConfigKeys {
		known[k] = false
	}
	for _, k := range mgmtConfigKeys {
		known[k] = false
	}
	for _, s := range serveSettings {
		known[s.name] = s.repeat
	}
	return known
}

// configFile is a read config file.
type configFile struct {
	path   string
	values map[string][]string // by key, "-" spelling
}

// loadConfig reads the config file: flagPath (--config), else
// $IPATLAS_CONFIG, else ipatlas/config in os.UserConfigDir. Only the
// last may be missing.
func loadConfig(flagPath string, getenv func(string) string, stderr io.Writer) (configFile, error) {
	path, explicit := flagPath, true
	if path == "" {
		path = getenv("IPATLAS_CONFIG")
	}
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return configFile{values: map[string][]string{}}, nil
		}
		path, explicit = filepath.Join(dir, "ipatlas", "config"), false
	}
	values, err := readConfigFile(path, explicit, stderr)
	if err != nil {
		return configFile{}, usageError(err.Error())
	}
	return configFile{path: path, values: values}, nil
}

// value is a setting by the one precedence rule: the flag as given, else
// its environment variable, else the file, else def.
func (f configFile) value(getenv func(string) string, flagVal, name, def string) string {
	if flagVal != "" {
		return flagVal
	}
	if v := getenv(envName(name)); v != "" {
		return v
	}
	if v := f.values[name]; len(v) > 0 {
		return strings.Join(v, ",")
	}
	return def
}

// envName is a setting's environment variable: IPATLAS_ and its name in
// capitals, "-" as "_".
func envName(name string) string {
	return "IPATLAS_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// readConfigFile reads the config file format: one `key = value` per line,
// keys being the flag names without dashes in front ("-" or "_" inside);
// blank lines and lines starting with # are ignored; a value may be
// wrapped in double quotes; repeatable keys may appear on several lines or
// hold a comma-separated list. A missing file is no error unless it was
// named explicitly. A file holding a secret that others may read earns a
// warning.
func readConfigFile(path string, explicit bool, stderr io.Writer) (map[string][]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return map[string][]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	known := configKeys()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key = value", path, n)
		}
		key, val = strings.ReplaceAll(strings.TrimSpace(key), "_", "-"), strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			if val, err = strconv.Unquote(val); err != nil {
				return nil, fmt.Errorf("%s:%d: bad quoted value: %v", path, n, err)
			}
		}
		repeat, ok := known[key]
		if !ok {
			return nil, fmt.Errorf("%s:%d: unknown setting %q", path, n, key)
		}
		if repeat {
			out[key] = append(out[key], splitList(val)...)
			continue
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is set twice", path, n, key)
		}
		out[key] = []string{val}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if runtime.GOOS != "windows" {
		for _, k := range secretConfigKeys {
			if len(out[k]) == 0 || out[k][0] == "" {
				continue
			}
			if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
				fmt.Fprintf(stderr, "ipatlas: warning: %s holds a secret (%s) and is readable by others (chmod 600 it)\n", path, k)
			}
			break
		}
	}
	return out, nil
}

// defaultDataDir is where datasets live unless --data-dir, IPATLAS_DATA_DIR
// or the config file says otherwise: $XDG_DATA_HOME/ipatlas, else
// ~/.local/share/ipatlas, else ./ipatlas-data.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ipatlas")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "ipatlas")
	}
	return "ipatlas-data"
}

// localSettings are the config file, data dir and store of the commands
// that use them directly (db, lookup --local, accounts, keys, credits).
type localSettings struct {
	file    configFile
	dataDir string
	store   string // default: sqlite:DATA-DIR/ipatlas.db
}

// resolveLocal applies the one precedence rule to --data-dir and --store
// as given ("" when absent).
func resolveLocal(e env, configFlag, dataDirFlag, storeFlag string) (localSettings, error) {
	file, err := loadConfig(configFlag, e.getenv, e.stderr)
	if err != nil {
		return localSettings{}, err
	}
	dir := file.value(e.getenv, dataDirFlag, "data-dir", defaultDataDir(e.getenv))
	store := file.value(e.getenv, storeFlag, "store", "sqlite:"+filepath.Join(dir, "ipatlas.db"))
	return localSettings{file: file, dataDir: dir, store: store}, nil
}

// clientSettings is the resolved configuration of a client command.
type clientSettings struct {
	url, ipv4URL, ipv6URL, testURL string
	apiKey                         string
	cacheTTL                       time.Duration // 0: caching off
	cacheDir                       string        // "" when there is no cache dir
}

// clientFlags are the shared flags, as given.
type clientFlags struct {
	url, ipv4URL, ipv6URL, testURL, key, cacheTTL, config string
}

// clientFlagNames are the shared flags, documented in clientSettingsHelp
// rather than in each command's flag list.
var clientFlagNames = []string{"url", "ipv4-url", "ipv6-url", "test-url", "key", "cache-ttl", "config"}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	f := &clientFlags{}
	fs.StringVar(&f.url, "url", "", "query service `URL`")
	fs.StringVar(&f.ipv4URL, "ipv4-url", "", "IPv4-only Get-my-IP `URL`")
	fs.StringVar(&f.ipv6URL, "ipv6-url", "", "IPv6-only Get-my-IP `URL`")
	fs.StringVar(&f.testURL, "test-url", "", "auto-detection service `URL`")
	fs.StringVar(&f.key, "key", "", "API `key`")
	fs.StringVar(&f.cacheTTL, "cache-ttl", "", "lookup cache lifetime, 24h to 48h, or off")
	fs.StringVar(&f.config, "config", "", "config `file`")
	return f
}

// keyedClient is the client of a command that needs an API key (cmd names
// it in the error when none is set), with no answer cache.
func (f *clientFlags) keyedClient(e env, cmd string) (*client.Client, error) {
	c, _, err := f.keyed(e, cmd, true)
	return c, err
}

// keyed is the client of a command that needs an API key, and its
// settings. Without a key it stops before any request, which could only
// fail; a mistake in the other settings is reported first.
func (f *clientFlags) keyed(e env, cmd string, noCache bool) (*client.Client, clientSettings, error) {
	settings, err := f.resolve(e)
	if err != nil {
		return nil, clientSettings{}, err
	}
	c, err := settings.newClient(noCache)
	if err != nil {
		return nil, clientSettings{}, err
	}
	if settings.apiKey == "" {
		return nil, clientSettings{}, &exitError{code: exitAuth, err: errors.New(cmd + ": no API key: set IPATLAS_API_KEY, api_key in the config file, or --key")}
	}
	return c, settings, nil
}

// lookupClient is the client the lookup commands (cmd) ask through, and
// the disk cache of their answers; noCache asks the service every time.
// Like every metered request, theirs need an API key.
func (f *clientFlags) lookupClient(e env, cmd string, noCache bool) (*client.Client, diskCache, error) {
	c, settings, err := f.keyed(e, cmd, noCache)
	if err != nil {
		return nil, diskCache{}, err
	}
	cache := diskCache{dir: settings.cacheDir, ttl: settings.cacheTTL, now: time.Now}
	if noCache {
		cache.ttl = 0
	}
	return c, cache, nil
}

// resolve merges flags, environment, config file and defaults.
func (f *clientFlags) resolve(e env) (clientSettings, error) {
	file, err := loadConfig(f.config, e.getenv, e.stderr)
	if err != nil {
		return clientSettings{}, err
	}
	pick := func(flagVal, name string) string { return file.value(e.getenv, flagVal, name, "") }
	s := clientSettings{
		url:     pick(f.url, "url"),
		ipv4URL: pick(f.ipv4URL, "ipv4-url"),
		ipv6URL: pick(f.ipv6URL, "ipv6-url"),
		testURL: pick(f.testURL, "test-url"),
		apiKey:  pick(f.key, "api-key"),
	}
	ttl := pick(f.cacheTTL, "cache-ttl")
	switch strings.ToLower(ttl) {
	case "":
		s.cacheTTL = client.DefaultCacheTTL
	case "off", "0", "none", "false":
		s.cacheTTL = 0
	default:
		d, err := time.ParseDuration(ttl)
		if err != nil || d < client.MinCacheTTL || d > client.MaxCacheTTL {
			return clientSettings{}, usageError(fmt.Sprintf("cache TTL %q: want a duration from 24h to 48h, or off", ttl))
		}
		s.cacheTTL = d
	}
	if dir, err := os.UserCacheDir(); err == nil {
		s.cacheDir = filepath.Join(dir, "ipatlas", "lookups")
	}
	return s, nil
}

// newClient builds the Go client. The in-memory cache is on with the same
// lifetime as the disk cache, so one run never asks twice for the same
// address; --no-cache turns both off.
func (s clientSettings) newClient(noCache bool) (*client.Client, error) {
	cfg := client.Config{
		URL: s.url, IPv4URL: s.ipv4URL, IPv6URL: s.ipv6URL, TestURL: s.testURL,
		APIKey: s.apiKey, CacheTTL: s.cacheTTL, DisableCache: noCache || s.cacheTTL == 0,
		UserAgent: "ipatlas-cli",
		// A long list sends batch requests back to back and can meet the
		// key's burst limit: its 429 says to retry in a second and charged
		// nothing, so it is waited out (up to the client's 30 s). A spent
		// monthly quota says to retry next month and is returned at once.
		Retry: client.RetryPolicy{RateLimited: true},
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, usageError(err.Error())
	}
	return c, nil
}

// clientFlagsHelp prints a command's own flags; the shared ones are in
// clientSettingsHelp.
func clientFlagsHelp(w io.Writer, fs *flag.FlagSet) {
	printFlags(w, fs, clientFlagNames...)
}
