package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ipatlas/ipatlas"
)

// Request framing and smuggling.
//
// A request whose body length two parsers can read two ways lets a client
// hide a second request inside the first: a proxy that frames by
// Content-Length forwards "one" request, and the server, framing by
// Transfer-Encoding, reads the rest of it as the next request on the
// connection, whoever's it is. So a request carrying Transfer-Encoding
// together with Content-Length, or Transfer-Encoding on HTTP/1.0 (where it
// does not exist and net/http frames by Content-Length), is refused with
// 400 and its connection closed after the answer; nothing after it on that
// connection is read.
//
// net/http erases the evidence before any handler runs: it deletes
// Content-Length from a chunked request's header, and Transfer-Encoding
// from an HTTP/1.0 request's. So GuardFraming wraps the connections: each
// one reads the request heads off the wire, as net/http receives them, and
// parses them with the same textproto reader net/http uses, so that both
// see the same headers (a head whose only framing field is one plain
// Content-Length is read directly; FuzzFramingHead holds both ways to
// net/http's). To find the next head it skips the body by its
// Content-Length; it does not follow chunked bodies, so it stops at the
// first request carrying Transfer-Encoding, and that request's connection
// is closed after the answer even when it is a plain, valid chunked
// request (its client reconnects; chunked uploads are rare here, the
// bodies being a few bytes of JSON).
//
// The first head it cannot vouch for is recorded with its ordinal on the
// connection; the handler counts the requests it serves on the connection
// and, at that ordinal, refuses or closes. Requests pipelined before it are
// answered and the connection closed after the first of them. Without
// GuardFraming (a handler mounted on some other server), a chunked request
// still closes its connection, which is what keeps TE with CL from
// smuggling on HTTP/1.1; only the refusals need the wrapper.

// GuardFraming prepares hs to serve ln with the checks above: it sets
// hs.ConnContext (keeping one already set) and returns the listener to
// pass to hs.Serve. Set hs.MaxHeaderBytes and DisableGeneralOptionsHandler
// before the call.
func GuardFraming(hs *http.Server, ln net.Listener) net.Listener {
	limit := hs.MaxHeaderBytes
	if limit <= 0 {
		limit = http.DefaultMaxHeaderBytes
	}
	prev := hs.ConnContext
	hs.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prev != nil {
			ctx = prev(ctx, c)
		}
		if fc, ok := c.(*framedConn); ok {
			ctx = context.WithValue(ctx, framedConnKey{}, fc)
		}
		return ctx
	}
	return &framingListener{
		Listener: ln,
		// net/http reads up to MaxHeaderBytes plus 4096 bytes of slack
		// for a head before answering 431.
		limit:       limit + 4096,
		optionsStar: !hs.DisableGeneralOptionsHandler,
	}
}

type framingListener struct {
	net.Listener
	limit       int
	optionsStar bool // net/http answers "OPTIONS *" itself: no handler sees it
}

func (l *framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framedConn{Conn: c, limit: l.limit, optionsStar: l.optionsStar}, nil
}

type framedConnKey struct{}

// A verdict on a request head, recorded with its ordinal.
const (
	framingChunked   = 1 + iota // Transfer-Encoding on HTTP/1.1: fine, but the scan ends there
	framingTEAndCL              // Transfer-Encoding and Content-Length together
	framingTEOnHTTP1            // Transfer-Encoding on HTTP/1.0 (or older)
	framingUnchecked            // a head the scan could not parse (net/http refuses it too)
)

// framedConn is a connection whose request heads are read as they pass.
type framedConn struct {
	net.Conn
	limit       int
	optionsStar bool

	// The scan's state, touched by Read only: net/http never reads a
	// connection from two goroutines at once.
	head     []byte // the head read so far
	lineLen  int    // bytes of the head's current line read so far
	lineHead byte   // the current line's first byte
	body     int64  // body bytes still to skip
	heads    int64  // heads seen that reach the handler
	done     bool

	// flag is the first head the scan could not vouch for: its ordinal
	// shifted left by 8, or'ed with its verdict; 0 while there is none.
	// The handler's goroutine reads it while net/http's background read
	// may be scanning the next head.
	flag   atomic.Uint64
	served atomic.Int64 // requests the handler has begun, on this connection

	tlsOnce sync.Once
	tls     *tls.ConnectionState // of a TLS connection inside the wrapper, once the handler asks
}

