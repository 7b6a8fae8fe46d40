package account

import (
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
	"golang.org/x/text/unicode/norm"
)

// Password rules, after NIST SP 800-63B (rev. 4) for a password that is
// the only factor: a length in Unicode code points after NFKC of at least
// MinPasswordLen and at most MaxPasswordLen, every character allowed, no
// composition rules (no "one digit, one symbol"), and a refusal of
// passwords that are known or guessable from the context.
const (
	MinPasswordLen = 15
	MaxPasswordLen = 128
	// MaxEmailLen is the longest email an owner may have (RFC 5321's
	// limit on a path).
	MaxEmailLen = 254
)

// argon2id parameters of new hashes: OWASP's recommended minimum for
// argon2id (19 MiB, 2 passes, 1 lane), a 16-byte salt, a 32-byte key.
// Verification reads the parameters from the stored hash, so raising them
// later keeps old hashes valid.
var defaultArgon = argonParams{memory: 19 * 1024, time: 2, threads: 1, saltLen: 16, keyLen: 32}

type argonParams struct {
	memory  uint32 // KiB
	time    uint32
	threads uint8
	saltLen int
	keyLen  int
}

// Bounds on parameters read from a stored hash, so that a corrupt or
// hostile row cannot make a sign-in allocate gigabytes.
const (
	maxArgonMemory  = 1 << 20 // 1 GiB
	maxArgonTime    = 20
	maxArgonThreads = 64
)

// HashPassword hashes a password with argon2id and a random salt, in PHC
// string form: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>, salt and key
// in unpadded standard base64. The password is NFKC-normalised first, so
// that the same characters typed on another keyboard match.
func HashPassword(password string) string {
	p := defaultArgon
	salt := make([]byte, p.saltLen)
	rand.Read(salt) // never fails since Go 1.24
	key := argon2.IDKey([]byte(norm.NFKC.String(password)), salt, p.time, p.memory, p.threads, uint32(p.keyLen))
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.memory, p.time, p.threads, b64.EncodeToString(salt), b64.EncodeToString(key))
}

// errBadHash is a stored hash this code cannot read.
var errBadHash = errors.New("unreadable password hash")

// CheckPassword reports whether password matches a hash made by
// HashPassword, with the parameters the hash names; keys are compared in
// constant time. An unreadable hash is an error, never a match.
func CheckPassword(hash, password string) (bool, error) {
	p, salt, want, err := parsePHC(hash)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(norm.NFKC.String(password)), salt, p.time, p.memory, p.threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

func parsePHC(hash string) (argonParams, []byte, []byte, error) {
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return argonParams{}, nil, nil, errBadHash
	}
	var p argonParams
	var seen [3]bool
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil {
			return argonParams{}, nil, nil, errBadHash
		}
		switch k {
		case "m":
			p.memory, seen[0] = uint32(n), true
		case "t":
			p.time, seen[1] = uint32(n), true
		case "p":
			if n > 255 {
				return argonParams{}, nil, nil, errBadHash
			}
			p.threads, seen[2] = uint8(n), true
		default:
			return argonParams{}, nil, nil, errBadHash
		}
	}
	if !seen[0] || !seen[1] || !seen[2] ||
		p.time < 1 || p.time > maxArgonTime || p.threads < 1 || p.threads > maxArgonThreads ||
		p.memory < 8*uint32(p.threads) || p.memory > maxArgonMemory {
		return argonParams{}, nil, nil, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(salt) < 8 || len(salt) > 64 || len(key) < 16 || len(key) > 64 {
		return argonParams{}, nil, nil, errBadHash
	}
	return p, salt, key, nil
}

// dummyHash is a hash of a password nobody knows, checked when a sign-in
// names an unknown email or an owner without a password, so that the
// answer takes as long as a real check.
var dummyHash = sync.OnceValue(func() string { return HashPassword(randomBase62(32)) })

