package server

import (
	"errors"
	"strconv"
	"sync"

	"github.com/ipatlas/ipatlas"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are labelled by route template, method, status and error code:
// bounded sets. Never by key, account or address, whose number is not.
type metrics struct {
	requests *prometheus.CounterVec   // route, method, code
	duration *prometheus.HistogramVec // route
	queries  *prometheus.CounterVec   // outcome: "success" or an error code
	inflight prometheus.Gauge

	// The connection caps (connlimit.go), by listener.
	conns          *prometheus.GaugeVec
	connWaits      *prometheus.CounterVec
	connIdleClosed *prometheus.CounterVec

	// The children of requests and duration that requests have used, by
	// their labels, and the success outcome's counter: a request finds
	// its two series with one map read instead of hashing its labels
	// into each vector under its lock.
	series  sync.Map // seriesKey -> *seriesPair
	success prometheus.Counter
}

// seriesKey is the labels of one request's series.
type seriesKey struct {
	route, method string
	status        int
}

// seriesPair is a request's counter and duration histogram.
type seriesPair struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// request counts one answered request of route and method with status,
// which took d seconds.
func (m *metrics) request(route, method string, status int, d float64) {
	k := seriesKey{route, method, status}
	v, ok := m.series.Load(k)
	if !ok {
		// The labels are bounded sets (route templates, methodLabel,
		// statuses), so the map is too.
		v, _ = m.series.LoadOrStore(k, &seriesPair{
			requests: m.requests.WithLabelValues(route, method, statusLabel(status)),
			duration: m.duration.WithLabelValues(route),
		})
	}
	p := v.(*seriesPair)
	p.requests.Inc()
	p.duration.Observe(d)
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ipatlas", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ipatlas", Subsystem: "http", Name: "request_duration_seconds",
			Help: "Time from request to the end of the response, by route template.",
			// The metered query waits for a group commit of a few
			// milliseconds; resolve that range finely.
			Buckets: []float64{.0005, .001, .002, .003, .005, .0075, .01, .015, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ipatlas", Name: "query_outcomes_total",
			Help: "Location queries by outcome: success or the error code.",
		}, []string{"outcome"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ipatlas", Subsystem: "http", Name: "requests_in_flight",
			Help: "Requests being served.",
		}),
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ipatlas", Subsystem: "http", Name: "connections",
			Help: "Connections open on a listener with a connection cap (--max-conns).",
		}, []string{"listener"}),
		connWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ipatlas", Subsystem: "http", Name: "connection_cap_waits_total",
			Help: "New connections that found their listener at its cap and waited for a slot.",
		}, []string{"listener"}),
		connIdleClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ipatlas", Subsystem: "http", Name: "connection_cap_idle_closed_total",
			Help: "Idle keep-alive connections closed to make room for a new one at the listener's cap.",
		}, []string{"listener"}),
	}
	var errs []error
	m.requests = register(reg, m.requests, &errs)
	m.conns = register(reg, m.conns, &errs)
	m.connWaits = register(reg, m.connWaits, &errs)
	m.connIdleClosed = register(reg, m.connIdleClosed, &errs)
	m.duration = register(reg, m.duration, &errs)
	m.queries = register(reg, m.queries, &errs)
	m.inflight = register(reg, m.inflight, &errs)
	// Export every outcome from the start, so that rates of rare errors
	// exist before the first one happens.
	m.success = m.queries.WithLabelValues("success")
	for _, c := range ipatlas.Codes() {
		m.queries.WithLabelValues(string(c))
	}
	return m, errors.Join(errs...)
}

// register registers c, or returns the collector already registered under
// the same description (two servers sharing one registry share metrics).
// Any other failure (a different collector under the same name) is
// reported and c is used unregistered: the server still works, only that
// metric is not exported.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errs *[]error) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*errs = append(*errs, err)
	}
	return c
}

// methodLabel bounds the method label to the methods HTTP defines.
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "OTHER"
}

// statusText avoids formatting the common statuses on every request.
var statusLabels = func() map[int]string {
	m := make(map[int]string)
	for _, s := range []int{200, 201, 204, 301, 302, 304, 400, 401, 402, 403, 404, 405, 409, 413, 415, 421, 422, 429, 500, 502, 503, 504} {
		m[s] = strconv.Itoa(s)
	}
	return m
}()

func statusLabel(s int) string {
	if l, ok := statusLabels[s]; ok {
		return l
	}
	return strconv.Itoa(s)
}
