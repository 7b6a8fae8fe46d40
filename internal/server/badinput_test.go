package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// padReader streams a JSON object that never ends ({"pad":"xxxx...) up to
// size bytes, counting what is read from it: the server must refuse it
// after reading a small part.
type padReader struct {
	size int64
	read atomic.Int64
}

const padPrefix = `{"pad":"`

func (p *padReader) Read(b []byte) (int, error) {
	off := p.read.Load()
	if off >= p.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), p.size-off))
	for i := range n {
		if pos := off + int64(i); pos < int64(len(padPrefix)) {
			b[i] = padPrefix[pos]
		} else {
			b[i] = 'x'
		}
	}
	p.read.Add(int64(n))
	return n, nil
}

// badCase is one request of the bad-input table.
type badCase struct {
	name   string
	method string // POST when empty
	path   string // /api/ip-query when empty
	body   string
	stream *padReader        // the body, instead of body
	length int64             // Content-Length to declare for stream; -1: none (as chunked)
	header map[string]string // "Content-Type": "" removes the default
	auth   []string          // Authorization values; nil: "Bearer <good key>"
	status int
	code   ipatlas.ErrorCode // "" when the answer is not an envelope
	anon   bool              // the key is not accepted (or not looked at): meta.isLoggedIn false
}

const noAuth = "\x00none" // an auth entry that means "no header at all"

