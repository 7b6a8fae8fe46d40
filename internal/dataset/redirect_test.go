package dataset_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ipatlas/ipatlas/internal/dataset"
	"github.com/ipatlas/ipatlas/internal/dataset/datasettest"
	"github.com/ipatlas/ipatlas/internal/outbound"
	"github.com/ipatlas/ipatlas/internal/privacy"
)

// publicRedirector redirects every request to the same path below to,
// and returns a client that counts it, and it alone, as a public start:
// the test's stand-in for a server on the Internet whose redirects lead
// to 127.0.0.1.
func publicRedirector(t *testing.T, to string) (*httptest.Server, *http.Client) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(s.Close)
	start := netip.MustParseAddrPort(s.Listener.Addr().String())
	return s, outbound.NewClient(outbound.Options{PublicStart: func(ap netip.AddrPort) bool { return ap == start }})
}

// A privacy list whose mirror redirects into a non-public network is not
// fetched from there: the list fails with the reason, and keeps what it
// had. The same mirror, started on the loopback (an operator's own),
// is followed.
func TestFetchPrivacyRefusesRedirectInside(t *testing.T) {
	u := newUpstreams(t)
	var inside atomic.Int64
	u.setHandler(named(t, privacy.TorList), func(w http.ResponseWriter, r *http.Request) {
		inside.Add(1)
		w.Write([]byte(torExits(1200)))
	})
	red, client := publicRedirector(t, u.URL)
	m := u.mirrors()
	m.Tor = red.URL + "/tor"
	opts := dataset.PrivacyOptions{DataDir: t.TempDir(), Mirrors: m, Lists: []string{privacy.TorList}, HTTPClient: client}
	rep, err := dataset.FetchPrivacy(t.Context(), opts)
	if err == nil || len(rep.Failed) != 1 || !errors.Is(rep.Failed[0].Err, outbound.ErrRedirect) || inside.Load() != 0 {
		t.Fatalf("followed a public mirror's redirect to 127.0.0.1: %d requests inside, failed %+v, %v", inside.Load(), rep.Failed, err)
	}
	if !strings.Contains(rep.Failed[0].Err.Error(), "loopback") {
		t.Errorf("the reason does not say why: %v", rep.Failed[0].Err)
	}

	opts.HTTPClient = nil
	if rep, err := dataset.FetchPrivacy(t.Context(), opts); err != nil || len(rep.Fetched) != 1 || inside.Load() != 1 {
		t.Errorf("an operator's mirror on the loopback: fetched %v, %d requests inside, %v", rep.Fetched, inside.Load(), err)
	}
}

// The datasets and the postal codes follow the same rule: a DB-IP mirror
// redirecting to 127.0.0.1 installs nothing.
func TestFetchRefusesRedirectInside(t *testing.T) {
	d := datasettest.NewDBIP(t)
	publishDBIP(t, d, "2026-03", march, "Mountain View")
	red, client := publicRedirector(t, d.URL)
	dir := t.TempDir()
	opts := dbipOptions(dir, d)
	opts.DBIPURL, opts.HTTPClient = red.URL, client
	m, err := dataset.Fetch(t.Context(), opts)
	if !errors.Is(err, outbound.ErrRedirect) || len(m.Packages) != 0 {
		t.Fatalf("installed %+v from a redirect to 127.0.0.1: %v", m.Packages, err)
	}
}
