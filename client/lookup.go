package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// LookupResult is a location record with what came with it.
//
// A LookupResult round-trips through encoding/json (data, meta, rate limit
// and fetch time), so a caller can keep results in a cache of its own; the
// ipatlas CLI does so on disk.
type LookupResult struct {
	Record ipatlas.Record
	// Meta is the response's meta. For a cached result it is the meta of
	// the response that filled the cache: the credits then, not now.
	Meta ipatlas.Meta
	// RateLimit is the key's quota from the response headers; zero when
	// the server sent none.
	RateLimit RateLimit
	// FetchedAt is when the response arrived, on the client's clock.
	FetchedAt time.Time
	// Cached is true when the result came from the client's cache and no
	// request was made.
	Cached bool

	raw     json.RawMessage // the "data" object as received
	present uint32          // bit i: recordKeys[i] was present
}

// RateLimit is the quota state a query response reports in its
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers.
type RateLimit struct {
	Limit     int64         `json:"limit"`
	Remaining int64         `json:"remaining"`
	Reset     time.Duration `json:"reset"` // until the quota resets, as of FetchedAt
}

// recordKeys are the JSON keys of Record, in bit order for
// LookupResult.present.
var recordKeys = ipatlas.RecordFields()

// Has reports whether the server sent the record's field with this JSON key
// ("district", "latitude", ...). Every field but "ip" is optional and an
// absent field is unknown, so Has tells an unknown
// district (absent, or null) from a known empty one ("district": ""). For the
// coordinates, Record.Latitude and Record.Longitude are already nil when
// unknown.
func (r *LookupResult) Has(key string) bool {
	for i, k := range recordKeys {
		if k == key {
			return r.present&(1<<i) != 0
		}
	}
	return false
}

// Raw returns the record's JSON object exactly as the server sent it, with
// any fields this version of the client does not know.
func (r *LookupResult) Raw() json.RawMessage { return bytes.Clone(r.raw) }

// wireRecord is Record with every field a pointer, so that one decoding
// gives both the values and which keys were present (a null counts as
// absent: it says "unknown" too).
type wireRecord struct {
	IP             *string          `json:"ip"`
	Continent      *string          `json:"continent"`
	ContinentCode  *string          `json:"continent_code"`
	Country        *string          `json:"country"`
	CountryCode    *string          `json:"country_code"`
	Province       *string          `json:"province"`
	ProvinceCode   *string          `json:"province_code"`
	City           *string          `json:"city"`
	District       *string          `json:"district"`
	ISP            *string          `json:"isp"`
	ASN            *string          `json:"asn"`
	Latitude       *float64         `json:"latitude"`
	Longitude      *float64         `json:"longitude"`
	TimeZone       *string          `json:"time_zone"`
	Currency       *string          `json:"currency"`
	ZipCode        *string          `json:"zip_code"`
	AreaCode       *string          `json:"area_code"`
	Route          *string          `json:"route"`
	Network        *string          `json:"network"`
	Privacy        *ipatlas.Privacy `json:"privacy"`
	LocationSource *string          `json:"location_source"`
	AccuracyRadius *int             `json:"accuracy_radius"`
	Confidence     *string          `json:"confidence"`

	Hostname          *string `json:"hostname"`
	HostnameConfirmed *bool   `json:"hostname_confirmed"`
}

// setData decodes the "data" object and records which keys it had.
func (r *LookupResult) setData(raw json.RawMessage) error {
	var w wireRecord
	if err := json.Unmarshal(raw, &w); err != nil {
		return err
	}
	if w.IP == nil || *w.IP == "" {
		return fmt.Errorf(`the record has no "ip"`)
	}
	var rec ipatlas.Record
	r.present = 0
	// In the order of recordKeys.
	for i, f := range []struct {
		src *string
		dst *string
	}{
		{w.IP, &rec.IP}, {w.Continent, &rec.Continent}, {w.ContinentCode, &rec.ContinentCode},
		{w.Country, &rec.Country}, {w.CountryCode, &rec.CountryCode}, {w.Province, &rec.Province},
		{w.ProvinceCode, &rec.ProvinceCode}, {w.City, &rec.City}, {w.District, &rec.District}, {w.ISP, &rec.ISP}, {w.ASN, &rec.ASN},
		{}, {}, // latitude, longitude
		{w.TimeZone, &rec.TimeZone}, {w.Currency, &rec.Currency}, {w.ZipCode, &rec.ZipCode}, {w.AreaCode, &rec.AreaCode},
	} {
		if f.src != nil {
			*f.dst = *f.src
			r.present |= 1 << i
		}
	}
	rec.Latitude, rec.Longitude = w.Latitude, w.Longitude
	if w.Latitude != nil {
		r.present |= 1 << 11
	}
	if w.Longitude != nil {
		r.present |= 1 << 12
	}
	if w.Route != nil {
		// A route this client cannot read is unknown, as an absent one.
		rec.Route, _ = netip.ParsePrefix(*w.Route)
		r.present |= 1 << slices.Index(recordKeys, "route")
	}
	if w.Network != nil {
		// So is a network.
		rec.Network, _ = netip.ParsePrefix(*w.Network)
		r.present |= 1 << slices.Index(recordKeys, "network")
	}
	if w.Privacy != nil {
		rec.Privacy = w.Privacy
		r.present |= 1 << slices.Index(recordKeys, "privacy")
	}
	if w.LocationSource != nil {
		rec.LocationSource = *w.LocationSource
		r.present |= 1 << slices.Index(recordKeys, "location_source")
	}
	if w.AccuracyRadius != nil {
		rec.AccuracyRadius = *w.AccuracyRadius
		r.present |= 1 << slices.Index(recordKeys, "accuracy_radius")
	}
	if w.Confidence != nil {
		rec.Confidence = *w.Confidence
		r.present |= 1 << slices.Index(recordKeys, "confidence")
	}
	if w.Hostname != nil {
		rec.Hostname = *w.Hostname
		r.present |= 1 << slices.Index(recordKeys, "hostname")
	}
	if w.HostnameConfirmed != nil {
		rec.HostnameConfirmed = w.HostnameConfirmed
		r.present |= 1 << slices.Index(recordKeys, "hostname_confirmed")
	}
	r.Record, r.raw = rec, bytes.Clone(raw)
	return nil
}