//go:embed common_passwords.txt
var commonPasswordsText string

// commonPasswords is the blocklist, keyed as blockKey makes them.
var commonPasswords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, line := range strings.Split(commonPasswordsText, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			m[blockKey(line)] = true
		}
	}
	return m
})

// blockKey is how passwords are compared with the blocklist and with the
// context's words: NFKC, lower-cased, without white space.
func blockKey(s string) string {
	s = strings.ToLower(norm.NFKC.String(s))
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

// CheckPasswordRules refuses a password that breaks the length rules, is
// on the blocklist of common passwords, repeats or counts through too few
// characters, or is little more than the owner's email or the service's
// name. The refusal is a *WeakPasswordError whose Reason tells the person
// what to change. email may be empty when it is not known.
func CheckPasswordRules(password, email string) error {
	if !utf8.ValidString(password) {
		return &WeakPasswordError{Reason: "it is not valid text (UTF-8)"}
	}
	n := utf8.RuneCountInString(norm.NFKC.String(password))
	switch {
	case n < MinPasswordLen:
		return &WeakPasswordError{Reason: fmt.Sprintf("it has %d characters; use at least %d (a few words make a good one)", n, MinPasswordLen)}
	case n > MaxPasswordLen:
		return &WeakPasswordError{Reason: fmt.Sprintf("it has %d characters; use at most %d", n, MaxPasswordLen)}
	}
	key := blockKey(password)
	if commonPasswords()[key] {
		return &WeakPasswordError{Reason: "it is on the list of common passwords that attackers try first"}
	}
	if monotonous(key) {
		return &WeakPasswordError{Reason: "it repeats or counts through too few characters"}
	}
	// What remains once the context's words are taken out must be a
	// password of its own: at least 10 characters.
	rest := key
	words := []string{"ipatlas"}
	if email = blockKey(email); email != "" {
		words = append(words, email)
		if local, _, ok := strings.Cut(email, "@"); ok && utf8.RuneCountInString(local) >= 3 {
			words = append(words, local)
		}
	}
	for _, w := range words {
		rest = strings.ReplaceAll(rest, w, "")
	}
	if rest != key && utf8.RuneCountInString(rest) < 10 {
		return &WeakPasswordError{Reason: "it is mostly your email address or the service's name"}
	}
	return nil
}

// monotonous reports whether s uses fewer than 4 different characters
// ("abababab...") or steps through characters at one constant pace
// ("abcdefghijklmnop", "zyxw...").
func monotonous(s string) bool {
	rs := []rune(s)
	distinct := map[rune]bool{}
	for _, r := range rs {
		distinct[r] = true
	}
	if len(distinct) < 4 {
		return true
	}
	step := rs[1] - rs[0]
	for i := 2; i < len(rs); i++ {
		if rs[i]-rs[i-1] != step {
			return false
		}
	}
	return true
}

// NormalizeEmail trims and lower-cases an email and checks that it is a
// plain address ("name@example.com", no display name); anything else is
// ErrInvalid.
func NormalizeEmail(email string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(email))
	switch {
	case e == "":
		return "", Invalidf("the email is empty")
	case len(e) > MaxEmailLen:
		return "", Invalidf("the email is longer than %d bytes", MaxEmailLen)
	case !utf8.ValidString(e) || strings.ContainsFunc(e, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return "", Invalidf("%q is not an email address", email)
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		return "", Invalidf("%q is not an email address", email)
	}
	return e, nil
}

// randomSecret is a fresh 256-bit secret in base62 (43 characters) and
// its SHA-256, the only form a store keeps.
func randomSecret() (secret string, hash []byte) {
	secret = randomBase62(keySecretLen)
	return secret, HashSecret(secret)
}

// validSecret reports whether s has the shape randomSecret makes, so that
// a long or odd cookie or token is refused before hashing.
func validSecret(s string) bool {
	return len(s) == keySecretLen && isBase62(s)
}
