package main

// The configuration of the commands that talk to a service (lookup, myip,
// ping, usage), their exit codes, and the on-disk lookup cache.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"golang.org/x/term"
)

// clientSettingsHelp documents the shared settings in every client
// command's --help.
const clientSettingsHelp = `Settings, each from its flag, else its environment variable, else the
config file, else its default:
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
  --config FILE     config file                           IPATLAS_CLIENT_CONFIG
                    default $XDG_CONFIG_HOME/ipatlas/config (os.UserConfigDir)

The config file holds "key = value" lines with the keys above (e.g.
"api_key = ipa_..."); # starts a comment line; values may be double-quoted.
Lookups are cached in $XDG_CACHE_HOME/ipatlas/lookups (os.UserCacheDir).
`

// clientExitHelp documents the exit codes in every client command's --help.
const clientExitHelp = `Exit codes:
  0  success
  1  any other failure
  2  usage error (bad flags or arguments)
  3  invalid or non-public address (InvalidIP, PrivateIP, InvalidRequest)
  4  missing, invalid or revoked API key (InvalidAPIKey)
  5  monthly quota or credits used up (RateLimitExceeded, InsufficientCredits)
  6  service unreachable or unavailable, or no connectivity of the family asked for
`

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

// clientConfigKeys are the config file's keys.
var clientConfigKeys = []string{"url", "ipv4_url", "ipv6_url", "test_url", "api_key", "cache_ttl"}

// resolve merges flags, environment, config file and defaults.
func (f *clientFlags) resolve(e env) (clientSettings, error) {
	path, explicit := f.config, f.config != ""
	if path == "" {
		if path = e.getenv("IPATLAS_CLIENT_CONFIG"); path != "" {
			explicit = true
		}
	}
	if path == "" {
		if dir := userConfigDir(e.getenv); dir != "" {
			path = filepath.Join(dir, "ipatlas", "config")
		}
	}
	file := map[string]string{}
	if path != "" {
		var err error
		file, err = readClientConfig(path, explicit, e.stderr)
		if err != nil {
			return clientSettings{}, &exitError{exitUsage, err}
		}
	}
	pick := func(flagVal, envName, fileKey string) string {
		if flagVal != "" {
			return flagVal
		}
		if v := e.getenv(envName); v != "" {
			return v
		}
		return file[fileKey]
	}
	s := clientSettings{
		url:     pick(f.url, "IPATLAS_URL", "url"),
		ipv4URL: pick(f.ipv4URL, "IPATLAS_IPV4_URL", "ipv4_url"),
		ipv6URL: pick(f.ipv6URL, "IPATLAS_IPV6_URL", "ipv6_url"),
		testURL: pick(f.testURL, "IPATLAS_TEST_URL", "test_url"),
		apiKey:  pick(f.key, "IPATLAS_API_KEY", "api_key"),
	}
	ttl := pick(f.cacheTTL, "IPATLAS_CACHE_TTL", "cache_ttl")
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
	if dir := userCacheDir(e.getenv); dir != "" {
		s.cacheDir = filepath.Join(dir, "ipatlas", "lookups")
	}
	return s, nil
}

// readClientConfig reads a config file: "key = value" lines, # comments,
// optional double quotes. A missing file is no error unless it was named
// explicitly. A file holding an API key that others may read earns a
// warning.
func readClientConfig(path string, explicit bool, stderr io.Writer) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
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
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			if val, err = strconv.Unquote(val); err != nil {
				return nil, fmt.Errorf("%s:%d: bad quoted value: %v", path, n, err)
			}
		}
		known := false
		for _, k := range clientConfigKeys {
			known = known || k == key
		}
		if !known {
			return nil, fmt.Errorf("%s:%d: unknown key %q (known: %s)", path, n, key, strings.Join(clientConfigKeys, ", "))
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is set twice", path, n, key)
		}
		out[key] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if out["api_key"] != "" && runtime.GOOS != "windows" {
		if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(stderr, "ipatlas: warning: %s holds an API key and is readable by others (chmod 600 it)\n", path)
		}
	}
	return out, nil
}

// userConfigDir is os.UserConfigDir reading the environment through
// getenv, so tests can point it into a temporary directory.
func userConfigDir(getenv func(string) string) string {
	switch runtime.GOOS {
	case "windows":
		return getenv("AppData")
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, "Library", "Application Support")
		}
		return ""
	case "plan9":
		if h := getenv("home"); h != "" {
			return filepath.Join(h, "lib")
		}
		return ""
	}
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return d
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config")
	}
	return ""
}

// userCacheDir is os.UserCacheDir reading the environment through getenv.
func userCacheDir(getenv func(string) string) string {
	switch runtime.GOOS {
	case "windows":
		return getenv("LocalAppData")
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, "Library", "Caches")
		}
		return ""
	case "plan9":
		if h := getenv("home"); h != "" {
			return filepath.Join(h, "lib", "cache")
		}
		return ""
	}
	if d := getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return d
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".cache")
	}
	return ""
}