// TestBadInput sends malformed, hostile and borderline requests through
// the real public handler (real SQLite store, real Service and Meter, the
// production default limits on) and checks that each gets its exact
// status and code in a JSON envelope with meta, never a 5xx, and that
// nothing at all was charged. Requests that need a real socket (chunked
// bodies, broken framing, oversized headers, a 100 MiB upload) are in
// TestBadInputOverSockets.
func TestBadInput(t *testing.T) {
	// The good key is in most cases: the clock moves a second per case so
	// that its burst (which every keyed request spends) refills.
	clk := newClock()
	e := newEnv(t, func(c *Config) {
		c.Now = clk.Now
		c.KeyRate, c.KeyBurst = DefaultKeyRate, DefaultKeyBurst
		c.AddrRate, c.AddrBurst = DefaultAddrRate, DefaultAddrBurst
		c.AuthFailures = DefaultAuthFailures
		c.AuthFailureWindow, c.AuthMaxBackoff = DefaultAuthFailureWindow, DefaultAuthMaxBackoff
	})
	ctx := context.Background()
	acct, k := e.customer(t, account.Pro, 0, 100)
	brokeAcct, broke := e.customer(t, account.Pro, 0, 0) // accepted addresses end at the credits: 402, no charge
	revokedAcct, revoked := e.customer(t, account.Pro, 0, 100)
	if _, err := e.svc.RevokeKey(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	rotatedAcct, rotated := e.customer(t, account.Pro, 0, 100)
	if _, err := e.svc.RotateKey(ctx, rotated.ID); err != nil {
		t.Fatal(err)
	}
	bearer := func(s string) []string { return []string{"Bearer " + s} }
	sep := strings.LastIndexByte(k.Secret, '_')
	wrongSecret := k.Secret[:sep+1] + strings.Repeat("A", len(k.Secret)-sep-1)

	const (
		bad     = http.StatusBadRequest
		unauth  = http.StatusUnauthorized
		private = `{"ip":"10.0.0.1"}` // a body that passes everything up to the address
	)
	inv, req400, prv := ipatlas.CodeInvalidIP, ipatlas.CodeInvalidRequest, ipatlas.CodePrivateIP
	keyErr := ipatlas.CodeInvalidAPIKey
	ip := func(s string) string { b, _ := json.Marshal(map[string]string{"ip": s}); return string(b) }
	long45 := map[string]string{
		"public":       "2001:4860:4860:0000:0000:ffff:255.255.255.255",
		"mapped":       "0000:0000:0000:0000:0000:ffff:192.168.100.200",
		"bad octet":    "2001:4860:4860:0000:0000:0000:255.255.255.256",
		"5-digit":      "2001:4860:4860:0000:0000:00000:255.255.255.25",
		"nine groups":  "2001:4860:4860:0000:0000:0000:0000:0000::8888",
		"leading zero": "0000:0000:0000:0000:0000:ffff:010.168.100.200",
	}
	for name, s := range long45 {
		if len(s) != 45 {
			t.Fatalf("the %s 45-character form has %d characters", name, len(s))
		}
	}
	exactly8K := `{"ip":"10.0.0.1","pad":"` + strings.Repeat("x", maxBodyBytes-len(`{"ip":"10.0.0.1","pad":""}`)) + `"}`
	if len(exactly8K) != maxBodyBytes {
		t.Fatalf("8 KiB body has %d bytes", len(exactly8K))
	}
	over8K := exactly8K[:len(exactly8K)-2] + `x"}`
	const hundredMiB = 100 << 20

	cases := []badCase{
		// Malformed and truncated JSON.
		{name: "truncated after colon", body: `{"ip":`, status: bad, code: req400},
		{name: "truncated string", body: `{"ip":"8.8.8.8`, status: bad, code: req400},
		{name: "unclosed object", body: `{"ip":"8.8.8.8"`, status: bad, code: req400},
		{name: "missing colon", body: `{"ip" "8.8.8.8"}`, status: bad, code: req400},
		{name: "unquoted key", body: `{ip:"8.8.8.8"}`, status: bad, code: req400},
		{name: "single quotes", body: `{'ip':'8.8.8.8'}`, status: bad, code: req400},
		{name: "trailing comma", body: `{"ip":"8.8.8.8",}`, status: bad, code: req400},
		{name: "extra brace", body: `{"ip":"8.8.8.8"}}`, status: bad, code: req400},
		{name: "two objects", body: `{"ip":"8.8.8.8"} {"ip":"1.1.1.1"}`, status: bad, code: req400},
		{name: "comment", body: `{"ip":"8.8.8.8" /* c */}`, status: bad, code: req400},
		{name: "byte order mark", body: "\xef\xbb\xbf" + private, status: bad, code: req400},
		{name: "empty body", body: "", status: bad, code: req400},
		{name: "whitespace body", body: " \r\n\t ", status: bad, code: req400},
		{name: "bare string", body: `"8.8.8.8"`, status: bad, code: req400},
		{name: "bare number", body: `8`, status: bad, code: req400},
		{name: "bare array", body: `["8.8.8.8"]`, status: bad, code: req400},
		{name: "bare null", body: `null`, status: bad, code: req400},
		{name: "bare true", body: `true`, status: bad, code: req400},
		{name: "deep nesting", body: `{"x":` + strings.Repeat("[", 3000) + strings.Repeat("]", 3000) + `,"ip":"10.0.0.1"}`, status: bad, code: prv},
		{name: "too deep nesting", body: `{"x":` + strings.Repeat("[", 4000) + `}`, status: bad, code: req400},

		// Wrong types.
		{name: "ip number", body: `{"ip":123}`, status: bad, code: req400},
		{name: "ip float", body: `{"ip":8.8}`, status: bad, code: req400},
		{name: "ip null", body: `{"ip":null}`, status: bad, code: req400},
		{name: "ip array", body: `{"ip":["8.8.8.8"]}`, status: bad, code: req400},
		{name: "ip object", body: `{"ip":{"v":"8.8.8.8"}}`, status: bad, code: req400},
		{name: "ip bool", body: `{"ip":true}`, status: bad, code: req400},
		{name: "lang number", body: `{"ip":"10.0.0.1","lang":1}`, status: bad, code: req400},
		{name: "lang array", body: `{"ip":"10.0.0.1","lang":["zh"]}`, status: bad, code: req400},
		{name: "lang null is the default", body: `{"ip":"10.0.0.1","lang":null}`, status: bad, code: prv},
		{name: "lang unknown", body: `{"ip":"10.0.0.1","lang":"xx-\u0000"}`, status: bad, code: req400},
		{name: "fields number", body: `{"ip":"10.0.0.1","fields":5}`, status: bad, code: req400},
		{name: "huge number", body: `{"ip":1e999999}`, status: bad, code: req400},

		// Duplicate keys.
		{name: "duplicate ip", body: `{"ip":"8.8.8.8","ip":"10.0.0.1"}`, status: bad, code: req400},
		{name: "duplicate ip other case", body: `{"ip":"8.8.8.8","IP":"10.0.0.1"}`, status: bad, code: req400},
		{name: "duplicate escaped key", body: `{"ip":"8.8.8.8","\u0069p":"10.0.0.1"}`, status: bad, code: req400},
		{name: "duplicate lang", body: `{"lang":"en","ip":"10.0.0.1","lang":"zh"}`, status: bad, code: req400},
		{name: "duplicate unknown key", body: `{"x":1,"ip":"10.0.0.1","x":2}`, status: bad, code: req400},
		{name: "duplicate kelvin-sign key", body: `{"ip":"10.0.0.1","lang":"en","\u212aey":1,"key":2}`, status: bad, code: req400},

		// Sizes.
		{name: "exactly 8 KiB", body: exactly8K, status: bad, code: prv},
		{name: "8 KiB + 1", body: over8K, status: http.StatusRequestEntityTooLarge, code: ipatlas.CodePayloadTooLarge},
		{name: "100 MiB declared", stream: &padReader{size: hundredMiB}, length: hundredMiB, status: http.StatusRequestEntityTooLarge, code: ipatlas.CodePayloadTooLarge},
		{name: "100 MiB undeclared", stream: &padReader{size: hundredMiB}, length: -1, status: http.StatusRequestEntityTooLarge, code: ipatlas.CodePayloadTooLarge},

		// Content-Type.
		{name: "text/plain", body: private, header: map[string]string{"Content-Type": "text/plain"}, status: http.StatusUnsupportedMediaType, code: ipatlas.CodeUnsupportedMediaType},
		{name: "form", body: "ip=8.8.8.8", header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: http.StatusUnsupportedMediaType, code: ipatlas.CodeUnsupportedMediaType},
		{name: "multipart", body: "--x\r\n\r\n" + private + "\r\n--x--", header: map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, status: http.StatusUnsupportedMediaType, code: ipatlas.CodeUnsupportedMediaType},
		{name: "text/json", body: private, header: map[string]string{"Content-Type": "text/json"}, status: http.StatusUnsupportedMediaType, code: ipatlas.CodeUnsupportedMediaType},
		{name: "two types", body: private, header: map[string]string{"Content-Type": "application/json, text/plain"}, status: http.StatusUnsupportedMediaType, code: ipatlas.CodeUnsupportedMediaType},
		{name: "garbage type", body: private, header: map[string]string{"Content-Type": ";;;"}, status: http.StatusUnsupportedMediaType, code: ipatlas.CodeUnsupportedMediaType},
		{name: "json charset utf-8", body: private, header: map[string]string{"Content-Type": "application/json; charset=utf-8"}, status: bad, code: prv},
		{name: "json upper case", body: private, header: map[string]string{"Content-Type": "application/JSON"}, status: bad, code: prv},
		{name: "json suffix", body: private, header: map[string]string{"Content-Type": "application/problem+json"}, status: bad, code: prv},
		{name: "no content type", body: private, header: map[string]string{"Content-Type": ""}, status: bad, code: prv},

		// NUL bytes and invalid UTF-8.
		{name: "raw NUL in string", body: "{\"ip\":\"8.8.8.8\x00\"}", status: bad, code: req400},
		{name: "raw NUL outside strings", body: "{\"ip\":\"10.0.0.1\"}\x00", status: bad, code: req400},
		{name: "escaped NUL in ip", body: `{"ip":"8.8.8.8\u0000"}`, status: bad, code: inv},
		{name: "invalid UTF-8 in ip", body: "{\"ip\":\"8.8.8.8\xff\"}", status: bad, code: inv},
		{name: "invalid UTF-8 in a key", body: "{\"\xff\xfe\":1,\"ip\":\"10.0.0.1\"}", status: bad, code: prv},
		{name: "lone surrogate escape", body: `{"ip":"\ud800"}`, status: bad, code: inv},

		// Addresses.
		{name: "zone", body: ip("fe80::1%eth0"), status: bad, code: inv},
		{name: "zone on a public address", body: ip("2001:4860:4860::8888%1"), status: bad, code: inv},
		{name: "leading zeros", body: ip("008.8.8.8"), status: bad, code: inv},
		{name: "octal-looking", body: ip("010.0.0.1"), status: bad, code: inv},
		{name: "hex octet", body: ip("0x8.8.8.8"), status: bad, code: inv},
		{name: "integer address", body: ip("134744072"), status: bad, code: inv},
		{name: "three octets", body: ip("8.8.8"), status: bad, code: inv},
		{name: "ipv4 port", body: ip("8.8.8.8:53"), status: bad, code: inv},
		{name: "ipv6 port", body: ip("[2001:4860:4860::8888]:443"), status: bad, code: inv},
		{name: "brackets", body: ip("[2001:4860:4860::8888]"), status: bad, code: inv},
		{name: "cidr", body: ip("8.8.8.0/24"), status: bad, code: inv},
		{name: "ipv6 cidr", body: ip("2001:4860::/32"), status: bad, code: inv},
		{name: "inner space", body: ip("8.8. 8.8"), status: bad, code: inv},
		{name: "no-break space", body: ip("\u00a08.8.8.8"), status: bad, code: inv},
		{name: "only whitespace", body: ip(" \t\n"), status: bad, code: inv},
		{name: "url", body: ip("http://8.8.8.8/"), status: bad, code: inv},
		{name: "65 characters", body: ip(strings.Repeat("1", 65)), status: bad, code: inv},
		{name: "45 chars public", body: ip(long45["public"]), auth: bearer(broke.Secret), status: http.StatusPaymentRequired, code: ipatlas.CodeInsufficientCredits},
		{name: "45 chars mapped private", body: ip(long45["mapped"]), status: bad, code: prv},
		{name: "45 chars bad octet", body: ip(long45["bad octet"]), status: bad, code: inv},
		{name: "45 chars 5-digit group", body: ip(long45["5-digit"]), status: bad, code: inv},
		{name: "45 chars nine groups", body: ip(long45["nine groups"]), status: bad, code: inv},
		{name: "45 chars leading zero", body: ip(long45["leading zero"]), status: bad, code: inv},
		{name: "mapped private", body: ip("::ffff:10.0.0.1"), status: bad, code: prv},
		{name: "mapped loopback hex", body: ip("::ffff:7f00:1"), status: bad, code: prv},
		{name: "compatible private", body: ip("::192.168.1.1"), status: bad, code: prv},
		{name: "nat64 private", body: ip("64:ff9b::10.0.0.1"), status: bad, code: prv},
		{name: "nat64 private hex", body: ip("64:ff9b::c0a8:101"), status: bad, code: prv},
		{name: "nat64 loopback", body: ip("64:ff9b::127.0.0.1"), status: bad, code: prv},
		{name: "nat64 public", body: ip("64:ff9b::8.8.8.8"), auth: bearer(broke.Secret), status: http.StatusPaymentRequired, code: ipatlas.CodeInsufficientCredits},
		{name: "unspecified", body: ip("::"), status: bad, code: prv},
		{name: "broadcast", body: ip("255.255.255.255"), status: bad, code: prv},

		// Authorization.
		{name: "no header", body: private, auth: []string{noAuth}, status: unauth, code: keyErr, anon: true},
		{name: "basic", body: private, auth: []string{"Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+k.Secret))}, status: unauth, code: keyErr, anon: true},
		{name: "bearer alone", body: private, auth: []string{"Bearer"}, status: unauth, code: keyErr, anon: true},
		{name: "bearer and a space", body: private, auth: []string{"Bearer "}, status: unauth, code: keyErr, anon: true},
		{name: "bearer and spaces", body: private, auth: []string{"Bearer     "}, status: unauth, code: keyErr, anon: true},
		{name: "bearer tab key", body: private, auth: []string{"Bearer\t" + k.Secret}, status: unauth, code: keyErr, anon: true},
		{name: "token scheme", body: private, auth: []string{"Token " + k.Secret}, status: unauth, code: keyErr, anon: true},
		{name: "bare key", body: private, auth: []string{k.Secret}, status: unauth, code: keyErr, anon: true},
		{name: "two headers", body: private, auth: []string{"Bearer " + k.Secret, "Bearer " + k.Secret}, status: unauth, code: keyErr, anon: true},
		{name: "two headers, second bad", body: private, auth: []string{"Bearer " + k.Secret, "Bearer x"}, status: unauth, code: keyErr, anon: true},
		{name: "valid prefix wrong secret", body: private, auth: bearer(wrongSecret), status: unauth, code: keyErr, anon: true},
		{name: "unknown id", body: private, auth: bearer("ipa_" + strings.Repeat("Z", account.KeyIDLen) + k.Secret[sep:]), status: unauth, code: keyErr, anon: true},
		{name: "truncated key", body: private, auth: bearer(k.Secret[:len(k.Secret)-1]), status: unauth, code: keyErr, anon: true},
		{name: "key and junk", body: private, auth: bearer(k.Secret + "!"), status: unauth, code: keyErr, anon: true},
		{name: "key with NUL", body: private, auth: bearer(k.Secret + "\x00"), status: unauth, code: keyErr, anon: true},
		{name: "300-character key", body: private, auth: bearer(k.Secret + strings.Repeat("a", 300)), status: unauth, code: keyErr, anon: true},
		{name: "revoked key", body: private, auth: bearer(revoked.Secret), status: unauth, code: keyErr, anon: true},
		{name: "rotated key's old secret", body: private, auth: bearer(rotated.Secret), status: unauth, code: keyErr, anon: true},
		// Decided: a key in the URL is accepted, for tools that cannot set
		// a header (auth.go's requestKey); in the body it is not.
		{name: "key in the query string", path: "/api/ip-query?key=" + k.Secret, body: private, auth: []string{noAuth}, status: bad, code: prv},
		{name: "token in the query string", path: "/api/ip-query?token=" + k.Secret, body: private, auth: []string{noAuth}, status: bad, code: prv},
		{name: "two keys, header and query", path: "/api/ip-query?key=" + k.Secret, body: private, auth: bearer(rotated.Secret), status: unauth, code: keyErr, anon: true},
		{name: "key in the body", body: `{"ip":"10.0.0.1","key":"` + k.Secret + `"}`, auth: []string{noAuth}, status: unauth, code: keyErr, anon: true},
		// Decided: the scheme is case-insensitive (RFC 9110 section 11.1)
		// and surrounding spaces are trimmed; the key is accepted.
		{name: "lowercase bearer", body: private, auth: []string{"bearer " + k.Secret}, status: bad, code: prv},
		{name: "upper-case bearer", body: private, auth: []string{"BEARER " + k.Secret}, status: bad, code: prv},
		{name: "bearer extra spaces", body: private, auth: []string{"Bearer   " + k.Secret + "  "}, status: bad, code: prv},

		// Unknown methods and paths.
		{name: "GET query", method: "GET", status: http.StatusMethodNotAllowed, code: ipatlas.CodeMethodNotAllowed, anon: true},
		{name: "PUT query", method: "PUT", body: private, status: http.StatusMethodNotAllowed, code: ipatlas.CodeMethodNotAllowed, anon: true},
		{name: "DELETE query", method: "DELETE", status: http.StatusMethodNotAllowed, code: ipatlas.CodeMethodNotAllowed, anon: true},
		{name: "PROPFIND query", method: "PROPFIND", status: http.StatusMethodNotAllowed, code: ipatlas.CodeMethodNotAllowed, anon: true},
		{name: "TRACE query", method: "TRACE", status: http.StatusMethodNotAllowed, code: ipatlas.CodeMethodNotAllowed, anon: true},
		{name: "OPTIONS without preflight", method: "OPTIONS", status: http.StatusMethodNotAllowed, code: ipatlas.CodeMethodNotAllowed, anon: true},
		{name: "POST myip", path: "/api/ip/myip", body: private, status: http.StatusMethodNotAllowed, code: ipatlas.CodeMethodNotAllowed, anon: true},
		{name: "unknown path", method: "GET", path: "/nope", status: http.StatusNotFound, code: ipatlas.CodeNotFound, anon: true},
		{name: "trailing slash", path: "/api/ip-query/", body: private, status: http.StatusNotFound, code: ipatlas.CodeNotFound, anon: true},
		{name: "upper-case path", path: "/API/IP-QUERY", body: private, status: http.StatusNotFound, code: ipatlas.CodeNotFound, anon: true},
		{name: "encoded NUL in path", path: "/api/ip-query%00", body: private, status: http.StatusNotFound, code: ipatlas.CodeNotFound, anon: true},
		{name: "admin path on the public API", path: "/admin/accounts", body: `{"name":"x","tier":"free"}`, status: http.StatusNotFound, code: ipatlas.CodeNotFound, anon: true},
		{name: "dotfile", method: "GET", path: "/.env", status: http.StatusNotFound, code: ipatlas.CodeNotFound, anon: true},
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.request(k.Secret)
			// One address per case, so that the limits (on, with their
			// defaults) see each case alone.
			r.RemoteAddr = fmt.Sprintf("198.51.%d.%d:1", 100+i/250, 1+i%250)
			clk.Advance(time.Second)
			w := httptest.NewRecorder()
			e.pub.ServeHTTP(w, r)
			checkDoc(t, publicSpec(t), r, w)
			checkBadAnswer(t, w.Code, w.Header(), w.Body.Bytes(), tc)
			if tc.stream != nil {
				// Whether the length was declared or not, the server read
				// at most the limit and a buffer's worth more.
				if n := tc.stream.read.Load(); n > 64<<10 {
					t.Errorf("the server read %d bytes of a %d-byte body", n, tc.stream.size)
				} else {
					t.Logf("read %d of %d bytes", n, tc.stream.size)
				}
			}
		})
	}

	// Nothing above was charged: every account's ledger is its grant, no
	// key has usage, and the balances are untouched.
	for _, a := range []struct {
		acct    account.Account
		key     account.NewKey
		credits int64
	}{{acct, k, 100}, {brokeAcct, broke, 0}, {revokedAcct, revoked, 100}, {rotatedAcct, rotated, 100}} {
		checkLedger(t, e, a.acct.ID, a.credits, 0)
		u, err := e.svc.Usage(ctx, a.key.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Used != 0 || u.Credits != a.credits {
			t.Errorf("account %d: used %d, credits %d after failures only", a.acct.ID, u.Used, u.Credits)
		}
	}
	if n := len(cases) + len(socketCases(t, "x", "x")); n < 60 {
		t.Errorf("only %d bad-input cases", n)
	} else {
		t.Logf("%d cases here, %d over sockets", len(cases), len(socketCases(t, "x", "x")))
	}
}

// request builds the case's request with key as the good key.
func (tc badCase) request(key string) *http.Request {
	method, path := tc.method, tc.path
	if method == "" {
		method = "POST"
	}
	if path == "" {
		path = "/api/ip-query"
	}
	var body io.Reader
	switch {
	case tc.stream != nil:
		body = tc.stream
	case tc.body != "" || method == "POST":
		body = strings.NewReader(tc.body)
	}
	r := httptest.NewRequest(method, "http://example.com"+path, body)
	if tc.stream != nil {
		r.ContentLength = tc.length
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	switch {
	case tc.auth == nil:
		r.Header.Set("Authorization", "Bearer "+key)
	case len(tc.auth) == 1 && tc.auth[0] == noAuth:
	default:
		r.Header["Authorization"] = tc.auth
	}
	for k, v := range tc.header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	return r
}

// checkBadAnswer asserts one answer of the table.
func checkBadAnswer(t *testing.T, status int, h http.Header, body []byte, tc badCase) {
	t.Helper()
	if status >= 500 && status != tc.status {
		t.Fatalf("a client's mistake got %d: %s", status, body)
	}
	if status != tc.status {
		t.Fatalf("status %d, want %d: %s", status, tc.status, body)
	}
	if tc.code == "" {
		return
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var env ipatlas.Envelope
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("not an envelope: %v: %s", err, body)
	}
	if env.Success || env.Code != tc.code || env.Error == "" {
		t.Errorf("envelope %+v, want code %s", env, tc.code)
	}
	if !strings.Contains(string(body), `"meta":{"isLoggedIn":`) {
		t.Errorf("no meta in %s", body)
	}
	if env.Meta.IsLoggedIn != !tc.anon || !env.Meta.IsAPIRequest {
		t.Errorf("meta %+v, want isLoggedIn %v", env.Meta, !tc.anon)
	}
	if env.Code == ipatlas.CodeInvalidAPIKey && h.Get("WWW-Authenticate") == "" {
		t.Errorf("401 without WWW-Authenticate")
	}
}

// socketCase is a request written byte for byte to a real connection.
type socketCase struct {
	name   string
	raw    string // the request, as sent
	status int
	code   ipatlas.ErrorCode // "" for net/http's own plain-text answers
}

// chunk frames s as one HTTP/1.1 chunk.
func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

func socketCases(t *testing.T, key, host string) []socketCase {
	head := func(extra string) string {
		return "POST /api/ip-query HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + key +
			"\r\nContent-Type: application/json\r\n" + extra + "\r\n"
	}
	body := `{"ip":"10.0.0.1"}`
	var oneByte strings.Builder
	for i := range len(body) {
		oneByte.WriteString(chunk(body[i : i+1]))
	}
	var big strings.Builder
	for range 20 {
		big.WriteString(chunk(strings.Repeat(" ", 1024)))
	}
	return []socketCase{
		{"chunked", head("Transfer-Encoding: chunked\r\n") + chunk(body) + "0\r\n\r\n", 400, ipatlas.CodePrivateIP},
		{"chunked one byte per chunk", head("Transfer-Encoding: chunked\r\n") + oneByte.String() + "0\r\n\r\n", 400, ipatlas.CodePrivateIP},
		{"chunked with extensions and trailer", head("Transfer-Encoding: chunked\r\n") + "11;x=y\r\n" + body + "\r\n0\r\nX-Trailer: 1\r\n\r\n", 400, ipatlas.CodePrivateIP},
		{"chunked over 8 KiB", head("Transfer-Encoding: chunked\r\n") + chunk(`{"ip":"10.0.0.1","pad":"`) + big.String() + "0\r\n\r\n", 413, ipatlas.CodePayloadTooLarge},
		{"chunk size not hex", head("Transfer-Encoding: chunked\r\n") + "zz\r\n" + body + "\r\n0\r\n\r\n", 400, ipatlas.CodeInvalidRequest},
		{"chunk longer than its size", head("Transfer-Encoding: chunked\r\n") + "2\r\n" + body + "\r\n0\r\n\r\n", 400, ipatlas.CodeInvalidRequest},
		// Transfer-Encoding with Content-Length: TestSmuggling (framing_test.go).
		// net/http answers a transfer coding it does not implement with
		// 501, as RFC 9112 section 6.1 says, before any handler runs: the
		// one 5xx of the table, and not the server's fault either.
		{"unknown transfer coding", head("Transfer-Encoding: gzip, chunked\r\n") + chunk(body) + "0\r\n\r\n", 501, ""},
		{"two Content-Lengths", head("Content-Length: 17\r\nContent-Length: 18\r\n") + body, 400, ""},
		{"negative Content-Length", head("Content-Length: -1\r\n") + body, 400, ""},
		{"NUL in a header value", head("X-Test: a\x00b\r\n") + body, 400, ""},
		{"header without colon", head("Broken header\r\n") + body, 400, ""},
		{"space before colon", head("Content-Length : 17\r\n") + body, 400, ""},
		{"bad method token", "G(T /api/ip/myip HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 400, ""},
		{"HTTP/2 preface on HTTP/1", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400, ""},
		{"oversized header", "GET /api/ip/myip HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", 431, ""},
		{"oversized Authorization", "POST /api/ip-query HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + strings.Repeat("k", 64<<10) + "\r\n\r\n", 431, ""},
	}
}

// TestBadInputOverSockets sends what only a real connection can carry to a
// real http.Server with the limits and the framing guard serve uses. The
// server answers each with a 4xx (ours as an envelope, net/http's framing
// errors in plain text), and a 100 MiB upload is refused after a small part.
func TestBadInputOverSockets(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Pro, 0, 100)
	srv := httptest.NewUnstartedServer(e.pub)
	srv.Config.MaxHeaderBytes = 16 << 10
	srv.Config.ReadHeaderTimeout = 5 * time.Second
	srv.Listener = GuardFraming(srv.Config, srv.Listener)
	srv.Start()
	defer srv.Close()
	host := srv.Listener.Addr().String()

	for _, tc := range socketCases(t, k.Secret, host) {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(c, tc.raw); err != nil {
				t.Fatal(err)
			}
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			checkBadAnswer(t, res.StatusCode, res.Header, b, badCase{status: tc.status, code: tc.code})
		})
	}

	t.Run("truncated body", func(t *testing.T) {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST /api/ip-query HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+k.Secret+
			"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ip\":\"10.0.0.1\"}")
		c.(*net.TCPConn).CloseWrite()
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		checkBadAnswer(t, res.StatusCode, res.Header, b, badCase{status: 400, code: ipatlas.CodeInvalidRequest})
	})

	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("100 MiB upload, length declared %v", declared), func(t *testing.T) {
			p := &padReader{size: 100 << 20}
			req, _ := http.NewRequest("POST", srv.URL+"/api/ip-query", io.NopCloser(p))
			if declared {
				req.ContentLength = p.size
			}
			req.Header.Set("Authorization", "Bearer "+k.Secret)
			req.Header.Set("Content-Type", "application/json")
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			checkBadAnswer(t, res.StatusCode, res.Header, b, badCase{status: 413, code: ipatlas.CodePayloadTooLarge})
			// The client stops sending when the server answers and closes;
			// what it sent by then is bounded by the socket buffers, not by
			// the body.
			n := p.read.Load()
			t.Logf("the client sent %d of %d bytes", n, p.size)
			if n > p.size/4 {
				t.Errorf("the client sent %d of %d bytes: the server read the body", n, p.size)
			}
		})
	}
	checkLedger(t, e, acct.ID, 100, 0)
}
