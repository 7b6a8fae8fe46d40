package account

import (
	"crypto/rand"
	"crypto/sha256"
	"time"
)

// The shape of a secret: "ipa_" + 12-character ID + "_" + 43-character
// secret, all base62 so a key survives URLs, shells and double-click
// selection. 43 base62 characters carry 256 bits, the strength of 32
// random bytes.
const (
	keyTag       = "ipa_"
	KeyIDLen     = 12
	keySecretLen = 43
	keyMaxLen    = 256 // longer secrets are refused before hashing
	base62       = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// KeyPrefix is the visible part of a key with this ID, what listings show
// so a leaked key can be recognized.
func KeyPrefix(id string) string { return keyTag + id }

// HashSecret is the hash a store keeps for a secret. The whole secret is
// hashed, ID included, so a hash cannot be moved to another key.
func HashSecret(secret string) []byte {
	h := sumSecret(secret)
	return h[:]
}

// sumSecret is HashSecret's hash as an array, computed without allocating
// for a secret of at most keyMaxLen bytes (every request authenticates):
// the secret is copied to the stack, where converting it would copy it to
// the heap.
func sumSecret(secret string) [sha256.Size]byte {
	var buf [keyMaxLen]byte
	if len(secret) > len(buf) {
		return sha256.Sum256([]byte(secret))
	}
	return sha256.Sum256(buf[:copy(buf[:], secret)])
}

// ParseSecret returns the key ID a secret names, or false when the secret
// is not shaped like one of ours. It only checks the shape: whether the
// secret is right is for the hash comparison.
func ParseSecret(secret string) (id string, ok bool) {
	if len(secret) > keyMaxLen || len(secret) < len(keyTag)+KeyIDLen+1+keySecretLen {
		return "", false
	}
	if secret[:len(keyTag)] != keyTag {
		return "", false
	}
	rest := secret[len(keyTag):]
	id, tail := rest[:KeyIDLen], rest[KeyIDLen:]
	if tail[0] != '_' || !isBase62(id) || !isBase62(tail[1:]) {
		return "", false
	}
	return id, true
}

func isBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// GenerateKey makes a new key for an account: a random ID and secret from
// crypto/rand. The secret is in the result only; the Key holds its hash.
func GenerateKey(accountID int64, at time.Time) NewKey {
	id := randomBase62(KeyIDLen)
	return newSecretFor(Key{ID: id, AccountID: accountID, Prefix: KeyPrefix(id), CreatedAt: at})
}

// newSecretFor gives k a fresh secret, keeping its ID (rotation).
func newSecretFor(k Key) NewKey {
	secret := keyTag + k.ID + "_" + randomBase62(keySecretLen)
	k.Hash = HashSecret(secret)
	k.Prefix = KeyPrefix(k.ID)
	return NewKey{Key: k, Secret: secret}
}

// randomBase62 draws n uniform base62 characters. Bytes of 248 and above
// are thrown away (248 = 4*62) so that b%62 has no bias.
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	var buf [64]byte
	for len(out) < n {
		rand.Read(buf[:]) // never fails since Go 1.24; it crashes the program instead
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}
