package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/ipatlas/ipatlas"
)

// ASResult is an AS with what came with it.
type ASResult struct {
	AS        ipatlas.AS
	Meta      ipatlas.Meta // the caller's credits after the query
	RateLimit RateLimit    // the key's quota from the headers; zero when none was sent
	FetchedAt time.Time    // when the answer arrived, on the client's clock
}

// AS returns what the service knows of one autonomous system (GET
// {URL}/api/asn/{asn}): its name, its country named in lang, its announced
// prefixes with their sizes, the IPv4 addresses it announces, and whether
// it is a hosting network. It is metered like a location query.
//
// as is "AS15169", "as15169" or "15169". A malformed AS number fails with
// CodeInvalidAS before any request, so it costs nothing; one the service's
// data does not know fails with CodeUnknownAS (not charged either). AS
// answers are not cached. Each attempt is bounded by Config.Timeout.
func (c *Client) AS(ctx context.Context, as string, lang ipatlas.Lang) (ASResult, error) {
	n, err := ipatlas.ParseAS(as)
	if err != nil {
		return ASResult{}, &ipatlas.Error{Code: ipatlas.CodeInvalidAS,
			Message: ipatlas.CodeInvalidAS.Message(lang, ipatlas.InvalidASDetail(as, lang))}
	}
	name := ipatlas.FormatAS(n)
	r, err := c.do(ctx, request{
		method: http.MethodGet, url: c.base + "/api/asn/" + name + "?" + url.Values{"lang": {lang.String()}}.Encode(),
		auth: true, accept: "application/json", timeout: c.timeout, hc: c.hc, retries: true,
	})
	if err != nil {
		return ASResult{}, wrapTransport("AS "+name, err)
	}
	var env ipatlas.ASEnvelope
	if !r.ok() || !looksJSON(r.body) || json.Unmarshal(r.body, &env) != nil || !env.Success {
		return ASResult{}, c.failure(r)
	}
	if env.Data == nil || env.Data.ASN == "" {
		return ASResult{}, malformed(r, `success without "data"`)
	}
	return ASResult{AS: *env.Data, Meta: env.Meta, RateLimit: rateLimit(r.header), FetchedAt: r.end}, nil
}
