package web

import (
	"net/http"
	"strings"
)

// The owners' portal and the operators' console are pages that hold no
// data: their scripts ask the server's JSON endpoints for everything.
//
// This file is a stand-in with the final signatures, so the server can
// register the pages' routes; the real pages replace it.

// Where the portal and the console live.
const (
	PortalPath  = "/account"
	ConsolePath = "/console"
)

// PortalHandler serves the owners' portal at GET and HEAD /account and
// every path under it but /account/api/.
func PortalHandler() (http.Handler, error) { return placeholder(PortalPath, "ipatlas account"), nil }

// ConsoleHandler serves the operators' console at GET and HEAD /console
// and every path under it.
func ConsoleHandler() (http.Handler, error) { return placeholder(ConsolePath, "ipatlas console"), nil }

func placeholder(prefix, title string) http.Handler {
	page := []byte("<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>" + title + "</title><h1>" + title + "</h1></html>\n")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if !(path == prefix || strings.HasPrefix(path, prefix+"/")) || strings.HasPrefix(path, prefix+"/api/") {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header()["Allow"] = hdrAllow
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		hd := w.Header()
		hd["Content-Type"] = hdrHTML
		hd["Cache-Control"] = hdrNoStore
		hd["Content-Security-Policy"] = []string{"default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"}
		hd["X-Content-Type-Options"] = hdrNosniff
		hd["Referrer-Policy"] = hdrNoReferer
		hd["X-Frame-Options"] = hdrDeny
		w.WriteHeader(http.StatusOK)
		w.Write(page)
	})
}
