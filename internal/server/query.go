package server

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/netaddr"
	"github.com/ipatlas/ipatlas/internal/rdns"
	"golang.org/x/time/rate"
)

// The metered query, written once. Every answer format (a shape,
// shape.go) reads its own parameters and parses its items, then runs them
// through this pipeline (one, batch), then writes what it got back:
//
//  1. admit: the router has accepted the key (auth.go) and the shape has
//     read its parameters and body, all before anything is looked up: the
//     request's own refusal comes first, then the key's (auth.go's admit);
//  2. parse: each item is an address or an AS (item), checked for free;
//  3. bound: a batch looks nothing up past what the caller can pay, and
//     refuses a caller who can pay for nothing before any lookup (so does
//     a single AS, whose lookup is the costly kind);
//  4. look up: the shape's resolve turns an item into its answer; an
//     item that asks the resolver (a host name, a domain name) does so
//     only through the request's allowance of lookups (lookups), given
//     once the caller is known to be able to pay and taken from the key's
//     DNS bucket: a HEAD request, or a caller who cannot pay, asks none;
//  5. charge: every answer that holds something costs one query, in one
//     Meter charge per request, and only its commit makes a success;
//  6. outcomes: the quota headers, the balance in meta, the metrics.
//
// The rules every shape keeps, so that none can drift:
//
//   - Repeats: a batch looks up and charges each distinct address (in any
//     spelling: 8.8.8.8 and ::ffff:8.8.8.8 differ, 2001:db8::1 and
//     2001:DB8:0::1 do not) and each distinct AS (AS15169, as015169 and
//     AS15169/json are one) once, whatever fields or language each repeat
//     asks for; every repeat gets the first one's answer.
//   - Never charged: a failure, an answer with nothing looked up in it
//     (ipinfo's bogon, a field that is empty, an ip-api selection of no
//     field), and a HEAD request, which answers the status and quota
//     headers a GET would get now.
//   - DNS: an answer for which the resolver answered (a host name, or
//     that the address has none; a domain name's address, or that it has
//     no public one) holds something looked up, and is charged like any
//     other, also when the name it gives is empty. A lookup the resolver
//     did not answer (a failure, no answer in time) is not: its empty
//     name is the service's shortfall, not the caller's answer.
//   - Input: an address in a URL's path is exactly its text:
//     /api/lookup/8.8.8.8%20 is malformed, like any other text that is not
//     an address. In a JSON body, white space around a value is ignored,
//     as the producers of JSON pad values.

// item is one thing a metered request asks about: an address or an AS.
type item struct {
	raw  string     // as the request spelt it
	addr netip.Addr // an address's, unmapped and without a zone
	as   uint32
	isAS bool
	// name is a domain name whose address is the item (ip-api's domain
	// query), looked up by lookupName in the resolver; addr is unset
	// until then.
	name string
	host bool     // its answer asks for the address's host name
	fail *failure // it cannot be answered (malformed, private): free
	// dns is the request's allowance of DNS lookups, set by one and
	// batch; nil asks the resolver nothing.
	dns *lookups
}

// itemKey is an item's identity in a batch, for repeats.
type itemKey struct {
	addr netip.Addr
	as   uint32
	isAS bool
}

func (it *item) key() itemKey { return itemKey{addr: it.addr, as: it.as, isAS: it.isAS} }

// pathItem parses an address item of a URL's path, which is exactly its
// text.
func pathItem(raw string, lang ipatlas.Lang) item {
	if raw != strings.TrimSpace(raw) {
		return item{raw: raw, fail: apiFail(ipatlas.CodeInvalidIP, spaceReason(lang))}
	}
	return addrItem(raw, lang)
}

