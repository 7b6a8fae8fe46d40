package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
)

// maxBodyBytes bounds every request body the server reads (the location
// query's and the admin API's).
const maxBodyBytes = 8 << 10

// Header values shared by every response. Assigning these slices directly
// to a header map saves an allocation per header per request; net/http
// only reads them.
var (
	hdrJSON    = []string{"application/json"}
	hdrText    = []string{"text/plain; charset=utf-8"}
	hdrNoStore = []string{"no-store"}
	hdrNosniff = []string{"nosniff"}
	hdrBearer  = []string{`Bearer realm="ipatlas"`}
	hdrAnyOrig = []string{"*"}
	hdrClose   = []string{"close"}
)

var (
	errBatchTooLarge = bodyFail(ipatlas.CodePayloadTooLarge,
		"the limit of a batch body is "+strconv.Itoa(maxBatchBodyBytes)+" bytes",
		"批量请求体上限为 "+strconv.Itoa(maxBatchBodyBytes)+" 字节")
	errTooLarge = bodyFail(ipatlas.CodePayloadTooLarge,
		"the limit is "+strconv.Itoa(maxBodyBytes)+" bytes", "上限为 "+strconv.Itoa(maxBodyBytes)+" 字节")

	errMediaType = bodyFail(ipatlas.CodeUnsupportedMediaType,
		"", "")

	errEmptyBody = bodyFail(ipatlas.CodeInvalidRequest,
		"the body is empty; send a JSON object", "请求体为空，请发送 JSON 对象")

	errNotJSON = bodyFail(ipatlas.CodeInvalidRequest,
		"the body is not valid JSON", "请求体不是有效的 JSON")

	errNotObject = bodyFail(ipatlas.CodeInvalidRequest,
		"the body must be a JSON object", "请求体必须是 JSON 对象")
)

// jsonContentType reports whether a request's Content-Type allows a JSON
// body. A missing Content-Type is accepted (curl -d sends a form type, but
// many minimal clients send none at all); parameters such as charset are
// ignored, and so is case.
func jsonContentType(ct string) bool {
	if ct == "" || ct == "application/json" {
		return true // the common cases, without parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { b := bufPool.Get().(*bytes.Buffer); b.Reset(); return b }

func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 { // a rare huge response should not pin memory
		bufPool.Put(b)
	}
}

// readBody reads at most maxBodyBytes of r's body into a pooled buffer
// (release it with putBuf). A declared Content-Length over the limit is
// refused without reading anything; otherwise http.MaxBytesReader stops
// reading one byte past the limit. Either way the answer says
// "Connection: close", so that net/http does not drain the rest of an
// oversized body to keep the connection: it is never read in full.
func readBody(w *exchange, r *http.Request) (*bytes.Buffer, *failure) {
	return readBodyLimit(w, r, maxBodyBytes, errTooLarge, false)
}

// readBodyLimit is readBody with another limit, for the batches; tooLarge
// is the error that names it. anyType accepts a body whatever its
// Content-Type says, for the shapes of services whose documented
// examples (curl -d '[...]') send a form type with a JSON body: the body
// must still be JSON.
func readBodyLimit(w *exchange, r *http.Request, limit int64, tooLarge *failure, anyType bool) (*bytes.Buffer, *failure) {
	if !anyType && !jsonContentType(r.Header.Get("Content-Type")) {
		return nil, errMediaType
	}
	if r.ContentLength > limit {
		w.Header()["Connection"] = hdrClose
		return nil, tooLarge
	}
	// MaxBytesReader tells the connection it hit the limit through an
	// unexported method of net/http's own ResponseWriter, which the
	// exchange would hide.
	buf := getBuf()
	_, err := buf.ReadFrom(http.MaxBytesReader(w.ResponseWriter, r.Body, limit))
	if err != nil {
		putBuf(buf)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			w.Header()["Connection"] = hdrClose
			return nil, tooLarge
		}
		return nil, bodyFail(ipatlas.CodeInvalidRequest,
			"the body could not be read", "无法读取请求体")

	}
	return buf, nil
}

