package server

import "github.com/ipatlas/ipatlas"

// parseFields reads the optional "fields" list of a query or batch body.
// No list is the common case and costs nothing.
func parseFields(names []string) (ipatlas.FieldSet, *bodyError) {
	if len(names) == 0 {
		return 0, nil
	}
	set, err := ipatlas.ParseFields(names)
	if err == nil {
		return set, nil
	}
	for _, n := range names {
		if _, ok := ipatlas.FieldNamed(n); !ok {
			return 0, &bodyError{ipatlas.CodeInvalidRequest,
				ipatlas.UnknownFieldText(n, ipatlas.English), ipatlas.UnknownFieldText(n, ipatlas.Chinese)}
		}
	}
	return 0, &bodyError{ipatlas.CodeInvalidRequest, err.Error(), err.Error()} // not reached
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