// addrItem parses an address item of a body. A private or reserved
// address is refused with PrivateIP and why (a shape may answer it
// otherwise: ipinfo answers a bogon).
func addrItem(raw string, lang ipatlas.Lang) item {
	it := item{raw: raw}
	addr, err := netaddr.Parse(raw)
	if err != nil {
		var pe *netaddr.ParseError
		detail := ""
		if errors.As(err, &pe) {
			detail = pe.ReasonIn(lang)
		}
		it.fail = apiFail(ipatlas.CodeInvalidIP, detail)
		return it
	}
	it.addr = addr
	if b, private := netaddr.Classify(addr); private {
		it.fail = apiFail(ipatlas.CodePrivateIP, b.Why(addr, lang))
	}
	return it
}

func spaceReason(lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return "地址前后有空白字符"
	}
	return "white space around the address"
}

// asItem parses an AS item ("AS15169", any case, or "15169").
func asItem(raw string, lang ipatlas.Lang) item {
	it := item{raw: raw, isAS: true}
	n, err := ipatlas.ParseAS(raw)
	if err != nil {
		it.fail = apiFail(ipatlas.CodeInvalidAS, ipatlas.InvalidASDetail(echo(raw), lang))
		return it
	}
	it.as = n
	return it
}

// resolved is an item's answer before its charge, in its shape's form.
type resolved struct {
	v    any      // the answer
	free bool     // nothing looked up is in it: answered without a charge
	fail *failure // the item cannot be answered: free
	// code is the failure that a shape answers as a value (ip-api's
	// {"status": "fail"}), for the metrics; such an answer is free.
	code ipatlas.ErrorCode
}

// resolver looks up the i-th item of a request (0 for a single one) and
// answers it in a shape's form. It is called for every item, also one
// that failed its checks (it.fail), which most shapes answer with
// failed(it) and some answer themselves (ipinfo's bogon for a private
// address, ip-api's failure object).
type resolver func(i int, it item) resolved

// failed is the resolution of an item that failed its checks.
func failed(it item) resolved { return resolved{fail: it.fail} }

// one is the metered query of a single item, for the caller cr unless the
// request's own checks refused it (f). It returns the answer and the meta
// to send with it; a failure is the error to render, free.
func (s *api) one(w *exchange, r *http.Request, cr credential, f *failure, lang ipatlas.Lang, it item, resolve resolver) (resolved, ipatlas.Meta, error) {
	c, err := s.admit(w, r, cr, f)
	if err != nil {
		return resolved{}, ipatlas.Meta{}, err
	}
	ctx := r.Context()
	meta := c.meta()
	head := r.Method == http.MethodHead
	asks := 0 // the most lookups the item may ask of the resolver
	if it.fail == nil && s.deps.Resolver != nil {
		if it.name != "" {
			asks++
		}
		if it.host {
			asks++
		}
	}
	if it.fail == nil && (it.isAS || asks > 0) {
		// An AS is the costly lookup, and a question to the resolver is
		// work done for whoever asked: a caller who cannot pay for it is
		// refused before it.
		if n, deny, st, ok := s.budget(ctx, c, 1); ok && n == 0 {
			return resolved{}, meta, s.refusal(w, deny, st)
		}
	}
	if asks > 0 && !head {
		l, err := s.lookupsFor(w, r, c, asks)
		if err != nil {
			return resolved{}, meta, err
		}
		it.dns = l
	}
	var res resolved
	if it.name != "" && head {
		// A HEAD asks the resolver nothing, so the name has no address to
		// look up: the answer is the standing alone.
		res = resolved{free: true}
	} else {
		res = resolveItem(resolve, 0, it)
	}
	if res.fail != nil {
		return res, meta, s.uncharged(ctx, w, c, res.fail)
	}
	w.code = res.code
	if res.free || r.Method == http.MethodHead {
		// Nothing to charge; the caller's standing as it is.
		if n, deny, st, ok := s.budget(ctx, c, 1); ok {
			s.rateHeaders(w, st.limit, st.remaining, st.reset)
			meta.CurrentCredits = st.credits
			if !res.free && n == 0 {
				return res, meta, s.refusal(w, deny, st)
			}
		}
		return res, meta, nil
	}
	out, err := s.deps.Meter.Charge(ctx, c.key)
	if err := s.charged(w, r, out, err, &meta); err != nil {
		return res, meta, err
	}
	if !out.Granted {
		return res, meta, s.refusal(w, out.Deny, standingOf(out))
	}
	w.success = true
	return res, meta, nil
}

