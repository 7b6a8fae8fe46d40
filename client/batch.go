package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/ipatlas/ipatlas"
)

// BatchResult is the outcome of one address of LookupBatch, at the
// address's position in the list.
type BatchResult struct {
	IP     string       // the address as given
	Result LookupResult // when Err is nil
	// Err is the address's failure: a local refusal (CodeInvalidIP,
	// CodePrivateIP), the service's answer for this item (e.g.
	// CodeRateLimitExceeded at the edge of the quota), or the failure of
	// the whole request that carried it. An *Error of an item has the
	// Status a single query would have had.
	Err error
}

// LookupBatch looks up many addresses with POST /api/ip-query/batch, at
// most MaxBatchSize per request; a longer list becomes several requests,
// sent one after the other. The results are in the order of ips.
//
// Each address is checked locally first (see CheckAddress): a malformed
// or non-public one fails without being sent, so it costs nothing. An
// address in the cache is answered from it and not sent; one that appears
// several times is sent once. Successful results are cached, as Lookup's
// are. fields selects record fields as in LookupFields.
//
// Each item succeeds or fails on its own: at the edge of the quota or the
// balance, the first items of a request succeed and the rest fail with
// CodeRateLimitExceeded or CodeInsufficientCredits. The returned error is
// nil unless a request failed as a whole (transport, key, not one item
// chargeable, service unavailable) or fields names an unknown field (then
// the slice is nil and nothing is sent). After a request fails as a
// whole, no further request is sent: the items of it and of the requests
// not sent carry its error, and the items answered before keep their
// results.
func (c *Client) LookupBatch(ctx context.Context, ips []string, lang ipatlas.Lang, fields ...string) ([]BatchResult, error) {
	set, err := ipatlas.ParseFields(fields)
	if err != nil {
		return nil, err
	}
	out := make([]BatchResult, len(ips))
	var todo []string               // canonical addresses to send, in first-seen order
	where := make(map[string][]int) // canonical address -> positions in ips
	for i, ip := range ips {
		out[i].IP = ip
		addr, err := CheckAddress(ip, lang)
		if err != nil {
			out[i].Err = err
			continue
		}
		if r, ok := c.cachedFor(addr, lang, set); ok {
			out[i].Result = r
			continue
		}
		if _, seen := where[addr]; !seen {
			todo = append(todo, addr)
		}
		where[addr] = append(where[addr], i)
	}
	for start := 0; start < len(todo); start += ipatlas.MaxBatchSize {
		chunk := todo[start:min(start+ipatlas.MaxBatchSize, len(todo))]
		res, err := c.batch(ctx, chunk, lang, set)
		if err != nil {
			for _, addr := range todo[start:] {
				for _, i := range where[addr] {
					out[i].Err = err
				}
			}
			return out, err
		}
		for j, addr := range chunk {
			for _, i := range where[addr] {
				out[i].Result, out[i].Err = res[j].Result, res[j].Err
			}
		}
	}
	return out, nil
}

// batch sends one batch request and caches its successes.
func (c *Client) batch(ctx context.Context, addrs []string, lang ipatlas.Lang, set ipatlas.FieldSet) ([]BatchResult, error) {
	op := "batch lookup of " + strconv.Itoa(len(addrs)) + " addresses"
	if err := ctx.Err(); err != nil {
		return nil, wrapTransport(op, err)
	}
	q := ipatlas.BatchRequest{IPs: addrs, Lang: lang.String()}
	if !set.All() {
		q.Fields = set.Names()
	}
	body, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	r, err := c.do(ctx, request{
		method: http.MethodPost, url: c.base + "/api/ip-query/batch", body: body,
		auth: true, accept: "application/json", timeout: c.timeout, hc: c.hc, retries: true,
	})
	if err != nil {
		return nil, wrapTransport(op, err)
	}
	res, err := c.decodeBatch(r, len(addrs), set)
	if err != nil {
		return nil, err
	}
	for i, addr := range addrs {
		if res[i].Err == nil {
			c.remember(cacheKey{addr, lang, set}, res[i].Result)
		}
	}
	return res, nil
}

// decodeBatch reads a batch answer for n addresses.
func (c *Client) decodeBatch(r *reply, n int, set ipatlas.FieldSet) ([]BatchResult, error) {
	var env struct {
		Success bool `json:"success"`
		Data    []struct {
			Success bool              `json:"success"`
			IP      string            `json:"ip"`
			Data    json.RawMessage   `json:"data"`
			Error   string            `json:"error"`
			Code    ipatlas.ErrorCode `json:"code"`
		} `json:"data"`
		Meta ipatlas.BatchMeta `json:"meta"`
	}
	if !r.ok() || !looksJSON(r.body) || json.Unmarshal(r.body, &env) != nil || !env.Success {
		return nil, c.failure(r)
	}
	if len(env.Data) != n {
		return nil, malformed(r, strconv.Itoa(len(env.Data))+" results for "+strconv.Itoa(n)+" addresses")
	}
	rl := rateLimit(r.header)
	meta := env.Meta.Meta
	out := make([]BatchResult, n)
	for i, it := range env.Data {
		out[i].IP = it.IP
		if it.Success {
			res := LookupResult{Meta: meta, FetchedAt: r.end, RateLimit: rl}
			if len(it.Data) == 0 || string(it.Data) == "null" {
				out[i].Err = malformed(r, "item "+strconv.Itoa(i)+` succeeded without "data"`)
			} else if err := res.setData(it.Data); err != nil {
				out[i].Err = malformed(r, "item "+strconv.Itoa(i)+": "+err.Error())
			} else {
				out[i].Result = res.Select(set)
			}
			continue
		}
		e := &ipatlas.Error{Code: it.Code, Message: it.Error, Meta: &meta}
		if e.Code == "" {
			e.Code = codeForText(e.Message)
		}
		if e.Code == "" {
			e.Code = ipatlas.CodeInternal
		}
		e.Status = e.Code.HTTPStatus()
		if e.Code == ipatlas.CodeRateLimitExceeded && rl.Reset > 0 {
			e.RetryAfter = rl.Reset // the quota resets then; no Retry-After on a 200
		}
		out[i].Err = e
	}
	return out, nil
}

// cachedFor answers a lookup of addr in lang for the fields in set from
// the cache: a full record answers any selection, a partial one only its
// own.
func (c *Client) cachedFor(addr string, lang ipatlas.Lang, set ipatlas.FieldSet) (LookupResult, bool) {
	if r, ok := c.cached(cacheKey{addr, lang, 0}); ok {
		return r.Select(set), true
	}
	if set.All() {
		return LookupResult{}, false
	}
	return c.cached(cacheKey{addr, lang, set})
}

func (c *Client) remember(key cacheKey, r LookupResult) {
	if c.cache != nil {
		c.cache.Add(key, cacheEntry{res: r, expires: r.FetchedAt.Add(c.cacheTTL)})
	}
}

// Select returns the result restricted to the fields in set, as a query
// naming those fields would have returned it: the record, which fields
// Has reports, and Raw. The zero FieldSet returns r unchanged.
func (r LookupResult) Select(set ipatlas.FieldSet) LookupResult {
	if set.All() {
		return r
	}
	r.Record = set.Apply(r.Record)
	r.present &= uint32(set)
	r.raw = filterRaw(r.raw, set)
	return r
}

// filterRaw keeps the keys of a JSON object that set selects, in their
// order.
func filterRaw(raw json.RawMessage, set ipatlas.FieldSet) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return raw
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return raw
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return raw
		}
		if !set.Has(key) {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}
