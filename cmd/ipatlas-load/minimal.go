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
)

// minimalCommand is the hidden first argument that makes the harness run
// the minimal server instead.
const minimalCommand = "__minimal-server"

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

func runMinimal(args []string) error {
	fs := flag.NewFlagSet("minimal", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address")
	answerFile := fs.String("query-answer", "", "file holding the location query's answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	answer, err := os.ReadFile(*answerFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: minimalHandler(answer), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
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