// charged reads a charge's outcome into the answer: the quota headers and
// the balance, or the failure when the charge could not be made.
func (s *api) charged(w *exchange, r *http.Request, out account.Outcome, err error, meta *ipatlas.Meta) error {
	if err != nil {
		// The meter logs the store's failure once per interval, not once
		// per query: a full disk under load made thousands of lines a
		// second. So this answer's line stays at the access log's level.
		w.outage = true
		// Nothing is known to be charged; the cached balance is the best
		// cheap answer and the store is likely down anyway.
		return (&failure{code: ipatlas.CodeServiceUnavailable}).withMeta(*meta)
	}
	if out.Deny == account.DenyKey {
		// Revoked or rotated between authentication and charge.
		return s.keyError(w, r, account.ErrBadKey)
	}
	s.rateHeaders(w, out.Limit, out.Remaining, out.Reset)
	meta.CurrentCredits = out.Credits
	return nil
}

// standing is a key's quota and its account's balance.
type standing struct {
	limit, remaining int64
	reset            time.Time
	credits          int64
}

func standingOf(out account.Outcome) standing {
	return standing{limit: out.Limit, remaining: out.Remaining, reset: out.Reset, credits: out.Credits}
}

// budget is how many of n queries the caller can pay for now, and why
// not more, from the store (two indexed reads); ok is false when the
// store cannot say, and the charge will decide.
func (s *api) budget(ctx context.Context, c *keyed, n int64) (int64, account.Deny, standing, bool) {
	store := s.deps.Accounts.Store
	now := s.now()
	a, err := store.Account(ctx, c.acct.ID)
	if err != nil {
		return n, account.DenyNone, standing{}, false
	}
	used, err := store.Usage(ctx, c.key.ID, account.Period(now))
	if err != nil {
		return n, account.DenyNone, standing{}, false
	}
	limit := account.Limit(a.Tier, a.CustomLimit)
	st := standing{limit: limit, remaining: max(0, limit-used), reset: account.PeriodReset(now), credits: a.Credits}
	cost := int64(1)
	if s.deps.Meter != nil {
		cost = s.deps.Meter.Cost()
	}
	got, deny := account.Allow(account.ChargeRequest{N: n, Cost: cost}, limit, used, a.Credits)
	return got, deny, st, true
}

// refusal is the failure of a query the caller cannot pay for: 402, or
// 429 with Retry-After and the month's end.
func (s *api) refusal(w *exchange, deny account.Deny, st standing) *failure {
	s.rateHeaders(w, st.limit, st.remaining, st.reset)
	meta := ipatlas.Meta{IsLoggedIn: true, IsAPIRequest: true, CurrentCredits: st.credits}
	if deny == account.DenyCredits {
		return &failure{code: ipatlas.CodeInsufficientCredits, meta: meta}
	}
	w.Header()["Retry-After"] = []string{strconv.FormatInt(s.secondsUntil(st.reset), 10)}
	return &failure{code: ipatlas.CodeRateLimitExceeded, en: quotaSpent(ipatlas.English, st.limit, st.reset),
		zh: quotaSpent(ipatlas.Chinese, st.limit, st.reset), meta: meta, why: errQuotaSpent}
}

// uncharged is a metered request's failure before its charge, with the
// caller's fresh standing (the balance and the quota headers) from the
// store: two indexed reads, only on this path.
func (s *api) uncharged(ctx context.Context, w *exchange, c *keyed, f *failure) error {
	meta := c.meta()
	if _, _, st, ok := s.budget(ctx, c, 1); ok {
		s.rateHeaders(w, st.limit, st.remaining, st.reset)
		meta.CurrentCredits = st.credits
	}
	return f.withMeta(meta)
}

// batchResult is a batch's answers, in the order of its items, and what
// the batch cost.
type batchResult struct {
	items   []resolved
	meta    ipatlas.Meta
	charged int
}

