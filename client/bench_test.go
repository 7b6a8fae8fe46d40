package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

// BenchmarkLookupCacheHit is the cost of a repeated lookup: validation,
// the LRU and the copy of the result.
func BenchmarkLookupCacheHit(b *testing.B) {
	s, _ := serve(b, okQuery)
	c, err := client.New(client.Config{URL: s.URL})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := c.Lookup(ctx, "8.8.8.8", ipatlas.English); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Lookup(ctx, "8.8.8.8", ipatlas.English); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupRequest is a lookup that asks the server (a fixed answer
// on loopback), next to BenchmarkRawPost, the same exchange with bare
// net/http: the difference is the client's own cost.
func BenchmarkLookupRequest(b *testing.B) {
	s, _ := serve(b, okQuery)
	c, err := client.New(client.Config{URL: s.URL, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Lookup(ctx, "8.8.8.8", ipatlas.English); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRawPost(b *testing.B) {
	s, _ := serve(b, okQuery)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	body := []byte(`{"ip":"8.8.8.8","lang":"en"}`)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := hc.Post(s.URL+"/api/ip-query", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func BenchmarkCheckAddress(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.CheckAddress("2001:4860:4860::8888", ipatlas.English); err != nil {
			b.Fatal(err)
		}
	}
}
