package client

import (
	"encoding/json"
	"net/netip"
	"testing"
)

// TestRecordRouteAndPrivacy: the record carries route and privacy as the
// server sends them; absent, they are unknown (no privacy object, the zero
// route) and Has says so.
func TestRecordRouteAndPrivacy(t *testing.T) {
	var r LookupResult
	raw := `{"ip":"8.8.4.4","route":"8.8.4.0/24","privacy":{"hosting":true,"vpn":false,"tor":true,"relay":false,"service":"Google"}}`
	if err := r.setData(json.RawMessage(raw)); err != nil {
		t.Fatal(err)
	}
	p := r.Record.Privacy
	if r.Record.Route != netip.MustParsePrefix("8.8.4.0/24") || p == nil || !p.Hosting || p.VPN || p.Tor == nil || !*p.Tor ||
		p.Service != "Google" || !r.Has("route") || !r.Has("privacy") {
		t.Errorf("%+v %+v", r.Record, p)
	}
	if err := r.setData(json.RawMessage(`{"ip":"8.8.4.4","privacy":{"hosting":false,"vpn":false,"relay":false,"service":""}}`)); err != nil {
		t.Fatal(err)
	}
	if r.Record.Route.IsValid() || r.Has("route") || r.Record.Privacy == nil || r.Record.Privacy.Tor != nil {
		t.Errorf("tor unknown, no route: %+v %+v", r.Record, r.Record.Privacy)
	}
	if err := r.setData(json.RawMessage(`{"ip":"8.8.4.4"}`)); err != nil {
		t.Fatal(err)
	}
	if r.Record.Privacy != nil || r.Has("privacy") {
		t.Errorf("privacy unknown: %+v", r.Record)
	}
}

// TestRecordHostname: the host name fields are read when sent; an empty
// host name that was sent is present, an absent one is not.
func TestRecordHostname(t *testing.T) {
	var r LookupResult
	if err := r.setData(json.RawMessage(`{"ip":"66.249.66.1","hostname":"crawl-66-249-66-1.googlebot.com","hostname_confirmed":true}`)); err != nil {
		t.Fatal(err)
	}
	if c := r.Record.HostnameConfirmed; r.Record.Hostname != "crawl-66-249-66-1.googlebot.com" || c == nil || !*c || !r.Has("hostname") || !r.Has("hostname_confirmed") {
		t.Errorf("%+v", r.Record)
	}
	if err := r.setData(json.RawMessage(`{"ip":"66.249.66.1","hostname":""}`)); err != nil {
		t.Fatal(err)
	}
	if r.Record.Hostname != "" || r.Record.HostnameConfirmed != nil || !r.Has("hostname") || r.Has("hostname_confirmed") || r.Has("city") {
		t.Errorf("no name: %+v", r.Record)
	}
}
