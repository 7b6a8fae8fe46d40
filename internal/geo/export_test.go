package geo

import "net/netip"

// CorrectionRegion is the ISO 3166-2 code the correction that answers
// addr (in AS asn) names, and whether one answers it: the record has no
// field for it yet.
func CorrectionRegion(e *Engine, addr netip.Addr, asn uint32) (string, bool) {
	o := e.local.Load()
	if o == nil {
		return "", false
	}
	v := o.lookup(addr, asn)
	if v == nil {
		return "", false
	}
	return v.region, true
}
