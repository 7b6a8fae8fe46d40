package geoip2

import (
	"reflect"
	"strings"
	"testing"
)

// TestMMDBRefuses: what an MMDB cannot hold, or a member whose name the
// tags do not give, is an error naming the member, never a silent gap.
func TestMMDBRefuses(t *testing.T) {
	type (
		signed struct {
			N int `json:"n"`
		}
		nilPtr struct {
			P *Postal `json:"p"`
		}
		nilSlice struct {
			S []string `json:"s"`
		}
		untagged struct{ Name string }
		nameless struct {
			X string `json:",omitempty"`
		}
	)
	for _, c := range []struct {
		v    any
		want string
	}{
		{signed{N: 1}, "signed.n: no MMDB type for a int"},
		{nilPtr{}, "nilPtr.p: nil"},
		{nilSlice{}, "nilSlice.s: nil"},
		{untagged{Name: "x"}, "untagged.Name has no name"},
		{nameless{X: "x"}, "nameless.X has no name"},
	} {
		_, err := NewMMDBEncoder().mapOf(reflect.ValueOf(c.v), false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%T: %v, want %q", c.v, err, c.want)
		}
	}
	// Left out when tagged so, a nil is no error; unexported members are
	// not encoded, as encoding/json skips them.
	type fine struct {
		P       *Postal  `json:"p,omitempty"`
		S       []string `json:"s,omitempty"`
		private string
	}
	if m, err := NewMMDBEncoder().mapOf(reflect.ValueOf(fine{private: "x"}), false); err != nil || len(m) != 0 {
		t.Errorf("%v %v", m, err)
	}
}
