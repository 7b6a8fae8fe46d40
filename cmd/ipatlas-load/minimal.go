package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/internal/addrfile"
	"github.com/ipatlas/ipatlas/internal/geo"
	"github.com/ipatlas/ipatlas/internal/netaddr"
)

// minimalCommand is the hidden first argument that makes the harness run
// the reference server instead.
const minimalCommand = "__minimal-server"

// The references the metered server is compared with.
const (
	// refLookup answers the location query with the same engine on the
	// same data, unmetered: no key, no store, no quota. What ipatlas costs
	// beyond it is the price of authentication, metering and the service's
	// checks.
	refLookup = "lookup"
	// refMinimal answers fixed bytes: the least a net/http server can do.
	refMinimal = "minimal"
)

var referenceDesc = map[string]string{
	refLookup:  "lookup: the same engine on the same data answering the same envelope, with no key, store or metering (Get my IP: fixed handler)",
	refMinimal: "minimal: a net/http handler that decodes the same body and writes a fixed answer of the same size",
}

// minimalHandler is the yardstick: the least a net/http server can do for
// the same requests. The location query decodes the same JSON body and
// answers fixed bytes the size of a real answer; Get my IP answers the
// peer's address in the same JSON shape.
func minimalHandler(queryAnswer []byte) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/ip-query", func(w http.ResponseWriter, r *http.Request) {
		var q ipatlas.QueryRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10)).Decode(&q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(queryAnswer)
	})
	mux.HandleFunc("GET /api/lookup/{ip}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := netip.ParseAddr(r.PathValue("ip")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(queryAnswer)
	})
	mux.HandleFunc("GET /api/ip/myip", func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		a := ap.Addr().Unmap()
		v := ipatlas.IPv6
		if a.Is4() {
			v = ipatlas.IPv4
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ipatlas.MyIPResponse{
			Result: true, Code: ipatlas.MyIPCodeSuccess, Message: ipatlas.MyIPMessageSuccess,
			IP: a.String(), IPVersion: v,
		})
	})
	return mux
}

// lookupHandler is the unmetered lookup service: the minimal handler's Get
// my IP, and a location query that parses and checks the address as the
// service does and answers the engine's record in the same envelope, with
// no key, no store and no metering.
func lookupHandler(eng *geo.Engine) http.Handler {
	mux := minimalHandler(nil).(*http.ServeMux)
	lookup := http.NewServeMux()
	lookup.Handle("GET /api/ip/myip", mux)
	lookup.HandleFunc("GET /api/lookup/{ip}", func(w http.ResponseWriter, r *http.Request) {
		answerLookup(w, eng, r.PathValue("ip"), r.URL.Query().Get("lang"))
	})
	lookup.HandleFunc("POST /api/ip-query", func(w http.ResponseWriter, r *http.Request) {
		var q ipatlas.QueryRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10)).Decode(&q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answerLookup(w, eng, q.IP, q.Lang)
	})
	return lookup
}

// answerLookup answers one address as the service does, unmetered.
func answerLookup(w http.ResponseWriter, eng *geo.Engine, ip, langText string) {
	a, err := netaddr.Parse(ip)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if b, special := netaddr.Classify(a); special {
		http.Error(w, b.Name, http.StatusBadRequest)
		return
	}
	lang, ok := ipatlas.ParseLang(langText)
	if !ok {
		http.Error(w, "lang", http.StatusBadRequest)
		return
	}
	rec, err := eng.Lookup(a, lang)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(ipatlas.Envelope{Success: true, Data: &rec, Meta: ipatlas.Meta{IsAPIRequest: true}})
}

func runMinimal(args []string) error {
	fs := flag.NewFlagSet("minimal", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	answerFile := fs.String("query-answer", "", "file holding the location query's answer (the minimal reference)")
	dataDir := fs.String("data-dir", "", "data dir to look addresses up in (the lookup reference)")
	addrFile := fs.String("addr-file", "", "file to write the bound address to, as ipatlas serve's --addr-file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var h http.Handler
	if *dataDir != "" {
		eng, err := geo.Open(*dataDir, geo.Options{})
		if err != nil {
			return err
		}
		defer eng.Close()
		h = lookupHandler(eng)
	} else {
		answer, err := os.ReadFile(*answerFile)
		if err != nil {
			return err
		}
		h = minimalHandler(answer)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	if *addrFile != "" {
		if err := addrfile.Write(*addrFile, addrfile.Addrs{Public: ln.Addr().String()}); err != nil {
			return err
		}
		defer os.Remove(*addrFile)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(os.Stderr, "listening on %s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