type lookupResultJSON struct {
	Data      json.RawMessage `json:"data"`
	Meta      ipatlas.Meta    `json:"meta"`
	RateLimit *RateLimit      `json:"rate_limit,omitempty"`
	FetchedAt time.Time       `json:"fetched_at"`
}

// MarshalJSON writes the record as received, the meta, the rate limit and
// the fetch time. Cached is not kept: it describes one call.
func (r LookupResult) MarshalJSON() ([]byte, error) {
	v := lookupResultJSON{Data: r.raw, Meta: r.Meta, FetchedAt: r.FetchedAt}
	if v.Data == nil {
		// A result built by hand: its record is all there is.
		d, err := json.Marshal(r.Record)
		if err != nil {
			return nil, err
		}
		v.Data = d
	}
	if r.RateLimit != (RateLimit{}) {
		v.RateLimit = &r.RateLimit
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON wrote, field presence included.
func (r *LookupResult) UnmarshalJSON(b []byte) error {
	var v lookupResultJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var out LookupResult
	if err := out.setData(v.Data); err != nil {
		return fmt.Errorf("ipatlas: LookupResult data: %w", err)
	}
	out.Meta, out.FetchedAt = v.Meta, v.FetchedAt
	if v.RateLimit != nil {
		out.RateLimit = *v.RateLimit
	}
	*r = out
	return nil
}

type cacheKey struct {
	addr   string // canonical text of the address
	lang   ipatlas.Lang
	fields ipatlas.FieldSet // 0: the full record; otherwise a partial one, kept apart
}

type cacheEntry struct {
	res     LookupResult
	expires time.Time
}

// CheckAddress validates ip as Lookup does before sending anything: an
// address that is malformed fails with CodeInvalidIP, one that is not
// globally reachable (private, loopback, documentation, ...) with
// CodePrivateIP. It returns the address in canonical form. The error text
// is in lang.
func CheckAddress(ip string, lang ipatlas.Lang) (string, error) {
	a, err := netaddr.Parse(ip)
	if err != nil {
		detail := err.Error()
		var pe *netaddr.ParseError
		if errors.As(err, &pe) {
			detail = pe.Detail(lang)
		}
		return "", &ipatlas.Error{Code: ipatlas.CodeInvalidIP, Message: ipatlas.CodeInvalidIP.Message(lang, detail)}
	}
	if b, bad := netaddr.Classify(a); bad {
		return "", &ipatlas.Error{Code: ipatlas.CodePrivateIP, Message: ipatlas.CodePrivateIP.Message(lang, b.Why(a, lang))}
	}
	return a.String(), nil
}

// Lookup returns the location record of a public IPv4 or IPv6 address in
// lang, and the response's meta (the caller's credits).
//
// The address is checked first (see CheckAddress): a malformed or
// non-public address fails with CodeInvalidIP or CodePrivateIP without any
// request, so it costs nothing. Results are cached per address and
// language (see Config.CacheTTL); errors are not. Concurrent lookups of the
// same address and language share one request. Each attempt is bounded by
// Config.Timeout (default 10 s).
//
// A failure the service reports is an *Error: errors.Is(err,
// ipatlas.ErrRateLimitExceeded) and friends work, and errors.As gives its
// Status, RetryAfter and Meta.
func (c *Client) Lookup(ctx context.Context, ip string, lang ipatlas.Lang) (ipatlas.Record, ipatlas.Meta, error) {
	r, err := c.LookupDetail(ctx, ip, lang)
	if err != nil {
		return ipatlas.Record{}, ipatlas.Meta{}, err
	}
	return r.Record, r.Meta, nil
}

// LookupDetail is Lookup with everything that came with the record: which
// fields were present, the rate-limit headers, whether it was cached.
func (c *Client) LookupDetail(ctx context.Context, ip string, lang ipatlas.Lang) (LookupResult, error) {
	return c.LookupFields(ctx, ip, lang)
}

// LookupFields is LookupDetail for only some fields of the record (JSON
// names, see RecordFields; none means all): the service sends only those
// and "ip", and the result holds only those (Has tells which were sent).
// The query costs the same as a full one; the answer is smaller.
//
// An unknown field name fails with CodeInvalidRequest before any request.
// A full record in the cache answers any selection; a partial answer is
// cached for that same selection only, never as a full record.
func (c *Client) LookupFields(ctx context.Context, ip string, lang ipatlas.Lang, fields ...string) (LookupResult, error) {
	set, err := ipatlas.ParseFields(fields)
	if err != nil {
		return LookupResult{}, err
	}
	addr, err := CheckAddress(ip, lang)
	if err != nil {
		return LookupResult{}, err
	}
	if r, ok := c.cachedFor(addr, lang, set); ok {
		return r, nil
	}
	if err := ctx.Err(); err != nil {
		return LookupResult{}, wrapTransport("lookup "+addr, err) // no request for a caller already gone
	}
	// The shared request must not die with the first caller's context:
	// other callers wait for it, and a charged answer is worth caching.
	// Each attempt is still bounded by the client's timeout.
	detached := context.WithoutCancel(ctx)
	if c.beforeFlight != nil {
		c.beforeFlight()
	}
	ch := c.flight.DoChan(addr+"\x00"+lang.String()+"\x00"+set.String(), func() (any, error) {
		if r, ok := c.cachedFor(addr, lang, set); ok {
			return r, nil
		}
		r, err := c.query(detached, addr, lang, set)
		if err == nil {
			c.remember(cacheKey{addr, lang, set}, r)
		}
		return r, err
	})
	select {
	case <-ctx.Done():
		return LookupResult{}, wrapTransport("lookup "+addr, ctx.Err())
	case res := <-ch:
		if res.Err != nil {
			return LookupResult{}, res.Err
		}
		return res.Val.(LookupResult), nil
	}
}

func (c *Client) cached(key cacheKey) (LookupResult, bool) {
	if c.cache == nil {
		return LookupResult{}, false
	}
	e, ok := c.cache.Get(key)
	if !ok {
		return LookupResult{}, false
	}
	if !c.now().Before(e.expires) {
		c.cache.Remove(key)
		return LookupResult{}, false
	}
	r := e.res
	r.Cached = true
	return r, true
}

// query asks the service, without the cache.
func (c *Client) query(ctx context.Context, addr string, lang ipatlas.Lang, fields ipatlas.FieldSet) (LookupResult, error) {
	q := ipatlas.QueryRequest{IP: addr, Lang: lang.String()}
	if !fields.All() {
		q.Fields = fields.Names()
	}
	body, err := json.Marshal(q)
	if err != nil {
		return LookupResult{}, err
	}
	r, err := c.do(ctx, request{
		method: http.MethodPost, url: c.base + "/api/ip-query", body: body,
		auth: true, accept: "application/json", timeout: c.timeout, hc: c.hc, retries: true,
	})
	if err != nil {
		return LookupResult{}, wrapTransport("lookup "+addr, err)
	}
	res, err := c.decodeLookup(r)
	// A server that ignores "fields" sends more; the caller gets what it
	// asked for either way.
	return res.Select(fields), err
}

// decodeLookup reads a location query's answer.
func (c *Client) decodeLookup(r *reply) (LookupResult, error) {
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
		Meta    ipatlas.Meta    `json:"meta"`
	}
	if !r.ok() || !looksJSON(r.body) || json.Unmarshal(r.body, &env) != nil || !env.Success {
		return LookupResult{}, c.failure(r)
	}
	res := LookupResult{Meta: env.Meta, FetchedAt: r.end, RateLimit: rateLimit(r.header)}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return LookupResult{}, malformed(r, `success without "data"`)
	}
	if err := res.setData(env.Data); err != nil {
		return LookupResult{}, malformed(r, err.Error())
	}
	return res, nil
}

func rateLimit(h http.Header) RateLimit {
	get := func(name string) int64 {
		n, _ := strconv.ParseInt(h.Get(name), 10, 64)
		return n
	}
	return RateLimit{
		Limit:     get("RateLimit-Limit"),
		Remaining: get("RateLimit-Remaining"),
		Reset:     time.Duration(get("RateLimit-Reset")) * time.Second,
	}
}
