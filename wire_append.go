package ipatlas

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// AppendSuccess appends to dst the body of a successful location query
// around data, a record already encoded as JSON (as geo's Engine.AppendJSON
// writes it): the very bytes a json.Encoder with HTML escaping off writes
// for Envelope{Success: true, Data: record, Meta: meta}, trailing newline
// included. It spares the answer reflection and an allocation; a test holds
// it to encoding/json, so a field added to Envelope or Meta must be added
// here too.
func AppendSuccess(dst, data []byte, meta Meta) []byte {
	dst = append(dst, `{"success":true,"data":`...)
	dst = append(dst, data...)
	dst = append(dst, `,"meta":{"isLoggedIn":`...)
	dst = strconv.AppendBool(dst, meta.IsLoggedIn)
	dst = append(dst, `,"isApiRequest":`...)
	dst = strconv.AppendBool(dst, meta.IsAPIRequest)
	dst = append(dst, `,"currentCredits":`...)
	dst = strconv.AppendInt(dst, meta.CurrentCredits, 10)
	return append(dst, "}}\n"...)
}

// AppendHostname appends to dst the record encoded in data (a Record as
// encoding/json writes it with HTML escaping off, without its host name
// members, as geo's Engine.AppendJSON writes it) with Hostname set to name
// and HostnameConfirmed to confirmed: the very bytes encoding/json writes
// for that record. The host name members are Record's last, so they go
// before the object's closing brace.
func AppendHostname(dst, data []byte, name string, confirmed *bool) []byte {
	if name == "" && confirmed == nil || len(data) < 2 {
		return append(dst, data...)
	}
	body := data[:len(data)-1] // without the closing brace
	dst = append(dst, body...)
	sep := body[len(body)-1] != '{'
	if name != "" {
		if sep {
			dst = append(dst, ',')
		}
		dst = appendJSONString(append(dst, `"hostname":`...), name)
		sep = true
	}
	if confirmed != nil {
		if sep {
			dst = append(dst, ',')
		}
		dst = strconv.AppendBool(append(dst, `"hostname_confirmed":`...), *confirmed)
	}
	return append(dst, '}')
}

// appendJSONString appends s as encoding/json (HTML escaping off) writes
// a string. Host names are plain ASCII, which needs no escape; anything
// else takes encoding/json's own path.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(s) // a string always encodes
			return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