// batch is the metered query of a batch's items; see the rules above.
// Each item is answered in its own form (its field, its language), but a
// repeated address or AS costs one query. When the batch holds items to
// charge and the caller can pay for none, it is refused whole before any
// lookup: 429 with Retry-After, or 402. Otherwise the answer has one
// result per item: the distinct items past what the caller could pay are
// refused with RateLimitExceeded or InsufficientCredits (and not looked
// up), the first ones in order being answered. As for one, cr is the
// caller and f the request's own refusal.
func (s *api) batch(w *exchange, r *http.Request, cr credential, f *failure, items []item, resolve resolver) (batchResult, error) {
	c, err := s.admit(w, r, cr, f)
	if err != nil {
		return batchResult{}, err
	}
	ctx := r.Context()
	w.counted = true
	res := batchResult{items: make([]resolved, len(items)), meta: c.meta()}

	seen := make(map[itemKey]bool, len(items))
	distinct := 0 // distinct items that may need a charge
	for i := range items {
		if it := &items[i]; it.fail == nil && !seen[it.key()] {
			seen[it.key()] = true
			distinct++
		}
	}
	budget, deny, st, known := s.budget(ctx, c, int64(distinct))
	if distinct > 0 && known && budget == 0 {
		f := s.refusal(w, deny, st)
		s.countAll(f.code, distinct)
		return res, f
	}
	if s.deps.Resolver != nil {
		// The host names the batch may ask for: one per distinct address
		// that asks, no more than the caller can pay for.
		hosts := make(map[netip.Addr]bool)
		for i := range items {
			if it := &items[i]; it.fail == nil && it.host {
				hosts[it.addr] = true
			}
		}
		if need := min(int64(len(hosts)), budget); need > 0 {
			l, err := s.lookupsFor(w, r, c, int(need))
			if err != nil {
				s.countAll(ipatlas.CodeRateLimitExceeded, distinct)
				return res, err
			}
			for i := range items {
				items[i].dns = l
			}
		}
	}

	// The distinct items to charge, in order of their first answer that
	// holds something, and those past the budget, never looked up.
	place := make(map[itemKey]int, distinct) // an item's place in charge, then in unpaid after them
	var charge, unpaid []itemKey
	for i := range items {
		it := &items[i]
		k := it.key()
		if it.fail == nil {
			if _, ok := place[k]; !ok && int64(len(charge)) >= budget {
				place[k] = -1 - len(unpaid)
				unpaid = append(unpaid, k)
			}
			if p, ok := place[k]; ok && p < 0 {
				continue // refused below, like the first of its kind
			}
		}
		rr := resolveItem(resolve, i, *it)
		res.items[i] = rr
		if rr.fail == nil && !rr.free && it.fail == nil {
			if _, ok := place[k]; !ok {
				place[k] = len(charge)
				charge = append(charge, k)
			}
		}
	}

	out := account.Outcome{Remaining: st.remaining, Limit: st.limit, Reset: st.reset, Credits: st.credits, Deny: deny}
	granted := 0
	if len(charge) > 0 {
		var err error
		out, err = s.deps.Meter.ChargeN(ctx, c.key, int64(len(charge)))
		if err := s.charged(w, r, out, err, &res.meta); err != nil {
			return res, err
		}
		granted = int(out.GrantedN)
		if granted == 0 {
			f := s.refusal(w, out.Deny, standingOf(out))
			s.countAll(f.code, distinct)
			return res, f
		}
	} else if known {
		s.rateHeaders(w, st.limit, st.remaining, st.reset)
		res.meta.CurrentCredits = st.credits
	}
	res.charged = granted

	// The k-th refused distinct item: the charged ones past the grant,
	// then the ones never looked up.
	refusedAt := func(k int) *failure {
		code := deniedCode(out, k)
		f := &failure{code: code}
		if code == ipatlas.CodeRateLimitExceeded {
			f.why = errQuotaSpent
			f.en, f.zh = quotaSpent(ipatlas.English, out.Limit, out.Reset), quotaSpent(ipatlas.Chinese, out.Limit, out.Reset)
		}
		return f
	}
	counted := make(map[itemKey]bool, distinct)
	for i := range items {
		it := &items[i]
		k := it.key()
		if it.fail == nil {
			switch p, ok := place[k]; {
			case ok && p >= granted:
				res.items[i] = resolved{fail: refusedAt(p - granted)}
			case ok && p < 0:
				res.items[i] = resolved{fail: refusedAt(len(charge) - granted + (-1 - p))}
			}
			if counted[k] {
				continue // each distinct item counts once
			}
			counted[k] = true
		}
		switch rr := res.items[i]; {
		case rr.fail != nil:
			s.metrics.queries.WithLabelValues(string(rr.fail.code)).Inc()
		case rr.code != "":
			s.metrics.queries.WithLabelValues(string(rr.code)).Inc()
		}
	}
	s.metrics.queries.WithLabelValues("success").Add(float64(granted))
	return res, nil
}

