package serve

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/geofeed"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// Config is the service's configuration, resolved from its settings
// (the flags, environment and config file of `ipatlas serve`).
type Config struct {
	Listen         string
	TLSCert        string // "": the public listener speaks plain HTTP
	TLSKey         string
	HSTSMaxAge     time.Duration // with TLSCert; 0: no Strict-Transport-Security
	AdminListen    string
	AddrFile       string // "": none
	AdminToken     string // empty: read or create <data-dir>/admin-token
	DataDir        string
	Store          string
	TrustedProxies []netip.Prefix
	ForwardedBy    string // server.HeaderAuto, HeaderXForwardedFor or HeaderForwarded
	IPv4Host       string
	IPv6Host       string
	EchoIPRoot     bool // echoip's paths at the root too, not only under /echoip/
	QueryCost      int64
	Registry       string
	NoFetch        bool

	// Where datasets come from, and how often a running server checks for
	// a new one (0: never).
	Source            string
	UpdateInterval    time.Duration
	DBIPURL           string
	MaxMindURL        string
	MaxMindAccountID  string
	MaxMindLicenseKey string
	MaxMindEditions   []string
	PostalURL         string // GeoNames' postal codes, or dataset.PostalOff
	PostalFile        string // a copy of them for a machine that cannot reach GeoNames

	// Where the privacy lists come from, and how often the Tor exit list
	// and the others are fetched (0: never), whatever the dataset's
	// updates.
	PrivacyMirrors  privacy.Mirrors
	TorInterval     time.Duration
	PrivacyInterval time.Duration

	// Corrections: the local overrides file ("" for none), the published
	// feeds (the built-in list unless --geofeed says otherwise) and how
	// often they are fetched (0: at start only).
	Overrides       string
	Geofeeds        []geofeed.Source
	GeofeedInterval time.Duration

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	ShutdownTimeout   time.Duration
	MaxConns          int // per listener; 0: no cap

	// The store's connection (PostgreSQL; SQLite reads StoreMigrate only).
	StoreMigrate          bool
	StoreMaxConns         int32
	StoreTimeout          time.Duration
	StoreStatementTimeout time.Duration

	KeyCacheTTL   time.Duration
	MeterMaxDelay time.Duration
	MeterMaxBatch int

	// Abuse limits, passed to server.Config as they are: as with every
	// setting, 0 turns one off, and the flags' defaults are the
	// server.Default* values.
	KeyRate           float64
	KeyBurst          int
	KeyDNSRate        float64
	KeyDNSBurst       int
	AddrRate          float64
	AddrBurst         int
	AuthFailures      int
	AuthFailureWindow time.Duration
	AuthMaxBackoff    time.Duration
	MeRate            float64
	MeBurst           int
	LimitTableSize    int

	PageIPv4URL, PageIPv6URL string // where the web page asks for each family; "" is /ipv4, /ipv6
	PublicURL                string // the public listener as browsers reach it; "": links are bare paths

	// Browser sessions and the portal's sign-in limit per address (0
	// failures turns the limit off).
	OwnerSessions, OperatorSessions account.SessionPolicy
	SigninFailures                  int
	SigninWindow                    time.Duration

	LogLevel  slog.Level
	LogFormat string // "text" or "json"
	AccessLog bool

	// The DNS resolver of host names and domain queries: "HOST:PORT",
	// "" for the system's, or "off".
	Resolver        string
	ResolverTimeout time.Duration

	// MaxFeedShare is geo.Options.MaxFeedShare; 0 is geo's bound. No
	// setting sets it: tests on a small dataset raise it, since any feed
	// is a large share of a dataset that announces little.
	MaxFeedShare float64
}

// MinAdminToken is the shortest admin token serve accepts, in characters:
// 32 hex digits are 128 bits.
const MinAdminToken = 32

// minAdminTokenBits is the least randomness tokenBits must find in an
// admin token. A random token of the shortest length has 128 bits as hex,
// 106 as decimal digits, and scores hardly less, since a chance
// repetition or run saves only a few bits (in 100,000 random ones, none
// below 112 as hex, 93 as digits); a pattern (abab...,
// passwordpassword..., 0123...) scores 20 to 50.
const minAdminTokenBits = 80