// decodeJSON is the one JSON decoder of the server. data must hold exactly
// one JSON object: trailing data after it is refused (encoding/json checks
// the whole input before decoding). Wrong types are refused with the
// field's name.
//
// Duplicate keys are refused. encoding/json would silently keep the last
// value and match keys case-insensitively, so {"ip":"8.8.8.8","IP":"10.0.0.1"}
// could mean one address to a proxy or WAF that keeps the first value and
// another to us; refusing removes the ambiguity. Keys are compared the way
// encoding/json matches fields: after unescaping, case-insensitively.
//
// When allowed is not nil, keys other than those are refused too (the admin
// API is strict; the public query ignores unknown keys so that clients may
// send more than we read).
func decodeJSON(data []byte, v any, allowed []string) *failure {
	if len(bytes.TrimSpace(data)) == 0 {
		return errEmptyBody
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return errNotObject
			}
			want := jsonKind(te.Type.Kind().String())
			return bodyFail(ipatlas.CodeInvalidRequest,
				fmt.Sprintf("field %q must be %s, not %s", te.Field, want.en, te.Value),
				fmt.Sprintf("字段 %q 必须是%s，而不是 %s", te.Field, want.zh, te.Value))

		}
		return errNotJSON
	}
	return checkKeys(data, allowed)
}

type kindName struct{ en, zh string }

func jsonKind(k string) kindName {
	switch {
	case k == "string":
		return kindName{"a string", "字符串"}
	case k == "bool":
		return kindName{"a boolean", "布尔值"}
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return kindName{"an integer", "整数"}
	case strings.HasPrefix(k, "float"):
		return kindName{"a number", "数字"}
	case k == "slice" || k == "array":
		return kindName{"an array", "数组"}
	}
	return kindName{"an object", "对象"}
}

// members iterates over the top-level members of an object that
// encoding/json has already validated, without allocating but for escaped
// keys.
type members struct {
	data []byte
	i    int
}

// start reports whether data is an object, and positions m at its first
// member.
func (m *members) start(data []byte) bool {
	m.data = data
	m.i = skipSpace(data, 0)
	if m.i >= len(data) || data[m.i] != '{' {
		return false
	}
	m.i++
	return true
}

// next returns the next member's unescaped key and the offset of its
// value; ok is false after the last member, and err is set for a key
// that does not unescape.
func (m *members) next() (key []byte, value int, ok bool, err *failure) {
	data := m.data
	i := skipSpace(data, m.i)
	if i >= len(data) || data[i] == '}' {
		return nil, 0, false, nil
	}
	if data[i] == ',' {
		i = skipSpace(data, i+1)
	}
	end := skipString(data, i)
	key = data[i+1 : end-1]
	if bytes.IndexByte(key, '\\') >= 0 {
		var s string
		if json.Unmarshal(data[i:end], &s) != nil {
			return nil, 0, false, errNotJSON
		}
		key = []byte(s)
	}
	value = skipSpace(data, skipSpace(data, end)+1) // past ':'
	m.i = skipValue(data, value)
	return key, value, true, nil
}

// checkKeys walks the top-level keys of data, which encoding/json has
// already validated, and refuses duplicates and (when allowed is not nil)
// unknown keys. It allocates only for escaped keys or objects of more
// than a handful of keys.
func checkKeys(data []byte, allowed []string) *failure {
	var small [8][]byte
	keys := small[:0]
	var seen map[string]struct{} // folded keys, once there are many
	var m members
	if !m.start(data) {
		return errNotObject
	}
	for {
		key, _, ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if allowed != nil && !knownKey(key, allowed) {
			return bodyFail(ipatlas.CodeInvalidRequest,
				fmt.Sprintf("unknown field %q", key), fmt.Sprintf("未知字段 %q", key))

		}
		dup := false
		if seen == nil && len(keys) < len(small) {
			for _, k := range keys {
				if bytes.EqualFold(k, key) {
					dup = true
					break
				}
			}
			keys = append(keys, key)
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(keys))
				for _, k := range keys {
					seen[foldKey(k)] = struct{}{}
				}
			}
			f := foldKey(key)
			_, dup = seen[f]
			seen[f] = struct{}{}
		}
		if dup {
			return bodyFail(ipatlas.CodeInvalidRequest,
				fmt.Sprintf("duplicate field %q", key), fmt.Sprintf("重复的字段 %q", key))

		}
	}
}