// countAll counts n outcomes of code (0 only makes sure the label exists).
func (s *api) countAll(code ipatlas.ErrorCode, n int) {
	s.metrics.queries.WithLabelValues(string(code)).Add(float64(n))
}

// deniedCode is the error of the k-th (from 0) item refused after the
// granted ones. The quota is checked first: the items the quota still
// allows (out.Remaining of them) were refused for credits, the others for
// the quota.
func deniedCode(out account.Outcome, k int) ipatlas.ErrorCode {
	if out.Deny != account.DenyQuota && int64(k) < out.Remaining {
		return ipatlas.CodeInsufficientCredits
	}
	return ipatlas.CodeRateLimitExceeded
}

// lookupRecord looks up an address's record.
func (s *api) lookupRecord(ctx context.Context, it *item, lang ipatlas.Lang) (*ipatlas.Record, *failure) {
	rec, err := s.deps.Geo.Lookup(it.addr, lang)
	if err != nil {
		return nil, s.lookupFailed(ctx, err)
	}
	return &rec, nil
}

// fillHostname puts the address's host name into rec, and with confirm
// whether it resolves back to the address, through the request's
// allowance of lookups: without one (a HEAD request, no resolver), or
// past it, the resolver is not asked and the name is empty. It never
// fails: a lookup with no answer in time leaves the name empty.
func (s *api) fillHostname(ctx context.Context, it *item, rec *ipatlas.Record, confirm bool) {
	it.dns.hostname(ctx, it.addr, confirm).Fill(rec)
}

// lookupName looks up a domain item's name (ip-api's domain query)
// through the request's allowance, and is the item of its first globally
// reachable address. A name that does not exist and one whose addresses
// are all private or reserved are one answer, an invalid query, so that
// the answers do not tell which internal names the resolver knows (both
// are answers of the resolver: charged). A resolver that did not answer,
// or none, is unavailable; a name that is not one is invalid, asked of
// nobody.
func (s *api) lookupName(ctx context.Context, it item, lang ipatlas.Lang) item {
	addr, err := it.dns.address(ctx, it.name)
	switch {
	case err == nil:
		a := addrItem(addr.String(), lang)
		a.host, a.dns = it.host, it.dns
		return a
	case errors.Is(err, rdns.ErrNotFound), errors.Is(err, rdns.ErrNotPublic), errors.Is(err, rdns.ErrInvalidName):
		return item{raw: it.raw, fail: apiFail(ipatlas.CodeInvalidIP, ""), dns: it.dns}
	}
	return item{raw: it.raw, fail: apiFail(ipatlas.CodeServiceUnavailable, ""), dns: it.dns}
}

// maxRequestLookups bounds the DNS lookups of one request (each at most
// two questions: a PTR and its forward check, or a name's A and AAAA).
// ipinfo's batch refuses more host name items than this; the native and
// ip-api batches hold no more items.
const maxRequestLookups = 100