// newClient builds the Go client. The in-memory cache is on with the same
// lifetime as the disk cache, so one run never asks twice for the same
// address; --no-cache turns both off.
func (s clientSettings) newClient(noCache bool) (*client.Client, error) {
	cfg := client.Config{
		URL: s.url, IPv4URL: s.ipv4URL, IPv6URL: s.ipv6URL, TestURL: s.testURL,
		APIKey: s.apiKey, CacheTTL: s.cacheTTL, DisableCache: noCache || s.cacheTTL == 0,
		UserAgent: "ipatlas-cli",
	}
	c, err := client.New(cfg)
	if err != nil {
		return nil, usageError(err.Error())
	}
	return c, nil
}

// clientExit gives a client error its exit code.
func clientExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{clientExitCode(err), err}
}

func clientExitCode(err error) int {
	var e *ipatlas.Error
	if errors.As(err, &e) {
		switch e.Code {
		case ipatlas.CodeInvalidIP, ipatlas.CodePrivateIP, ipatlas.CodeInvalidRequest, ipatlas.CodeTooManyItems, ipatlas.CodePayloadTooLarge:
			return exitInput
		case ipatlas.CodeInvalidAPIKey:
			return exitAuth
		case ipatlas.CodeRateLimitExceeded, ipatlas.CodeInsufficientCredits:
			return exitQuota
		case ipatlas.CodeServiceUnavailable:
			return exitNetwork
		}
		return exitFailure
	}
	if errors.Is(err, client.ErrFamilyUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		return exitNetwork
	}
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ne) || errors.As(err, &ue) {
		return exitNetwork
	}
	return exitFailure
}

// parseClientArgs parses flags anywhere among the arguments
// ("ipatlas lookup 8.8.8.8 --lang zh"); "--" ends the flags. -h prints
// help to stdout and returns flag.ErrHelp.
func parseClientArgs(fs *flag.FlagSet, args []string, e env, help func(io.Writer)) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				help(e.stdout)
				return nil, err
			}
			help(e.stderr)
			return nil, usageError(err.Error())
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// clientFlagsHelp prints a command's own flags; the shared ones are in
// clientSettingsHelp.
func clientFlagsHelp(w io.Writer, fs *flag.FlagSet) {
	shared := map[string]bool{"url": true, "ipv4-url": true, "ipv6-url": true, "test-url": true, "key": true, "cache-ttl": true, "config": true}
	fs.VisitAll(func(f *flag.Flag) {
		if shared[f.Name] {
			return
		}
		arg, usage := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		name := dash + f.Name
		if arg != "" {
			name += " " + arg
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(w, "  %-16s %s\n", name, usage)
	})
}

func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// diskCache keeps lookups across runs: one JSON file per address and
// language, holding the result as the client returned it.
type diskCache struct {
	dir string
	ttl time.Duration
	now func() time.Time
}

type diskEntry struct {
	Lang   string              `json:"lang"`
	Result client.LookupResult `json:"result"`
}

func (d diskCache) path(addr string, lang ipatlas.Lang) string {
	// IPv6 text has colons, which some file systems refuse.
	return filepath.Join(d.dir, strings.ReplaceAll(addr, ":", "_")+"."+lang.String()+".json")
}

// key is the canonical address, or "" when ip is not one (the client will
// say why).
func (d diskCache) key(ip string) string {
	a, err := netaddr.Parse(ip)
	if err != nil {
		return ""
	}
	return a.String()
}

func (d diskCache) get(ip string, lang ipatlas.Lang) (client.LookupResult, bool) {
	addr := d.key(ip)
	if d.dir == "" || d.ttl == 0 || addr == "" {
		return client.LookupResult{}, false
	}
	p := d.path(addr, lang)
	b, err := os.ReadFile(p)
	if err != nil {
		return client.LookupResult{}, false
	}
	var ent diskEntry
	if json.Unmarshal(b, &ent) != nil || ent.Lang != lang.String() {
		os.Remove(p)
		return client.LookupResult{}, false
	}
	age := d.now().Sub(ent.Result.FetchedAt)
	if age < 0 || age >= d.ttl {
		os.Remove(p)
		return client.LookupResult{}, false
	}
	ent.Result.Cached = true
	return ent.Result, true
}

// put stores r; failures only cost a future request, so they are ignored.
func (d diskCache) put(ip string, lang ipatlas.Lang, r client.LookupResult) {
	if d.dir == "" || d.ttl == 0 {
		return
	}
	addr := d.key(ip)
	if addr == "" {
		return
	}
	b, err := json.Marshal(diskEntry{Lang: lang.String(), Result: r})
	if err != nil {
		return
	}
	if os.MkdirAll(d.dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(d.dir, ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), d.path(addr, lang)) != nil {
		os.Remove(f.Name())
	}
}

// prune removes expired entries, so the directory does not grow forever
// with addresses looked up once.
func (d diskCache) prune() {
	if d.dir == "" || d.ttl == 0 {
		return
	}
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		info, err := ent.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if d.now().Sub(info.ModTime()) > client.MaxCacheTTL+time.Hour {
			os.Remove(filepath.Join(d.dir, ent.Name()))
		}
	}
}