// connTLS sets r.TLS for a request on a TLS connection that the guard
// wraps (serve's --tls-cert puts TLS inside it, where the guard reads the
// heads in the clear): net/http cannot see the TLS connection through the
// wrapper, and the handler's rules that depend on HTTPS (secure cookies)
// read r.TLS.
func connTLS(r *http.Request) {
	if r.TLS != nil {
		return
	}
	fc, _ := r.Context().Value(framedConnKey{}).(*framedConn)
	if fc == nil {
		return
	}
	fc.tlsOnce.Do(func() {
		if tc, ok := fc.Conn.(*tls.Conn); ok {
			st := tc.ConnectionState() // the handshake is done: a request was read
			fc.tls = &st
		}
	})
	r.TLS = fc.tls
}

// NetConn is the connection inside the guard, as tls.Conn names it.
func (c *framedConn) NetConn() net.Conn { return c.Conn }

func (c *framedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.done {
		c.scan(p[:n])
	}
	return n, err
}

// CloseWrite keeps net/http's lingering close (half-close, then wait for the
// client to read the answer) working through the wrapper.
func (c *framedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *framedConn) scan(b []byte) {
	for len(b) > 0 && !c.done {
		if c.body > 0 {
			k := min(int64(len(b)), c.body)
			c.body -= k
			b = b[k:]
			continue
		}
		if len(c.head) == 0 && c.lineLen == 0 {
			// net/http drops CR and LF bytes after a POST's body; before
			// any other head it refuses them, and closes.
			i := 0
			for i < len(b) && (b[i] == '\r' || b[i] == '\n') {
				i++
			}
			if b = b[i:]; len(b) == 0 {
				return
			}
		}
		end := c.headEnd(b)
		if end < 0 {
			if len(c.head)+len(b) > c.limit {
				c.stop(c.heads+1, framingUnchecked) // net/http answers 431 and closes
				return
			}
			c.head = append(c.head, b...)
			return
		}
		c.head = append(c.head, b[:end]...)
		b = b[end:]
		c.endHead()
		if cap(c.head) > 4<<10 {
			c.head = nil
		} else {
			c.head = c.head[:0]
		}
	}
}

// headEnd returns the length of the part of b that completes the head (up
// to and with its blank line, "\r\n" or "\n" as net/http reads lines), or
// -1 when b ends inside it. The head's first byte is never CR or LF, so its
// first line is not blank.
func (c *framedConn) headEnd(b []byte) int {
	for i := 0; i < len(b); {
		if c.lineLen == 0 {
			c.lineHead = b[i]
		}
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			c.lineLen += len(b) - i
			return -1
		}
		n := c.lineLen + j
		c.lineLen = 0
		i += j + 1
		if n == 0 || n == 1 && c.lineHead == '\r' {
			return i
		}
	}
	return -1
}

// endHead judges the complete head in c.head and sets up the skip of its
// body.
func (c *framedConn) endHead() {
	ord := c.heads + 1
	if !(c.optionsStar && bytes.HasPrefix(c.head, []byte("OPTIONS * "))) {
		c.heads = ord
	} // else net/http answers it and the handler's next request is ord
	if !mentionsFraming(c.head) {
		return // no body: net/http reads none without either header
	}
	if n, ok := quickLength(c.head); ok {
		c.body = n
		return
	}
	br := headReaders.Get().(*bufio.Reader)
	defer headReaders.Put(br)
	br.Reset(bytes.NewReader(c.head))
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		c.stop(ord, framingUnchecked)
		return
	}
	_, rest, _ := strings.Cut(line, " ")
	_, proto, _ := strings.Cut(rest, " ")
	major, minor, ok := http.ParseHTTPVersion(proto)
	h, err := tp.ReadMIMEHeader()
	if !ok || err != nil {
		c.stop(ord, framingUnchecked) // net/http refuses it too
		return
	}
	cl := h["Content-Length"]
	if _, te := h["Transfer-Encoding"]; te {
		switch {
		case major < 1 || major == 1 && minor < 1:
			c.stop(ord, framingTEOnHTTP1) // net/http frames it by Content-Length
		case len(cl) > 0:
			c.stop(ord, framingTEAndCL)
		default:
			c.stop(ord, framingChunked)
		}
		return
	}
	if len(cl) == 0 {
		return
	}
	// net/http's reading: equal duplicates are one, digits only.
	v := textproto.TrimString(cl[0])
	for _, o := range cl[1:] {
		if textproto.TrimString(o) != v {
			c.stop(ord, framingUnchecked)
			return
		}
	}
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		c.stop(ord, framingUnchecked)
		return
	}
	c.body = int64(n)
}