// lookups is a request's allowance of DNS lookups, taken from the key's
// DNS bucket (Config.KeyDNSRate) when the request starts asking
// (lookupsFor). A repeat of a host name in the request is answered from
// the first lookup, for nothing more. The nil *lookups asks nothing.
// It is used by one goroutine: the items of a request are resolved in
// turn.
type lookups struct {
	r     *rdns.Resolver
	left  int
	hosts map[hostQuestion]rdns.Result
	// answered is whether the resolver answered a lookup of the item
	// being resolved (resolveItem), from a question or its cache.
	answered bool
}

type hostQuestion struct {
	addr    netip.Addr
	confirm bool
}

// lookupsFor is the allowance of n lookups (at most maxRequestLookups and
// the bucket's size) of a request by c, taken from c's key's DNS bucket:
// a bucket without them is 429 with Retry-After, before anything is
// looked up.
func (s *api) lookupsFor(w *exchange, r *http.Request, c *keyed, n int) (*lookups, error) {
	n = min(n, maxRequestLookups)
	if l := s.limits; l != nil && l.dns != nil {
		n = min(n, l.dnsBurst)
		lim := l.dns.getOrAdd(c.key.ID, func() *rate.Limiter { return rate.NewLimiter(l.dnsRate, l.dnsBurst) })
		if d := takeN(lim, s.now(), n); d > 0 {
			l.refused.WithLabelValues(limitKeyDNS).Inc()
			return nil, limited(w, r, c.meta(), retrySeconds(d),
				"too many DNS lookups for this key, retry in %d s", "此密钥的 DNS 查询过多，请在 %d 秒后重试")
		}
	}
	return &lookups{r: s.deps.Resolver, left: n}, nil
}

// answeredStatus reports whether a host name lookup had the resolver's
// answer: a name, or that there is none.
func answeredStatus(st rdns.Status) bool { return st == rdns.Found || st == rdns.NoName }

// hostname is addr's host name, asked within the allowance.
func (l *lookups) hostname(ctx context.Context, addr netip.Addr, confirm bool) rdns.Result {
	if l == nil {
		return rdns.Result{Status: rdns.Off}
	}
	q := hostQuestion{addr, confirm}
	res, ok := l.hosts[q]
	if !ok {
		if l.left == 0 {
			return rdns.Result{Status: rdns.Busy}
		}
		l.left--
		res = l.r.Hostname(ctx, addr, confirm)
		if l.hosts == nil {
			l.hosts = make(map[hostQuestion]rdns.Result)
		}
		l.hosts[q] = res
	}
	if answeredStatus(res.Status) {
		l.answered = true
	}
	return res
}

// address is a domain name's first globally reachable address, asked
// within the allowance (rdns.Resolve's errors).
func (l *lookups) address(ctx context.Context, name string) (netip.Addr, error) {
	if l == nil || l.left == 0 {
		return netip.Addr{}, rdns.ErrUnavailable
	}
	l.left--
	a, err := l.r.Resolve(ctx, name)
	if err == nil || errors.Is(err, rdns.ErrNotFound) || errors.Is(err, rdns.ErrNotPublic) {
		l.answered = true
	}
	return a, err
}

// resolveItem is resolve(i, it) under the rule of DNS work: an answer for
// which the resolver answered holds something looked up.
func resolveItem(resolve resolver, i int, it item) resolved {
	if it.dns != nil {
		it.dns.answered = false
	}
	rr := resolve(i, it)
	if it.dns != nil && it.dns.answered && rr.fail == nil {
		rr.free = false
	}
	return rr
}

// batchDNSBudget bounds the time a whole batch spends on host names: past
// it, the items still asking for one get none, at once.
const batchDNSBudget = 2 * time.Second

