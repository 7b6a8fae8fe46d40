package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// startGuarded serves h on a real listener the way ipatlas serve does:
// through GuardFraming, with serve's header limit.
func startGuarded(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	ts.Config.MaxHeaderBytes = 16 << 10
	ts.Config.ReadHeaderTimeout = 5 * time.Second
	ts.Listener = GuardFraming(ts.Config, ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

type rawAnswer struct {
	status int
	header http.Header
	body   string
	close  bool // the answer says the connection closes ("Connection: close", which ReadResponse takes out of header)
}

// rawConn is a client connection that writes bytes as given and reads
// answers.
type rawConn struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A guard against a hang, not a measure: a connection left open fails
	// the test at the deadline instead of blocking it.
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{c, bufio.NewReader(c)}
}

func (c *rawConn) send(t *testing.T, raw string) {
	t.Helper()
	if _, err := io.WriteString(c.c, raw); err != nil {
		t.Fatal(err)
	}
}

// next reads one answer; ok is false when the server closed the
// connection instead.
func (c *rawConn) next(t *testing.T) (a rawAnswer, ok bool) {
	t.Helper()
	res, err := http.ReadResponse(c.br, nil)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return a, false
		}
		t.Fatalf("reading an answer: %v (a connection left open?)", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return rawAnswer{res.StatusCode, res.Header, string(b), res.Close}, true
}

// untilClosed reads answers until the server closes the connection.
func (c *rawConn) untilClosed(t *testing.T) []rawAnswer {
	t.Helper()
	var out []rawAnswer
	for {
		a, ok := c.next(t)
		if !ok {
			return out
		}
		out = append(out, a)
	}
}

// converse writes raw to a new connection at addr. With open false it
// reads answers until the server closes the connection and wants exactly
// want of them (any number when want < 0). With open true it appends GET
// /api/ping, reads want answers and the ping's, and wants the connection
// open after them.
func converse(t *testing.T, addr, raw string, want int, open bool) []rawAnswer {
	t.Helper()
	c := dialRaw(t, addr)
	if !open {
		c.send(t, raw)
		out := c.untilClosed(t)
		if want >= 0 && len(out) != want || len(out) == 0 {
			t.Fatalf("%d answers before the close, want %d: %+v", len(out), want, out)
		}
		return out
	}
	c.send(t, raw+"GET /api/ping HTTP/1.1\r\nHost: x\r\n\r\n")
	var out []rawAnswer
	for range want + 1 {
		a, ok := c.next(t)
		if !ok {
			t.Fatalf("the connection closed after %d answers, want %d and open: %+v", len(out), want+1, out)
		}
		out = append(out, a)
	}
	return out
}

func (a rawAnswer) code() ipatlas.ErrorCode {
	i := strings.Index(a.body, `"code":"`)
	if i < 0 {
		return ""
	}
	rest := a.body[i+len(`"code":"`):]
	return ipatlas.ErrorCode(rest[:strings.IndexByte(rest, '"')])
}

// A request whose body two parsers could frame two ways is refused with
// one answer, and nothing after it on the connection is read: the request
// hidden in its body is never answered, and nothing is charged. Requests
// framed one way keep their connection open.
func TestSmuggling(t *testing.T) {
	e := newEnv(t)
	acct, k := e.customer(t, account.Pro, 0, 100)
	addr := startGuarded(t, e.pub)
	admin := startGuarded(t, e.admin)

	// A public address: answered, it would be a charged success.
	body := `{"ip":"8.8.8.8"}`
	query := func(proto, extra string) string {
		return "POST /api/ip-query " + proto + "\r\nHost: x\r\nAuthorization: Bearer " + k.Secret +
			"\r\nContent-Type: application/json\r\n" + extra + "\r\n"
	}
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	chunked := chunk(body) + "0\r\n\r\n"

	refused := []struct {
		name, raw string
	}{
		{"chunked and Content-Length", query("HTTP/1.1", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") + chunked + smuggled},
		{"Content-Length covering the chunks", query("HTTP/1.1", "Transfer-Encoding: chunked\r\nContent-Length: "+strconv.Itoa(len(chunked))+"\r\n") + chunked + smuggled},
		{"lower-case names", query("HTTP/1.1", "content-length: 5\r\ntransfer-encoding: chunked\r\n") + chunked + smuggled},
		{"HTTP/1.0 keep-alive, chunked and Content-Length", query("HTTP/1.0", "Connection: keep-alive\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\nTransfer-Encoding: chunked\r\n") + body + smuggled},
		{"HTTP/1.0 keep-alive, chunked alone", query("HTTP/1.0", "Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n") + chunked + smuggled},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			checkRefused(t, converse(t, addr, tc.raw, 1, false)[0])
		})
	}

	// The scan follows a connection's requests: the third one here is
	// refused, after two framed by their length.
	t.Run("third request", func(t *testing.T) {
		c := dialRaw(t, addr)
		for _, raw := range []string{
			"GET /api/ping HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
			query("HTTP/1.1", "Content-Length: "+strconv.Itoa(len(body))+"\r\n") + body,
		} {
			c.send(t, raw)
			if a, ok := c.next(t); !ok || a.status != 200 || a.close {
				t.Fatalf("answer %v %+v, want 200 on an open connection", ok, a)
			}
		}
		c.send(t, query("HTTP/1.1", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")+chunked+smuggled)
		got := c.untilClosed(t)
		if len(got) != 1 {
			t.Fatalf("%d answers, want 1: %+v", len(got), got)
		}
		checkRefused(t, got[0])
	})

	// A chunked request is fine and answered; its connection closes, as
	// the scan does not follow chunks.
	t.Run("chunked alone", func(t *testing.T) {
		got := converse(t, addr, query("HTTP/1.1", "Transfer-Encoding: chunked\r\n")+chunk(`{"ip":"10.0.0.1"}`)+"0\r\n\r\n"+smuggled, 1, false)
		if got[0].status != 400 || got[0].code() != ipatlas.CodePrivateIP || !got[0].close {
			t.Errorf("answer %d %v %s, want 400 PrivateIP and Connection: close", got[0].status, got[0].header, got[0].body)
		}
	})

	// Pipelined in front of a smuggling attempt, a request is answered,
	// and the connection closes after it.
	// Whether the server reads both at once or one after the other, the
	// smuggled request is never answered.
	t.Run("pipelined before", func(t *testing.T) {
		got := converse(t, addr, "GET /api/ping HTTP/1.1\r\nHost: x\r\n\r\n"+
			query("HTTP/1.1", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")+chunked+smuggled, -1, false)
		if got[0].status != 200 || len(got) > 2 {
			t.Fatalf("answers %+v, want 200 and at most the refusal", got)
		}
		if len(got) == 2 {
			checkRefused(t, got[1])
		} else if !got[0].close {
			t.Errorf("the only answer lacks Connection: close: %v", got[0].header)
		}
	})

	// net/http answers "OPTIONS *" without a handler: the request after
	// it, which a proxy may have taken for the rest of its body, is
	// refused.
	t.Run("OPTIONS *", func(t *testing.T) {
		got := converse(t, addr, "OPTIONS * HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"+chunked+smuggled, 2, false)
		if got[0].status != 200 || got[1].status != 400 || got[1].code() != ipatlas.CodeInvalidRequest {
			t.Errorf("answers %+v, want 200 from net/http, then 400 InvalidRequest", got)
		}
	})

	// Bodies framed by their length are skipped whatever they hold, and
	// the connection stays open.
	headLike := "x\r\n\r\nPOST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n"
	keepAlive := []struct {
		name, raw string
		status    int
	}{
		{"query", query("HTTP/1.1", "Content-Length: "+strconv.Itoa(len(body))+"\r\n") + body, 200},
		{"body that looks like a head", query("HTTP/1.1", "Content-Length: "+strconv.Itoa(len(headLike))+"\r\n") + headLike, 400},
		{"CR LF after a POST body", query("HTTP/1.1", "Content-Length: "+strconv.Itoa(len(body))+"\r\n") + body + "\r\n", 200},
		{"equal Content-Lengths", query("HTTP/1.1", "Content-Length: 16\r\nContent-length: 16\r\n") + body, 200},
		{"HTTP/1.0 keep-alive", query("HTTP/1.0", "Connection: keep-alive\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n") + body, 200},
		{"GET", "GET /api/ip/myip HTTP/1.1\r\nHost: x\r\n\r\n", 200},
		{"bare LF", "GET /api/ip/myip HTTP/1.1\nHost: x\n\n", 200},
	}
	for _, tc := range keepAlive {
		t.Run("keep-alive "+tc.name, func(t *testing.T) {
			got := converse(t, addr, tc.raw, 1, true)
			if got[0].status != tc.status || got[1].status != 200 || got[1].close {
				t.Errorf("answers %+v, want %d then 200 on an open connection", got, tc.status)
			}
		})
	}
	checkLedger(t, e, acct.ID, 100, 5) // four keep-alive queries and the third request

	// The admin listener refuses the same, before the token is looked at
	// or an account created.
	t.Run("admin", func(t *testing.T) {
		create := `{"name":"smuggler","tier":"free"}`
		raw := "POST /admin/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testAdminToken +
			"\r\nContent-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" +
			chunk(create) + "0\r\n\r\n" + smuggled
		got := converse(t, admin, raw, 1, false)
		if got[0].status != 400 || !strings.Contains(got[0].body, `"code":"InvalidRequest"`) || !got[0].close {
			t.Errorf("answer %d %v %s, want 400 InvalidRequest and Connection: close", got[0].status, got[0].header, got[0].body)
		}
		as, err := e.svc.Accounts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			if a.Name == "smuggler" {
				t.Error("the refused request created an account")
			}
		}
		got = converse(t, admin, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 1, true)
		if got[0].status != 200 {
			t.Errorf("healthz: %+v", got)
		}
	})
}

func checkRefused(t *testing.T, a rawAnswer) {
	t.Helper()
	if a.status != 400 || a.code() != ipatlas.CodeInvalidRequest || !strings.Contains(a.body, "ambiguous") {
		t.Errorf("answer %d %s, want 400 InvalidRequest about the ambiguous length", a.status, a.body)
	}
	if !a.close {
		t.Errorf("the answer does not say the connection closes: %v", a.header)
	}
}

// Without GuardFraming, a chunked request still closes its connection.
func TestChunkedClosesWithoutGuard(t *testing.T) {
	e := newEnv(t)
	ts := httptest.NewServer(e.pub)
	defer ts.Close()
	raw := "POST /api/ip-query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" +
		chunk(`{"ip":"8.8.8.8"}`) + "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	got := converse(t, ts.Listener.Addr().String(), raw, 1, false)
	if got[0].status != 401 || !got[0].close {
		t.Errorf("answer %d %v, want 401 and Connection: close", got[0].status, got[0].header)
	}
}

// CONNECT gets the envelope, like every other method, on both listeners.
func TestConnect(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		h      http.Handler
		target string
		status int
		want   string
	}{
		{"public authority", e.pub, "example.com:443", 405, `"code":"MethodNotAllowed"`},
		{"public path", e.pub, "/api/ping", 405, `"code":"MethodNotAllowed"`},
		{"admin authority", e.admin, "example.com:443", 404, `"code":"NotFound"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startGuarded(t, tc.h)
			got := converse(t, addr, "CONNECT "+tc.target+" HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 1, true)
			if got[0].status != tc.status || got[0].header.Get("Content-Type") != "application/json" || !strings.Contains(got[0].body, tc.want) {
				t.Errorf("answer %d %v %s, want %d %s", got[0].status, got[0].header, got[0].body, tc.status, tc.want)
			}
			if tc.status == 405 && got[0].header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}
}

// BenchmarkFramingScan is the guard's cost per request on the wire: a
// Get-my-IP head (no parse: it names neither framing header) and a query's
// head and body (parsed with textproto for its Content-Length), as one
// keep-alive connection delivers them.
func BenchmarkFramingScan(b *testing.B) {
	body := `{"ip":"8.8.8.8"}`
	for _, bc := range []struct{ name, raw string }{
		{"myip", "GET /api/ip/myip HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: curl/8.5.0\r\nAccept: */*\r\n\r\n"},
		{"query", "POST /api/ip-query HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: Go-http-client/1.1\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\nAuthorization: Bearer ipa_0123456789ab_" + strings.Repeat("x", 43) +
			"\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n" + body},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := &framedConn{limit: 1 << 20}
			raw := []byte(bc.raw)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				c.scan(raw)
			}
			if c.done || c.heads == 0 {
				b.Fatalf("the scan stopped or saw nothing: %+v", c.flag.Load())
			}
		})
	}
}

// FuzzFramingHead holds the scan to net/http's reading of a request head:
// wherever net/http accepts a head, the scan ends it at the same byte, and
// reads the same body length, or flags it when net/http frames it by
// Transfer-Encoding. A head net/http accepts is never flagged as unparsed.
func FuzzFramingHead(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\ncontent-length:  17 \r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\nContent-Length: 5\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n 6\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		"POST /q HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
		"POST /q HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\nContent-Length\r\n: 5\r\n\r\n",
		"POST /q HTTP/1.1\r\nHost: x\r\n\r\r\nContent-Length: 5\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 3000 {
			return
		}
		br := bufio.NewReader(strings.NewReader(raw))
		req, err := http.ReadRequest(br)
		if err != nil || req.ProtoMajor != 1 {
			return // net/http's server refuses it and closes: nothing follows
		}
		headLen := len(raw) - br.Buffered()

		short := &framedConn{limit: 1 << 20}
		short.scan([]byte(raw[:headLen-1]))
		if short.heads != 0 {
			t.Fatalf("the scan ended the head before net/http did, at %d of %d", headLen-1, headLen)
		}
		c := &framedConn{limit: 1 << 20}
		c.scan([]byte(raw[:headLen]))
		verdict := c.flag.Load() & 0xff
		if c.heads != 1 && verdict == 0 {
			t.Fatalf("the scan did not end the head where net/http did (%d bytes)", headLen)
		}
		switch {
		case verdict == framingUnchecked:
			t.Fatalf("net/http accepts the head (length %d, coding %q), the scan could not check it", req.ContentLength, req.TransferEncoding)
		case len(req.TransferEncoding) > 0:
			if verdict != framingChunked && verdict != framingTEAndCL {
				t.Fatalf("net/http reads it chunked, the scan's verdict is %d", verdict)
			}
		case verdict == framingTEOnHTTP1:
			if req.ProtoAtLeast(1, 1) {
				t.Fatalf("flagged as HTTP/1.0 with Transfer-Encoding, but it is %s", req.Proto)
			}
		case verdict != 0:
			t.Fatalf("net/http reads %d bytes of body, the scan's verdict is %d", req.ContentLength, verdict)
		case c.body != req.ContentLength:
			t.Fatalf("net/http reads %d bytes of body, the scan %d", req.ContentLength, c.body)
		}
	})
}
