package account_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/account"
)

func TestGenerateKey(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		nk := account.GenerateKey(7, time.Unix(0, 0))
		s := nk.Secret
		if !strings.HasPrefix(s, "ipa_"+nk.ID+"_") || len(nk.ID) != 12 || len(s) != len("ipa_")+12+1+43 {
			t.Fatalf("secret %q for ID %q: want ipa_<12>_<43>", s, nk.ID)
		}
		if id, ok := account.ParseSecret(s); !ok || id != nk.ID {
			t.Fatalf("ParseSecret(a generated secret) = %q, %v", id, ok)
		}
		sum := sha256.Sum256([]byte(s))
		if !bytes.Equal(nk.Hash, sum[:]) || !bytes.Equal(account.HashSecret(s), sum[:]) {
			t.Fatal("the key's hash is not the SHA-256 of its secret")
		}
		if nk.Prefix != "ipa_"+nk.ID || nk.AccountID != 7 {
			t.Fatalf("key %+v", nk.Key)
		}
		if seen[nk.ID] || seen[s] {
			t.Fatalf("a generated ID or secret repeated after %d keys", len(seen)/2)
		}
		seen[nk.ID], seen[s] = true, true
	}
}

// TestGenerateKeyUsesAllSymbols is a coarse check of the encoder: over
// many secrets every base62 symbol shows up, and nothing else does.
func TestGenerateKeyUsesAllSymbols(t *testing.T) {
	counts := map[rune]int{}
	for range 200 {
		s := account.GenerateKey(1, time.Time{}).Secret
		for _, r := range s[len("ipa_"):] {
			counts[r]++
		}
	}
	for _, r := range "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" {
		if counts[r] == 0 {
			t.Errorf("symbol %q never drawn in 200 secrets", r)
		}
		delete(counts, r)
	}
	delete(counts, '_')
	if len(counts) != 0 {
		t.Errorf("symbols outside base62: %v", counts)
	}
}

func TestParseSecret(t *testing.T) {
	good := account.GenerateKey(1, time.Time{}).Secret
	id := good[4:16]
	tail := good[17:]
	for _, c := range []struct {
		in string
		ok bool
	}{
		{good, true},
		{good + "moreBase62", true}, // longer secrets from a future version
		{"", false},
		{"ipa_", false},
		{"ipb_" + good[4:], false},
		{"IPA_" + good[4:], false},
		{good[:len(good)-1], false},       // secret too short
		{"ipa_" + id + "-" + tail, false}, // wrong separator
		{"ipa_" + id[:11] + "_" + tail + "x", false},
		{"ipa_" + id + "_" + tail[:42] + "/", false},
		{"ipa_" + id + "_" + tail[:42] + "é", false},
		{" " + good, false},
		{good + "\n", false},
		{"ipa_" + id + "_" + strings.Repeat("a", 300), false},
	} {
		gotID, ok := account.ParseSecret(c.in)
		if ok != c.ok || ok && gotID != id {
			t.Errorf("ParseSecret(%q) = %q, %v; want ok=%v", c.in, gotID, ok, c.ok)
		}
	}
}

func FuzzParseSecret(f *testing.F) {
	f.Add(account.GenerateKey(1, time.Time{}).Secret)
	f.Add("ipa_")
	f.Add("ipa_AAAAAAAAAAAA_" + strings.Repeat("z", 43))
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := account.ParseSecret(s)
		if !ok {
			return
		}
		if len(id) != account.KeyIDLen || !strings.HasPrefix(s, account.KeyPrefix(id)+"_") {
			t.Fatalf("ParseSecret(%q) accepted with ID %q", s, id)
		}
	})
}

// TestHashSecretIsSHA256: the hash a store keeps is the SHA-256 of the whole
// secret, at every length (the short ones are hashed from a stack copy).
func TestHashSecretIsSHA256(t *testing.T) {
	for _, n := range []int{0, 1, 60, 255, 256, 257, 4096} { // 256: the longest secret looked up
		secret := strings.Repeat("k", n)
		want := sha256.Sum256([]byte(secret))
		if got := account.HashSecret(secret); !bytes.Equal(got, want[:]) {
			t.Errorf("length %d: %x, want %x", n, got, want)
		}
	}
}
