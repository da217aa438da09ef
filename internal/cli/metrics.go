package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serveMetrics serves handler at /metrics on addr until ctx ends. The returned server's Addr
// is the address actually bound (addr may use port 0).
func serveMetrics(ctx context.Context, addr string, handler http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", handler)
	srv := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the agent keeps running without metrics
		}
	}()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return srv, nil
}