// hasStringMember reports whether the object data, which encoding/json
// has already validated, has a top-level member name (matched as
// encoding/json matches fields) whose value is a string.
func hasStringMember(data []byte, name string) bool {
	var m members
	if !m.start(data) {
		return false
	}
	for {
		key, v, ok, err := m.next()
		if err != nil || !ok {
			return false
		}
		if v < len(data) && data[v] == '"' && bytes.EqualFold(key, []byte(name)) {
			return true
		}
	}
}

func knownKey(key []byte, allowed []string) bool {
	for _, a := range allowed {
		if bytes.EqualFold(key, []byte(a)) {
			return true
		}
	}
	return false
}

// foldKey maps every rune to the smallest rune of its case-folding orbit,
// so that two keys fold to the same string exactly when bytes.EqualFold
// says they are equal.
func foldKey(k []byte) string {
	var b strings.Builder
	b.Grow(len(k))
	for len(k) > 0 {
		r, n := utf8.DecodeRune(k)
		k = k[n:]
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at d[i] == '"'.
func skipString(d []byte, i int) int {
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(d)
}

// skipValue returns the index just past the value starting at d[i].
func skipValue(d []byte, i int) int {
	depth := 0
	for i < len(d) {
		switch d[i] {
		case '"':
			i = skipString(d, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// encoder is a pooled buffer with a JSON encoder bound to it.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encPool = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false) // bodies are JSON, not HTML; keep "<" readable
	return e
}}

// writeJSON is the one JSON encoder of the server: it renders v into a
// pooled buffer first, so that an encoding failure can still become a
// clean 500 and the response carries a Content-Length.
func writeJSON(w http.ResponseWriter, status int, v any) {
	e := encPool.Get().(*encoder)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		encPool.Put(e)
		// Only a programming error (an unencodable type) gets here.
		http.Error(w, `{"success":false,"error":"Internal server error","code":"InternalError","meta":{"isLoggedIn":false,"isApiRequest":true,"currentCredits":0}}`, http.StatusInternalServerError)
		return
	}
	writeBody(w, status, e.buf.Bytes())
	if e.buf.Cap() <= 64<<10 {
		encPool.Put(e)
	}
}

// writeBody answers with body, a JSON document already encoded.
//
// net/http writes the Content-Length of a body it still holds whole when
// the handler returns (up to bufferBeforeChunking bytes) from a buffer of
// its own, outside the header map; a header in the map costs an entry in
// the map, in the copy net/http makes of it at WriteHeader and in the
// sort it writes it in, and two allocations. So only a larger body gets
// the header from here, which keeps it from being sent chunked.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	if len(body) > bufferBeforeChunking {
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	w.Write(body)
}

// bufferBeforeChunking is the size of the buffer net/http holds a
// response's body in before it writes the head (net/http's
// bufferBeforeChunkingSize).
const bufferBeforeChunking = 2048

// writeText answers with a plain-text body.
func writeText(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	h["Content-Type"] = hdrText
	h["X-Content-Type-Options"] = hdrNosniff
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// requestLang is the language of errors raised before a body names one:
// the first tag of Accept-Language when it is one we speak, else English.
func requestLang(r *http.Request) ipatlas.Lang {
	al := r.Header.Get("Accept-Language")
	if al == "" {
		return ipatlas.English
	}
	if i := strings.IndexAny(al, ",;"); i >= 0 {
		al = al[:i]
	}
	if l, ok := ipatlas.ParseLang(strings.TrimSpace(al)); ok {
		return l
	}
	if len(al) >= 2 && strings.EqualFold(al[:2], "zh") {
		return ipatlas.Chinese // zh-TW, zh-Hant...: the Chinese we have beats English
	}
	return ipatlas.English
}