// headReaders hold the buffers that heads are parsed through.
var headReaders = sync.Pool{New: func() any { return bufio.NewReader(nil) }}

func (c *framedConn) stop(ord int64, verdict uint64) {
	c.done, c.head = true, nil
	c.flag.CompareAndSwap(0, uint64(ord)<<8|verdict)
}

// mentionsFraming reports whether a line of head starts like a
// Content-Length or Transfer-Encoding field, in any case: without one,
// net/http's parse has neither, and the head needs no parsing here.
func mentionsFraming(head []byte) bool {
	for len(head) > 0 {
		if hasPrefixFold(head, "content-length") || hasPrefixFold(head, "transfer-encoding") {
			return true
		}
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			return false
		}
		head = head[i+1:]
	}
	return false
}

// quickLength reads the Content-Length of a plain head without textproto:
// one field of that name with digits only, no Transfer-Encoding, and no
// line folded onto the one before. ok is false for any other head, which
// textproto then parses. Where it answers, net/http reads the same length
// (or refuses the head for some other reason, and closes).
func quickLength(head []byte) (n int64, ok bool) {
	i := bytes.IndexByte(head, '\n')
	if i < 0 {
		return 0, false
	}
	for rest := head[i+1:]; len(rest) > 0; {
		line := rest
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			line, rest = rest[:j], rest[j+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			return n, ok
		case line[0] == ' ' || line[0] == '\t', hasPrefixFold(line, "transfer-encoding"):
			return 0, false
		case hasPrefixFold(line, "content-length"):
			v := line[len("content-length"):]
			if ok || len(v) == 0 || v[0] != ':' {
				return 0, false
			}
			v = bytes.Trim(v[1:], " \t")
			if len(v) == 0 || len(v) > 18 {
				return 0, false
			}
			for _, d := range v {
				if d < '0' || d > '9' {
					return 0, false
				}
				n = n*10 + int64(d-'0')
			}
			ok = true
		}
	}
	return n, ok
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && strings.EqualFold(string(b[:len(prefix)]), prefix)
}

// framing is what the connection's framing allows for r: refuse is the
// reason to refuse it (in English and Chinese) when its body cannot be
// trusted, and mustClose says the connection must close after the answer.
func framing(r *http.Request) (refuse *failure, mustClose bool) {
	mustClose = len(r.TransferEncoding) > 0 // the scan, if any, ended at this request
	fc, _ := r.Context().Value(framedConnKey{}).(*framedConn)
	if fc == nil {
		return nil, mustClose
	}
	k := fc.served.Add(1)
	f := fc.flag.Load()
	if f == 0 {
		return nil, mustClose
	}
	ord, verdict := int64(f>>8), f&0xff
	switch {
	case ord > k:
		return nil, true // a later request, pipelined behind this one
	case ord == k && verdict == framingChunked:
		return nil, true
	case ord == k && verdict == framingTEAndCL:
		return errTEAndCL, true
	case ord == k && verdict == framingTEOnHTTP1:
		return errTEOnHTTP1, true
	}
	// The head was one net/http refuses too, or an earlier request on this
	// connection ended the scan without reaching the handler.
	return errUnchecked, true
}

var (
	errTEAndCL = bodyFail(ipatlas.CodeInvalidRequest,
		"Transfer-Encoding and Content-Length together make the body's length ambiguous",
		"Transfer-Encoding 与 Content-Length 同时出现，请求体长度有歧义")

	errTEOnHTTP1 = bodyFail(ipatlas.CodeInvalidRequest,
		"Transfer-Encoding in an HTTP/1.0 request makes the body's length ambiguous",
		"HTTP/1.0 请求中的 Transfer-Encoding 使请求体长度有歧义")

	errUnchecked = bodyFail(ipatlas.CodeInvalidRequest,
		"the request's framing on this connection cannot be trusted",
		"此连接上的请求分帧不可信")
)
