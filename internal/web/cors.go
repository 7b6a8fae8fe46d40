package web

import "net/http"

var hdrAnyOrigin = []string{"*"}

// CrossOrigin lets pages of any origin read h's answers by sending
// Access-Control-Allow-Origin: *. The page needs it on the IPv4-only and
// IPv6-only endpoints when they live on their own hosts (Options.IPv4URL,
// IPv6URL): a fetch from the page's origin to another one fails without it
// even when the network is fine. It is safe there and only there: those
// endpoints take no credentials and answer the caller's own address, which
// the caller already has. Never wrap an endpoint that takes an API key.
func CrossOrigin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Access-Control-Allow-Origin"] = hdrAnyOrigin
		h.ServeHTTP(w, r)
	})
}