// CheckAdminToken says what is wrong with an admin token, wherever it
// comes from (flag, environment, config file or DATA-DIR/admin-token), or
// nil. A short token is guessed; the admin API also slows guessing down
// per address, but length is what makes it hopeless. A long token made of
// a pattern (one character repeated, a word or pair repeated, a run such
// as 0123...) is among the first guesses all the same.
func CheckAdminToken(tok string) error {
	n := utf8.RuneCountInString(tok)
	if n < MinAdminToken {
		return fmt.Errorf("the admin token has %s; it must have at least %d", characters(n), MinAdminToken)
	}
	first, _ := utf8.DecodeRuneInString(tok)
	if !strings.ContainsFunc(tok, func(r rune) bool { return r != first }) {
		return errors.New("the admin token is one character repeated; it must be random")
	}
	if bits := tokenBits(tok); bits < minAdminTokenBits {
		return fmt.Errorf("the admin token is predictable: it repeats or runs through characters (about %.0f bits of randomness, where it needs %d); it must be random", bits, minAdminTokenBits)
	}
	return nil
}

// tokenBits estimates the randomness of a token in bits, the way a
// compressor would see it: read from left to right, a stretch of at least
// 3 characters that repeats earlier text (at any distance, overlapping:
// "aaaa", "abab", "passwordpassword") or runs up or down by one code
// point ("0123", "zyx") costs what saying where it is costs, 2*log2(n)
// bits; any other character costs log2 of the alphabet the token draws
// from (10 for digits, 16 for hex, 26 per case of letters, 33 other
// printable ASCII, 100 more for anything else).
func tokenBits(tok string) float64 {
	rs := []rune(tok)
	n := len(rs)
	var digit, lower, upper, hexOnly, punct, other bool
	hexOnly = true
	for _, r := range rs {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z':
			lower = true
			hexOnly = hexOnly && r <= 'f'
		case r >= 'A' && r <= 'Z':
			upper = true
			hexOnly = hexOnly && r <= 'F'
		case r > ' ' && r < 0x7f:
			punct, hexOnly = true, false
		default:
			other, hexOnly = true, false
		}
	}
	alphabet := 0
	if hexOnly && (lower != upper) {
		alphabet = 16
	} else {
		for _, c := range []struct {
			in   bool
			size int
		}{{digit, 10}, {lower, 26}, {upper, 26}, {punct, 33}, {other, 100}} {
			if c.in {
				alphabet += c.size
			}
		}
	}
	literal, pattern := math.Log2(float64(alphabet)), 2*math.Log2(float64(n))
	var bits float64
	for i := 0; i < n; {
		long := 0
		for j := range i { // a copy of earlier text, overlapping
			k := 0
			for i+k < n && rs[j+k] == rs[i+k] {
				k++
			}
			long = max(long, k)
		}
		if i > 0 { // a run up or down from the character before
			for _, step := range []rune{1, -1} {
				k := 0
				for i+k < n && rs[i+k] == rs[i+k-1]+step {
					k++
				}
				long = max(long, k)
			}
		}
		if long >= 3 {
			bits += pattern
			i += long
			continue
		}
		bits += literal
		i++
	}
	return bits
}

// FetchOptions is what the first run's fetch and the scheduled updates
// fetch.
func (c *Config) FetchOptions() dataset.FetchOptions {
	return dataset.FetchOptions{
		DataDir:           c.DataDir,
		Source:            c.Source,
		Registry:          c.Registry,
		DBIPURL:           c.DBIPURL,
		MaxMindURL:        c.MaxMindURL,
		MaxMindAccountID:  c.MaxMindAccountID,
		MaxMindLicenseKey: c.MaxMindLicenseKey,
		MaxMindEditions:   c.MaxMindEditions,
		PostalURL:         c.PostalURL,
		PostalFile:        c.PostalFile,
	}
}

// PrivacyOptions is what the scheduled updates of the privacy lists
// fetch.
func (c *Config) PrivacyOptions() dataset.PrivacyOptions {
	return dataset.PrivacyOptions{DataDir: c.DataDir, Mirrors: c.PrivacyMirrors}
}

// characters is n characters, in words.
func characters(n int) string {
	if n == 1 {
		return "1 character"
	}
	return fmt.Sprintf("%d characters", n)
}
