package e2e_test

// Examples of package client. They run against a real ipatlas server
// started for the tests (exampleServer, in server_test.go) over a small
// generated dataset; point Config.URL at your own service and use your own
// key instead.

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

func Example() {
	c, err := client.New(client.Config{
		URL:    exampleServer(), // e.g. "https://ipatlas.example.net"
		APIKey: exampleKey(100), // e.g. os.Getenv("IPATLAS_API_KEY")
	})
	if err != nil {
		log.Fatal(err)
	}
	rec, meta, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.City, rec.Province, rec.Country, rec.ASN, rec.TimeZone)
	fmt.Println("credits left:", meta.CurrentCredits)
	// Output:
	// Mountain View California United States AS15169 America/Los_Angeles
	// credits left: 99
}

func Example_lookupChinese() {
	c, err := client.New(client.Config{URL: exampleServer(), APIKey: exampleKey(10)})
	if err != nil {
		log.Fatal(err)
	}
	rec, _, err := c.Lookup(context.Background(), "2a01:4f8:c0c:1234::1", ipatlas.Chinese)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.IP, rec.Continent, rec.Country, rec.Currency, rec.ZipCode)
	// Output: 2a01:4f8:c0c:1234::1 欧洲 德国 EUR 90402
}

// Addresses that are malformed or not public fail before any request, with
// the same codes the service uses, and cost nothing.
func Example_lookupErrors() {
	c, err := client.New(client.Config{URL: exampleServer(), APIKey: exampleKey(0)})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, ip := range []string{"192.168.1.1", "8.8.8.256", "8.8.8.8"} {
		_, _, err := c.Lookup(ctx, ip, ipatlas.English)
		var e *ipatlas.Error
		switch {
		case errors.Is(err, ipatlas.ErrPrivateIP), errors.Is(err, ipatlas.ErrInvalidIP):
			fmt.Println(ip, "refused locally:", err)
		case errors.Is(err, ipatlas.ErrInsufficientCredits) && errors.As(err, &e):
			fmt.Println(ip, "HTTP", e.Status, e.Code, "credits:", e.Meta.CurrentCredits)
		}
	}
	// Output:
	// 192.168.1.1 refused locally: ipatlas: PrivateIP: Private IP address not supported: 192.168.1.1 is a private-use address (RFC 1918)
	// 8.8.8.256 refused locally: ipatlas: InvalidIP: Invalid IP address format: "8.8.8.256": IPv4 octet out of range 0-255
	// 8.8.8.8 HTTP 402 InsufficientCredits credits: 0
}

// LookupDetail tells an absent field (unknown) from an empty one, and says
// whether the answer came from the cache.
func Example_lookupDetail() {
	c, err := client.New(client.Config{URL: exampleServer(), APIKey: exampleKey(10)})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		r, err := c.LookupDetail(ctx, "1.1.1.1", ipatlas.English) // not in the example data
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("cached:", r.Cached, "has coordinates:", r.Has("latitude"), r.Record.Latitude == nil, "credits:", r.Meta.CurrentCredits)
	}
	// Output:
	// cached: false has coordinates: false true credits: 9
	// cached: true has coordinates: false true credits: 9
}

func Example_myIPs() {
	// One local server answering /ipv4 and /ipv6; this machine reaches it
	// over IPv4 only, so IPv6 is reported unavailable.
	c, err := client.New(client.Config{URL: exampleServer()})
	if err != nil {
		log.Fatal(err)
	}
	addrs, err := c.MyIPs(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("IPv4:", addrs.IPv4)
	fmt.Println("IPv6 unavailable:", errors.Is(addrs.IPv6Err, client.ErrFamilyUnavailable))
	// Output:
	// IPv4: 127.0.0.1
	// IPv6 unavailable: true
}

func Example_myIP() {
	c, err := client.New(client.Config{URL: exampleServer()})
	if err != nil {
		log.Fatal(err)
	}
	m, err := c.MyIP(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.IP, "prefers", m.IPVersion)
	// Output: 127.0.0.1 prefers IPv4
}

func Example_ping() {
	c, err := client.New(client.Config{URL: exampleServer()})
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.Ping(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	// p.RTT is the round trip; the example server's clock is fixed.
	fmt.Println(p.ServerTime, p.IP, p.RTT > 0)
	// Output: 2026-11-15 12:00:00 +0000 UTC 127.0.0.1 true
}

func Example_usage() {
	c, err := client.New(client.Config{URL: exampleServer(), APIKey: exampleKey(500)})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := c.Lookup(ctx, "8.8.8.8", ipatlas.English); err != nil {
		log.Fatal(err)
	}
	u, err := c.Usage(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s tier, %s: %d of %d used, %d credits, resets %s\n", u.Tier, u.Period, u.Used, u.Limit, u.Credits, u.Reset.Format("2006-01-02"))
	// Output: free tier, 2026-11: 1 of 1000 used, 499 credits, resets 2026-12-01
}

// Retries are opt-in for 429 and 503, bounded, and honour Retry-After; a
// quota that resets next month is not waited for.
func Example_retryPolicy() {
	c, err := client.New(client.Config{
		URL:    exampleServer(),
		APIKey: exampleKey(100),
		Retry:  client.RetryPolicy{RateLimited: true, Unavailable: true, Attempts: 3},
	})
	if err != nil {
		log.Fatal(err)
	}
	_, meta, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.English)
	fmt.Println(meta.CurrentCredits, err)
	// Output: 99 <nil>
}
