package geofeed

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas/internal/outbound"
)

// A feed whose server redirects into a non-public network is not fetched
// from there, and its copy in service stays.
func TestFetchRefusesRedirectInside(t *testing.T) {
	var inside atomic.Int64
	in := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside.Add(1)
		w.Write([]byte("8.8.8.0/24,DE,DE-BY,Nuremberg,\n"))
	}))
	defer in.Close()
	red := httptest.NewServer(http.RedirectHandler(in.URL+"/internal.csv", http.StatusFound))
	defer red.Close()
	start := netip.MustParseAddrPort(red.Listener.Addr().String())
	client := outbound.NewClient(outbound.Options{PublicStart: func(ap netip.AddrPort) bool { return ap == start }})
	dir := t.TempDir()
	s, err := ParseSource(red.URL + "/feed.csv")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Fetch(t.Context(), client, dir, s, time.Now())
	if !errors.Is(err, outbound.ErrRedirect) || c != nil || inside.Load() != 0 {
		t.Fatalf("followed a feed's redirect to 127.0.0.1: %d requests inside, copy %+v, %v", inside.Load(), c, err)
	}
	if cp, err := Load(dir, s); cp != nil || err != nil {
		t.Errorf("a copy was written: %+v %v", cp, err)
	}
}
