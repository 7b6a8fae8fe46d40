package ipatlas

// MaxBatchSize is the most addresses one POST /api/ip-query/batch may
// hold; a longer list is refused as a whole with CodeTooManyItems.
const MaxBatchSize = 100

// BatchRequest is the body of POST /api/ip-query/batch: up to MaxBatchSize
// addresses looked up in one request and charged in one transaction.
type BatchRequest struct {
	IPs  []string `json:"ips"`
	Lang string   `json:"lang,omitempty"`
	// Fields selects the record fields of every item, as in QueryRequest.
	Fields []string `json:"fields,omitempty"`
}

// BatchItem is the result for one address of a batch, at the address's
// position in the request.
//
// IP is the address exactly as it was sent, so that a caller can match
// results to inputs without relying on the order alone. On success Data is
// the record (Data.IP is the address normalized, as for a single query);
// on failure Error and Code say why, as a single query's envelope would.
// Only successful items were charged.
type BatchItem struct {
	Success bool      `json:"success"`
	IP      string    `json:"ip"`
	Data    *Record   `json:"data,omitempty"`
	Error   string    `json:"error,omitempty"`
	Code    ErrorCode `json:"code,omitempty"`
}

// BatchMeta is the meta of a batch answer: the caller's meta, with
// CurrentCredits the balance after the batch's charge, and the number of
// items charged (the successful ones).
type BatchMeta struct {
	Meta
	Charged int `json:"charged"`
}

// BatchEnvelope is the body of a batch answer that was processed: Success
// is true, and Data holds one item per address in request order, each a
// success or a failure of its own. A batch refused as a whole (bad body,
// key, more than MaxBatchSize items, quota or credits exhausted before the
// first item) is answered with an error Envelope instead.
type BatchEnvelope struct {
	Success bool        `json:"success"`
	Data    []BatchItem `json:"data"`
	Meta    BatchMeta   `json:"meta"`
}
