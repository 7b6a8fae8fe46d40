package client_test

// These examples are compiled, not run: they need a service and a key.
// The same calls run against a real server, with their output checked, in
// client/internal/e2e.

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
)

func Example() {
	c, err := client.New(client.Config{
		URL:    "https://ipatlas.example.net",
		APIKey: os.Getenv("IPATLAS_API_KEY"),
	})
	if err != nil {
		log.Fatal(err)
	}
	rec, meta, err := c.Lookup(context.Background(), "8.8.8.8", ipatlas.Chinese)
	switch {
	case errors.Is(err, ipatlas.ErrRateLimitExceeded):
		log.Fatal("over the key's monthly quota or burst rate: ", err)
	case errors.Is(err, ipatlas.ErrInsufficientCredits):
		log.Fatal("the account's credits are used up: ", err)
	case err != nil:
		log.Fatal(err)
	}
	fmt.Println(rec.Country, rec.Province, rec.City, rec.TimeZone)
	fmt.Println("credits left:", meta.CurrentCredits)
}

func ExampleClient_MyIPs() {
	c, err := client.New(client.Config{URL: "https://ipatlas.example.net"})
	if err != nil {
		log.Fatal(err)
	}
	addrs, err := c.MyIPs(context.Background()) // free: no key needed
	if err != nil {
		log.Fatal(err) // neither family answered
	}
	if addrs.IPv4Err == nil {
		fmt.Println("IPv4:", addrs.IPv4)
	}
	if addrs.IPv6Err == nil {
		fmt.Println("IPv6:", addrs.IPv6)
	}
}

func ExampleClient_Usage() {
	c, err := client.New(client.Config{URL: "https://ipatlas.example.net", APIKey: os.Getenv("IPATLAS_API_KEY")})
	if err != nil {
		log.Fatal(err)
	}
	u, err := c.Usage(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d of %d queries used in %s; resets %s\n", u.Used, u.Limit, u.Period, u.Reset.Format("2 Jan"))
}
