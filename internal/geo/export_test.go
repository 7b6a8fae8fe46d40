package geo

import (
	"errors"
	"net/netip"
)

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

// ASIndexStopped: a background build of the current dataset's AS index
// told to stop at once leaves no index behind, and the next AS query
// builds it.
func ASIndexStopped(e *Engine) (stopped, builtLater bool) {
	g := e.acquire()
	defer g.release()
	_, _, err := g.buildASIndexAhead(func() bool { return true })
	stopped = errors.Is(err, errASStopped) && g.asBuilt.Load() == nil
	_, err = g.asIndexOf()
	return stopped, err == nil && g.asBuilt.Load() != nil
}
