package ipatlas

import (
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
