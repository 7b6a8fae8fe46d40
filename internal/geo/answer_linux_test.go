//go:build linux

package geo_test

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/geo"
)

// BenchmarkAnswerVsEncode compares what a full answer's record costs the
// server, Lookup then encoding/json, with AppendJSON, in alternating chunks
// over the same addresses and in this thread's CPU time (see
// BenchmarkRecordVsRaw). It reports encode-ns/op, append-ns/op and their
// ratio.
func BenchmarkAnswerVsEncode(b *testing.B) {
	dir, addrs := fixtureDir(b)
	benchAnswer(b, dir, addrs)
}

func BenchmarkRealAnswerVsEncode(b *testing.B) {
	dir, addrs := realDir(b)
	benchAnswer(b, dir, addrs)
}

func benchAnswer(b *testing.B, dir string, addrs []netip.Addr) {
	e, err := geo.Open(dir, geo.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	out := make([]byte, 0, 1024)
	encode := func(a netip.Addr) {
		rec, err := e.Lookup(a, ipatlas.English)
		if err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		if err := enc.Encode(&rec); err != nil {
			b.Fatal(err)
		}
	}
	appendJSON := func(a netip.Addr) {
		if out, err = e.AppendJSON(out[:0], a, ipatlas.English); err != nil {
			b.Fatal(err)
		}
	}
	// Warm, as a running server is: every record composed and encoded once.
	for _, a := range addrs {
		encode(a)
		appendJSON(a)
	}
	t, n := interleaved(b, addrs, func(a netip.Addr, _ int) { encode(a) }, func(a netip.Addr, _ int) { appendJSON(a) })
	enc1, app := t[0], t[1]
	b.ReportMetric(float64(enc1.Nanoseconds())/float64(n), "encode-ns/op")
	b.ReportMetric(float64(app.Nanoseconds())/float64(n), "append-ns/op")
	b.ReportMetric(float64(app)/float64(enc1), "append/encode")
}
