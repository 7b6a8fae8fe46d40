package names

// IsISO3166_2 reports whether code is an ISO 3166-2 code, of any level,
// current or withdrawn, written in upper case with its hyphen: "US-CA",
// "GB-BST" (a London borough), "IT-RM" (a metropolitan city), "CN-11"
// (Beijing's code until 2017). The code's country part is its country, so
// "US-ZZ" and "DE-CA" are not. It allocates nothing: the table is one
// constant string of fixed-width records, searched by halves.
func IsISO3166_2(code string) bool {
	if len(code) < 4 || len(code) > 6 || code[2] != '-' {
		return false
	}
	var key [isoRecordLen]byte
	for i := range key {
		key[i] = ' '
	}
	copy(key[:2], code[:2])
	copy(key[2:], code[3:])
	lo, hi := 0, len(isoSubdivisions)/isoRecordLen
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if isoSubdivisions[m*isoRecordLen:(m+1)*isoRecordLen] < string(key[:]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(isoSubdivisions)/isoRecordLen && isoSubdivisions[lo*isoRecordLen:(lo+1)*isoRecordLen] == string(key[:])
}

// isoRecordLen is the width of a record of isoSubdivisions.
const isoRecordLen = 5
