package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/account"
)

// querySeeds are bodies worth starting from: valid ones, and each kind of
// refusal the decoder knows. testdata/fuzz/FuzzDecodeQuery holds more.
var querySeeds = []string{
	`{"ip":"8.8.8.8"}`,
	`{"ip":"2001:4860:4860::8888","lang":"zh","fields":["city","asn"]}`,
	`{"ip":"8.8.8.8","IP":"1.1.1.1"}`,
	`{"ip":"8.8.8.8","\u0069p":"1"}`,
	`{"\u212aey":1,"key":2}`,
	`{"ip":8}`,
	`{"ip":"8.8.8.8"} x`,
	`[1,2]`,
	`null`,
	` `,
	`{"a":{"b":[{"c":"}"}]},"ip":"\"\\"}`,
	"{\"ip\":\"\xff\"}",
	"{\"\xff\":1,\"\xfe\":2,\"\\ufffd\":3}",
	`{"ip":"1.1.1.1",}`,
	`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
}

// FuzzDecodeQuery feeds arbitrary bodies to the server's JSON decoder. It
// must never panic, every refusal must be a 4xx code with texts in both
// languages, and whatever it accepts must be one valid JSON object without
// duplicate keys (checked here with encoding/json's tokenizer, independently
// of the decoder's own scan) and, when a list of keys is given, without
// others.
func FuzzDecodeQuery(f *testing.F) {
	for _, s := range querySeeds {
		f.Add([]byte(s))
	}
	allowed := []string{"ip", "lang"}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, list := range [][]string{nil, allowed} {
			var q ipatlas.QueryRequest
			berr := decodeJSON(data, &q, list)
			if berr != nil {
				if st := berr.code.HTTPStatus(); st < 400 || st > 499 {
					t.Fatalf("refusal %s maps to %d", berr.code, st)
				}
				if berr.Error() == "" || berr.code.Text(ipatlas.English) == "" {
					t.Fatalf("refusal without text: %#v", berr)
				}
				_ = berr.detail(ipatlas.Chinese)
				continue
			}
			if !json.Valid(data) {
				t.Fatalf("accepted invalid JSON %q", data)
			}
			keys, ok := topLevelKeys(data)
			if !ok {
				t.Fatalf("accepted %q, which is not one JSON object", data)
			}
			for i, k := range keys {
				if strings.ContainsRune(k, utf8.RuneError) {
					// encoding/json turns invalid UTF-8 into U+FFFD, so
					// "\xff" and "\xfe" read alike here but differ to the
					// decoder's scan of the raw bytes. Neither can name a
					// field (no field name holds U+FFFD), so there is no
					// ambiguity to refuse.
					continue
				}
				for _, other := range keys[:i] {
					if strings.EqualFold(k, other) {
						t.Fatalf("accepted duplicate keys %q and %q in %q", other, k, data)
					}
				}
				if list != nil && !containsFold(list, k) {
					t.Fatalf("accepted unknown key %q with a list of keys", k)
				}
			}
		}
	})
}

// topLevelKeys lists the keys of the one JSON object in data, with
// encoding/json's tokenizer.
func topLevelKeys(data []byte) ([]string, bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	tok, err := d.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, false
		}
		k, ok := tok.(string)
		if !ok {
			return nil, false
		}
		keys = append(keys, k)
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, false
		}
	}
	if tok, err := d.Token(); err != nil || tok != json.Delim('}') {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false
	}
	return keys, true
}

func containsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}

// FuzzQueryHandler sends arbitrary bodies, content types and Authorization
// values through the whole public handler, with a real store and a key
// whose account has no credits. Whatever comes in, the answer is a JSON
// envelope with a code of the table and a 4xx status (a valid public
// address ends at 402 InsufficientCredits), and nothing is ever charged.
func FuzzQueryHandler(f *testing.F) {
	e := newEnv(f, func(c *Config) {
		c.AuthFailures = DefaultAuthFailures
		c.AuthFailureWindow, c.AuthMaxBackoff = DefaultAuthFailureWindow, DefaultAuthMaxBackoff
		c.Logger = slog.New(slog.DiscardHandler) // too many lines to keep
	})
	_, broke := e.customer(f, account.Pro, 0, 0)
	for _, s := range querySeeds {
		f.Add([]byte(s), "application/json", "")
	}
	f.Add([]byte(`{"ip":"8.8.8.8"}`), "text/plain", "")
	f.Add([]byte(`{"ip":"8.8.8.8"}`), "", "Basic eDp5")
	f.Add([]byte(`{"ip":"10.0.0.1"}`), "application/json; charset=utf-8", "bearer ")
	f.Fuzz(func(t *testing.T, body []byte, ctype, auth string) {
		r := httptest.NewRequest("POST", "http://example.com/api/ip-query", bytes.NewReader(body))
		r.RemoteAddr = testPeer
		r.Header["Content-Type"] = []string{ctype}
		if auth == "" {
			auth = "Bearer " + broke.Secret
		}
		r.Header["Authorization"] = []string{auth}
		w := httptest.NewRecorder()
		e.pub.ServeHTTP(w, r)
		if w.Code < 400 || w.Code > 499 {
			t.Fatalf("status %d for body %q, type %q, auth %q: %s", w.Code, body, ctype, auth, w.Body)
		}
		var env ipatlas.Envelope
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
			t.Fatalf("not an envelope: %s", w.Body)
		}
		if env.Success || env.Code.HTTPStatus() != w.Code || env.Error == "" {
			t.Fatalf("envelope %+v with status %d", env, w.Code)
		}
		if env.Meta.CurrentCredits != 0 {
			t.Fatalf("credits %d on an account that has none", env.Meta.CurrentCredits)
		}
		u, err := e.svc.Usage(t.Context(), broke.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Used != 0 || u.Credits != 0 {
			t.Fatalf("usage %+v after body %q", u, body)
		}
	})
}

// FuzzQueryFastDecode holds the query's direct reading of the common body
// (decodeQuery) to decodeJSON: the same request, or the same refusal, for
// every body.
func FuzzQueryFastDecode(f *testing.F) {
	for _, s := range querySeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"ip":"8.8.8.8","lang":"zh"}`, ` { "lang" : "en" , "ip" : "::1" } `, `{"lang":"fr","ip":""}`,
		`{"ip":"8.8.8.8","ip":"1.1.1.1"}`, `{"ip":"1","Lang":"zh"}`, `{"ip":null}`, `{}`,
		`{"ip":"é"}`, `{"ip":"\u00e9"}`, `{"ip":"8.8.8.8","fields":[]}`, `{"ip":"8.8.8.8","x":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow ipatlas.QueryRequest
		ferr, serr := decodeQuery(data, &fast), decodeJSON(data, &slow, nil)
		if !reflect.DeepEqual(ferr, serr) {
			t.Fatalf("%q: decodeQuery refused with %v, decodeJSON with %v", data, ferr, serr)
		}
		if serr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: decodeQuery read %+v, decodeJSON %+v", data, fast, slow)
		}
	})
}
