package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/ipatlas/ipatlas"
	apidoc "github.com/ipatlas/ipatlas/api"
	"github.com/ipatlas/ipatlas/internal/account"
	"github.com/ipatlas/ipatlas/internal/servertest"
	"github.com/ipatlas/ipatlas/internal/sqlite"
	"github.com/prometheus/client_golang/prometheus"
)

// testNow is the clock of every test server: 30 seconds before the month
// (UTC) turns, so that every "seconds until reset" is exactly 30.
var testNow = time.Date(2026, 11, 30, 23, 59, 30, 0, time.UTC)

const (
	testAdminToken = "admin-secret-token-for-tests"
	testResetSecs  = "30"
	testPeer       = "203.0.113.7:40000" // a public client address (TEST-NET-3)
)

// env is a server on real parts: a SQLite store in a temp dir, the real
// account Service and Meter, and the geo engine over the geotest fixture.
type env struct {
	srv   *Server
	pub   http.Handler
	admin http.Handler
	store *sqlite.Store
	svc   *account.Service
	meter *account.Meter
	reg   *prometheus.Registry
	logs  *syncBuffer
	ready error // what deps.Ready answers
	mu    sync.Mutex
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// mustNew is New for settings that must be accepted.
func mustNew(t testing.TB, cfg Config, deps Deps) *Server {
	t.Helper()
	s, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newEnv(t testing.TB, configure ...func(*Config)) *env {
	t.Helper()
	p := servertest.New(t, func() time.Time { return testNow })
	store, engine, svc, meter, now := p.Store, p.Geo, p.Accounts, p.Meter, p.Now

	e := &env{store: store, svc: svc, meter: meter, reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	// No limit is on unless a test turns it on; their tables are the
	// default size.
	cfg := Config{
		LimitTableSize: DefaultLimitTableSize,
		AdminToken:     testAdminToken,
		Version:        "test-1.2.3",
		Logger:         slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:            now,
	}
	for _, c := range configure {
		c(&cfg)
	}
	e.srv = mustNew(t, cfg, Deps{
		Geo: engine, Accounts: svc, Meter: meter, Registry: e.reg,
		Ready: func() error { e.mu.Lock(); defer e.mu.Unlock(); return e.ready },
	})
	e.pub, e.admin = e.srv.Handler(), e.srv.AdminHandler()
	return e
}

// customer creates an account with credits and one key; it returns the
// account and the key's secret.
func (e *env) customer(t testing.TB, tier account.Tier, limit, credits int64) (account.Account, account.NewKey) {
	t.Helper()
	ctx := context.Background()
	a, err := e.svc.CreateAccount(ctx, account.AccountParams{Name: "customer", Tier: tier, MonthlyLimit: limit, Credits: &credits})
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.svc.CreateKey(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	return a, k
}

// req describes one request to a handler.
type req struct {
	method, path, body string
	key                string            // bearer secret
	remote             string            // socket peer; testPeer when empty
	host               string            // Host header; example.com when empty
	header             map[string]string // more headers ("Content-Type": "" removes the default)
}

type resp struct {
	*httptest.ResponseRecorder
	req *http.Request
}

func (r resp) env() ipatlas.Envelope {
	var v ipatlas.Envelope
	if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil {
		panic("not an envelope: " + r.Body.String())
	}
	return v
}

func newRequest(q req) *http.Request {
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	r := httptest.NewRequest(q.method, "http://example.com"+q.path, body)
	if q.body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	r.RemoteAddr = testPeer
	if q.remote != "" {
		r.RemoteAddr = q.remote
	}
	if q.host != "" {
		r.Host = q.host
	}
	if q.key != "" {
		r.Header.Set("Authorization", "Bearer "+q.key)
	}
	for k, v := range q.header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	if r.Header.Get("X-Test-Chunked") != "" {
		// As a chunked request arrives: no declared length.
		r.Header.Del("X-Test-Chunked")
		r.ContentLength = -1
	}
	return r
}

// do sends q to the public handler and validates the response against
// api/openapi.yaml.
func (e *env) do(t testing.TB, q req) resp {
	t.Helper()
	r := newRequest(q)
	w := httptest.NewRecorder()
	e.pub.ServeHTTP(w, r)
	checkDoc(t, publicSpec(t), newRequest(q), w)
	return resp{w, r}
}

// doAdmin sends q to the admin handler and validates the response against
// api/admin-openapi.yaml (for paths the document describes).
func (e *env) doAdmin(t testing.TB, q req) resp {
	t.Helper()
	r := newRequest(q)
	w := httptest.NewRecorder()
	e.admin.ServeHTTP(w, r)
	checkDoc(t, adminSpec(t), newRequest(q), w)
	return resp{w, r}
}

func (e *env) query(t testing.TB, key, body string) resp {
	t.Helper()
	return e.do(t, req{method: "POST", path: "/api/ip-query", key: key, body: body})
}

type spec struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	specOnce         sync.Once
	pubSpec, admSpec *spec
	specErr          error
)

func loadSpecs() {
	// pprof's index is HTML; kin-openapi decodes no HTML by itself.
	openapi3filter.RegisterBodyDecoder("text/html", func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	})
	load := func(data []byte) *spec {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(data)
		if err != nil {
			specErr = err
			return nil
		}
		if err := doc.Validate(loader.Context); err != nil {
			specErr = err
			return nil
		}
		// The requests of the tests go to http://example.com; the
		// documents' servers are templates for real deployments.
		doc.Servers = openapi3.Servers{{URL: "http://example.com"}}
		router, err := gorillamux.NewRouter(doc)
		if err != nil {
			specErr = err
			return nil
		}
		return &spec{doc: doc, router: router}
	}
	pubSpec = load(apidoc.OpenAPI)
	if specErr == nil {
		admSpec = load(apidoc.AdminOpenAPI)
	}
}

func publicSpec(t testing.TB) *spec {
	specOnce.Do(loadSpecs)
	if specErr != nil {
		t.Fatalf("OpenAPI documents: %v", specErr)
	}
	return pubSpec
}

func adminSpec(t testing.TB) *spec {
	specOnce.Do(loadSpecs)
	if specErr != nil {
		t.Fatalf("OpenAPI documents: %v", specErr)
	}
	return admSpec
}

// checkDoc validates a real response against the document: the route and
// method must be documented (except where noted), the status must be one
// the operation lists, and the headers and body must match their schemas.
func checkDoc(t testing.TB, s *spec, r *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	route, params, err := s.router.FindRoute(r)
	if err != nil && r.Method == http.MethodHead {
		// Every GET answers HEAD; the documents list HEAD only where it
		// is a feature (ping).
		g := r.Clone(r.Context())
		g.Method = http.MethodGet
		route, params, err = s.router.FindRoute(g)
	}
	if err != nil {
		// Unknown paths and methods have no operation to check against;
		// their 404/405 bodies (and the admin listener's 401 and 429 for
		// unknown protected paths) are checked by the tests themselves.
		if w.Code != http.StatusNotFound && w.Code != http.StatusMethodNotAllowed && w.Code != http.StatusUnauthorized && w.Code != http.StatusTooManyRequests {
			t.Errorf("%s %s answered %d but is not in the OpenAPI document: %v", r.Method, r.URL.Path, w.Code, err)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: r, PathParams: params, Route: route,
		},
		Status: w.Code,
		Header: w.Header(),
		Body:   io.NopCloser(bytes.NewReader(w.Body.Bytes())),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
		},
	}
	if r.Method == http.MethodHead {
		in.Body = io.NopCloser(strings.NewReader(""))
		in.Options.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s → %d does not match the OpenAPI document: %v\nbody: %s", r.Method, r.URL.Path, w.Code, err, w.Body.String())
	}
}
