package serve

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestListenerURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		"0.0.0.0:8080":   "http://localhost:8080",
		"[::]:8080":      "http://localhost:8080",
		"[::1]:9090":     "http://[::1]:9090",
	} {
		a, err := net.ResolveTCPAddr("tcp", in)
		if err != nil {
			t.Fatal(err)
		}
		if got := listenerURL(a); got != want {
			t.Errorf("listenerURL(%s) = %q, want %q", in, got, want)
		}
	}
}

// off is no resolver; a setting rdns cannot use stops the start.
func TestNewResolver(t *testing.T) {
	if r, err := newResolver(&Config{Resolver: "off"}); r != nil || err != nil {
		t.Errorf("off: %v %v", r, err)
	}
	if r, err := newResolver(&Config{Resolver: "127.0.0.1:5353", ResolverTimeout: time.Second}); err != nil || r.Servers()[0] != "127.0.0.1:5353" {
		t.Errorf("HOST:PORT: %v", err)
	}
	if _, err := newResolver(&Config{Resolver: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "--resolver") {
		t.Errorf("port 0: %v", err)
	}
}
