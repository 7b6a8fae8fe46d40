package server

import (
	"errors"
	"strconv"
	"strings"

	"github.com/ipatlas/ipatlas"
)

// parseFields reads the optional "fields" list of a query or batch body.
// No list is the common case and costs nothing. An unknown name is
// answered with ipatlas.ParseFields's English text and its Chinese
// counterpart.
func parseFields(names []string) (ipatlas.FieldSet, *failure) {
	if len(names) == 0 {
		return 0, nil
	}
	set, err := ipatlas.ParseFields(names)
	if err == nil {
		return set, nil
	}
	for _, n := range names {
		if looksSecret(n) {
			return 0, bodyFail(ipatlas.CodeInvalidRequest,
				`unknown field in "fields": `+echo(n)+"; the record's fields are "+strings.Join(ipatlas.RecordFields(), ", "),
				`"fields" 中有未知字段：（疑似 API 密钥，不予回显）；可用字段：`+strings.Join(ipatlas.RecordFields(), ", "))
		}
	}
	var e *ipatlas.Error
	if !errors.As(err, &e) {
		return 0, bodyFail(ipatlas.CodeInvalidRequest, err.Error(), err.Error())
	}
	zh := e.Message
	for _, n := range names {
		if _, ok := ipatlas.FieldNamed(n); !ok {
			zh = unknownFieldTextZh(n)
			break
		}
	}
	return 0, bodyFail(ipatlas.CodeInvalidRequest, e.Message, zh)
}

// unknownFieldTextZh is the Chinese text for a "fields" entry that names
// no field: the name and the names allowed.
func unknownFieldTextZh(name string) string {
	return `"fields" 中有未知字段 ` + strconv.Quote(ipatlas.ShortFieldName(name)) + "；可用字段：" + strings.Join(ipatlas.RecordFields(), ", ")
}

// partialEnvelope is the success envelope of a query that named fields:
// ipatlas.Envelope with the record restricted to them.
type partialEnvelope struct {
	Success bool                   `json:"success"`
	Data    *ipatlas.PartialRecord `json:"data"`
	Meta    ipatlas.Meta           `json:"meta"`
}

// recordData is what goes in a success's "data": the record itself when
// every field is wanted (the common, cheaper path), else the selection.
func recordData(rec *ipatlas.Record, fields ipatlas.FieldSet) any {
	if fields.All() {
		return rec
	}
	return fields.Partial(rec)
}