// lookupAS looks up an AS, its prefixes cut to the page asked for.
func (s *api) lookupAS(ctx context.Context, it *item, lang ipatlas.Lang, page int) (*ipatlas.AS, *failure) {
	loc, ok := s.deps.Geo.(geo.ASLocator)
	if !ok {
		// A locator that cannot answer an AS is a deployment without the
		// engine: nothing the client can fix.
		return nil, apiFail(ipatlas.CodeServiceUnavailable, "")
	}
	as, err := loc.AS(it.as, lang)
	switch {
	case errors.Is(err, ipatlas.ErrUnknownAS):
		return nil, bodyFail(ipatlas.CodeUnknownAS, unknownASDetail(it.as, ipatlas.English), unknownASDetail(it.as, ipatlas.Chinese))
	case err != nil:
		s.log.LogAttrs(ctx, slog.LevelError, "AS lookup", errAttr(err))
		return nil, apiFail(ipatlas.CodeServiceUnavailable, "")
	}
	ipatlas.PageAS(&as, page)
	return &as, nil
}

// lookupFailed logs a failure of the engine and is its code: the data is
// unavailable (closed, or a file that cannot be read), not the request wrong.
func (s *api) lookupFailed(ctx context.Context, err error) *failure {
	s.log.LogAttrs(ctx, slog.LevelError, "geo lookup", errAttr(err))
	return apiFail(ipatlas.CodeServiceUnavailable, "")
}

// unknownASDetail names the AS the data does not know, in lang.
func unknownASDetail(n uint32, lang ipatlas.Lang) string {
	if lang == ipatlas.Chinese {
		return "ASN 数据中没有 " + ipatlas.FormatAS(n)
	}
	return "the ASN data has no " + ipatlas.FormatAS(n)
}

// errQuotaSpent is the cause of a RateLimitExceeded that is the monthly
// quota used up, not a burst limit that lifts in seconds.
var errQuotaSpent = errors.New("the monthly quota is used up")

// quotaSpent is the detail of a 429 for a spent monthly quota. It keeps
// the code of the burst limit's 429 but says which limit it is and when it
// lifts, since waiting seconds will not help.
func quotaSpent(lang ipatlas.Lang, limit int64, reset time.Time) string {
	at := reset.UTC().Format("2006-01-02 15:04 MST")
	if lang == ipatlas.Chinese {
		return "本月 " + strconv.FormatInt(limit, 10) + " 次查询的额度已用完，将于 " + at + " 重置"
	}
	queries := " queries"
	if limit == 1 {
		queries = " query"
	}
	return "the monthly quota of " + strconv.FormatInt(limit, 10) + queries + " is used up; it resets at " + at
}

// rateHeaders sets the quota headers in the IETF draft's spelling
// (draft-ietf-httpapi-ratelimit-headers-07): RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset, in seconds from now. There is no
// X-RateLimit-* copy: under that name some services send the reset as a
// Unix time, so a client could read it either way, and each copy costs
// every answer three header entries.
func (s *Server) rateHeaders(w http.ResponseWriter, limit, remaining int64, reset time.Time) {
	// Every metered answer carries these, so they are built with one
	// allocation: the digits and the three header values that slice
	// them, in one block (net/http only reads the values).
	v := new(rateValues)
	b := strconv.AppendInt(v.digits[:0], limit, 10)
	i := len(b)
	b = strconv.AppendInt(b, remaining, 10)
	j := len(b)
	b = strconv.AppendInt(b, s.secondsUntil(reset), 10)
	// The digits are never written again: the strings may share them.
	nums := unsafe.String(unsafe.SliceData(b), len(b))
	v.vals = [3]string{nums[:i], nums[i:j], nums[j:]}
	l, rem, rs := v.vals[0:1:1], v.vals[1:2:2], v.vals[2:3:3]
	h := w.Header()
	h["Ratelimit-Limit"] = l
	h["Ratelimit-Remaining"] = rem
	h["Ratelimit-Reset"] = rs
}

// rateValues backs one answer's quota headers: three int64s in decimal
// take at most 60 bytes.
type rateValues struct {
	vals   [3]string
	digits [60]byte
}

// secondsUntil rounds up, so that a client waiting that long finds the
// month changed; at least 1.
func (s *Server) secondsUntil(t time.Time) int64 {
	d := t.Sub(s.now())
	return max(1, int64(math.Ceil(d.Seconds())))
}
