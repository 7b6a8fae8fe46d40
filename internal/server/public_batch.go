package server

import (
	"net/http"
	"strconv"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// maxBatchBodyBytes bounds a batch body. 100 of the longest address texts
// (45 bytes, quoted, with a comma) take under 5 KiB; 16 KiB leaves room
// for whitespace, "lang" and a "fields" list naming every field.
const maxBatchBodyBytes = 16 << 10

var errBatchTooLarge = &bodyError{ipatlas.CodePayloadTooLarge,
	"the limit of a batch body is " + strconv.Itoa(maxBatchBodyBytes) + " bytes",
	"批量请求体上限为 " + strconv.Itoa(maxBatchBodyBytes) + " 字节"}

// batchItem is ipatlas.BatchItem as the server writes it: Data is a
// *ipatlas.Record, or a *ipatlas.PartialRecord when the body names fields.
type batchItem struct {
	Success bool              `json:"success"`
	IP      string            `json:"ip"`
	Data    any               `json:"data,omitempty"`
	Error   string            `json:"error,omitempty"`
	Code    ipatlas.ErrorCode `json:"code,omitempty"`
}

type batchEnvelope struct {
	Success bool              `json:"success"`
	Data    []batchItem       `json:"data"`
	Meta    ipatlas.BatchMeta `json:"meta"`
}

// handleBatch is POST /api/ip-query/batch: up to ipatlas.MaxBatchSize
// addresses in one request, each answered as a single query would be,
// in order.
//
// The batch as a whole is checked like a single query's body and key
// (more than MaxBatchSize addresses is TooManyItems, and nothing is
// charged). Then each address is checked and looked up; the ones that
// pass are charged together in ONE Meter.ChargeN, so the batch takes one
// place in a group commit and one ledger entry. Grants are partial and in
// order: when the quota or the balance allows g of the k valid addresses,
// the first g succeed and the rest fail with RateLimitExceeded or
// InsufficientCredits (quota first, as for a single query).
//
// The answer is 200 with one item per address as soon as one address was
// charged, or when no address needed a charge (all invalid). When valid
// addresses exist but not one could be charged, the batch gets the error
// the first of them would get alone: 429 with Retry-After, or 402.
func (s *api) handleBatch(w *exchange, r *http.Request) error {
	ctx := r.Context()
	var req ipatlas.BatchRequest
	m, err := s.admit(w, r, meteredBody{
		limit: maxBatchBodyBytes, tooLarge: errBatchTooLarge,
		dst: &req, lang: &req.Lang, fields: &req.Fields,
	}, func([]byte) *bodyError { return checkBatchSize(len(req.IPs), req.IPs == nil) })
	if err != nil {
		return err
	}
	c, meta, lang, fields := &w.caller, m.meta, m.lang, m.fields

	items := make([]batchItem, len(req.IPs))
	recs := make([]ipatlas.Record, len(req.IPs))
	valid := make([]int, 0, len(req.IPs)) // the items to charge, in order
	itemFail := func(i int, code ipatlas.ErrorCode, detail string) {
		items[i] = batchItem{IP: req.IPs[i], Error: errorText(code, detail, lang), Code: code}
		s.metrics.queries.WithLabelValues(string(code)).Inc()
	}
	for i, ip := range req.IPs {
		var code ipatlas.ErrorCode
		var detail string
		if recs[i], code, detail = s.locate(ctx, ip, lang); code != "" {
			itemFail(i, code, detail)
			continue
		}
		valid = append(valid, i)
	}

	if len(valid) == 0 {
		s.standing(ctx, w, c, &meta)
		writeJSON(w, http.StatusOK, &batchEnvelope{Success: true, Data: items, Meta: ipatlas.BatchMeta{Meta: meta}})
		return nil
	}
	out, granted, err := s.chargeBatch(ctx, w, r, len(valid), &meta, lang)
	if err != nil {
		return err
	}
	for j, i := range valid {
		if j < granted {
			items[i] = batchItem{Success: true, IP: req.IPs[i], Data: recordData(&recs[i], fields)}
			continue
		}
		code, detail := deniedCode(out, j-granted), ""
		if code == ipatlas.CodeRateLimitExceeded {
			detail = quotaSpent(lang, out.Limit, out.Reset)
		}
		itemFail(i, code, detail)
	}
	s.metrics.queries.WithLabelValues("success").Add(float64(granted))
	writeJSON(w, http.StatusOK, &batchEnvelope{Success: true, Data: items,
		Meta: ipatlas.BatchMeta{Meta: meta, Charged: granted}})
	return nil
}

// checkBatchSize refuses a missing, empty or too long "ips" list.
func checkBatchSize(n int, missing bool) *bodyError {
	if missing {
		return &bodyError{ipatlas.CodeInvalidRequest, `the field "ips" is required`, `缺少必填字段 "ips"`}
	}
	return batchNoun{`"ips"`, `"ips" `, "addresses", "个地址", "个"}.check(n, ipatlas.MaxBatchSize)
}

// batchNoun names a batch's list and its items in both languages, for the
// errors of its size: the list (`"ips"`), its items ("addresses") and, in
// Chinese, the items with their measure word ("个地址") and the measure
// word alone ("个").
type batchNoun struct{ list, listZh, items, itemsZh, unitZh string }

// check refuses an empty batch, or one of more than limit items.
func (b batchNoun) check(n, limit int) *bodyError {
	l := strconv.Itoa(limit)
	switch {
	case n == 0:
		return &bodyError{ipatlas.CodeInvalidRequest,
			b.list + " is empty; give 1 to " + l + " " + b.items,
			b.listZh + "为空，请提供 1 到 " + l + " " + b.itemsZh}
	case n > limit:
		return &bodyError{ipatlas.CodeTooManyItems,
			strconv.Itoa(n) + " " + b.items + "; the limit is " + l,
			strconv.Itoa(n) + " " + b.itemsZh + "，上限为 " + l + " " + b.unitZh}
	}
	return nil
}

// deniedCode is the error of the k-th (from 0) valid address after the
// granted ones. The quota is checked first: the addresses the quota still
// allows (out.Remaining of them) were refused for credits, the others for
// the quota.
func deniedCode(out account.Outcome, k int) ipatlas.ErrorCode {
	if out.Deny == account.DenyCredits && int64(k) < out.Remaining {
		return ipatlas.CodeInsufficientCredits
	}
	return ipatlas.CodeRateLimitExceeded
}

// errorText is an error's text as writeError composes it: the code's text
// in lang, then the detail.
func errorText(code ipatlas.ErrorCode, detail string, lang ipatlas.Lang) string {
	text := code.Text(lang)
	if detail != "" {
		if lang == ipatlas.Chinese {
			return text + "：" + detail
		}
		return text + ": " + detail
	}
	return text
}
